#!/bin/bash
# Reproduces the ghost with real CUDA processes on an NVIDIA machine and checks gpureap against
# nvidia-smi. Run by hand:  tests/gpu/ghost.sh GPUREAP_BINARY OUTDIR
# It never resets or reconfigures the GPU, and it signals only the processes it started (by the
# PIDs they recorded). Takes 2 GiB of GPU memory with a plain allocation.
set -u
. "$(dirname "$0")/lib.sh"
wait_role() { # ROLE: until recorded, at most 120 s
        for _ in $(seq 1200); do grep -q "^$1 " "$PIDS" && return 0; sleep 0.1; done
        echo "FAIL $1 never started"; exit 1
}

"$G" status --json >"$OUT/base.json"
echo "baseline exit $?"

python3 "$HERE/cuda_procs.py" ghost "$PIDS" 2 &
LAUNCH=$!
wait_role owner; wait_role child
owner=$(pid_of owner); child=$(pid_of child)
echo "owner $owner child $child"

"$G" status --json >"$OUT/live.json"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUT/live-smi.csv"
python3 "$HERE/check.py" live "$OUT/live.json" "$OUT/live-smi.csv" "$owner" || rc=1
python3 "$HERE/verdicts.py" busy "$OUT/live.json" || rc=1

kill -KILL "$owner"; wait "$LAUNCH" 2>/dev/null
sleep 0.5 # let the driver settle: the ghost must persist, not merely lag
"$G" status --json >"$OUT/ghost.json"
"$G" status >"$OUT/ghost.txt"
nvidia-smi >"$OUT/ghost-smi.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUT/ghost-smi.csv"
python3 "$HERE/check.py" ghost "$OUT/ghost.json" "$OUT/ghost-smi.csv" "$owner" "$child" || rc=1
python3 "$HERE/verdicts.py" ghost "$OUT/ghost.json" "$owner" "$child" || rc=1

# an NVML-only monitor beside the ghost: listed as a holder, never as a context owner
nvidia-smi -l 1 >/dev/null 2>&1 &
MON=$!
sleep 2
"$G" status --json >"$OUT/monitor.json"
"$G" status >"$OUT/monitor.txt"
python3 "$HERE/verdicts.py" monitor "$OUT/monitor.json" "$MON" || rc=1
python3 "$HERE/verdicts.py" ghost "$OUT/monitor.json" "$owner" "$child" || rc=1
python3 - "$OUT/monitor.json" "$MON" <<'PY' || rc=1
import json, sys
s = json.load(open(sys.argv[1])); mon = int(sys.argv[2])
owners = {o["pid"] for g in s["gpus"] for o in (g["context_owners"] or [])}
holders = {h["pid"] for g in s["gpus"] for h in g["holders"]}
procs = {p["pid"]: p for p in s["processes"]}
ok = mon in holders and mon not in owners
print(("PASS" if ok else "FAIL") + f" nvidia-smi -l ({mon}) is a holder and not an owner")
if mon in procs:
    d = procs[mon]["devices"]; print(f"INFO monitor footprint: fds={d['fds']} ctl={d['ctl']} uvm={d['uvm']} maps={d['maps']} gpus={d['gpus']}")
sys.exit(0 if ok else 1)
PY
kill -KILL "$MON"; wait "$MON" 2>/dev/null; MON=

# kill the hidden holder: the memory must come back and the ghost vanish
t0=$(date +%s%N)
kill -KILL "$child"
for _ in $(seq 300); do
        "$G" status --json >"$OUT/after.json"
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if all(not g["context_owners"] for g in s["gpus"]) else 1)' "$OUT/after.json" && break
        sleep 0.01
done
t1=$(date +%s%N)
python3 - "$OUT/base.json" "$OUT/after.json" $(( (t1 - t0) / 1000000 )) <<'PY' || rc=1
import json, sys
b = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
ok = all(not g["context_owners"] for g in a["gpus"])
ok = ok and all(x["memory"]["used"] == y["memory"]["used"] for x, y in zip(a["gpus"], b["gpus"]))
print(("PASS" if ok else "FAIL") + f" after killing the child: no owner, memory back at baseline (seen after {sys.argv[3]} ms, polling gpureap)")
sys.exit(0 if ok else 1)
PY
echo "ghost.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
