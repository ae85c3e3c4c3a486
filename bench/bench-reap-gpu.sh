#!/bin/bash
# Time to verified clean: 'gpureap reap' against the driver's own teardown (SIGKILL + tight NVML
# polling, bench/drain-probe) for the same allocation, and against the habit
# 'kill -9; sleep 3; nvidia-smi'. RUNS rounds of each, 8 GiB each time.
#   bench/bench-reap-gpu.sh GPUREAP DRAIN_PROBE [RUNS]
# Signals only the CUDA processes it started; never resets or reconfigures the GPU.
set -u
G=${1:?gpureap} DP=${2:?drain-probe} N=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
P=$HERE/../tests/gpu/cuda_procs.py
PIDS=$(mktemp)
trap 'for p in $(awk "{print \$2}" "$PIDS"); do kill -KILL $p 2>/dev/null; done; rm -f "$PIDS"' EXIT
wait_role() { for _ in $(seq 1800); do grep -q "^$1 " "$PIDS" && return 0; sleep 0.1; done; return 1; }
pid_of() { awk -v r="$1" '$1 == r {print $2}' "$PIDS" | tail -n1; }
base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0)
target=$(( (base + 64) * 1048576 ))
echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1), 8 GiB per run, baseline ${base} MiB used"
printf '%-4s %14s %22s %18s %14s\n' run teardown_ms reap_signal_to_drain reap_total_ms habit_ms
for r in $(seq "$N"); do
        : >"$PIDS"
        python3 "$P" worker "$PIDS" w 8 2>/dev/null &
        wait_role w
        td=$("$DP" "$(pid_of w)" 0 "$target")
        wait 2>/dev/null

        : >"$PIDS"
        python3 "$P" ghost "$PIDS" 8 2>/dev/null &
        wait_role child
        kill -KILL "$(pid_of owner)"; wait 2>/dev/null
        t0=$(date +%s%N)
        out=$("$G" reap --yes --pid "$(pid_of child)" --grace 5s)
        t1=$(date +%s%N)
        drain=$(echo "$out" | sed -n 's/^memory back \([0-9.]*\) ms after the first signal/\1/p')

        : >"$PIDS"
        python3 "$P" worker "$PIDS" w 8 2>/dev/null &
        wait_role w
        h0=$(date +%s%N)
        kill -9 "$(pid_of w)"; sleep 3; nvidia-smi >/dev/null
        h1=$(date +%s%N)
        wait 2>/dev/null
        printf '%-4s %14s %22s %18s %14s\n' "$r" "$td" "${drain:-?}" "$(( (t1 - t0) / 1000000 ))" "$(( (h1 - h0) / 1000000 ))"
done
