#!/bin/bash
# A real CUDA process forks a child that closes every file above 2 but keeps its mappings (a
# daemonizing fork without exec), then the parent is killed. Does the mapping keep the dead
# parent's memory? On driver 580 (H200, 2026-12-04) it does not: the driver frees the memory
# with the owner, although the child still maps /dev/nvidia0 30 times; gpureap must then say
# clean (no mappings search is needed: a fake driver that kept it was not this one). Also prints
# the NVIDIA footprint of cuInit alone, a context, and a fork (what the verdicts' thresholds,
# GR_CUDA_GPU_FDS_MIN and GR_CUDA_MAPS_MIN, rest on). Run by hand on an NVIDIA machine:
#   tests/gpu/maps.sh GPUREAP_BINARY OUTDIR
# It never resets or reconfigures the GPU, and it signals only the processes it started (by the
# PIDs they recorded). Takes 1 GiB with a plain allocation.
set -u
. "$(dirname "$0")/lib.sh"
python3 "$HERE/cuda_procs.py" footprint 2>&1 | sed 's/^/INFO footprint: /'
"$G" status --json >"$OUT/base.json"
python3 "$HERE/cuda_procs.py" map-keeper "$PIDS" 1 &
LAUNCH=$!
for _ in $(seq 1200); do grep -q "^keeper " "$PIDS" && grep -q "^owner " "$PIDS" && break; sleep 0.1; done
owner=$(pid_of owner) keeper=$(pid_of keeper)
[ -n "$owner" ] && [ -n "$keeper" ] || { echo "FAIL the CUDA processes never started"; exit 1; }
echo "INFO owner $owner keeper $keeper: keeper's fds $(ls /proc/$keeper/fd | tr '\n' ' '), nvidia mappings $(grep -c /dev/nvidia /proc/$keeper/maps)"
kill -KILL "$owner"; wait "$LAUNCH" 2>/dev/null
sleep 1 # past a teardown: the memory stays because the keeper maps it
"$G" status --json >"$OUT/after.json"
"$G" status >"$OUT/after.txt"
python3 - "$OUT/base.json" "$OUT/after.json" "$keeper" <<'PY' || rc=1
import json, sys
b = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2])); keeper = int(sys.argv[3])
maps = sum(" /dev/nvidia" in l for l in open(f"/proc/{keeper}/maps"))
back = all(x["memory"]["used"] == y["memory"]["used"] for x, y in zip(a["gpus"], b["gpus"]))
clean = all(g["state"] == "clean" for g in a["gpus"])
print(("PASS" if back and clean else "FAIL") + f" the owner killed, its fork still mapping the device ({maps} mappings): memory back at baseline {back}, every GPU clean {clean}")
sys.exit(0 if back and clean else 1)
PY
echo "maps.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
