#!/bin/bash
# The first seed: a server with four workers (one double-forked) is killed; the workers live on,
# holding the GPU and the server's port. Before the kill: busy. After: dirty, one finding.
. "$TESTLIB"
scenario "gpu 0" "gpu 1"

launch pidfile "$PIDS" launcher setpgid listen "$PIDS" \
        worker "$PIDS" w1 0 0 1000 worker "$PIDS" w2 0 0 1000 worker "$PIDS" w3 1 1 1000 \
        daemon-worker "$PIDS" w4 1 1 1000 sleep
wait_role launcher w1 w2 w3 w4
l=$(pid_of launcher); port=$(pid_of port)
ws="$(pid_of w1) $(pid_of w2) $(pid_of w3) $(pid_of w4)"

gr status --json
expect_rc 1 "the running server is busy"
jqok '[.gpus[].state] == ["busy", "busy"] and ([.findings[] | select(.kind == "orphan")] == [])' "busy on both GPUs, no orphan (w4 double-forked, its group runs)"

kill -KILL "$l"; wait "$l" 2>/dev/null || true
gr status --json
expect_rc 1 "leftovers"
jqok '[.gpus[].state] == ["dirty", "dirty"]' "both GPUs dirty"
jqok '[.findings[] | select(.kind == "orphan")] | length == 1' "one orphan finding for the dead launcher's job"
jqok '.findings[] | select(.kind == "orphan") | .gpus == [0, 1] and .gpu == null and .job == "process group '"$l"'"' "it names both GPUs and the job"
jqok "[.findings[] | select(.kind == \"orphan\") | .pids[]] | sort == ([$(echo $ws | tr ' ' ',')] | sort)" "all four workers, the double-forked one too"
jqok "[.findings[] | select(.kind == \"orphan\")] | all(.related_pid == $l and .memory == 4000*1048576 and .leftover)" "named after the dead launcher, 2000 MiB on each GPU"
jqok ".findings[] | select(.kind == \"orphan\") | .next_step == \"gpureap reap --gpu 0,1 --pid $(echo $ws | tr ' ' ',')\"" "one next step reaps all four on both GPUs"
jqok "[.processes[] | select(.verdict.role == \"owner\") | .verdict] | all(.launcher == $l and (.launcher_alive | not) and .judgement == \"leftover\" and .confidence == \"likely\")" "each worker: a likely leftover of launcher $l (forked workers carry no worker marker)"
jqok "[.processes[] | select(.verdict) | .net.listen_ports] | all(. == [$port])" "every worker still listens on :$port"
jqok "[.processes[] | select(.verdict) | .verdict.evidence[] | select(.key == \"listening\") | .value] | all(test(\"inherited\"))" "the launcher's socket, inherited, says nothing about a server"
jqok "[.processes[] | select(.verdict) | .verdict.conditions | index(\"listening\")] | all" "condition listening"
gr status
has out "launcher: process group $l \\(gone\\)" "grouped under the dead launcher"
has out "listening :$port" "the table shows the port"
has out "orphan  GPUs 0,1: 4 processes of process group $l" "one orphan finding, naming its GPUs"
has out "^[01] +DIRTY .* 4 leftovers of process group $l \\[likely\\]: its launcher" "each GPU's line names the leftovers"
has out "why: its launcher, the leader of process group $l, is gone \\[likely\\]" "the reason under the finding"

# the next steps, pasted
gr status --json
for cmd in $(jq -r '.findings[] | select(.kind == "orphan") | .next_step | @base64' "$T/out"); do
        eval "$(echo "$cmd" | base64 -d) --yes" >/dev/null # the test consents
done
for w in $ws; do wait_state "$w" gone; done
gr status --json
expect_rc 0 "clean after the next steps"
done_testing
