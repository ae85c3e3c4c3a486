#!/bin/bash
# reap on a real GPU, restricted to this script's own processes: the ghost's hidden holder and the
# orphaned workers of a killed launcher are reaped to verified clean.
#   tests/gpu/reap.sh GPUREAP_BINARY OUTDIR
# gpureap's plan (--dry-run) must name only our processes; the reap itself is limited to them
# with --pid. Never resets or reconfigures the GPU.
set -u
. "$(dirname "$0")/lib.sh"
wait_n() { # PATTERN N: until N lines match, at most 180 s
        for _ in $(seq 1800); do [ "$(grep -c "$1" "$PIDS")" -ge "$2" ] && return 0; sleep 0.1; done
        echo "FAIL '$1' never reached $2"; exit 1
}
ours() { awk '{print $2}' "$PIDS" | sort -n; }
# the plans (default: sure leftovers; --likely) must kill nothing but ours, and the --likely one
# must find ours
plan_is_ours() {
        "$G" reap --dry-run >"$OUT/plan-$1.txt"
        "$G" reap --dry-run --likely >"$OUT/plan-$1-likely.txt"
        local bad=""
        for p in $(awk '$1 == "kill" {print $2}' "$OUT/plan-$1.txt" "$OUT/plan-$1-likely.txt"); do
                ours | grep -qx "$p" || bad="$bad $p"
        done
        echo "INFO $1: default plan kills: $(awk '$1 == "kill" {printf "%s ", $2}' "$OUT/plan-$1.txt")"
        if [ -z "$bad" ] && grep -q '^  kill' "$OUT/plan-$1-likely.txt"; then
                echo "PASS $1: the plan kills only our processes: $(awk '$1 == "kill" {printf "%s ", $2}' "$OUT/plan-$1-likely.txt")"
        else
                echo "FAIL $1: plan $(cat "$OUT/plan-$1-likely.txt" | tr '\n' '|') (not ours:$bad)"; rc=1
        fi
}
reap_ours() { # NAME PIDS...
        local name=$1; shift
        "$G" reap --yes --pid "$(echo "$@" | tr ' ' ',')" >"$OUT/reap-$name.txt" 2>&1
        local r=$?
        cat "$OUT/reap-$name.txt" | sed "s/^/  /"
        [ $r -eq 0 ] && echo "PASS $name: reap exit 0, verified" || { echo "FAIL $name: reap exit $r"; rc=1; }
        "$G" status --json >"$OUT/after-$name.json"
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if all(g["state"]=="clean" for g in s["gpus"]) else 1)' "$OUT/after-$name.json" \
                && echo "PASS $name: status says clean afterwards" || { echo "FAIL $name: not clean afterwards"; rc=1; }
}

python3 "$HERE/cuda_procs.py" ghost "$PIDS" 4 &
L=$!
wait_n '^child ' 1
owner=$(awk '$1 == "owner" {print $2}' "$PIDS"); child=$(awk '$1 == "child" {print $2}' "$PIDS")
kill -KILL "$owner"; wait "$L" 2>/dev/null
plan_is_ours ghost
reap_ours ghost "$child"

: >"$PIDS"
setsid python3 "$HERE/cuda_procs.py" launcher "$PIDS" 4 2 &
wait_n '^worker' 4
kill -KILL "$(awk '$1 == "launcher" {print $2}' "$PIDS")"; wait 2>/dev/null
plan_is_ours orphans
reap_ours orphans $(awk '$1 ~ /^worker/ {print $2}' "$PIDS")
echo "reap.sh: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
