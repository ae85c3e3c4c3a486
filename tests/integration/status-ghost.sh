#!/bin/bash
# The ghost (DESIGN.md): the CUDA process forked a child and died. NVML still lists the dead PID
# with the memory; only the fd scan finds the real holder, the orphaned child.
. "$TESTLIB"

launch pidfile "$PIDS" owner cuda 0 0 2048 spawn-holder "$PIDS" child exit
wait_role owner child
owner=$(pid_of owner); child=$(pid_of child)
wait "$LAST" || true
wait_state "$owner" gone

gr status --json
expect_rc 1 "the ghost's GPU is not clean"
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: (2048*1048576), process: \"not_found\"}]" "the dead owner is listed as not found"
jqok ".gpus[0].holders == [{pid: $child, fds: 3}]" "the forked child is the holder"
jqok ".gpus[0].context_owners | map(.pid) | index($child) == null" "the child is not a context owner"
jqok "[.processes[] | select(.devices != null) | .pid] == [$child]" "only the child holds a device file"
jqok ".processes[] | select(.pid == $child) | .ppid != $owner and .devices.maps == 40 and .devices.uvm == 2" "the child is reparented and has the CUDA footprint"
jqok '.gpus[0].memory.used == 2048*1048576' "the memory is still used"

gr status
has out "^    $owner +compute +2.0 GiB +not found" "table: owner not found"
has out "^    $child " "table: holder row"

# negative control: kill the hidden holder and the ghost and its memory go away
kill -KILL "$child"
wait_state "$child" gone
gr status --json
expect_rc 0 "clean once the hidden holder is gone"
jqok '.gpus[0].context_owners == [] and .gpus[0].memory.used == 0 and .gpus[0].holders == []' "memory back, no ghost"
done_testing
