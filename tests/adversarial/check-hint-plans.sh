#!/bin/bash
# A hint is the command that does what it counted (issue 20): 'check' on a ghost's sure keeper
# plus two likely orphans said "3 leftovers hold ... (gpureap reap --gpu 0)", whose dry run
# spared the two likely ones. Now the count is the plan of the command named, with --likely
# where the likely ones are counted; pasted, its dry run plans exactly that many.
. "$TESTLIB"
trap - HUP # the orphans must not ignore SIGHUP (that makes them unsure), whatever the caller set
scenario "gpu 0 minor=0" "gpu 1 minor=1"
# a ghost on GPU 0: its forked child keeps the memory (sure)
launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
# two workers of a launcher that leads its group, killed: likely leftovers on GPU 0
launch pidfile "$PIDS" launcher setpgid worker "$PIDS" w1 0 0 256 worker "$PIDS" w2 0 0 256 sleep
# and a sure one alone on GPU 1
launch pidfile "$PIDS" owner1 cuda 1 1 128 spawn-holder "$PIDS" child1 exit
wait_role owner child launcher w1 w2 owner1 child1
kill -KILL "$(pid_of launcher)"; wait_state "$(pid_of launcher)" "Z gone"
wait_state "$(pid_of owner)" "Z gone"; wait_state "$(pid_of owner1)" "Z gone"
gr status --json
jqok "[.processes[] | select(.pid == $(pid_of w1) or .pid == $(pid_of w2)) | .verdict.confidence] == [\"likely\", \"likely\"]" "the two workers are likely leftovers"
jqok ".processes[] | select(.pid == $(pid_of child)) | .verdict.confidence == \"sure\"" "the ghost's keeper is sure"
gr check
cp "$T/out" "$T/check"
echo "# $(cat "$T/check")"
has out "GPU 0: 3 leftovers \\(1 sure, 2 likely\\) hold .* \\(gpureap reap --gpu 0 --likely\\)" "GPU 0's hint counts sure and likely apart and names --likely"
has out "GPU 1: 1 leftover hold .* \\(gpureap reap --gpu 1\\)" "GPU 1's sure leftover: the plain command"
for gpu in 0 1; do
        cmd=$(grep -o "GPU $gpu: [0-9]* leftover[^;]*(gpureap reap[^)]*)" "$T/check" | sed 's/.*(gpureap /gpureap /; s/)$//')
        n=$(grep -o "GPU $gpu: [0-9]*" "$T/check" | head -n 1 | awk '{print $3}')
        [ -n "$cmd" ] && [ -n "$n" ] || fail "no hint for GPU $gpu in: $(cat "$T/check")"
        # shellcheck disable=SC2086 # the hint, pasted as a user would
        gr ${cmd#gpureap } --dry-run --json
        got=$(jq '.plan.targets | length' "$T/out")
        [ "$got" = "$n" ] || fail "'$cmd --dry-run' plans $got targets, the hint counted $n: $(jq -c .plan "$T/out")"
        ok "GPU $gpu: '$cmd' plans the $n it counted"
done
done_testing
