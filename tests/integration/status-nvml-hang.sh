#!/bin/bash
# A wedged driver: NVML calls that never return. status must come back at its deadline with
# exit 3 and name the call, and leave no helper process behind. The outer timeout(1) only turns
# a hang into a failure; the test asserts no timing.
. "$TESTLIB"

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
        # the helper was killed: no process still has the fake NVML loaded
        left=$(grep -ls -- "$FAKE_NVML" /proc/[0-9]*/maps || true)
        [ -z "$left" ] || fail "a helper was left: $left"
        ok "no helper left after a hang in $fn"
done

# the option and the environment variable both set the deadline
scenario "gpu 0" "hang nvmlInit_v2"
set +e
GPUREAP_NVML_TIMEOUT=200ms timeout -s KILL 30 "$GPUREAP" status >"$T/out" 2>"$T/err"; RC=$?
set -e
expect_rc 3 "deadline from GPUREAP_NVML_TIMEOUT"
has err "within 200 ms" "the environment's deadline was used"
done_testing
