#!/bin/bash
# gpureap serve's start-up line and its HTTP pages besides /metrics (docs/serve.md):
#   - one line on stderr once its first look is done: the socket, the HTTP address or none, the
#     holder scan that look used (the one status --json reports), the interval;
#   - / names /metrics and /healthz;
#   - /healthz: 503 "no look yet" while the first look runs (a driver that hangs makes it last),
#     200 "ok" once it ended, also while the driver does not answer (serve looks on: that is
#     /metrics' gpureap_up 0); 503 "stuck" while the refresher thread is held still (ptrace: the
#     other threads run on), with /metrics still answering; 200 again once it is let go.
# No timing is asserted: the test waits for each answer, bounded.
. "$TESTLIB"
command -v curl >/dev/null || { echo "1..0 # SKIP no curl"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
export GPUREAP_SYSLOG_SOCKET=$T/nolog
version=$("$GPUREAP" --version | awk '{print $2}')

# get PATH: the answer's body in $T/out, its status code in $CODE, its type in $T/type
get() {
        CODE=$(curl -s --max-time 5 -o "$T/out" -w '%{http_code} %{content_type}' "http://127.0.0.1:$port$1") || CODE="000 "
        echo "${CODE#* }" >"$T/type"
        CODE=${CODE%% *}
}
# until_code PATH CODE: until PATH answers CODE (20 s)
until_code() {
        local i=0
        until get "$1" && [ "$CODE" = "$2" ]; do
                i=$((i + 1)); [ $i -lt 400 ] || fail "$1 never answered $2 (last $CODE: $(cat "$T/out"))"; sleep 0.05
        done
}
stop_serve() {
        kill -TERM "$SERVE"
        wait "$SERVE" 2>/dev/null || true
}

# a driver that hangs: the first look lasts the whole --nvml-timeout
scenario "gpu 0 minor=0" "hang nvmlDeviceGetMemoryInfo_v2"
port=$(free_port)
"$GPUREAP" serve --interval 250ms --nvml-timeout 5s --listen "127.0.0.1:$port" >"$T/serve.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE"
i=0
until get /healthz && [ "$CODE" != 000 ]; do i=$((i + 1)); [ $i -lt 200 ] || fail "no HTTP: $(cat "$T/serve.out")"; sleep 0.02; done
[ "$CODE" = 503 ] || fail "/healthz during the first look: $CODE $(cat "$T/out")"
grep -Eq '^no look yet: serve started [0-9.]+ s ago, its first look has not ended$' "$T/out" || fail "/healthz said: $(cat "$T/out")"
ok "/healthz during the first look: 503, no look yet"
get /metrics
[ "$CODE" = 503 ] && grep -q '^not ready: no look yet$' "$T/out" || fail "/metrics before the first look: $CODE $(cat "$T/out")"
ok "/metrics too: 503, not ready"
! grep -q 'holder scan' "$T/serve.out" || fail "the start-up line came before the first look"
ok "no start-up line before the first look has ended"
get /
[ "$CODE" = 200 ] || fail "/: $CODE"
grep -q '^text/plain' "$T/type" || fail "/ is $(cat "$T/type")"
has out "^gpureap serve $version \\(PID $SERVE\\):" "/ names serve, its version and PID"
has out '^/metrics  ' "/ names /metrics"
has out '^/healthz  200 "ok" while the looks are fresh \(one every 250 ms\), else 503 and why$' "/ names /healthz"
cp "$T/out" "$T/root.txt"
until_code /healthz 200
grep -qx ok "$T/out" || fail "/healthz 200 said: $(cat "$T/out")"
get /metrics
grep -q '^gpureap_up 0$' "$T/out" || fail "the driver hangs, but /metrics says: $(grep gpureap_up "$T/out")"
ok "the first look timed out in the driver: /healthz 200 ok (serve looks on), /metrics gpureap_up 0"
get /nonexistent
[ "$CODE" = 404 ] && grep -q '^not found: try /metrics or /healthz$' "$T/out" || fail "/nonexistent: $CODE $(cat "$T/out")"
CODE=$(curl -s --max-time 5 -o "$T/out" -w '%{http_code}' -X POST "http://127.0.0.1:$port/healthz")
[ "$CODE" = 405 ] || fail "POST /healthz: $CODE"
ok "another path: 404 naming both; another method: 405"
stop_serve

# a driver that answers: the start-up line, then the refresher held still. The BPF scan is
# asked for (without it the choice hangs on the host's count of open files, which may cross
# the bar between two looks); where it cannot load, the line says why
scenario "gpu 0 minor=0"
port=$(free_port)
GPUREAP_SCAN=bpf serve_start --interval 250ms --nvml-timeout 500ms --listen "127.0.0.1:$port"
i=0
until grep -q 'holder scan' "$T/serve.out"; do i=$((i + 1)); [ $i -lt 500 ] || fail "no start-up line: $(cat "$T/serve.out")"; sleep 0.02; done
gr status --json
case $(jq -r '.proc.scan' "$T/out") in
bpf) scan=BPF ;;
proc) scan="/proc$(jq -r 'if .proc.scan_fallback then " (\(.proc.scan_fallback))" else "" end' "$T/out")" ;;
*) fail "status says the scan was $(jq -c .proc "$T/out")" ;;
esac
line="gpureap: serve $version (PID $SERVE): socket '$GPUREAP_SERVE_SOCKET', HTTP 127.0.0.1:$port, holder scan $scan, a look every 250 ms"
[ "$(grep -c 'holder scan' "$T/serve.out")" = 1 ] && grep -qxF "$line" "$T/serve.out" ||
        fail "the start-up line is not '$line': $(cat "$T/serve.out")"
ok "one start-up line: socket, HTTP address, the scan status --json reports ($scan), the interval"
grep -F 'holder scan' "$T/serve.out" >"$T/start.txt"
until_code /healthz 200
ok "/healthz: 200 ok"
tid=$(for t in /proc/"$SERVE"/task/*; do [ "$(cat "$t/comm" 2>/dev/null)" != serve-looks ] || basename "$t"; done)
[ -n "$tid" ] || fail "no thread named serve-looks in serve: $(cat /proc/"$SERVE"/task/*/comm)"
python3 "$ROOT/tests/helper/freeze-thread.py" "$tid" "$T/frozen" 2>"$T/freeze.err" &
freezer=$!
LAUNCHED="$LAUNCHED $freezer"
i=0
until [ -s "$T/frozen" ]; do
        if ! kill -0 "$freezer" 2>/dev/null; then
                set +e; wait "$freezer"; frc=$?; set -e
                [ "$frc" = 77 ] || fail "the refresher could not be held: $(cat "$T/freeze.err")"
                echo "# SKIP the stuck refresher: this test may not ptrace serve ($(cat "$T/freeze.err"))"
                stop_serve
                done_testing
                exit 0
        fi
        i=$((i + 1)); [ $i -lt 500 ] || fail "the refresher was never held"; sleep 0.02
done
until_code /healthz 503
grep -Eq '^stuck: (no look for [0-9.]+ s|a look started [0-9.]+ s ago has not ended) \(a look every 250 ms' "$T/out" || fail "/healthz 503 said: $(cat "$T/out")"
ok "the refresher held still: /healthz 503, $(cat "$T/out")"
cp "$T/out" "$T/stuck.txt"
get /metrics
[ "$CODE" = 200 ] && grep -q '^gpureap_up 1$' "$T/out" || fail "/metrics while the refresher is stuck: $CODE"
ok "/metrics still answers, from the last look"
kill -TERM "$freezer"
wait "$freezer" || fail "the freezer did not let the refresher go"
until_code /healthz 200
ok "let go: its looks go on, /healthz 200 ok again"
stop_serve

# no HTTP, the /proc scan asked for, the default interval. Its own output file: the shell
# truncates a reused one only once the background child runs, so a wait on its content could
# read the previous serve's start-up line
GPUREAP_SCAN=proc "$GPUREAP" serve --listen none >"$T/serve3.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE"
i=0
until grep -q 'holder scan' "$T/serve3.out"; do i=$((i + 1)); [ $i -lt 500 ] || fail "no start-up line: $(cat "$T/serve3.out")"; sleep 0.02; done
grep -qxF "gpureap: serve $version (PID $SERVE): socket '$GPUREAP_SERVE_SOCKET', HTTP none, holder scan /proc, a look every 1000 ms" "$T/serve3.out" ||
        fail "start-up line: $(cat "$T/serve3.out")"
ok "--listen none, GPUREAP_SCAN=proc: 'HTTP none, holder scan /proc, a look every 1000 ms'"
stop_serve
# docs/serve.md shows them (tests/fixtures/docs-examples/README.md)
doc_example serve-start.txt "$T/start.txt"
doc_example serve-root.txt "$T/root.txt"
doc_example serve-healthz-stuck.txt "$T/stuck.txt"
done_testing
