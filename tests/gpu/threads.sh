#!/bin/bash
# A real CUDA process whose device files are only in a thread's own file table (the thread
# called unshare(CLONE_FILES), the main thread closed its /dev/nvidia* fds): it is the GPU's
# holder for both scans, and reap --pid ends it and gets the memory back. Run by hand on an
# NVIDIA machine:  tests/gpu/threads.sh GPUREAP_BINARY OUTDIR
# It never resets or reconfigures the GPU, and it signals only the process it started (by the
# PID it recorded; reap is limited to it with --pid). Takes 1 GiB with a plain allocation.
set -u
. "$(dirname "$0")/lib.sh"
"$G" status --json >"$OUT/base.json"
python3 "$HERE/cuda_procs.py" thread-table "$PIDS" 1 &
for _ in $(seq 1200); do grep -q "^owner " "$PIDS" && break; sleep 0.1; done
owner=$(awk '$1 == "owner" {print $2}' "$PIDS")
[ -n "$owner" ] || { echo "FAIL the CUDA process never started"; exit 1; }
echo "owner $owner; its own table: $(ls -l /proc/$owner/fd | grep -c nvidia) nvidia fds; its threads': $(ls -l /proc/$owner/task/*/fd 2>/dev/null | grep -c nvidia)"
for s in proc bpf; do
        GPUREAP_SCAN=$s "$G" status --json >"$OUT/$s.json"
        python3 - "$OUT/$s.json" "$owner" "$s" <<'PY' || rc=1
import json, sys
s = json.load(open(sys.argv[1])); pid = int(sys.argv[2]); want = sys.argv[3]
holders = {h["pid"] for g in s["gpus"] for h in g["holders"]}
owners = {o["pid"] for g in s["gpus"] for o in (g["context_owners"] or [])}
proc = next((p for p in s["processes"] if p["pid"] == pid), None)
scan = s["proc"]["scan"]
ok = pid in holders and pid in owners and proc is not None and proc["state"] not in ("Z", "X")
print(("PASS" if ok else "FAIL") + f" {want} scan (ran: {scan}, {s['proc'].get('scan_fallback') or 'by choice'}): {pid} is a holder {pid in holders}, a context owner {pid in owners}, state {proc and proc['state']}")
if proc and proc.get("devices"):
    print("INFO devices", json.dumps(proc["devices"]))
sys.exit(0 if ok else 1)
PY
done
"$G" reap --pid "$owner" --yes >"$OUT/reap.out" 2>&1
echo "reap --pid $owner: exit $?" | tee -a "$OUT/reap.out"
"$G" status --json >"$OUT/after.json"
python3 - "$OUT/base.json" "$OUT/after.json" "$owner" <<'PY' || rc=1
import json, os, sys
b = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2])); pid = int(sys.argv[3])
gone = not os.path.exists(f"/proc/{pid}")
back = all(x["memory"]["used"] == y["memory"]["used"] for x, y in zip(a["gpus"], b["gpus"]))
print(("PASS" if gone and back else "FAIL") + f" after reap: {pid} gone {gone}, memory back at baseline {back}")
sys.exit(0 if gone and back else 1)
PY
echo "threads.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
