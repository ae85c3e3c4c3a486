#!/bin/bash
# A port that never opens, a log that stalls, a maximum time; a port and a log line that do come.
. "$TESTLIB"

gr run --ready-port 1 --ready-timeout 500ms --grace 200ms -- sh -c 'echo loading weights; sleep 1000'
expect_rc 121 "never ready"
has err "not ready in time; the tree of 'sh'" "diagnosis printed"
has err "sleep" "the tree is listed"
has err "last output line: loading weights" "with the last output line"

gr run --stall-timeout 1s --grace 200ms -- sh -c 'echo one; sleep 1000'
expect_rc 122 "stalled"
has err "stalled: no output and no CPU time" "stall diagnosed"

gr run --max-time 300ms --grace 200ms -- sleep 1000
expect_rc 124 "max time, as timeout(1)"

gr run --ready-log 'listening on' --ready-timeout 5s -- sh -c 'echo warming; sleep 0.2; echo listening on :8000; sleep 0.2; exit 3'
expect_rc 3 "ready by its log, then its own status"
has out "listening on :8000" "output passed through"

"$GPUHOLD" pidfile "$PIDS" srv listen "$T/portrec" sleep &
LAUNCHED="$LAUNCHED $!"
wait_role srv
for _ in $(seq 500); do grep -q '^port ' "$T/portrec" 2>/dev/null && break; sleep 0.01; done
port=$(awk '$1 == "port" {print $2}' "$T/portrec")
gr run --ready-port "$port" --ready-timeout 5s -- sh -c 'sleep 0.3; exit 0'
expect_rc 0 "a port that is open counts as ready"
done_testing
