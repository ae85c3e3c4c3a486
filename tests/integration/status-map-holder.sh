#!/bin/bash
# A fork of a CUDA process that closed its files but kept their mappings (it daemonized without
# an exec) keeps the context alive: the kernel keeps a file while it is mapped. Both scans read
# fd tables only, so before, the GPU read STALE, "memory being torn down [sure]", nobody named,
# and the advice was to wait, reset or reboot. Now, where the driver lists memory of a process
# that is gone and nothing holds the GPU, the maps of the processes that hold nothing are read
# (bounded): the one that maps the device is named as the ghost's keeper, never 'sure' (less
# to go on than open files), and reap --pid ends it.
. "$TESTLIB"
launch pidfile "$PIDS" owner cuda 0 0 512 child-exit-on-usr1 0 pidfile "$PIDS" kept keep-by-maps sleep
wait_role owner kept
owner=$(pid_of owner) kept=$(pid_of kept)
for _ in $(seq 300); do [ -z "$(ls "/proc/$kept/fd" | grep -vx '[012]')" ] && break; sleep 0.01; done
kill -USR1 "$owner"
wait_state "$owner" gone
[ -z "$(ls "/proc/$kept/fd" | grep -vx '[012]')" ] || fail "the child still has files open"
grep -q "$T/dev/nvidia0" "/proc/$kept/maps" || fail "the child does not map the device"

gr status --json
expect_rc 1 "the GPU is not clean"
jqok ".proc.maps_search.complete == true and .proc.maps_search.processes_read > 0" "the mappings were searched, all of them"
jqok ".processes[] | select(.pid == $kept) | .devices.fds == 0 and .devices.maps > 0 and .devices.gpus[0].minor == 0" "the child is named, as one that maps GPU 0 with no fd open"
jqok "[.findings[] | select(.kind == \"ghost\")] | length == 1 and .[0].pids == [$kept]" "a ghost finding: the dead owner's memory, kept by the child"
jqok ".processes[] | select(.pid == $kept) | .verdict.judgement == \"leftover\" and .verdict.confidence == \"likely\"" "the child is a likely leftover, never a sure one from its mappings alone"
jqok "[.findings[] | select(.kind == \"teardown\")] == []" "no 'memory being torn down' any more"
gr status
has out "mappings it inherited" "the table says how it keeps the memory"

gr reap --gpu 0 --yes --grace 300ms --timeout 5s
expect_rc 1 "a plain reap takes only sure leftovers: the likely one is left"
[ -d "/proc/$kept" ] || fail "a plain reap killed the likely keeper"
gr reap --gpu 0 --pid "$kept" --yes --grace 300ms --timeout 5s
expect_rc 0 "reap --pid ends it, and the memory comes back"
wait_state "$kept" gone
gr status --json
jqok '.gpus[0].state == "clean" and .proc.maps_search == null' "clean again, nothing to search"
done_testing
