#!/bin/bash
# serve's /metrics survives idle connections (issue 26, item 9): any local user may open
# connections to its port and send nothing. With 300 of them open (loopback only), a scrape
# still gets the metrics within its timeout; and once they are closed serve answers as before.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
scenario "gpu 0 minor=0"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
port=$(free_port)
"$GPUREAP" serve --interval 200ms --listen "127.0.0.1:$port" >"$T/serve.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE"

# scrape: GET /metrics with a bounded timeout (Prometheus's default is 10 s); the body in $T/out
scrape() {
        python3 - "$port" >"$T/out" 2>"$T/err" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
s.close()
sys.stdout.write(data.decode("utf-8", "replace"))
PY
}
i=0
until scrape && grep -q '^gpureap_up 1' "$T/out"; do
        i=$((i + 1)); [ $i -lt 200 ] || fail "serve's /metrics never answered: $(cat "$T/serve.out")"; sleep 0.05
done
ok "serve answers /metrics"

# 300 idle connections, held by a python3 of the test's own (its PID recorded): it opens them,
# says how many it holds, and closes them all when its stdin closes (or after 60 s at most)
mkfifo "$T/hold.in"
cat >"$T/hold.py" <<'PY'
import select, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
conns = []
for _ in range(n):
    try:
        conns.append(socket.create_connection(("127.0.0.1", port), timeout=2))
    except OSError as e:
        print("connect failed:", e, flush=True)
        break
print("holding", len(conns), flush=True)
# hold them until told (stdin closed), at most 60 s
select.select([sys.stdin], [], [], 60)
sys.stdin.read()
for c in conns:
    c.close()
print("closed", flush=True)
PY
python3 "$T/hold.py" "$port" 300 <"$T/hold.in" >"$T/hold.out" 2>&1 &
HOLDER=$!
LAUNCHED="$LAUNCHED $HOLDER"
exec 9>"$T/hold.in"
i=0
until grep -q "^holding" "$T/hold.out"; do i=$((i + 1)); [ $i -lt 500 ] || fail "the holder never said: $(cat "$T/hold.out")"; sleep 0.02; done
grep -q "^holding 300$" "$T/hold.out" || fail "the holder: $(cat "$T/hold.out")"
ok "300 idle connections open to serve's port"
scrape || fail "the scrape failed with 300 idle connections open"
grep -q '^gpureap_up 1' "$T/out" || fail "no metrics with 300 idle connections open"
grep -q '^HTTP/1.1 200' "$T/out" || fail "not 200 with 300 idle connections open"
ok "a scrape with 300 idle connections open: 200 and the metrics"
kill -0 "$SERVE" || fail "serve ended"
exec 9>&-
wait "$HOLDER" || true
grep -q "^closed" "$T/hold.out" || fail "the holder did not close its connections: $(cat "$T/hold.out")"
scrape && grep -q '^gpureap_up 1' "$T/out" || fail "no metrics after the idle connections closed"
ok "they closed: serve answers as before"
kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true
done_testing
