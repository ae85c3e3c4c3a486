#!/bin/bash
# serve's /metrics shows each GPU process (PID, name, job, verdict) only when asked
# (--process-metrics): anyone who reaches the port reads it, and hidepid keeps other users'
# processes from them (issue 26, item 11). The per-GPU series stay either way.
. "$TESTLIB"
command -v curl >/dev/null || { echo "1..0 # SKIP no curl"; exit 77; }
scenario "gpu 0 minor=0"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
launch pidfile "$PIDS" live cuda 0 0 256 sleep
wait_role live
live=$(pid_of live)

# serve ARGS...: serve on a port of its own until its /metrics lists the holder; the text in $T/out
metrics_of_serve() {
        local port i=0
        port=$(free_port)
        "$GPUREAP" serve --interval 100ms --listen "127.0.0.1:$port" "$@" >"$T/serve.out" 2>&1 &
        SERVE=$!
        LAUNCHED="$LAUNCHED $SERVE"
        until curl -s --max-time 5 -o "$T/out" "http://127.0.0.1:$port/metrics" &&
                grep -q 'gpureap_gpu_holders{.*role="owner"} 1' "$T/out"; do
                i=$((i + 1)); [ $i -lt 300 ] || fail "serve's /metrics: $(cat "$T/serve.out")"; sleep 0.05
        done
        kill -TERM "$SERVE"
        wait "$SERVE" 2>/dev/null || true
}
metrics_of_serve
hasnt out "gpureap_process_gpu_memory_bytes" "by default: no per-process series (not even its HELP)"
hasnt out "pid=\"$live\"" "no PID in /metrics"
has out '^gpureap_gpu_memory_used_bytes\{gpu="0",' "the per-GPU series stay"
has out '^gpureap_gpu_state\{gpu="0",.*state="busy"\} 1$' "the GPU's state stays"
command -v promtool >/dev/null && { promtool_check "$T/out" || fail "promtool: $(cat "$T/promtool")"; ok "promtool accepts it"; }
metrics_of_serve --process-metrics
has out "^gpureap_process_gpu_memory_bytes\\{gpu=\"0\",.*pid=\"$live\",comm=\"gpuhold\",.*judgement=\"live\",pod=\"\",namespace=\"\",container=\"\"\\} 268435456$" "--process-metrics: the per-process series"
has out "^# TYPE gpureap_process_gpu_memory_bytes gauge$" "with its type"
done_testing
