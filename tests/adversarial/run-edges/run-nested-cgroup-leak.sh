#!/bin/bash
# A nested 'gpureap run' whose grace is longer than the outer's is SIGKILLed by the outer: its
# leaf (under the outer's) stays, so the outer's rmdir fails too: two empty gpureap-run-* left.
. "$(dirname "$0")/common.inc"
"$GPUREAP" run --grace 1s -- "$GPUREAP" run --grace 10s -- "$GPUHOLD" pidfile "$PIDS" a ignore-term sleep 2>"$T/err" &
STARTED=$!
until grep -q '^a ' "$T/pids"; do sleep 0.01; done; sleep 0.3
kill -TERM $STARTED; wait $STARTED; echo "rc=$?"
left=$(find "$CGMNT" -maxdepth 6 -type d -path "*gpureap-run-$STARTED-*")
[ -z "$left" ] && { echo "held: no cgroup left"; exit 0; }
echo "BUG: left behind:"; echo "$left"; exit 1
