#!/bin/bash
# The orphaned workers of the first seed, with real CUDA processes: a launcher starts four CUDA
# workers (worker0 double-forks), then the launcher is killed with SIGKILL. Records what gpureap
# says (for the diagnosis of the next issue) and checks the facts against nvidia-smi.
#   tests/gpu/orphans.sh GPUREAP_BINARY OUTDIR
# Never resets or reconfigures the GPU; signals only the PIDs its own processes recorded.
set -u
. "$(dirname "$0")/lib.sh"
# the launcher leads its own session, as one started from a login shell or by nohup+setsid does
# (a background job of this script would share the group of the harness's shell, which is alive:
# then the workers are rightly unsure)
setsid python3 "$HERE/cuda_procs.py" launcher "$PIDS" 4 1 &
LAUNCH=$!
for _ in $(seq 1800); do [ "$(grep -c '^worker' "$PIDS")" -ge 4 ] && break; sleep 0.1; done
[ "$(grep -c '^worker' "$PIDS")" -ge 4 ] || { echo "FAIL workers never started"; exit 1; }
"$G" status --json >"$OUT/running.json"
rc=0
python3 "$HERE/verdicts.py" busy "$OUT/running.json" || rc=1
kill -KILL "$(awk '$1 == "launcher" {print $2}' "$PIDS")"; wait "$LAUNCH" 2>/dev/null
sleep 0.5
"$G" status --json >"$OUT/orphans.json"
"$G" status >"$OUT/orphans.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$OUT/orphans-smi.csv"
python3 "$HERE/verdicts.py" orphans "$OUT/orphans.json" "$(awk '$1 == "launcher" {print $2}' "$PIDS")" \
        $(awk '$1 ~ /^worker/ {print $2}' "$PIDS") || rc=1
for w in worker0 worker1 worker2 worker3; do
        p=$(awk -v r=$w '$1 == r {print $2}' "$PIDS")
        python3 "$HERE/check.py" live "$OUT/orphans.json" "$OUT/orphans-smi.csv" "$p" | grep -v '^INFO' || rc=1
done
python3 - "$OUT/orphans.json" "$PIDS" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
roles = dict(l.split() for l in open(sys.argv[2]))
procs = {p["pid"]: p for p in s["processes"]}
for r, pid in sorted(roles.items()):
    p = procs.get(int(pid))
    if p:
        print(f"INFO {r} pid={pid} ppid={p['ppid']} pgid={p['pgid']} sid={p['sid']} state={p['state']} fds={p['devices'] and p['devices']['fds']}")
    else:
        print(f"INFO {r} pid={pid} not in status")
PY
echo "orphans.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
