#!/bin/bash
# check and metrics on clean, busy, ghost, stale and hung-driver cases: the documented exit codes
# (Nagios/NHC, node-problem-detector), one line each, and metrics that promtool accepts.
. "$TESTLIB"
PROMTOOL=$(command -v promtool || true)
check_all() { # EXPECTED_NAGIOS EXPECTED_NPD DESCRIPTION
        gr check
        expect_rc "$1" "check: $3"
        [ "$(wc -l <"$T/out")" -eq 1 ] || fail "check printed more than one line"
        cp "$T/out" "$T/check.nagios"
        gr check --format npd
        expect_rc "$2" "check --format npd: $3"
        [ "$(wc -L <"$T/out")" -le 80 ] || fail "npd message longer than 80: $(cat "$T/out")"
        ok "npd message fits in 80 characters"
        gr metrics
        expect_rc 0 "metrics: $3"
        if [ -n "$PROMTOOL" ]; then
                promtool_check "$T/out" || { cat "$T/promtool" >&2; fail "promtool rejects the metrics ($3)"; }
                ok "promtool check metrics: $3"
        fi
        cp "$T/out" "$T/metrics"
}

check_all 0 0 "clean"
has check.nagios "^GPUREAP OK - 1 GPU clean$" "OK line"

launch pidfile "$PIDS" launcher setpgid worker "$PIDS" w1 0 0 1024 sleep
wait_role launcher w1
check_all 0 0 "busy is fine"
has check.nagios "^GPUREAP OK - 1 GPU, 1 busy, none with leftovers$" "busy line"
has metrics "^gpureap_gpu_state\\{gpu=\"0\",UUID=\"GPU-[^\"]+\",pci_bus_id=\"00000000:19:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"$(uname -n)\",state=\"busy\"\\} 1$" "state busy, with dcgm-exporter's labels (the PCI bus id as NVML gives it, the node name)"
has metrics "^gpureap_process_gpu_memory_bytes\\{.*pid=\"$(pid_of w1)\",comm=\"gpuhold\",gpureap_job=\"process group $(pid_of launcher)\",judgement=\"live\",pod=\"\",namespace=\"\",container=\"\"\\} 1073741824$" "per-process memory with gpureap's job and judgement"
hasnt metrics '[{,](job|instance)="' "no label a scrape would rename (job, instance)"
has metrics "^gpureap_build_info\\{version=\"$("$GPUREAP" --version | awk '{print $2}')\",driver=\"[0-9.]+\"\\} 1$" "build info: gpureap's version and the driver's"
kill -KILL "$(pid_of w1)" "$(pid_of launcher)"
wait_state "$(pid_of w1)" gone

launch pidfile "$PIDS" owner cuda 0 0 2048 spawn-holder "$PIDS" child exit
wait_role owner child
wait "$LAST" || true
check_all 2 1 "a ghost is critical"
has check.nagios "^GPUREAP CRITICAL - GPU 0: 1 leftover hold 2.0 GiB \\(gpureap reap --gpu 0\\)$" "says what and the command"
has metrics "^gpureap_gpu_leftovers\\{.*kind=\"ghost\"\\} 1$" "one ghost"
has metrics "^gpureap_gpu_leftover_bytes\\{.*kind=\"ghost\"\\} 2147483648$" "its bytes"
gr reap --yes
expect_rc 0 "reaped"
gr metrics
has out "^gpureap_last_reap_success 1$" "the last reap's result"
has out "^gpureap_last_reap_targets 1$" "its targets"
has out "^gpureap_last_reap_timestamp_seconds [0-9]+$" "its time"

scenario "gpu 0" "stale 0 4096"
check_all 2 1 "stale memory is critical"
has check.nagios "^GPUREAP CRITICAL - GPU 0: 4.0 GiB stale, no holder$" "stale line"

scenario "gpu 0" "hang nvmlDeviceGetMemoryInfo_v2"
set +e
timeout -s KILL 30 "$GPUREAP" check --nvml-timeout 300ms >"$T/out" 2>"$T/err"; RC=$?
set -e
expect_rc 2 "a hung driver is critical: a node whose driver hangs cannot run GPU jobs"
has out "^GPUREAP CRITICAL - GPU 0: driver hung, no answer in 0\\.[0-9] s \\('nvmlDeviceGetMemoryInfo_v2'\\)$" "names the GPU, the kind and the call"
gr metrics --nvml-timeout 300ms
expect_rc 3 "metrics: the driver failed"
has out "^gpureap_up 0$" "gpureap_up 0"
[ -z "$PROMTOOL" ] || promtool_check "$T/out" || fail "promtool rejects the metrics of a hung driver: $(cat "$T/promtool")"

scenario "gpu 0"
GPUREAP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 gr check
expect_rc 3 "no driver, but a GPU's device file: unknown (check-deadline: no device file either is OK)"
GPUREAP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 gr check --format npd
expect_rc 2 "npd: unknown"
gr check --format xml
expect_rc 3 "a bad command line is UNKNOWN, never 2 (CRITICAL)"

# the textfile: written atomically, readable by the collector
mkdir "$T/textfile"
gr metrics --textfile "$T/textfile/gpureap.prom"
expect_rc 0 "textfile written"
[ -s "$T/textfile/gpureap.prom" ] && [ "$(ls "$T/textfile")" = gpureap.prom ] || fail "not exactly one complete file: $(ls "$T/textfile")"
ok "one file, no temporary left"
# a label value that needs escaping: a process name with a quote and a backslash
launch pidfile "$PIDS" odd name 'a"b\c' cuda 0 0 64 sleep
wait_role odd
gr metrics
has out 'comm="a\\"b\\\\c"' "quote and backslash escaped in a label"
[ -z "$PROMTOOL" ] || promtool_check "$T/out" || fail "promtool rejects escaped labels: $(cat "$T/promtool")"
[ -n "$PROMTOOL" ] || echo "# promtool not installed: the format checks were skipped"
done_testing
