#!/bin/bash
# gpureap run tells systemd (Type=notify) and a file when the command is ready: READY=1 from
# gpureap's own PID once --ready-log has matched (not before), STOPPING=1 at the end; the
# command does not get NOTIFY_SOCKET (gpureap is the service's main process); --ready-file
# exists only while the command is ready.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is needed to listen as systemd does"; exit 77; }
cat >"$T/listen.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[2] + ".up", "w").close()
with open(sys.argv[2], "a") as out:
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", "|") + "\n")
        out.flush()
PY
python3 "$T/listen.py" "$T/notify.sock" "$T/notes" &
LAUNCHED="$LAUNCHED $!"
for _ in $(seq 500); do [ -e "$T/notes.up" ] && break; sleep 0.01; done
[ -e "$T/notes.up" ] || fail "the listener never came up"
cat >"$T/server.sh" <<'SH'
[ -e "$1" ] && echo "ready file too early"
sleep 0.3
echo listening
for _ in $(seq 300); do [ -e "$1" ] && break; sleep 0.01; done
[ -e "$1" ] && echo "ready file seen: $(cat "$1")"
[ -n "${NOTIFY_SOCKET:-}" ] && echo "the command got NOTIFY_SOCKET"
exit 0
SH
set +e
NOTIFY_SOCKET=$T/notify.sock "$GPUREAP" run --ready-log '^listening$' --ready-file "$T/ready" -- sh "$T/server.sh" "$T/ready" >"$T/out" 2>"$T/err" &
g=$!
LAUNCHED="$LAUNCHED $g"
wait "$g"; RC=$?
set -e
expect_rc 0 "the command's status"
hasnt out "too early" "no ready file before the log line"
has out "^ready file seen: ready [0-9]+ [0-9]+$" "the ready file once the log line was seen"
hasnt out "got NOTIFY_SOCKET" "the command does not get NOTIFY_SOCKET"
[ ! -e "$T/ready" ] || fail "the ready file outlived the run"
ok "the ready file is removed at the end"
for _ in $(seq 200); do grep -q STOPPING "$T/notes" 2>/dev/null && break; sleep 0.01; done
cp "$T/notes" "$T/out"
has out "^READY=1\\|MAINPID=$g\\|STATUS=running sh$" "READY=1 from gpureap's own PID"
has out "^STOPPING=1\\|" "STOPPING=1 at the end"
[ "$(grep -c READY "$T/notes")" = 1 ] || fail "READY sent $(grep -c READY "$T/notes") times"
[ "$(head -n 1 "$T/notes" | cut -c1-7)" = READY=1 ] || fail "STOPPING before READY"
ok "READY once, before STOPPING"
# a command that never becomes ready: no READY at all
: >"$T/notes"
NOTIFY_SOCKET=$T/notify.sock gr run --ready-log '^never$' --ready-timeout 300ms --ready-file "$T/ready2" -- sleep 5
expect_rc 121 "not ready"
sleep 0.1
! grep -q READY "$T/notes" || fail "READY sent for a command that never was ready"
[ ! -e "$T/ready2" ] || fail "a ready file for a command that never was ready"
ok "never ready: no READY, no file"
gr run --ready-file "" -- true
expect_rc 2 "--ready-file needs a file"
done_testing
