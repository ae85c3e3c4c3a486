#!/bin/bash
# Issue 9, item 7: "the driver did not answer" (exit 3) when it had. The driver's deadline began
# before the /proc scan and was checked before the answer waiting in the pipe was read, so a
# scan longer than --nvml-timeout failed every status, wait and reap. Here: 10,000 more
# processes and one holding 19,000 fds, the fake driver answering at once, and a deadline
# shorter than the scan: no call may fail, the scan is reported as slow, and a real hang still
# ends at its deadline with exit 3.
#   ROUNDS=N (default 2, one JSON and one table: about 30 s in the sanitizer build on 2 cores,
#   where a scan takes 3 s);
#   tests/stress/status-slow-scan.sh runs it with 100
. "$TESTLIB"
: "${MKTREE:?bench/mktree}"
ROUNDS=${ROUNDS:-2}
PROCS=10000 FDS=19000

# only processes this test started: the groups its two mktree made
GROUPS_MADE=""
trap 'for g in $GROUPS_MADE; do kill -KILL -- "-$g" 2>/dev/null || true; done; cleanup' EXIT

free_pids=$(( $(cat /proc/sys/kernel/pid_max) - $(ls -d /proc/[0-9]* | wc -l) ))
nproc_limit=$(ulimit -u)
[ "$nproc_limit" != unlimited ] || nproc_limit=$free_pids
if [ "$free_pids" -lt $((PROCS + 2000)) ] || [ "$nproc_limit" -lt $((PROCS + 2000)) ]; then
        echo "1..0 # SKIP room for $PROCS more processes is needed"
        exit 77
fi
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge $((FDS + 100)) ] || FDS=$((hard - 100))

# tree PROCS FDS: start mktree, wait until it says "ready PGID" (bounded), record the group
tree() {
        "$MKTREE" "$1" "$2" 0 "$T/dev" >"$T/ready-$2" &
        LAUNCHED="$LAUNCHED $!"
        local i=0
        until grep -q '^ready ' "$T/ready-$2" 2>/dev/null; do
                i=$((i + 1))
                [ $i -lt 1200 ] || fail "mktree $1 $2 never got ready"
                sleep 0.05
        done
        GROUPS_MADE="$GROUPS_MADE $(awk '/^ready/ {print $2}' "$T/ready-$2")"
}
tree "$PROCS" 0
tree 1 "$FDS"
big=$(pgrep -g "$(awk '/^ready/ {print $2}' "$T/ready-$FDS")" | while read -r p; do
        [ "$(ls "/proc/$p/fd" | wc -l)" -ge "$FDS" ] && echo "$p"; done)
[ -n "$big" ] || fail "no process holds $FDS fds"
ok "$(ls -d /proc/[0-9]* | wc -l) processes; process $big holds $(ls "/proc/$big/fd" | wc -l) fds"

launch pidfile "$PIDS" owner cuda 0 0 512 sleep
wait_role owner

# the scan's length here, with a deadline that cannot be reached; then a deadline well inside it
gr status --json --nvml-timeout 60s
expect_rc 1 "one look with a long deadline"
scan_ms=$(jq '.proc.elapsed_ms // empty' "$T/out")
[ -n "$scan_ms" ] || scan_ms=$(jq '.driver.elapsed_ms' "$T/out") # before the fix: the wait covered the scan
timeout_ms=$((scan_ms / 3))
[ $timeout_ms -ge 30 ] || timeout_ms=30
echo "# the scan took $scan_ms ms; --nvml-timeout ${timeout_ms}ms"
[ "$scan_ms" -gt $timeout_ms ] || fail "the scan ($scan_ms ms) is not longer than the deadline: the test proves nothing"
ok "negative control: the scan takes longer than the driver's deadline"

# every other call as JSON, the rest as the table; the last of each is looked at below
spurious=0
for i in $(seq "$ROUNDS"); do
        if [ $((i % 2)) -eq 1 ]; then
                gr status --json --nvml-timeout "${timeout_ms}ms"
                cp "$T/out" "$T/last.json"
        else
                gr status --nvml-timeout "${timeout_ms}ms"
                cp "$T/out" "$T/last.txt"
                cp "$T/err" "$T/last.err"
        fi
        if [ "$RC" -eq 3 ]; then
                spurious=$((spurious + 1))
                echo "# round $i: exit 3: $(cat "$T/err")"
        elif [ "$RC" -ne 1 ]; then
                fail "round $i: exit $RC"
        fi
done
[ $spurious -eq 0 ] || fail "$spurious of $ROUNDS status calls said the driver did not answer"
ok "$ROUNDS status calls with --nvml-timeout ${timeout_ms}ms: no spurious exit 3"
cp "$T/last.json" "$T/out"
jqok '.driver.status == "ok" and .proc.slow == true and .proc.elapsed_ms > '$timeout_ms "the slow scan is reported in the JSON, the driver as ok"
if [ "$ROUNDS" -ge 2 ]; then
        cp "$T/last.txt" "$T/out"
        cp "$T/last.err" "$T/err"
        has out "^note: reading /proc took [0-9]+ ms \([0-9]+ processes\): a slow host, not a driver failure" "the table notes the slow scan"
        hasnt err "did not answer" "no driver failure on stderr"
fi

gr wait --timeout 0 --nvml-timeout "${timeout_ms}ms"
expect_rc 1 "wait: not clean (a live owner), not a driver failure"
gr reap --dry-run --nvml-timeout "${timeout_ms}ms"
expect_rc 0 "reap --dry-run: no driver failure"

# a real hang in the same crowd still ends at its deadline, naming the call
scenario "gpu 0" "hang nvmlDeviceGetMemoryInfo_v2"
set +e
timeout -s KILL 60 "$GPUREAP" status --json --nvml-timeout 300ms >"$T/out" 2>"$T/err"
RC=$?
set -e
[ $RC -ne 137 ] || fail "gpureap hung on a hung driver"
expect_rc 3 "a hung driver: exit 3"
has err "did not answer 'nvmlDeviceGetMemoryInfo_v2' within 300 ms" "names the call that hung"
done_testing
