#!/bin/bash
# reap kills exactly the leftovers, waits for the memory, verifies: the ghost's hidden holder, the
# orphaned workers of a killed server; never the live job beside them.
. "$TESTLIB"
scenario "gpu 0" "gpu 1"

# a live job on GPU 1 that must survive every reap below
launch pidfile "$PIDS" job setpgid worker "$PIDS" jobw 1 1 3000 sleep
wait_role job jobw
jobw=$(pid_of jobw)

launch pidfile "$PIDS" owner cuda 0 0 2048 spawn-holder "$PIDS" child exit
wait_role owner child
child=$(pid_of child)
wait "$LAST" || true

gr reap --dry-run
expect_rc 0 "dry run"
has out "^  kill   $child +gpuhold .*leftover" "the plan names the hidden holder"
hasnt out "kill   $jobw " "the live job is not in the plan"
kill -0 "$child" || fail "a dry run killed"
ok "a dry run signals nothing"

gr reap </dev/null
expect_rc 2 "no terminal, no --yes: nothing done"
has err "add --yes" "says how to consent"
kill -0 "$child" || fail "killed without consent"
ok "nothing killed without consent"

gr reap --yes
expect_rc 0 "reaped and verified"
has out "^  $child +ended" "the child ended on SIGTERM"
has out "^GPU 0  clean  memory 2.0 GiB -> 0 B" "GPU 0: memory before and after"
has out "^verified in [0-9]+ ms" "verified"
has out "^memory back [0-9.]+ ms after the first signal" "the drain watcher saw the memory come back"
wait_state "$child" gone
kill -0 "$jobw" || fail "the live job was killed"
ok "the live job survived"

# the first seed: a server and its four workers (one double-forked), the server killed
launch pidfile "$PIDS" launcher setpgid worker "$PIDS" w1 0 0 1000 worker "$PIDS" w2 0 0 1000 \
        worker "$PIDS" w3 0 0 1000 daemon-worker "$PIDS" w4 0 0 1000 sleep
wait_role launcher w1 w2 w3 w4
l=$(pid_of launcher)
gr reap --yes
expect_rc 0 "while the server runs there is nothing to reap"
has out "nothing to kill" "nothing to kill"
kill -KILL "$l"; wait "$l" 2>/dev/null || true
# forked workers carry no worker marker: their launcher's death makes them likely leftovers,
# which a plain reap spares and says so
gr reap --yes --gpu 0 --timeout 1s
expect_rc 1 "likely leftovers are spared by default; the GPU stays dirty"
for w in w1 w2 w3 w4; do
        has out "^  spare  $(pid_of $w) .*likely leftover: add --likely" "$w spared, with the reason"
        kill -0 "$(pid_of $w)" || fail "$w was killed without --likely"
done
gr reap --yes --gpu 0 --likely
expect_rc 0 "the orphaned workers reaped with --likely"
for w in w1 w2 w3 w4; do
        has out "^  $(pid_of $w) +ended" "$w ended"
        wait_state "$(pid_of $w)" gone
done
kill -0 "$jobw" || fail "the live job was killed"
ok "the live job on GPU 1 survived"
gr status --json
jqok '[.gpus[].state] == ["clean", "busy"]' "GPU 0 clean, GPU 1 still busy with its job"
done_testing
