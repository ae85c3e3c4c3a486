#!/bin/bash
# The scenario corpus (tests/scenarios/) on a real NVIDIA machine, with real CUDA processes:
# GPUREAP_SCENARIO_CUDA=1 makes the launcher models take GPU memory with torch (512 MiB a holder,
# at most 1 GiB at a time), the torchrun scenarios run the real torchrun, gpureap reads the real
# driver. Run by hand:
#   tests/gpu/scenarios.sh GPUREAP_BINARY OUTDIR
# It prints the same TAP lines and figures as the CI corpus, writes OUTDIR/scenarios.md (the
# table) and saves every scenario's `status --json` and dry-run plans in OUTDIR as fixtures.
# Needs: python3 with torch (PYTHON=... to choose it), torchrun on PATH, bash.
#
# Rules on that machine (obeyed by tests/scenarios/run-corpus.py --cuda):
#   - never reset a GPU and never change any of its settings (nothing that writes to the driver; no
#     cgroup of ours: the scenarios that need one are not in this subset);
#   - signal only processes this script started: the PIDs its trees recorded, the runner's own
#     children, and processes that carry this run's unique pid file in their environment;
#   - every `gpureap reap` is a --dry-run limited with --pid to the script's own PIDs. With --pid
#     the plan is "exactly these", so what the default plan would kill is taken from each
#     verdict (leftover and sure, as docs/verdicts.md "What reap kills" says).
set -u
G=${1:?gpureap binary}
OUT=${2:?output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT"
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        echo "1..0 # SKIP $PY has no torch with CUDA here"
        exit 77
fi
if ! command -v torchrun >/dev/null 2>&1; then
        echo "1..0 # SKIP torchrun is not on PATH"
        exit 77
fi
nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv >"$OUT/gpus-before.csv" 2>&1
GPUREAP_SCENARIO_PYTHON=$(command -v "$PY") \
        "$PY" "$HERE/../scenarios/run-corpus.py" --cuda --gpureap "$G" --fixtures "$OUT" \
        --table "$OUT/scenarios.md" "${@:3}"
rc=$?
nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv >"$OUT/gpus-after.csv" 2>&1
echo "scenarios.sh: $([ $rc -eq 0 ] && echo PASS || echo "FAIL (exit $rc)"); fixtures in $OUT"
exit $rc
