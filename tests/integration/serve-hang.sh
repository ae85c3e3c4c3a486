#!/bin/bash
# A driver that hangs under 'gpureap serve': its socket and /metrics keep answering from the last
# look, the driver is reported down (gpureap_up 0, status "timeout"), and serve recovers when the
# driver does. No timing is asserted: only that the answers come from serve, and what they say.
. "$TESTLIB"
command -v curl >/dev/null || { echo "1..0 # SKIP no curl"; exit 77; }
scenario "gpu 0 minor=0"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
port=$(free_port)
"$GPUREAP" serve --interval 100ms --nvml-timeout 300ms --listen "127.0.0.1:$port" >"$T/serve.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE"
metric() { curl -s --max-time 5 "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
until_metric() { # NAME VALUE
        local i=0
        until [ "$(metric "$1")" = "$2" ]; do i=$((i + 1)); [ $i -lt 500 ] || fail "$1 never became $2: $(metric "$1")"; sleep 0.02; done
}
until_metric gpureap_up 1
ok "serve is up, the driver answers (gpureap_up 1)"

scenario "gpu 0 minor=0" "hang nvmlDeviceGetMemoryInfo_v2"
until_metric gpureap_up 0
ok "the driver hangs: /metrics still answers, gpureap_up 0"
for i in 1 2 3; do
        gr status --json
        jq -e ".history.served_by == $SERVE and .driver.status == \"timeout\" and (.driver.stuck_call | test(\"MemoryInfo\"))" "$T/out" >/dev/null ||
                fail "status during the hang: $(jq -c '{history, driver}' "$T/out")"
done
ok "status during the hang is served by serve: the driver timed out in nvmlDeviceGetMemoryInfo_v2"
curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$T/out"
promtool_check "$T/out" || fail "promtool: $(cat "$T/promtool")"
ok "promtool accepts /metrics while the driver is down"

scenario "gpu 0 minor=0"
until_metric gpureap_up 1
gr_served status --json
jq -e ".history.served_by == $SERVE and .driver.status == \"ok\" and .gpus[0].state == \"clean\"" "$T/out" >/dev/null ||
        fail "after the hang: $(jq -c '{history, driver, gpus: [.gpus[].state]}' "$T/out")"
ok "the driver answers again: serve recovers by itself"
# a helper lives a few ms per look; one still there a second later would be stuck
running_children() { ps -o pid=,stat= --ppid "$SERVE" | awk '$2 !~ /^Z/ {print $1}' | sort; }
a=$(running_children); sleep 1; b=$(running_children)
[ -z "$(comm -12 <(echo "$a") <(echo "$b") | grep .)" ] || fail "serve's children $(comm -12 <(echo "$a") <(echo "$b")) kept running"
ok "no NVML helper of serve is left running"
kill -TERM "$SERVE"
wait "$SERVE" || fail "serve exited $?"
ok "serve ends on SIGTERM, status 0"
done_testing
