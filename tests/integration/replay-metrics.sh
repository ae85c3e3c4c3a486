#!/bin/bash
# Every recording under tests/fixtures (real H200 runs): 'gpureap metrics --replay' gives metrics
# that promtool accepts and that say what the recording's diagnosis says (each GPU's state and
# used memory, a leftover count for each leftover finding), and 'gpureap check --replay' gives the
# health level that the diagnosis implies, in one line.
. "$TESTLIB"
F=$(dirname "$TESTLIB")/../fixtures
PROMTOOL=$(command -v promtool || true)
[ -n "$PROMTOOL" ] || echo "note: promtool not installed (Debian package prometheus): the metrics are checked without it" >&2
n=0
for f in $(find "$F" -name '*.json' | sort); do
        name=${f#"$F"/}
        gr status --replay "$f" --json
        [ "$RC" -le 1 ] || fail "$name: status --replay exit $RC"
        cp "$T/out" "$T/status.json"
        gr metrics --replay "$f"
        expect_rc 0 "$name: metrics --replay" >/dev/null
        cp "$T/out" "$T/metrics"
        if [ -n "$PROMTOOL" ]; then
                promtool_check "$T/metrics" || { cat "$T/promtool" >&2; fail "$name: promtool rejects the metrics"; }
        fi
        grep -q '^gpureap_last_reap' "$T/metrics" && fail "$name: a recording got this machine's last reap"
        # each GPU: the state and the memory the diagnosis gives
        while read -r idx state used; do
                grep -Eq "^gpureap_gpu_state\\{gpu=\"$idx\",.*state=\"$state\"\\} 1$" "$T/metrics" ||
                        fail "$name: GPU $idx is $state in the diagnosis, not in the metrics"
                [ "$(grep -Ec "^gpureap_gpu_state\\{gpu=\"$idx\",.*\\} 1$" "$T/metrics")" = 1 ] || fail "$name: GPU $idx has more than one state"
                grep -Eq "^gpureap_gpu_memory_used_bytes\\{gpu=\"$idx\",.*\\} $used$" "$T/metrics" ||
                        fail "$name: GPU $idx used $used in the diagnosis, not in the metrics"
        done < <(jq -r '.gpus[] | "\(.index) \(.state) \(.memory.used)"' "$T/status.json")
        # leftovers: as many ghosts as ghost findings
        want=$(jq '[.findings[] | select(.kind == "ghost")] | length' "$T/status.json")
        got=$(awk '/^gpureap_gpu_leftovers\{.*kind="ghost"\}/ {s += $NF} END {print s + 0}' "$T/metrics")
        [ "$want" = "$got" ] || fail "$name: $want ghost findings, the metrics count $got"
        # check: critical exactly where a GPU is dirty or stale, OK where all are clean or busy and
        # every holder is judged, a warning where some holder is not
        gr check --replay "$f"
        [ "$(wc -l <"$T/out")" = 1 ] || fail "$name: check printed $(wc -l <"$T/out") lines"
        bad=$(jq '[.gpus[] | select(.state == "dirty" or .state == "stale" or .state == "unknown")] | length' "$T/status.json")
        unsure=$(jq '[.processes[] | select(.verdict.judgement == "unsure")] | length' "$T/status.json")
        if [ "$bad" -gt 0 ]; then
                [ "$RC" = 2 ] || fail "$name: a dirty GPU, check exit $RC: $(cat "$T/out")"
                has out "^GPUREAP CRITICAL - " "$name: critical" >/dev/null
        elif [ "$unsure" -gt 0 ]; then
                [ "$RC" = 1 ] || fail "$name: $unsure unjudged holders, check exit $RC: $(cat "$T/out")"
                has out "^GPUREAP WARNING - .*cannot judge" "$name: warning" >/dev/null
        else
                [ "$RC" = 0 ] || fail "$name: clean or busy, check exit $RC: $(cat "$T/out")"
                has out "^GPUREAP OK - " "$name: ok" >/dev/null
        fi
        gr check --replay "$f" --format npd
        [ "$(wc -L <"$T/out")" -le 80 ] || fail "$name: npd message longer than 80"
        n=$((n + 1))
done
[ "$n" -ge 30 ] || fail "only $n recordings under $F"
ok "$n recordings: metrics --replay matches each diagnosis${PROMTOOL:+ and promtool accepts it}; check --replay gives the level it implies"

# a recording that is not one: a one-line error and the usage exit code
echo '{"not": "a snapshot"' >"$T/bad.json"
gr metrics --replay "$T/bad.json"
expect_rc 2 "metrics --replay of a broken file"
[ "$(wc -l <"$T/err")" = 1 ] || fail "not one line: $(cat "$T/err")"
[ -s "$T/out" ] && fail "metrics written for a broken recording"
gr check --replay /nonexistent.json
expect_rc 3 "check --replay of a missing file: UNKNOWN, never CRITICAL"
done_testing
