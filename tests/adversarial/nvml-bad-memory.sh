#!/bin/bash
# Issue 9, item 10: the driver's numbers are checked. A driver that says 4.9 GiB are used of a
# 1000 MiB GPU gave "free": -4194304000 and let 'wait --free 100GiB' pass. Numbers that cannot
# all be true are flagged, the GPU's state is unknown with the reason, and no gate opens on
# them. Negative control: the same GPU with numbers that add up.
. "$TESTLIB"

# negative control first: a consistent 1000 MiB GPU passes a gate it can pass, fails one it cannot
scenario "gpu 0 total_mib=1000 reserved_mib=100" "stale 0 200"
gr wait --free 500MiB --timeout 0
expect_rc 0 "consistent numbers: 700 MiB free satisfies --free 500MiB"
gr wait --free 100GiB --timeout 0
expect_rc 1 "consistent numbers: --free 100GiB is not met on a 1000 MiB GPU"
gr status --json
jqok '.gpus[0].memory.consistent == true and .gpus[0].memory.free == 734003200' "consistent numbers are shown as such"

for api in v2 v1; do
        if [ $api = v2 ]; then
                scenario "gpu 0 total_mib=1000 reserved_mib=100" "bad_memory 0 5000"
        else
                scenario "gpu 0 total_mib=1000 reserved_mib=100" "bad_memory 0 5000" "fail nvmlDeviceGetMemoryInfo_v2 13"
        fi
        gr status --json
        expect_rc 3 "$api: the GPU cannot be judged on these numbers"
        jqok ".gpus[0].memory.api == \"$api\"" "$api: the memory call used"
        jqok '.gpus[0].memory.consistent == false' "$api: flagged inconsistent"
        jqok '.gpus[0].state == "unknown"' "$api: state unknown"
        jqok '.gpus[0].error | test("inconsistent memory numbers from the driver: .* used of 1000 MiB total")' "$api: the reason in the GPU's error"
        jqok '[.gpus[0].memory[] | numbers | select(. < 0)] == []' "$api: no negative number in the JSON"
        gr status
        expect_rc 3 "$api: table"
        has out "memory .*inconsistent: not used for any decision" "$api: the table flags the memory line"
        has out "error +inconsistent memory numbers from the driver" "$api: the table shows the reason"
        gr wait --free 100GiB --timeout 0
        expect_rc 3 "$api: wait --free 100GiB does not pass on a 1000 MiB GPU"
        gr wait --free 1% --timeout 0
        expect_rc 3 "$api: nor does a percentage"
        gr wait --timeout 0
        expect_rc 3 "$api: nor the clean gate"
done

# used and reserved each within the total, together past it: free wraps (the sum of parts that
# each fit is checked in tests/unit/test-nvml.c)
scenario "gpu 0 total_mib=1000 reserved_mib=600" "bad_memory 0 900"
gr status --json
expect_rc 3 "used and reserved together past the total"
jqok '.gpus[0].memory.consistent == false and (.gpus[0].error | test("free of 1000 MiB total"))' "the wrapped free is named"

# a recorded snapshot with such numbers is judged the same on replay
scenario "gpu 0 total_mib=1000 reserved_mib=100" "bad_memory 0 5000"
gr status --json
cp "$T/out" "$T/bad.json"
gr status --replay "$T/bad.json" --json
expect_rc 3 "replayed: unknown"
jqok '.gpus[0].memory.consistent == false and .gpus[0].state == "unknown"' "replayed: flagged"
jqok '.gpus[0].error | [scan("inconsistent memory")] | length == 1' "replayed: the reason once, not twice"
done_testing
