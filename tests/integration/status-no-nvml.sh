#!/bin/bash
# No driver: a clear message, exit 3, and the holders from /proc are still listed.
. "$TESTLIB"

launch pidfile "$PIDS" holder open nvidia0 open nvidiactl sleep
wait_role holder
h=$(pid_of holder)

GPUREAP_NVML_LIBRARY=$T/no-such-libnvidia-ml.so.1 gr status --json
expect_rc 3 "no NVML library"
has err "^gpureap: cannot load '.*no-such-libnvidia-ml.so.1'" "one-line error naming the library"
jqok '.driver.status == "no_library" and .gpus == []' "driver status no_library"
jqok "[.processes[] | select(.devices != null) | .pid] == [$h]" "the /proc part still ran"

GPUREAP_NVML_LIBRARY=$T/no-such-libnvidia-ml.so.1 gr status
expect_rc 3 "table without NVML"
has out "^    $h " "table lists the holder without NVML"

# a library that is not NVML at all
GPUREAP_NVML_LIBRARY=$(ldd "$GPUHOLD" | awk '/libc.so/ {print $3}') gr status
expect_rc 3 "a library without NVML's symbols"
has err "lacks nvmlInit" "says what is missing"
done_testing
