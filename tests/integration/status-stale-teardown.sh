#!/bin/bash
# Memory with no holder: stale memory the driver keeps, and memory still being torn down after
# the last holder died (its owner stays listed meanwhile).
. "$TESTLIB"

scenario "gpu 0" "stale 0 2048"
gr status --json
expect_rc 1 "stale memory is not clean"
jqok '.gpus[0].memory.used == 2048*1048576 and .gpus[0].context_owners == [] and .gpus[0].holders == []' "stale memory shows as used with nobody on it"
jqok '.gpus[0].state == "stale" and .gpus[0].unaccounted_memory == 2048*1048576' "state stale, 2 GiB unaccounted"
jqok '.findings | map(.kind) == ["stale"] and (.[0].next_step == "gpureap wait --gpu 0 --timeout 30s")' "finding: stale, wait and look again"
gr status
has out "GPU 0  STALE" "table: badge STALE (no colour on a pipe)"
hasnt out $'\033' "no escape codes when not a terminal"

# negative control: the same GPU without the stale memory is clean
scenario "gpu 0"
gr status --json
expect_rc 0 "clean without stale memory"
jqok '.gpus[0].state == "clean" and .findings == []' "no finding"

scenario "gpu 0" "teardown_ms 400"
launch pidfile "$PIDS" owner cuda 0 0 700 sleep
wait_role owner
owner=$(pid_of owner)
kill -KILL "$owner"; wait "$owner" 2>/dev/null || true
gr status --json
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: (700*1048576), process: \"not_found\"}] and .gpus[0].holders == []" "being torn down: the dead owner is still listed, nobody holds"
jqok '.gpus[0].state == "stale" and (.findings | map(.kind) == ["teardown"])' "verdict: teardown in progress"
i=0
until gr status --json && jq -e '.gpus[0].memory.used == 0' "$T/out" >/dev/null; do
        i=$((i + 1)); [ $i -lt 500 ] || fail "the memory never came back"
        sleep 0.02
done
jqok '.gpus[0].context_owners == [] and .gpus[0].state == "clean"' "after teardown: no owner, memory back, clean"
done_testing
