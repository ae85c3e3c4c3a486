#!/bin/bash
# An owner in another PID namespace: NVML reports host PIDs; status shows both numbers.
. "$TESTLIB"

if ! unshare -p -f true 2>/dev/null; then
        echo "1..0 # SKIP cannot create a PID namespace here (needs root or user namespaces)"
        exit 77
fi
# PID 1 of a new PID namespace forks the owner (the host's /proc stays mounted)
unshare -p -f "$GPUHOLD" pidfile "$PIDS" nsinit child pidfile "$PIDS" owner cuda 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role nsinit owner
owner=$(pid_of owner); nsinit=$(pid_of nsinit)

gr status --json
expect_rc 1 "GPU in use from a container"
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: (256*1048576), process: \"alive\"}]" "the host PID is listed by NVML and found"
jqok ".processes[] | select(.pid == $owner) | .nspid == [$owner, 2]" "NSpid: host PID and namespace PID"
jqok ".processes[] | select(.pid == $owner) | .ppid == $nsinit" "its parent is the namespace's init"
jqok ".gpus[0].holders == [{pid: $owner, fds: 3}]" "the holder is found by its host PID"
gr status
has out "^    $owner .* 2 +owner.*gpuhold pidfile" "table shows the namespace PID"
done_testing
