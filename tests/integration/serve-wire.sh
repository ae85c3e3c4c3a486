#!/bin/bash
# 'status' through serve copies serve's snapshot out as its structs (src/snapshot-wire.c) when
# serve is the very same build: the same answer as through serve's JSON (GPUREAP_SERVE_WIRE=0),
# verdicts, findings, serve's memory and the table alike; a client of another build gets JSON;
# a wire cut short or with bytes changed is refused (the client reads the driver itself), never
# a crash.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
command -v readelf >/dev/null || { echo "1..0 # SKIP no readelf"; exit 77; }
id=$(readelf -n "$GPUREAP" | awk '/Build ID:/ {print $3; exit}')
[ -n "$id" ] || { echo "1..0 # SKIP $GPUREAP has no GNU build ID"; exit 77; }
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
serve_start --interval 100ms --listen none

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

# what serve answers: the structs to this build, JSON to another
ask() { # REQUEST FILE
        python3 - "$GPUREAP_SERVE_SOCKET" "$1" "$2" <<'PY'
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
open(sys.argv[3], "wb").write(d)
PY
}
ask "status-wire $id" "$T/wire.bin"
[ "$(head -c 8 "$T/wire.bin")" = "GRWIRE1" ] || fail "this build asked for the wire and got: $(head -c 60 "$T/wire.bin" | od -c | head -2)"
ok "serve answers this build ($id) with its structs ($(stat -c %s "$T/wire.bin") bytes)"
ask "status-wire 0123456789abcdef0123456789abcdef01234567" "$T/other.json"
jq -e .schema_version "$T/other.json" >/dev/null || fail "another build got: $(head -c 60 "$T/other.json")"
ok "another build's client gets JSON"

# the same judgement either way: GPU states and memory, each process's verdict and serve's
# memory of it, the findings, the history. (Not every detail: JSON cannot say that a process's
# details were not read, so its loader takes them as read, empty; the structs say it exactly)
same() { jq '{gpus: [.gpus[] | {index, state, memory}], processes: [.processes[] | {pid, ppid, pgid, sid, state, verdict, seen}], findings, history, view}' "$1"; }
for k in $(seq 20); do # serve looks every 100 ms; a loaded machine (the ASan half beside it) straddled a look three times in a row
        gr_served status --json
        cp "$T/out" "$T/via-wire.json"
        GPUREAP_SERVE_WIRE=0 gr_served status --json
        cp "$T/out" "$T/via-json.json"
        # a look may have come between the two: ask again (bounded)
        [ "$(jq .taken_at_unix_ms "$T/via-wire.json")" = "$(jq .taken_at_unix_ms "$T/via-json.json")" ] && break
done
[ "$(jq .taken_at_unix_ms "$T/via-wire.json")" = "$(jq .taken_at_unix_ms "$T/via-json.json")" ] || fail "no two answers of the same look"
diff <(same "$T/via-wire.json") <(same "$T/via-json.json") >"$T/diff" || fail "the wire and the JSON differ: $(head -20 "$T/diff")"
[ "$(jq -r ".processes[] | select(.pid == $w) | .verdict | \"\(.judgement) \(.confidence)\"" "$T/via-wire.json")" = "leftover sure" ] ||
        fail "through the wire $w is not a sure leftover"
ok "status --json through the wire judges as the one through JSON: states, verdicts, findings, serve's memory ($w a sure leftover)"

# a serve that answers a wire cut short or changed: refused, status reads the driver itself
stop_serve() { kill -TERM "$SERVE"; wait "$SERVE" 2>/dev/null || true; }
stop_serve
gr status --json --direct
cp "$T/out" "$T/direct.json"
size=$(stat -c %s "$T/wire.bin")
python3 - "$GPUREAP_SERVE_SOCKET" "$T/wire.bin" "$T/fake.ready" <<'PY' &
import os, random, socket, struct, sys, time
path, wire = sys.argv[1], bytearray(open(sys.argv[2], "rb").read())
# its snapshot's taken_at_ms (the first field after the 96-byte header) made now: a changed
# wire is then read through, not dropped as an old answer
wire[96:104] = struct.pack("<Q", int(time.time() * 1000))
wire = bytes(wire)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(64)
open(sys.argv[3], "w").write("ready\n")
rnd = random.Random(7)
n = 0
while True:
    c, _ = s.accept()
    c.recv(256)
    n += 1
    if n % 3 == 0:
        d = wire[: rnd.randrange(len(wire))]       # cut short
    elif n % 3 == 1:
        d = bytearray(wire)                           # bytes changed past the header
        for _ in range(8):
            d[rnd.randrange(200, len(d))] = rnd.randrange(256)
        d = bytes(d)
    else:
        d = wire + b"x"                               # one byte too many
    try:
        c.sendall(d)
    except OSError:
        pass
    c.close()
PY
FAKE=$!
LAUNCHED="$LAUNCHED $FAKE"
i=0; until [ -s "$T/fake.ready" ]; do i=$((i + 1)); [ $i -lt 500 ] || fail "the fake serve did not start"; sleep 0.02; done
bad=0
for k in $(seq 60); do
        gr status --json
        [ "$RC" -le 3 ] || fail "status exited $RC on a bad wire (run $k): $(cat "$T/err")"
        jq -e .schema_version "$T/out" >/dev/null || fail "status wrote no JSON on a bad wire (run $k)"
        [ "$(jq '.history.served_by // 0' "$T/out")" = 0 ] || bad=$((bad + 1))
done
ok "60 answers cut short, changed or too long: status answered each (exit 0-3, JSON), $bad taken as serve's"
kill -KILL "$FAKE"
done_testing
