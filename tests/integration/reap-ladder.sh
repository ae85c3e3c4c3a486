#!/bin/bash
# The ladder: a SIGTERM-ignorer gets SIGKILL after the grace period; a stopped holder dies without
# anyone sending SIGCONT by hand; a zombie owner is never signalled and its parent is named.
. "$TESTLIB"

launch pidfile "$PIDS" owner2 ignore-term cuda 0 0 512 spawn-holder "$PIDS" stubborn2 exit
wait_role owner2 stubborn2
wait "$LAST" || true
st=$(pid_of stubborn2)
gr reap --yes --grace 300ms
expect_rc 0 "reaped"
has out "^  $st +killed" "the TERM-ignorer needed SIGKILL"
wait_state "$st" gone

launch pidfile "$PIDS" owner3 cuda 0 0 512 spawn-holder "$PIDS" frozen exit
wait_role owner3 frozen
wait "$LAST" || true
fr=$(pid_of frozen)
kill -STOP "$fr"; wait_state "$fr" T
gr reap --yes --grace 5s
expect_rc 0 "reaped"
has out "^  $fr +ended" "the stopped holder ended on SIGTERM (gpureap sent SIGCONT)"
wait_state "$fr" gone

launch pidfile "$PIDS" reaper child pidfile "$PIDS" zowner cuda 0 0 256 spawn-holder "$PIDS" zholder exit
wait_role reaper zowner zholder
z=$(pid_of zowner); zh=$(pid_of zholder); rp=$(pid_of reaper)
wait_state "$z" Z
gr reap --yes --pid "$z,$zh"
expect_rc 0 "the zombie's holder reaped"
has out "^  spare  $z .*a zombie: it holds nothing; its parent must reap it \\(PID $rp\\)" "the zombie is spared, its parent named"
has out "^  $zh +ended" "its hidden holder ended"
kill -0 "$rp" || fail "the zombie's parent was signalled"
ok "the zombie's parent is alive"
done_testing
