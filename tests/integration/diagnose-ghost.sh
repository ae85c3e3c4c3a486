#!/bin/bash
# The ghost: the verdict, who really holds the memory, and a next step that works when pasted.
. "$TESTLIB"

launch pidfile "$PIDS" owner setpgid cuda 0 0 2048 spawn-holder "$PIDS" child exit
wait_role owner child
owner=$(pid_of owner); child=$(pid_of child)
wait "$LAST" || true
wait_state "$owner" gone

gr status --json
expect_rc 1 "dirty"
jqok '.gpus[0].state == "dirty"' "state dirty"
jqok "[.findings[] | select(.kind == \"ghost\")] | length == 1" "one ghost finding"
jqok ".findings[] | select(.kind == \"ghost\") | .pids == [$child] and .related_pid == $owner and .confidence == \"sure\" and .memory == 2048*1048576 and .leftover" "ghost: the hidden holder, sure, 2 GiB"
jqok ".findings[] | select(.kind == \"ghost\") | .next_step == \"gpureap reap --gpu 0 --pid $child\"" "next step reaps the child"
jqok ".processes[] | select(.pid == $child) | .verdict | .role == \"hidden_holder\" and .ghost == $owner and .judgement == \"leftover\" and .confidence == \"sure\"" "child: hidden holder of the ghost, a sure leftover"
jqok ".findings[] | select(.kind == \"ghost\") | .evidence | map(select(.key == \"ghost\" and .lean == \"leftover\")) | length == 1" "the finding carries the evidence"
jqok '[.findings[] | select(.kind == "orphan")] == []' "not reported twice as an orphan"
gr status
has out "hidden holder of $owner" "table names the ghost"
has out "^         next: gpureap reap --gpu 0 --pid $child$" "table shows the next step"

# the next step, pasted as it is
gr status --json
next=$(jq -r '.findings[] | select(.kind == "ghost") | .next_step' "$T/out")
[[ $next =~ ^gpureap\ reap\ --gpu\ 0\ --pid\ [0-9,]+$ ]] || fail "next step is not a reap of PIDs: $next"
eval "$next --yes" >/dev/null # on a terminal it would ask; here the test consents
wait_state "$child" gone
gr status --json
expect_rc 0 "clean after the next step"
jqok '.gpus[0].state == "clean" and .findings == []' "clean, no finding"
done_testing
