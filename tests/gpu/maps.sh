#!/bin/bash
# A real CUDA process forks a child that closes every file above 2 but keeps its mappings (a
# daemonizing fork without exec), then the parent is killed: the driver still lists the dead
# parent's memory, and no process has a device file open. gpureap must name the child (found by
# the mappings search) as the ghost's keeper, likely, not "memory being torn down [sure]"; and
# reap --pid must end it and get the memory back. Also prints the NVIDIA footprint of cuInit
# alone, a context, and a fork (what the verdicts' thresholds rest on). Run by hand on an NVIDIA
# machine:  tests/gpu/maps.sh GPUREAP_BINARY OUTDIR
# It never resets or reconfigures the GPU, and it signals only the processes it started (by the
# PIDs they recorded; reap is limited to them with --pid). Takes 1 GiB with a plain allocation.
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
"$G" status --json >"$OUT/kept.json"
"$G" status >"$OUT/kept.txt"
python3 - "$OUT/kept.json" "$owner" "$keeper" <<'PY' || rc=1
import json, sys
s = json.load(open(sys.argv[1])); owner = int(sys.argv[2]); keeper = int(sys.argv[3])
p = next((q for q in s["processes"] if q["pid"] == keeper), None)
ghosts = [f for f in s["findings"] if f["kind"] == "ghost"]
ok = p is not None and p.get("devices") and p["devices"]["fds"] == 0 and p["devices"]["maps"] > 0 \
     and any(keeper in f["pids"] and f["related_pid"] == owner for f in ghosts) \
     and p["verdict"]["confidence"] != "sure"
print(("PASS" if ok else "FAIL") + f" the keeper {keeper} is named: devices {p and p.get('devices')}, verdict {p and p.get('verdict', {}).get('judgement')} {p and p.get('verdict', {}).get('confidence')}; maps_search {s['proc'].get('maps_search')}; findings {[(f['kind'], f['confidence']) for f in s['findings']]}")
sys.exit(0 if ok else 1)
PY
"$G" reap --pid "$keeper" --yes >"$OUT/reap.out" 2>&1
echo "reap --pid $keeper: exit $?" | tee -a "$OUT/reap.out"
"$G" status --json >"$OUT/after.json"
python3 - "$OUT/base.json" "$OUT/after.json" "$keeper" <<'PY' || rc=1
import json, os, sys
b = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2])); pid = int(sys.argv[3])
gone = not os.path.exists(f"/proc/{pid}")
back = all(x["memory"]["used"] == y["memory"]["used"] for x, y in zip(a["gpus"], b["gpus"]))
print(("PASS" if gone and back else "FAIL") + f" after reap: {pid} gone {gone}, memory back at baseline {back}")
sys.exit(0 if gone and back else 1)
PY
echo "maps.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
