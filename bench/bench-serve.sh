#!/bin/bash
# gpureap serve's own cost: CPU and memory idle, with 10,000 more processes on the host, and
# under a fork storm (every exit is a process event it reads), on the fake driver with four
# holders. Needs root (the process events).
#   bench/bench-serve.sh BUILD_DIR [SECONDS]
set -u
B=$(realpath "${1:?build dir}") S=${2:-10}
T=$(mktemp -d /tmp/gpureap-bench-serve.XXXXXX)
mkdir -p "$T/dev" "$T/ctx"
for f in nvidiactl nvidia-uvm nvidia0 nvidia1 nvidia2 nvidia3; do truncate -s 4096 "$T/dev/$f"; done
printf 'contexts %s\ngpu 0 minor=0\ngpu 1 minor=1\ngpu 2 minor=2\ngpu 3 minor=3\n' "$T/ctx" >"$T/scenario"
export GPUREAP_DEV_DIR=$T/dev GPUREAP_FAKE_CTX_DIR=$T/ctx GPUREAP_NVML_LIBRARY=$B/tests/libnvidia-ml.so.1
export GPUREAP_FAKE_NVML_SCENARIO=$T/scenario GPUREAP_SERVE_SOCKET=$T/serve.sock GPUREAP_SYSLOG_SOCKET=$T/nolog
pids=()
for g in 0 1 2 3; do "$B/tests/gpuhold" cuda $g $g 1024 sleep & pids+=($!); done
"$B/src/gpureap" serve --listen none --interval 1s >"$T/serve.log" 2>&1 &
SV=$!
trap 'kill -TERM $SV 2>/dev/null; kill -KILL "${pids[@]}" 2>/dev/null; [ -n "${PG:-}" ] && kill -KILL -- -$PG 2>/dev/null; wait; rm -rf "$T"' EXIT
sleep 2
cpu() { awk '{print $14 + $15}' /proc/$SV/stat; }
rss() { awk '/VmRSS/ {print $2}' /proc/$SV/status; }
phase() { # NAME: serve's CPU and RSS over S seconds
        local c0 c1 t0 t1
        c0=$(cpu); t0=$(date +%s%N)
        sleep "$S"
        c1=$(cpu); t1=$(date +%s%N)
        printf '%-34s CPU %5.1f%% of a core  RSS %6d KiB  HWM %6d KiB\n' "$1" \
                "$(awk -v c="$((c1 - c0))" -v ms="$(((t1 - t0) / 1000000))" -v hz="$(getconf CLK_TCK)" 'BEGIN { print c * 1000 / hz / ms * 100 }')" "$(rss)" \
                "$(awk '/VmHWM/ {print $2}' /proc/$SV/status)"
}
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, $(ls /proc | grep -c '^[0-9]') processes, interval 1s, ${S}s per phase"
phase "idle, 4 holders"
"$B/bench/mktree" 10000 0 0 "$T/dev" >"$T/mktree.out" &
MT=$!
for _ in $(seq 600); do grep -q ready "$T/mktree.out" && break; sleep 0.1; done
PG=$(awk '/ready/ {print $2}' "$T/mktree.out")
phase "10,000 more processes"
kill -KILL -- -"$PG"; PG=; wait "$MT" 2>/dev/null
sleep 2
"$B/bench/forkstorm" "$S" >"$T/forks" &
phase "fork storm"
wait $!
echo "fork storm: $(cat "$T/forks") processes forked and ended in ${S}s ($(( $(cat "$T/forks") / S ))/s)"
"$B/src/gpureap" status --json | jq -c '{events: .history.events, events_lost: .history.events_lost}'
