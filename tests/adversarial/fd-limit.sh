#!/bin/bash
# Issue 9, item 6: with few file descriptors left ('ulimit -n 24', 30 targets) 13 targets came
# back "changed" although alive, and reap exited 0. An error is an error: the fd limit is raised,
# targets beyond it go through /proc checks, and reap exits 0 only when every target ended.
. "$TESTLIB"
pids=""
for i in $(seq 1 30); do
        launch pidfile "$PIDS" "t$i" sleep
done
wait_role $(seq -f 't%g' 1 30)
for i in $(seq 1 30); do pids="$pids${pids:+,}$(pid_of "t$i")"; done
# a hard limit of 24 too: the soft one cannot be raised
set +e
bash -c "ulimit -Hn 24; ulimit -Sn 24; exec \"$GPUREAP\" reap --yes --pid $pids --grace 500ms --timeout 5s" >"$T/out" 2>"$T/err"
RC=$?
set -e
expect_rc 0 "every target ended, verified"
hasnt out "changed|error|survived" "no target misreported"
for i in $(seq 1 30); do wait_state "$(pid_of "t$i")" "gone Z"; done
ok "all 30 are gone"
[ "$(grep -c ' ended$' "$T/out")" -eq 30 ] || fail "expected 30 'ended' lines"
ok "30 outcomes, each 'ended'"
done_testing
