#!/bin/bash
# A wedged driver: NVML calls that never return. status must come back at its deadline with
# exit 3 and name the call, and leave no helper process behind. The outer timeout(1) only turns
# a hang into a failure; the test asserts no timing.
. "$TESTLIB"

# helpers_left: processes of this test (its scenario in their environment: other tests running
# at the same time load the same fake library) that have the fake NVML loaded
helpers_left() {
        local m
        for m in $(grep -ls -- "$FAKE_NVML" /proc/[0-9]*/maps); do
                tr '\0' '\n' <"${m%/maps}/environ" 2>/dev/null |
                        grep -qxF "GPUREAP_FAKE_NVML_SCENARIO=$T/scenario" && echo "${m%/maps}"
        done
        return 0
}

# negative control: a helper inside a hung call is found
scenario "gpu 0" "hang nvmlInit_v2"
"$GPUREAP" status --nvml-timeout 60s >/dev/null 2>&1 &
LAUNCHED="$LAUNCHED $!"
for _ in $(seq 1000); do
        [ -z "$(helpers_left)" ] || break
        sleep 0.01
done
[ -n "$(helpers_left)" ] || fail "the helper of a hung status is not found: the checks below prove nothing"
kill -KILL "$!"
wait "$!" 2>/dev/null || true
for _ in $(seq 1000); do
        [ -n "$(helpers_left)" ] || break
        sleep 0.01
done
ok "negative control: a helper in the driver is found"

for fn in nvmlInit_v2 nvmlDeviceGetMemoryInfo_v2 nvmlDeviceGetComputeRunningProcesses_v3; do
        scenario "gpu 0" "hang $fn"
        set +e
        timeout -s KILL 30 "$GPUREAP" status --nvml-timeout 300ms --json >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        [ $RC -ne 137 ] || fail "gpureap hung on $fn"
        expect_rc 3 "hang in $fn"
        has err "did not answer '$fn' within 300 ms" "names the stuck call $fn"
        jqok ".driver.status == \"timeout\" and .driver.stuck_call == \"$fn\"" "JSON says timeout in $fn"
        # the helper was killed: no process of this test still has the fake NVML loaded
        left=$(helpers_left)
        [ -z "$left" ] || fail "a helper was left: $left"
        ok "no helper left after a hang in $fn"
done

# One GPU's call hangs while the helper reads 8 GPUs in threads: the deadline still holds (the
# hung call is the oldest in any thread), the error names the call and the GPU, the others were
# read meanwhile (each handle call logged by the fake as it began), and no helper is left.
for hung in "nvmlDeviceGetHandleByIndex_v2 5" "nvmlDeviceGetUUID 3"; do
        set -- $hung
        fn=$1 gpu=$2
        : >"$T/calls"
        scenario "gpu 0" "gpu 1" "gpu 2" "gpu 3" "gpu 4" "gpu 5" "gpu 6" "gpu 7" "log $T/calls" \
                "delay nvmlDeviceGetHandleByIndex_v2 20" "hang $fn gpu=$gpu"
        set +e
        timeout -s KILL 30 "$GPUREAP" status --nvml-timeout 300ms --json >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        [ $RC -ne 137 ] || fail "gpureap hung on $fn of GPU $gpu"
        expect_rc 3 "hang in $fn of GPU $gpu among 8"
        has err "did not answer '$fn' within 300 ms on GPU $gpu" "names the stuck call $fn and GPU $gpu"
        jqok ".driver.status == \"timeout\" and .driver.stuck_call == \"$fn\"" "JSON says timeout in $fn"
        handles=$(awk '$2 == "nvmlDeviceGetHandleByIndex_v2" { print $3 }' "$T/calls" | sort -u | wc -l)
        [ "$handles" -eq 8 ] || fail "only $handles of 8 GPUs' handles were asked for while GPU $gpu hung"
        ok "the other GPUs were read while GPU $gpu hung"
        left=$(helpers_left)
        [ -z "$left" ] || fail "a helper was left: $left"
        ok "no helper or thread left after a hang in $fn of GPU $gpu"
done

# the option and the environment variable both set the deadline
scenario "gpu 0" "hang nvmlInit_v2"
set +e
GPUREAP_NVML_TIMEOUT=200ms timeout -s KILL 30 "$GPUREAP" status >"$T/out" 2>"$T/err"; RC=$?
set -e
expect_rc 3 "deadline from GPUREAP_NVML_TIMEOUT"
has err "within 200 ms" "the environment's deadline was used"
done_testing
