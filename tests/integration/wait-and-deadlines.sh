#!/bin/bash
# wait: passes and fails at the right thresholds, wakes when a holder exits; reap and wait end at
# their deadline with exit 1 when memory never drains.
. "$TESTLIB"

# 143771 MiB total, 615 reserved, 100000 used: 43156 MiB free
launch pidfile "$PIDS" big cuda 0 0 100000 sleep
wait_role big
big=$(pid_of big)
for c in "40GiB 0" "42GiB 0" "43156MiB 0" "43157MiB 1" "45GiB 1" "30% 0" "31% 1"; do
        set -- $c
        gr wait --free "$1" --timeout 0
        expect_rc "$2" "wait --free $1"
done
has err "timeout after 0.0s: not enough memory free" "says why"
gr wait --free 120%
expect_rc 2 "a percentage over 100"

# wait for clean wakes up when the holder goes
( sleep 0.3; kill -KILL "$big" ) &
gr wait --timeout 20s
expect_rc 0 "clean once the holder is gone"

# memory that never drains: both end at their deadline
scenario "gpu 0" "stale 0 4096"
gr wait --timeout 300ms
expect_rc 1 "wait times out"
has err "timeout after 0.3s: not clean" "wait says so"
has err "stale" "and prints the diagnosis"
gr reap --yes --timeout 300ms
expect_rc 1 "reap cannot verify"
has err "not clean: what is left follows" "reap says so, at once: with nothing to kill nothing can change"
hasnt out "verified" "and does not claim it verified"
gr wait --timeout soon
expect_rc 2 "bad duration"
done_testing
