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
# the exec is execvp's, as tini's and a shell's: a script with no #! runs through /bin/sh, with
# all of its arguments (20000 of them: more than the start's fixed stack holds); a PATH entry
# where the name is not executable is passed over for the next
printf 'echo "script $# $1 ${20000}"\n' >"$T/no-shebang"
chmod +x "$T/no-shebang"
gr run --quiet -- "$T/no-shebang" $(seq 20000)
expect_rc 0 "a script with no #!"
[ "$(cat "$T/out")" = "script 20000 1 20000" ] || fail "a script with no #!: '$(head -c 200 "$T/out")'"
ok "a script with no #! runs through /bin/sh with its 20000 arguments"
mkdir -p "$T/path1" "$T/path2"
touch "$T/path1/gr-tool"
printf '#!/bin/sh\necho found in path2\n' >"$T/path2/gr-tool"
chmod +x "$T/path2/gr-tool"
PATH="$T/path1:$T/path2:$PATH" gr run --quiet -- gr-tool
expect_rc 0 "a name on PATH"
has out "found in path2" "a PATH entry not executable is passed over"
# the command's environment: gpureap's own, with GPUREAP_RUN_PID (gpureap's PID) and without
# NOTIFY_SOCKET (systemd is told by gpureap); gpureap itself still has it
NOTIFY_SOCKET=$T/no-such-socket GPUREAP_RUN_PID=stale GR_ODD=$'a=b\tc' "$GPUREAP" run --quiet -- \
        sh -c 'echo "$GPUREAP_RUN_PID" "$PPID" "${NOTIFY_SOCKET-unset}"; printf %s "$GR_ODD" | od -c | head -1' >"$T/out"
read -r run_pid parent notify <"$T/out"
[ "$run_pid" = "$parent" ] || fail "GPUREAP_RUN_PID $run_pid, the command's parent $parent"
[ "$notify" = unset ] || fail "NOTIFY_SOCKET passed on: $notify"
has out 'a   =   b  \\t   c' "gpureap's environment passed on as it is"
ok "the command's environment: GPUREAP_RUN_PID is gpureap's, NOTIFY_SOCKET not passed on"
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
