#!/bin/bash
# A zombie owner names the parent that does not reap it; a stopped holder needs SIGCONT.
. "$TESTLIB"

launch pidfile "$PIDS" reaper child pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" holder exit
wait_role reaper owner holder
reaper=$(pid_of reaper); owner=$(pid_of owner); holder=$(pid_of holder)
wait_state "$owner" Z
gr status --json
expect_rc 1 "dirty"
jqok ".findings[] | select(.kind == \"zombie\") | .pids == [$owner] and .related_pid == $reaper and (.leftover | not)" "zombie finding names the non-reaping parent"
jqok ".findings[] | select(.kind == \"zombie\") | .explanation | test(\"parent $reaper \\\\(gpuhold\\\\) has not reaped it\")" "explanation names the parent"
jqok ".findings[] | select(.kind == \"zombie\") | .next_step == null and (.advice | test(\"nothing to kill\"))" "nothing to kill"
jqok ".findings[] | select(.kind == \"ghost\") | .pids == [$holder]" "the memory is the holder's"
kill -KILL "$holder" "$reaper"
wait_state "$holder" gone

launch pidfile "$PIDS" stopped cuda 0 0 256 sleep
wait_role stopped
st=$(pid_of stopped)
kill -STOP "$st"
wait_state "$st" T
gr status --json
jqok ".findings[] | select(.kind == \"stopped\") | .pids == [$st] and (.next_step | test(\"kill -CONT $st\"))" "stopped: next step sends SIGCONT"
jqok ".processes[] | select(.pid == $st) | .verdict.conditions | index(\"stopped\")" "condition stopped"
kill -CONT "$st"
wait_state "$st" S
gr status --json
jqok '[.findings[] | select(.kind == "stopped")] == []' "negative control: resumed, no finding"
done_testing
