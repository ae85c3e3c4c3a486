#!/bin/bash
# Every real-GPU check in one go (each sources lib.sh), for an NVIDIA machine: ghost, orphans, reap, run, threads, maps, the scenario
# corpus with real CUDA processes, and (with RUNBENCH) the status benchmark against nvidia-smi.
#   tests/gpu/all.sh GPUREAP OUTDIR [RUNBENCH]
# Each part keeps to its own rules (see its header): no reset, no setting changed, only its own
# processes signalled. Prints one line per part and exits 1 when any failed.
set -u
G=$(realpath "${1:?gpureap binary}")
OUT=${2:?output folder}
RB=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
nvidia-smi >"$OUT/nvidia-smi-before.txt" 2>&1
"$G" --version >"$OUT/version.txt" 2>&1
summary=()
rc=0
part() { # NAME TIMEOUT COMMAND...
        local name=$1 t=$2; shift 2
        local t0=$(date +%s)
        timeout --kill-after=10 "$t" "$@" >"$OUT/$name.log" 2>&1
        local r=$?
        summary+=("$name: exit $r in $(( $(date +%s) - t0 )) s")
        [ $r -eq 0 ] || rc=1
        echo "== $name (exit $r)"; grep -E '^(PASS|FAIL|INFO|not ok|# )' "$OUT/$name.log" | head -n 80
}
part ghost 180 bash "$HERE/ghost.sh" "$G" "$OUT/ghost"
part orphans 180 bash "$HERE/orphans.sh" "$G" "$OUT/orphans"
part reap 240 bash "$HERE/reap.sh" "$G" "$OUT/reap"
part run 180 bash "$HERE/run.sh" "$G" "$OUT/run"
part threads 180 bash "$HERE/threads.sh" "$G" "$OUT/threads"
part maps 180 bash "$HERE/maps.sh" "$G" "$OUT/maps"
[ -n "$RB" ] && part bench-status 240 bash "$HERE/../../bench/bench-status-gpu.sh" "$G" "$(realpath "$RB")" "${BENCH_RUNS:-50}"
part scenarios "${SCENARIO_TIMEOUT:-300}" bash "$HERE/scenarios.sh" "$G" "$OUT/scenarios"
nvidia-smi >"$OUT/nvidia-smi-after.txt" 2>&1
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
exit $rc
