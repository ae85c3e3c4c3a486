#!/bin/bash
# 'status' through serve, the fast way (issue 25): serve renders the report that a client of its
# own build and user would render from its structs (status-out), and the client copies it out.
# It is the same report, byte for byte (table, --json, --why, --color, --wide; a table's "seen
# N s ago" line apart, which says the age when asked); serve renders nothing for another build
# or another user (the diagnosis is the asker's: it answers "no", and that client judges from
# the structs itself); and the client really took the fast way (strace: one request, no wire).
. "$TESTLIB"
[ -x /usr/bin/python3 ] || { echo "1..0 # SKIP no /usr/bin/python3"; exit 77; }
command -v readelf >/dev/null || { echo "1..0 # SKIP no readelf"; exit 77; }
command -v setpriv >/dev/null || { echo "1..0 # SKIP no setpriv"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (a client of another user)"; exit 77; }
id=$(readelf -n "$GPUREAP" | awk '/Build ID:/ {print $3; exit}')
[ -n "$id" ] || { echo "1..0 # SKIP $GPUREAP has no GNU build ID"; exit 77; }
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
group=$(getent group 65534 | cut -d: -f1)
[ -n "$group" ] || { echo "1..0 # SKIP no group 65534"; exit 77; }
chmod 0755 "$T" # the other user's client reaches the socket in it
serve_start --interval 300ms --listen none --group "$group"

# a ghost with its hidden holder, a live job, and a worker whose launcher serve saw killed
launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
"$GPUHOLD" pidfile "$PIDS" live-l worker "$PIDS" live-w 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
"$GPUHOLD" pidfile "$PIDS" k-l child setsid pidfile "$PIDS" k-w cuda 1 1 512 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role owner child live-l live-w k-l k-w
w=$(pid_of k-w)
until_served ".processes[] | select(.pid == $w) | .seen.launcher.pid == $(pid_of k-l)"
kill -KILL "$(pid_of k-l)"
until_served "(.processes[] | select(.pid == $w) | .verdict.confidence == \"sure\") and ([.findings[] | select(.kind == \"ghost\")] | length == 1)"

ask() { # REQUEST [other]: serve's answer, asked as root or as uid 4242 of group 65534
        local as=()
        [ -z "${2:-}" ] || as=(setpriv --reuid 4242 --regid 65534 --clear-groups)
        "${as[@]}" /usr/bin/python3 - "$GPUREAP_SERVE_SOCKET" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
d = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    d += c
sys.stdout.buffer.write(d)
PY
}
ask "status-out $id t-- 0 0" >"$T/r.txt"
head -1 "$T/r.txt" | grep -Eq "^ok 1 [0-9]+$" || fail "this build and user got: $(head -c 80 "$T/r.txt")"
[ "$(head -1 "$T/r.txt" | cut -d" " -f3)" = "$(tail -n +2 "$T/r.txt" | wc -c)" ] || fail "the length in the head is not the report's: $(head -1 "$T/r.txt")"
grep -q "^GPU  STATE" "$T/r.txt" || fail "no table in serve's rendered answer: $(head -5 "$T/r.txt")"
ok "serve renders the table for this build and user, with the exit code (1: leftovers) and its length"
ask "status-out 0123456789abcdef0123456789abcdef01234567 t-- 0 0" >"$T/r.txt"
[ "$(cat "$T/r.txt")" = "no" ] || fail "another build got: $(head -c 80 "$T/r.txt")"
ok "another build gets no rendered report"
ask "status-out $id t-- 0 4242" other >"$T/r.txt"
[ "$(cat "$T/r.txt")" = "no" ] || fail "another user got a report rendered for root: $(head -c 80 "$T/r.txt")"
ask "status-out $id t-- 0 4242" >"$T/r.txt"
[ "$(cat "$T/r.txt")" = "no" ] || fail "a root peer that says it is uid 4242 (its real uid) got: $(head -c 80 "$T/r.txt")"
ok "another user gets no rendered report, nor a root peer whose real uid is another (the diagnosis is the asker's)"
for bad in "t-- 99999 0" "tcvx 0 0" "xyz 0 0" "t-- +7 0" "t-- 0x10 0" "t-- 0 0 junk" "t-- 0"; do
        ask "status-out $id $bad" >"$T/r.txt"
        [ "$(cat "$T/r.txt")" = "no" ] || fail "status-out $bad got: $(head -c 80 "$T/r.txt")"
done
ok "a bad width or bad flags: no"

# the same report as the client renders from the structs, of the same look
same_look() { # ARGS...: $T/fast and $T/slow, the two ways, asked until both are of one look
        local k
        for k in $(seq 1 20); do
                gr_served status --json
                local t1; t1=$(jq .taken_at_unix_ms "$T/out")
                set +e
                "$GPUREAP" status "$@" >"$T/fast" 2>"$T/fast.err"; RCF=$?
                GPUREAP_SERVE_WIRE=structs "$GPUREAP" status "$@" >"$T/slow" 2>"$T/slow.err"; RCS=$?
                set -e
                gr_served status --json
                [ "$(jq .taken_at_unix_ms "$T/out")" = "$t1" ] && return 0
        done
        fail "no two answers of one look"
}
for args in "" "--json" "--why" "--color always" "--wide" "--json --why"; do
        # shellcheck disable=SC2086
        same_look $args
        [ $RCF = $RCS ] || fail "status $args: exit $RCF the fast way, $RCS from the structs"
        if [[ "$args" == *json* ]]; then
                cmp -s "$T/fast" "$T/slow" || fail "status $args differs: $(diff "$T/fast" "$T/slow" | head -10)"
        else
                diff <(grep -v "^as seen by gpureap serve" "$T/fast") <(grep -v "^as seen by gpureap serve" "$T/slow") >"$T/d" ||
                        fail "status $args differs: $(head -10 "$T/d")"
                grep -q "^as seen by gpureap serve (PID $SERVE)" "$T/fast" || fail "status $args: not through serve: $(head -3 "$T/fast")"
        fi
        [ ! -s "$T/fast.err" ] || fail "status $args said on stderr: $(cat "$T/fast.err")"
done
ok "table, --json, --why, --color always, --wide: the same report both ways, exit 1 both"
[ "$(jq -r ".processes[] | select(.pid == $w) | .verdict | \"\(.judgement) \(.confidence)\"" "$T/fast")" = "leftover sure" ] ||
        fail "the fast way does not say $w is a sure leftover"
ok "the fast way carries serve's memory: $w, whose launcher serve saw killed, a sure leftover"

# another user through serve: judged from the structs by the client itself (its own answer)
setpriv --reuid 4242 --regid 65534 --clear-groups "$GPUREAP" status --json >"$T/other.json" 2>"$T/other.err" || true
[ "$(jq .history.served_by "$T/other.json")" = "$SERVE" ] || fail "uid 4242 was not answered through serve: $(head -c 200 "$T/other.json") $(cat "$T/other.err")"
ok "uid 4242's status still comes through serve (from the structs)"

if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -s 40 -e trace=sendto,connect -o "$T/strace" "$GPUREAP" status >/dev/null 2>&1 || true
        grep -q 'sendto(.*"status-out ' "$T/strace" || fail "the client did not ask for the rendered report: $(cat "$T/strace")"
        ! grep -q 'status-wire' "$T/strace" || fail "the client asked for the structs too: $(cat "$T/strace")"
        ok "the client asked serve once, for the rendered report, and not for the structs"
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -s 40 -e trace=sendto -o "$T/strace" "$GPUREAP" status --gpu 0 >/dev/null 2>&1 || true
        grep -q 'status-wire' "$T/strace" || fail "status --gpu 0 did not take the structs: $(cat "$T/strace")"
        ok "a selection (--gpu 0) takes the structs: serve renders only the whole report"
        # real uid 4242, effective root: judged for 4242, which serve cannot see: not asked
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 setpriv --ruid 4242 strace -f -qq -s 40 -e trace=sendto -o "$T/strace" "$GPUREAP" status >/dev/null 2>&1 || true
        ! grep -q 'status-out' "$T/strace" || fail "a client whose real uid is not its effective one asked for a rendered report: $(cat "$T/strace")"
        ok "a client whose real and effective uids differ does not ask for a rendered report"
else
        ok "# SKIP strace cannot run here: which way the client took is not checked"
fi

# a serve whose answer is cut short (it closes a client that has not read it all in 2 s): the
# client takes only a whole answer (the length in its head), and reads the driver itself
kill -TERM "$SERVE"; wait "$SERVE" 2>/dev/null || true
/usr/bin/python3 - "$GPUREAP_SERVE_SOCKET" "$T/fake.ready" <<'PY' &
import os, socket, sys
path = sys.argv[1]
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
open(sys.argv[2], "w").close()
s.settimeout(20)
try:
    while True:
        c, _ = s.accept()
        c.recv(4096)
        c.sendall(b"ok 0 99999\nGPU  STATE  CUT SHORT\n")
        c.close()
except socket.timeout:
    pass
PY
FAKE=$!
LAUNCHED="$LAUNCHED $FAKE"
for _ in $(seq 1 200); do [ -e "$T/fake.ready" ] && break; sleep 0.02; done
gr status
! grep -q "CUT SHORT" "$T/out" || fail "the client printed an answer cut short: $(cat "$T/out")"
grep -q "^GPU  STATE" "$T/out" || fail "no report after a cut answer: $(cat "$T/out" "$T/err")"
ok "an answer cut short is not taken: the client reads the driver itself (exit $RC)"
kill "$FAKE" 2>/dev/null; wait "$FAKE" 2>/dev/null || true
done_testing
