#!/bin/bash
# gpureap status against nvidia-smi and nvidia-smi --query-compute-apps on a real NVIDIA GPU,
# interleaved in the same run (bench/runbench.c), idle and with one CUDA process holding 2 GiB.
#   bench/bench-status-gpu.sh GPUREAP RUNBENCH [RUNS]
# Read-only: it queries the driver and starts one CUDA process of its own, which it kills.
set -u
G=${1:?gpureap} RB=${2:?runbench} N=${3:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
bench() {
        "$RB" -n "$N" -w 5 \
                "gpureap status --json" -- "$G" status --json ::: \
                "gpureap status" -- "$G" status ::: \
                "nvidia-smi" -- nvidia-smi ::: \
                "nvidia-smi --query-compute-apps" -- nvidia-smi --query-compute-apps=pid,used_memory --format=csv ::: \
                "gpureap, NVML not loaded" -- env GPUREAP_NVML_LIBRARY=/nonexistent "$G" status
}
echo "## idle GPU ($(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1))"
bench
PIDS=$(mktemp)
python3 "$HERE/../tests/gpu/cuda_procs.py" ghost "$PIDS" 2 &
L=$!
for _ in $(seq 1200); do grep -q '^child ' "$PIDS" && break; sleep 0.1; done
echo "## one CUDA process (2 GiB) and its forked child"
bench
for p in $(awk '{print $2}' "$PIDS"); do kill -KILL "$p" 2>/dev/null; done
wait "$L" 2>/dev/null
rm -f "$PIDS"
