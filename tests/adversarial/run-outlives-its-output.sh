#!/bin/bash
# Issue 9, item 8: 'run' with a watchdog and a reader that went away died of SIGPIPE and left
# the command's processes (and its cgroup) behind; with its stderr a pipe nobody reads, the
# command's exit status became 141. gpureap must outlive its own output.
. "$TESTLIB"
# stdout read by 'head -1', which exits after the first line; the command goes on writing.
# Once gpureap finds its reader gone it closes the command's pipe (issue 21: the command learns
# it as it would without gpureap), so the command ignores SIGPIPE here: its later writes fail
# with EPIPE and it goes on, whether or not "third" was read before the pipe was closed
cat >"$T/cmd.sh" <<'C'
trap '' PIPE
echo first
sleep 0.3
echo second
echo third
sleep 1000 &
echo "sleeper $!" >>"$PIDS"
wait
C
export PIDS
# rc goes to a file of its own: every number in $PIDS is killed at the end
( "$GPUREAP" run --stall-timeout 60s -- bash "$T/cmd.sh" 2>"$T/err" & echo "gpureap $!" >>"$PIDS"; rc=0; wait $! || rc=$?; echo "$rc" >"$T/rc" ) | head -1 >"$T/out" &
LAUNCHED="$LAUNCHED $!"
wait_role gpureap sleeper
g=$(pid_of gpureap); sl=$(pid_of sleeper)
sleep 0.5 # "second" and "third" have been written into the closed pipe by now
kill -0 "$g" || fail "gpureap died when its reader went away"
ok "gpureap lives on after its stdout's reader exited"
kill -0 "$sl" || fail "the command's tree was ended early"
kill -TERM "$g"
wait_state "$sl" "gone"
ok "SIGTERM to gpureap ended the whole tree"
i=0; until [ -s "$T/rc" ]; do i=$((i + 1)); [ $i -lt 500 ] || fail "no exit status"; sleep 0.01; done
[ "$(cat "$T/rc")" = 143 ] || fail "exit status $(cat "$T/rc"), expected 143"
ok "exit 143 (TERM), not 141 (SIGPIPE)"
has out "^first$" "the reader got the first line"

# stderr a pipe whose reader has exited: the command's own status comes through
set +e
"$GPUREAP" run -- sh -c 'sleep 0.3; exit 3' 2>&1 | (exit 0)
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 3 ] || fail "exit status $rc, expected the command's 3"
ok "the command's status (3) passed on though gpureap's stderr reader was gone"
done_testing
