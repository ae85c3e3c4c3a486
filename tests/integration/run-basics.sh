#!/bin/bash
# gpureap run as an init would be judged (tini's tests): the exit status is the command's,
# 128+n when a signal ended it, 127/126 when it cannot start; signals are passed on.
. "$TESTLIB"

for n in 0 1 2 7 42 100 126 127 128 200 254 255; do
        gr run --quiet -- sh -c "exit $n"
        expect_rc "$n" "exit status $n passed through"
done
for s in 1 2 9 15; do
        gr run --quiet -- sh -c "kill -$s \$\$"
        expect_rc $((128 + s)) "killed by signal $s: $((128 + s))"
done
gr run --quiet -- "$T/no-such-command"
expect_rc 127 "not found"
has err "cannot run '.*no-such-command': No such file or directory" "says why"
touch "$T/not-executable"
gr run --quiet -- "$T/not-executable"
expect_rc 126 "not executable"
gr run
expect_rc 2 "no command"
gr run --max-time soon -- true
expect_rc 2 "bad duration"
gr run --ready-log '(' -- true
expect_rc 2 "bad regex"

# USR1 and USR2 are passed on; TERM is passed on and ends the tree, exit 143
cat >"$T/trap.sh" <<'SH'
trap 'echo usr1 >>"$LOG"' USR1
trap 'echo usr2 >>"$LOG"' USR2
trap 'echo term >>"$LOG"; exit 0' TERM
echo $$ >"$LOG.pid"
while :; do sleep 0.05; done
SH
export LOG=$T/log
"$GPUREAP" run --quiet -- bash "$T/trap.sh" &
g=$!
LAUNCHED="$LAUNCHED $g"
for _ in $(seq 500); do [ -s "$LOG.pid" ] && break; sleep 0.01; done
kill -USR1 "$g"
for _ in $(seq 500); do grep -q usr1 "$LOG" 2>/dev/null && break; sleep 0.01; done
kill -USR2 "$g"
for _ in $(seq 500); do grep -q usr2 "$LOG" 2>/dev/null && break; sleep 0.01; done
grep -q usr1 "$LOG" && grep -q usr2 "$LOG" || fail "USR1/USR2 not passed on: $(cat "$LOG" 2>/dev/null)"
ok "USR1 and USR2 passed on"
kill -TERM "$g"
set +e; wait "$g"; RC=$?; set -e
expect_rc 143 "gpureap got TERM: 143"
grep -q term "$LOG" || fail "TERM not passed on"
ok "TERM passed on to the command"
kill -0 "$(cat "$LOG.pid")" 2>/dev/null && fail "the command outlived gpureap"
ok "nothing left"
done_testing
