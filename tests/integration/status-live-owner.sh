#!/bin/bash
# A live CUDA process: NVML lists it with its memory and it holds the device files.
. "$TESTLIB"

launch pidfile "$PIDS" owner cuda 0 0 1024 sleep
wait_role owner
owner=$(pid_of owner)

gr status --json
expect_rc 1 "a GPU in use"
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: (1024*1048576), process: \"alive\"}]" "the owner, its memory, alive"
jqok '.gpus[0].memory.used == 1024*1048576' "device memory used"
jqok ".gpus[0].holders == [{pid: $owner, fds: 3}]" "the owner holds nvidia0 three times"
jqok ".processes[] | select(.pid == $owner) | .devices | .fds == 6 and .ctl == 1 and .uvm == 2 and .maps == 40 and .gpus == [{minor: 0, fds: 3}]" "device footprint: fds, uvm, mappings"
jqok ".processes[] | select(.pid == $owner) | .comm == \"gpuhold\" and (.cmdline | test(\"cuda 0 0 1024\")) and .uid == $(id -u) and .state == \"S\"" "process facts"
jqok ".processes[] | select(.pid == $owner) | .ppid == $$ and .nspid == [$owner] and (.cgroup | type == \"string\") and .start_time_ticks > 0" "lineage, nspid and cgroup"

# a process with many fds on the GPU's file: the fds show a CUDA footprint, its maps are not read
launch pidfile "$PIDS" many open nvidia0 open nvidia0 open nvidia0 open nvidia0 open nvidia0 open nvidia0 \
        open nvidia0 open nvidia0 open nvidia0 open nvidia0 open nvidia0 open nvidia0 sleep
wait_role many
many=$(pid_of many)
gr status --json
jqok ".processes[] | select(.pid == $many) | .devices | .gpus == [{minor: 0, fds: 12}] and .maps == null" "12 fds: maps not read (null)"
jqok ".processes[] | select(.pid == $many) | .verdict.role == \"hidden_holder\"" "12 fds on the GPU: a CUDA footprint"
kill -KILL "$many"; wait_state "$many" gone

gr status
expect_rc 1 "table"
has out "^    $owner +$$ .* 1.0 GiB .*owner, live" "table lists the holder with its parent and its memory"
gr status --why
has out "^    $owner +compute +1.0 GiB +alive" "--why: the GPU's owners"

# negative control: once the owner is gone the GPU is clean again
kill -KILL "$owner"; wait "$owner" 2>/dev/null || true
gr status --json
expect_rc 0 "clean after the owner died"
jqok '.gpus[0].context_owners == [] and .gpus[0].memory.used == 0' "memory returned"
done_testing
