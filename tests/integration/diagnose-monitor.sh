#!/bin/bash
# NVML-only clients are never leftovers; a CUDA holder named like one is not a monitor.
. "$TESTLIB"

launch pidfile "$PIDS" mon monitor 0 sleep
wait_role mon
mon=$(pid_of mon)
gr status --json
expect_rc 0 "monitors only: clean"
jqok '.gpus[0].state == "clean"' "state clean"
jqok ".findings == [{kind: \"monitor\", leftover: false, gpu: 0, gpus: [0], job: null, pids: [$mon], related_pid: null, memory: null, confidence: \"sure\", explanation: .findings[0].explanation, reason: .findings[0].reason, action: \"none\", next_step: null, advice: null, evidence: .findings[0].evidence}]" "one monitor finding, not a leftover"
jqok ".processes[] | select(.pid == $mon) | .verdict.role == \"monitor\"" "role monitor"

# a ghost's hidden holder that calls itself nvidia-smi
cp "$GPUHOLD" "$T/nvidia-smi"
"$T/nvidia-smi" pidfile "$PIDS" spoofowner cuda 0 0 700 spawn-holder "$PIDS" spoof exit &
sp=$!; LAUNCHED="$LAUNCHED $sp"
wait_role spoof
wait "$sp" || true
spoof=$(pid_of spoof)
gr status --json
jqok ".processes[] | select(.pid == $spoof) | .comm == \"nvidia-smi\" and .verdict.role == \"hidden_holder\"" "named nvidia-smi, judged by its footprint"
jqok ".findings[] | select(.kind == \"ghost\") | .pids == [$spoof]" "it is the ghost's hidden holder"
jqok ".findings[] | select(.kind == \"monitor\") | .pids == [$mon]" "the real monitor stays a monitor"
jqok '.gpus[0].state == "dirty"' "dirty"
done_testing
