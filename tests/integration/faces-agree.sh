#!/bin/bash
# One view for every face (issue 20): on the same node at the same moment status, check, wait,
# metrics, serve's /metrics and reap's plan agree on each GPU's state and each holder's
# verdict, with serve running (its memory makes a setsid'd worker whose launcher was SIGKILLed
# a sure leftover) and without it (the same worker is unsure everywhere). Before, with serve
# running, status said "leftover sure" while check said "1 holder gpureap cannot judge" and
# one-shot metrics said busy where serve's /metrics said dirty.
. "$TESTLIB"
trap - HUP
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
port=$(free_port)
serve_start --interval 100ms --listen "127.0.0.1:$port"
# a worker in a session of its own on GPU 0, its launcher seen by serve and SIGKILLed; a live
# job on GPU 1
"$GPUHOLD" pidfile "$PIDS" k-l child setsid cuda 0 0 512 pidfile "$PIDS" k-w sleep &
LAUNCHED="$LAUNCHED $!"
launch pidfile "$PIDS" busy cuda 1 1 256 sleep
wait_role k-l k-w busy
w=$(pid_of k-w)
until_served ".processes[] | select(.pid == $w) | .seen.launcher.pid == $(pid_of k-l)"
kill -KILL "$(pid_of k-l)"
until_served ".processes[] | select(.pid == $w) | .verdict.confidence == \"sure\""

# the GPU states and the worker's verdict as each face tells them: "STATE0 STATE1 VERDICT"
faces() { # DIRECT-FLAG
        local d=$1
        gr status --json $d
        echo "status $(jq -r '[.gpus[].state] | join(" ")' "$T/out") $(jq -r ".processes[] | select(.pid == $w) | .verdict | \"\(.judgement)-\(.confidence)\"" "$T/out")" >"$T/faces"
        gr metrics $d
        echo "metrics $(awk -F'state="' '/^gpureap_gpu_state\{/ && / 1$/ {split($2, a, "\""); printf "%s ", a[1]}' "$T/out")" >>"$T/faces"
        gr check $d
        echo "check $(cut -c1-60 "$T/out")" >>"$T/faces"
        gr wait --timeout 0 --json $d
        echo "wait $(jq -r '[.status.gpus[].state] | join(" ")' "$T/out") $(jq -r ".status.processes[] | select(.pid == $w) | .verdict | \"\(.judgement)-\(.confidence)\"" "$T/out") $(jq -r .met "$T/out")" >>"$T/faces"
        gr reap --dry-run --json $d
        echo "reap $(jq -r "[.plan.targets[] | select(.pid == $w)] | length" "$T/out")" >>"$T/faces"
        if [ -z "$d" ]; then
                curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$T/out"
                echo "served-metrics $(awk -F'state="' '/^gpureap_gpu_state\{/ && / 1$/ {split($2, a, "\""); printf "%s ", a[1]}' "$T/out")" >>"$T/faces"
        fi
        sed 's/^/# /' "$T/faces"
}
faces ""
grep -q "^status dirty busy leftover-sure$" "$T/faces" || fail "status through serve: $(cat "$T/faces")"
ok "status through serve: GPU 0 dirty, the worker a sure leftover"
grep -q "^metrics dirty busy $" "$T/faces" || fail "one-shot metrics disagree: $(cat "$T/faces")"
ok "metrics: the same states"
grep -q "^served-metrics dirty busy $" "$T/faces" || fail "serve's /metrics disagree: $(cat "$T/faces")"
ok "serve's /metrics: the same states"
grep -q "^check GPUREAP CRITICAL - GPU 0: 1 leftover hold" "$T/faces" || fail "check disagrees: $(cat "$T/faces")"
ok "check: a leftover on GPU 0, critical"
grep -q "^wait dirty busy leftover-sure false$" "$T/faces" || fail "wait disagrees: $(cat "$T/faces")"
ok "wait: the same states and verdict, and GPU 0 not clean"
grep -q "^reap 1$" "$T/faces" || fail "reap's plan disagrees: $(cat "$T/faces")"
ok "reap's default plan takes the worker"

# --direct, every face: the one-shot view, the same on each
faces --direct
grep -q "^status busy busy unsure-unsure$" "$T/faces" || fail "status --direct: $(cat "$T/faces")"
ok "status --direct: the worker cannot be judged"
grep -q "^metrics busy busy $" "$T/faces" || fail "metrics --direct: $(cat "$T/faces")"
grep -q "^check GPUREAP WARNING - GPU 0: 1 holder gpureap cannot judge" "$T/faces" || fail "check --direct: $(cat "$T/faces")"
grep -q "^reap 0$" "$T/faces" || fail "reap --direct: $(cat "$T/faces")"
grep -q "^wait busy busy unsure-unsure false$" "$T/faces" || fail "wait --direct: $(cat "$T/faces")"
ok "metrics, check, wait and reap --direct agree with it"
kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true
done_testing
