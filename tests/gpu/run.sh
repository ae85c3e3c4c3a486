#!/bin/bash
# gpureap run on a real GPU: a launcher starts four CUDA workers (one double-forks); SIGTERM to
# gpureap must leave no process and the memory back at baseline, with exit status 143.
#   tests/gpu/run.sh GPUREAP_BINARY OUTDIR
# With RUN_PROGRAM set (the static gpureap-run beside GPUREAP_BINARY), the run is that program's.
# Everything signalled is inside gpureap run's own tree. Never resets or reconfigures the GPU.
set -u
. "$(dirname "$0")/lib.sh"
"$G" status --json >"$OUT/before.json"
run=("$G" run)
[ -n "${RUN_PROGRAM:-}" ] && run=("$RUN_PROGRAM")
"${run[@]}" --grace 5s -- python3 "$HERE/cuda_procs.py" launcher "$PIDS" 4 2 >"$OUT/run.out" 2>"$OUT/run.err" &
g=$!
for _ in $(seq 1800); do [ "$(grep -c '^worker' "$PIDS")" -ge 4 ] && break; sleep 0.1; done
[ "$(grep -c '^worker' "$PIDS")" -ge 4 ] || { echo "FAIL the workers never started"; kill -TERM "$g"; exit 1; }
"$G" status >"$OUT/running.txt"
t0=$(date +%s%N)
kill -TERM "$g"
wait "$g"
code=$?
t1=$(date +%s%N)
cat "$OUT/run.err"
[ $code -eq 143 ] && echo "PASS exit status 143" || { echo "FAIL exit status $code"; rc=1; }
left=0
for p in $(awk '{print $2}' "$PIDS"); do
        st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$st" ] && [ "$st" != Z ] && left=$((left + 1))
done
[ $left -eq 0 ] && echo "PASS no process of the tree left ($(wc -l <"$PIDS") recorded)" || { echo "FAIL $left left"; rc=1; }
"$G" status --json >"$OUT/after.json"
python3 - "$OUT/before.json" "$OUT/after.json" <<'PY' || rc=1
import json, sys
b = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
ok = all(x["memory"]["used"] == y["memory"]["used"] and x["state"] == "clean" for x, y in zip(a["gpus"], b["gpus"]))
print(("PASS" if ok else "FAIL") + " memory back at baseline: " + str([g["memory"]["used"] for g in a["gpus"]]))
sys.exit(0 if ok else 1)
PY
echo "INFO SIGTERM to gpureap until it returned: $(( (t1 - t0) / 1000000 )) ms"
echo "run.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
