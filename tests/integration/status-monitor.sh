#!/bin/bash
# An NVML-only client (nvidia-smi, DCGM): it holds device files but no context and no memory.
. "$TESTLIB"

launch pidfile "$PIDS" monitor monitor 0 sleep
wait_role monitor
mon=$(pid_of monitor)

gr status --json
jqok '.gpus[0].context_owners == [] and .gpus[0].memory.used == 0' "no context owner, no memory"
jqok ".gpus[0].holders == [{pid: $mon, fds: 3}]" "the monitor is listed as a holder"
jqok ".processes[] | select(.pid == $mon) | .devices | .maps == 4 and .uvm == 2 and .ctl == 1" "its small footprint"

# a process with only the control files open is listed apart from the GPUs
launch pidfile "$PIDS" ctlonly open nvidiactl open nvidia-uvm sleep
wait_role ctlonly
ctl=$(pid_of ctlonly)
gr status --json
jqok ".processes[] | select(.pid == $ctl) | .devices | .gpus == [] and .ctl == 1 and .uvm == 1" "control-only holder listed with its files"
jqok ".gpus[0].holders | map(.pid) | index($ctl) == null" "it holds no GPU"
gr status
has out "other holders of .*/nvidia\\* files" "table: section for other holders"
has out "^    $ctl " "table: control-only holder row"
done_testing
