#!/bin/bash
# The audit line of each target's outcome ("pid N start S comm 'C': ended") is written when the
# ladder is done, before the drain wait (fifth adversarial round: once the cycle moved into lib
# it came only after the drain, so a reap cut short in a slow teardown, by Ctrl-C, an epilog's
# deadline or a stop of serve, left "signalling" lines with no outcome).
. "$TESTLIB"
scenario "gpu 0 minor=0" "teardown_ms 60000"
syslog_listener
launch pidfile "$PIDS" o1 cuda 0 0 256 spawn-holder "$PIDS" h1 exit
wait_role o1 h1
wait "$LAST" || true
h1=$(pid_of h1)
"$GPUREAP" reap --yes --direct --timeout 30s --pid "$h1" >"$T/reap.out" 2>&1 &
R=$!
LAUNCHED="$LAUNCHED $R"
wait_state "$h1" "gone Z"
# bounded: the line comes once the ladder has seen the target end; the drain waits 30 s
i=0
until grep -Eq "pid $h1 start [0-9]+ comm '[^']*': ended" "$T/syslog" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1000 ] || break; sleep 0.01
done
kill -0 "$R" 2>/dev/null || fail "the reap ended before the drain: $(cat "$T/reap.out")"
cp "$T/syslog" "$T/out"
has out "pid $h1 start [0-9]+ comm '[^']*': ended" "the outcome's audit line is written while the reap still waits for the drain"
kill -TERM "$R" 2>/dev/null # (a background job of a script ignores INT)
wait "$R" 2>/dev/null || true
done_testing
