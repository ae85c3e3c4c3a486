#!/bin/bash
# gpureap-status, the served status as a static program of its own (issue 25): through serve it
# prints what 'gpureap status' prints, byte for byte, with the same exit code, for every option
# serve renders; it really took the fast way (a gpureap beside it that cannot be executed is not
# needed); and everything else is 'gpureap status' itself, run with the very same arguments:
# serve down, another build's serve, an option serve does not render, structs asked for, real
# and effective uids that differ, a mistake.
. "$TESTLIB"
: "${GPUREAP_STATUS:?}"
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
serve_start --interval 300ms --listen none
"$GPUHOLD" pidfile "$PIDS" live-l worker "$PIDS" live-w 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
launch pidfile "$PIDS" owner cuda 1 1 512 spawn-holder "$PIDS" child exit
wait_role live-l live-w owner child
until_served '[.findings[] | select(.kind == "ghost")] | length == 1'

# both ways of one look of serve's (its snapshot's time before and after): $T/a and $T/b
same_look() { # ARGS...
        local k t1
        for k in $(seq 1 20); do
                gr_served status --json
                t1=$(jq .taken_at_unix_ms "$T/out")
                set +e
                "$GPUREAP_STATUS" "$@" >"$T/a" 2>"$T/a.err"; RCA=$?
                "$GPUREAP" status "$@" >"$T/b" 2>"$T/b.err"; RCB=$?
                set -e
                gr_served status --json
                [ "$(jq .taken_at_unix_ms "$T/out")" = "$t1" ] && return 0
        done
        fail "no two answers of one look"
}
for args in "" "--json" "--why" "-v -w" "--color always" "--color=never" "--wide" "--json --why" "--color=always --why --json"; do
        # shellcheck disable=SC2086
        same_look $args
        [ $RCA = 1 ] && [ $RCB = 1 ] || fail "status $args: exit $RCA from gpureap-status, $RCB from gpureap (1 expected)"
        # a table's "as seen by" line says its age in tenths of a second: the same look, maybe not the same tenth
        if [[ "$args" == *json* ]]; then
                cmp -s "$T/a" "$T/b" || fail "status $args differs: $(diff "$T/a" "$T/b" | head -10)"
        else
                diff <(grep -v "^as seen by gpureap serve" "$T/a") <(grep -v "^as seen by gpureap serve" "$T/b") >"$T/d" || fail "status $args differs: $(head -10 "$T/d")"
                grep -q "^as seen by gpureap serve (PID $SERVE)" "$T/a" || fail "status $args: not through serve: $(head -3 "$T/a")"
        fi
        [ ! -s "$T/a.err" ] || fail "gpureap-status $args said on stderr: $(cat "$T/a.err")"
done
ok "through serve: table, --json, --why, -v -w, --color always/never, --wide: gpureap's report and exit code"
export COLUMNS=60
same_look
unset COLUMNS
diff <(grep -v "^as seen by gpureap serve" "$T/a") <(grep -v "^as seen by gpureap serve" "$T/b") >"$T/d" || fail "COLUMNS=60: gpureap-status differs from gpureap status: $(head -10 "$T/d")"
[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$T/a")" -le 60 ] || fail "COLUMNS=60: lines wider than 60"
ok "COLUMNS=60: the width asked is gpureap's"

# the fast way taken: beside it a gpureap of this build that cannot be executed
mkdir "$T/ro"
cp "$GPUREAP_STATUS" "$T/ro/gpureap-status"
cp "$GPUREAP" "$T/ro/gpureap"
chmod 0644 "$T/ro/gpureap"
set +e
"$T/ro/gpureap-status" --json >"$T/out" 2>"$T/err"; RC=$?
set -e
[ "$RC" = 1 ] || fail "gpureap-status did not answer by itself (exit $RC): $(cat "$T/err")"
jq -e ".history.served_by == $SERVE" "$T/out" >/dev/null || fail "not serve's report: $(head -c 200 "$T/out")"
ok "it answered without executing gpureap: serve's rendered report, exit 1"
ln -s "$T/ro/gpureap-status" "$T/link-to-status"
set +e
"$T/link-to-status" >/dev/null 2>"$T/err"; RC=$?
set -e
[ "$RC" = 1 ] || fail "through a symlink: exit $RC: $(cat "$T/err")"
ok "through a symlink elsewhere: the gpureap beside the program itself, not beside the link"
# everything serve does not render goes to gpureap: here it cannot be executed, so 3 and why
for args in "--gpu 0" "--direct" "--watch 1s" "--help" "--bogus" "--color sometimes" "--json extra" "-vw" "--" "--js"; do
        set +e
        # shellcheck disable=SC2086
        "$T/ro/gpureap-status" $args >"$T/out" 2>"$T/err"; RC=$?
        set -e
        [ "$RC" = 3 ] && grep -q "^gpureap: cannot run '$T/ro/gpureap' for 'gpureap status': Permission denied$" "$T/err" ||
                fail "gpureap-status $args did not go to gpureap (exit $RC): $(cat "$T/err")"
        [ ! -s "$T/out" ] || fail "gpureap-status $args wrote: $(head -3 "$T/out")"
done
ok "--gpu, --direct, --watch, --help, an unknown option, a bad --color, a stray argument, -vw, --, --js: gpureap's (exit 3 where it cannot run)"
for env in GPUREAP_SERVE_WIRE=structs GPUREAP_SERVE_WIRE=0 "GPUREAP_SERVE_SOCKET=$T/none.sock"; do
        set +e
        env "$env" "$T/ro/gpureap-status" >/dev/null 2>"$T/err"; RC=$?
        set -e
        [ "$RC" = 3 ] || fail "$env: gpureap-status answered by itself (exit $RC)"
done
ok "the structs or JSON asked for (GPUREAP_SERVE_WIRE), or no serve: gpureap's"
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
        set +e
        setpriv --ruid 4242 "$T/ro/gpureap-status" >/dev/null 2>"$T/err"; RC=$?
        set -e
        [ "$RC" = 3 ] || fail "real uid 4242, effective root: gpureap-status answered by itself (exit $RC)"
        ok "real and effective uids that differ: gpureap's (judged for the real one, which serve cannot see)"
fi
# another build beside it: serve renders for its own build only
cp "$GPUREAP_TEST_HOOKS" "$T/ro/gpureap"
chmod 0644 "$T/ro/gpureap"
set +e
"$T/ro/gpureap-status" >/dev/null 2>"$T/err"; RC=$?
set -e
[ "$RC" = 3 ] || fail "beside another build of gpureap: gpureap-status took serve's report (exit $RC)"
ok "beside another build of gpureap: serve answers no, and that gpureap runs"

# $GPUREAP_NVML_TIMEOUT is gpureap's to judge (a bad one is a usage error before serve is asked)
set +e
GPUREAP_NVML_TIMEOUT=bogus "$GPUREAP_STATUS" >"$T/a" 2>"$T/a.err"; RCA=$?
GPUREAP_NVML_TIMEOUT=bogus "$GPUREAP" status >"$T/b" 2>"$T/b.err"; RCB=$?
GPUREAP_NVML_TIMEOUT=5s "$T/ro/gpureap-status" >/dev/null 2>"$T/ro.err"; RCR=$?
set -e
[ $RCA = 2 ] && [ $RCB = 2 ] && cmp -s "$T/a.err" "$T/b.err" && [ ! -s "$T/a" ] ||
        fail "GPUREAP_NVML_TIMEOUT=bogus: exit $RCA, '$(cat "$T/a.err")' against $RCB, '$(cat "$T/b.err")'"
[ $RCR = 3 ] || fail "GPUREAP_NVML_TIMEOUT=5s: gpureap-status answered by itself (exit $RCR)"
ok "GPUREAP_NVML_TIMEOUT set: gpureap's (a bad one: its line and exit 2)"

# no gpureap beside it to read or run: a FIFO there is not waited on; a program run from a
# memfd (no directory) runs no gpureap at all
mkdir "$T/fifo"
cp "$GPUREAP_STATUS" "$T/fifo/gpureap-status"
mkfifo "$T/fifo/gpureap"
set +e
timeout 20 "$T/fifo/gpureap-status" >/dev/null 2>"$T/err"; RC=$?
set -e
[ $RC = 3 ] || fail "a FIFO named gpureap beside it: exit $RC ($(cat "$T/err"))"
ok "a FIFO named gpureap beside it: not opened for reading, exit 3"
set +e
python3 -c 'import os, sys
fd = os.memfd_create("gs")
os.write(fd, open(sys.argv[1], "rb").read())
os.execv(f"/proc/self/fd/{fd}", ["gpureap-status", "--gpu", "0"])' "$GPUREAP_STATUS" >"$T/out" 2>"$T/err"; RC=$?
set -e
[ $RC = 3 ] && grep -q "cannot tell which directory it was run from" "$T/err" ||
        fail "run from a memfd: exit $RC, $(cat "$T/err")"
ok "run from a memfd: it says it cannot tell which gpureap is its own, and runs none (exit 3)"

# a serve that never answers: asked once (500 ms), then gpureap's own look, not two asks more
python3 - "$T/hung.sock" "$T/hung.count" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(16)
held, n = [], 0
while True:
    c, _ = s.accept()
    held.append(c)
    n += 1
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(n))
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
PY
HUNG=$!
LAUNCHED="$LAUNCHED $HUNG"
for _ in $(seq 1 200); do [ -S "$T/hung.sock" ] && break; sleep 0.02; done
count() { cat "$T/hung.count" 2>/dev/null || echo 0; }
set +e
GPUREAP_SERVE_SOCKET=$T/hung.sock "$GPUREAP" status --json >"$T/b" 2>/dev/null; RCB=$?
nb=$(count)
GPUREAP_SERVE_SOCKET=$T/hung.sock "$GPUREAP_STATUS" --json >"$T/a" 2>/dev/null; RCA=$?
na=$(($(count) - nb))
set -e
[ "$nb" = 1 ] || fail "a hung serve: gpureap status asked it $nb times"
[ "$na" = 1 ] || fail "a hung serve: gpureap-status and the gpureap it ran asked it $na times"
[ $RCA = 1 ] && [ $RCB = 1 ] && [ "$(jq -c '[.gpus[].state]' "$T/a")" = "$(jq -c '[.gpus[].state]' "$T/b")" ] ||
        fail "a hung serve: exit $RCA, $(jq -c '[.gpus[].state]' "$T/a") against $RCB, $(jq -c '[.gpus[].state]' "$T/b")"
ok "a serve that never answers: asked once by each, then a look of its own (the same states, exit 1)"
kill -KILL $HUNG

# the arguments reach gpureap as they were given
mkdir "$T/args"
cp "$GPUREAP_STATUS" "$T/args/gpureap-status"
printf '#!/bin/sh\nfor a in "$@"; do printf "[%%s]" "$a"; done > "%s"\nexit 7\n' "$T/args.txt" >"$T/args/gpureap"
chmod 0755 "$T/args/gpureap"
set +e
"$T/args/gpureap-status" --gpu 0 "a b" "" --why >/dev/null 2>"$T/err"; RC=$?
set -e
[ "$RC" = 7 ] && [ "$(cat "$T/args.txt")" = "[status][--gpu][0][a b][][--why]" ] ||
        fail "gpureap got $(cat "$T/args.txt" 2>/dev/null) (exit $RC)"
ok "gpureap gets 'status' and every argument unchanged, and its exit code is the answer"

# serve down: gpureap status itself, the same report
set +e
GPUREAP_SERVE_SOCKET=$T/none.sock "$GPUREAP_STATUS" --json >"$T/a" 2>"$T/a.err"; RCA=$?
GPUREAP_SERVE_SOCKET=$T/none.sock "$GPUREAP" status --json >"$T/b" 2>"$T/b.err"; RCB=$?
set -e
[ $RCA = $RCB ] && [ $RCA = 1 ] || fail "serve down: exit $RCA against gpureap's $RCB"
# two looks of the machine: what they say of the GPUs and their holders, not what they scanned
facts='[.history.served_by, [.gpus[] | .state], [.findings[] | [.kind, .gpus]], [.processes[] | select(.verdict) | [.pid, .verdict.judgement]]]'
[ "$(jq -c "$facts" "$T/a")" = "$(jq -c "$facts" "$T/b")" ] && [ "$(jq -c '.history.served_by' "$T/a")" = null ] ||
        fail "serve down: the reports differ: $(jq -c "$facts" "$T/a") against $(jq -c "$facts" "$T/b")"
ok "serve down: gpureap's own look, the same GPUs, findings and verdicts, exit 1: $(jq -c '[.gpus[] | .state]' "$T/a")"
for args in "--bogus" "--gpu 7"; do
        set +e
        # shellcheck disable=SC2086
        "$GPUREAP_STATUS" $args >"$T/a" 2>"$T/a.err"; RCA=$?
        # shellcheck disable=SC2086
        "$GPUREAP" status $args >"$T/b" 2>"$T/b.err"; RCB=$?
        set -e
        [ $RCA = 2 ] && [ $RCB = 2 ] && cmp -s "$T/a.err" "$T/b.err" ||
                fail "status $args: exit $RCA, '$(cat "$T/a.err")' against $RCB, '$(cat "$T/b.err")'"
done
ok "a mistake: gpureap's one line and exit 2"

# its output not written: 4 and one line, as gpureap says it
set +e
"$GPUREAP_STATUS" --json >/dev/full 2>"$T/a.err"; RCA=$?
"$GPUREAP" status --json >/dev/full 2>"$T/b.err"; RCB=$?
set -e
[ $RCA = 4 ] && [ $RCB = 4 ] && cmp -s "$T/a.err" "$T/b.err" ||
        fail "to /dev/full: exit $RCA, '$(cat "$T/a.err")' against $RCB, '$(cat "$T/b.err")'"
ok "stdout full: exit 4 and gpureap's line"
# stdout closed: as gpureap (the socket to serve took fd 1, and the report went into it)
set +e
"$GPUREAP_STATUS" --json >&- 2>"$T/a.err"; RCA=$?
"$GPUREAP" status --json >&- 2>"$T/b.err"; RCB=$?
set -e
[ $RCA = 4 ] && [ $RCB = 4 ] && cmp -s "$T/a.err" "$T/b.err" ||
        fail "stdout closed: exit $RCA, '$(cat "$T/a.err")' against $RCB, '$(cat "$T/b.err")'"
ok "stdout closed: exit 4 and gpureap's line ($(cat "$T/a.err"))"
done_testing
