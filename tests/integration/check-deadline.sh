#!/bin/bash
# check for node-problem-detector, which kills a plugin at its 5 s timeout and keeps the first 80
# characters of what it says: with a hung driver check ends by itself inside a 5 s timeout(1),
# critical, and its line starts with the GPU, the kind and the count; with problems on several
# GPUs the start counts them all, the critical ones before a warning; a node without NVIDIA GPUs
# is OK. The outer timeout(1) only turns an overrun into a failure: no timing is asserted.
. "$TESTLIB"

# run_bounded ARGS...: gpureap check ARGS under timeout -s KILL 5; exit status in RC
run_bounded() {
        set +e
        timeout -s KILL 5 "$GPUREAP" check "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
}

# negative control: a check allowed 60 s is still in the hung driver at the bound, so the bound
# catches a check that does not keep its deadline
scenario "gpu 0" "hang nvmlDeviceGetMemoryInfo_v2"
run_bounded --timeout 60s
[ "$RC" -eq 137 ] || fail "a check allowed 60 s ended inside the 5 s bound (exit $RC): the bound proves nothing"
ok "negative control: a check allowed 60 s is killed at the 5 s bound"

# the defaults: the whole check within 4 s, whatever the per-call NVML timeout says
for case in "nagios " "npd 60s"; do
        read -r fmt env <<<"$case"
        case $fmt in nagios) want=2 lead="GPUREAP CRITICAL - " ;; npd) want=1 lead="gpureap CRITICAL: " ;; esac
        set +e
        GPUREAP_NVML_TIMEOUT=$env timeout -s KILL 5 "$GPUREAP" check --format $fmt >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        [ "$RC" -ne 137 ] || fail "check --format $fmt (GPUREAP_NVML_TIMEOUT='$env') outlived node-problem-detector's 5 s with a hung driver"
        expect_rc $want "--format $fmt, GPUREAP_NVML_TIMEOUT='$env': a hung driver is critical, said before the 5 s"
        head -c 80 "$T/out" >"$T/head"
        grep -Eq "^${lead}GPU 0: driver hung, no answer in [0-9]+\\.[0-9] s \\('nvmlDevice" "$T/head" ||
                fail "the first 80 characters do not start with the GPU, the kind and the time: $(cat "$T/head")"
        ok "--format $fmt: the first 80 characters: $(cat "$T/head")"
done
[ "$(wc -L <"$T/out")" -le 80 ] || fail "npd message longer than 80"

# --timeout: a shorter whole deadline; a hang in nvmlInit is on no GPU in particular
scenario "gpu 0" "hang nvmlInit_v2"
run_bounded --timeout 1s
expect_rc 2 "--timeout 1s"
has out "^GPUREAP CRITICAL - driver hung, no answer in 0\\.[0-9] s \\('nvmlInit_v2'\\)$" "within --timeout, the call named"
run_bounded --timeout 0
expect_rc 3 "--timeout 0 is a bad command line: UNKNOWN"

# several GPUs in trouble: the start of the line counts them
scenario "gpu 0" "gpu 1" "gpu 2" "stale 1 1024" "stale 2 2048"
gr check --format npd
expect_rc 1 "stale memory on two GPUs"
has out "^gpureap CRITICAL: 2 GPUs with stale memory \\(1,2\\): GPU 1: 1\\.0 GiB stale, no" "two GPUs counted in the first 80 characters"
gr check
has out "^GPUREAP CRITICAL - 2 GPUs with stale memory \\(1,2\\): GPU 1: 1\\.0 GiB stale, no holder; GPU 2: 2\\.0 GiB stale, no holder$" "then each"

# a warning (a worker in a session of its own whose launcher was killed: unsure) on GPU 0 and
# stale memory on GPU 2: the critical one first, whatever the GPUs' order
"$GPUHOLD" pidfile "$PIDS" k-l child setsid cuda 0 0 512 pidfile "$PIDS" k-w sleep &
LAUNCHED="$LAUNCHED $!"
wait_role k-l k-w
kill -KILL "$(pid_of k-l)"
wait_state "$(pid_of k-l)" "Z gone"
scenario "gpu 0" "gpu 1" "gpu 2" "stale 2 2048"
gr check --direct
expect_rc 2 "a warning and a critical GPU: critical"
has out "^GPUREAP CRITICAL - GPU 2: 2\\.0 GiB stale, no holder; GPU 0: 1 holder gpureap cannot judge$" "the critical item before the warning"
scenario "gpu 0" "gpu 1" "gpu 2"
gr check --direct
expect_rc 1 "negative control: the warning alone"
has out "^GPUREAP WARNING - GPU 0: 1 holder gpureap cannot judge$" "the warning alone"
kill -KILL "$(pid_of k-w)"
wait_state "$(pid_of k-w)" gone

# no NVIDIA GPU on this node: no driver library, or one whose driver is not loaded (a site's
# one image on its CPU nodes), and no GPU device file: OK, with a note
mkdir "$T/nodev"
truncate -s 0 "$T/nodev/nvidiactl" # a loaded driver without GPUs has this one only
GPUREAP_DEV_DIR=$T/nodev GPUREAP_NVML_LIBRARY=$T/no/libnvidia-ml.so.1 gr check
expect_rc 0 "no library, no device: OK"
has out "^GPUREAP OK - no NVIDIA GPU here \\(no '$T/nodev/nvidia\\[0-9\\]\\*'; cannot load '$T/no/libnvidia-ml.so.1': No such file or directory\\)$" "says why"
GPUREAP_DEV_DIR=$T/nodev GPUREAP_NVML_LIBRARY=$T/no/libnvidia-ml.so.1 gr check --format npd
expect_rc 0 "npd: OK"
scenario "gpu 0" "fail nvmlInit_v2 9"
GPUREAP_DEV_DIR=$T/nodev gr check
expect_rc 0 "the driver not loaded, no device: OK"
has out "^GPUREAP OK - no NVIDIA GPU here \\(no '.*'; nvmlInit_v2 failed: " "says the driver's answer"
scenario "contexts $T/ctx"
GPUREAP_DEV_DIR=$T/nodev gr check
expect_rc 0 "the driver lists no GPU, and there is no device: OK"
has out "^GPUREAP OK - no NVIDIA GPU here \\(the driver lists none\\)$" "says so"
# negative controls: the same with a GPU's device file there is a broken node, not a CPU node
GPUREAP_NVML_LIBRARY=$T/no/libnvidia-ml.so.1 gr check
expect_rc 3 "no library but a device file: UNKNOWN, as before"
has out "^GPUREAP UNKNOWN - no NVIDIA driver: " "no driver"
scenario "gpu 0" "fail nvmlInit_v2 9"
gr check
expect_rc 2 "nvmlInit fails with a GPU's device file there: critical"
has out "^GPUREAP CRITICAL - driver failed: nvmlInit_v2 failed: " "the driver failed"
scenario "contexts $T/ctx"
gr check
expect_rc 2 "the driver lists no GPU but a device file is there: critical"
has out "^GPUREAP CRITICAL - the driver lists no GPU, but '$GPUREAP_DEV_DIR/nvidia[0-9]' is there$" "says which file"
done_testing
