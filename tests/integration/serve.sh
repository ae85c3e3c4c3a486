#!/bin/bash
# gpureap serve (docs/serve.md), with real processes on the fake driver:
#   - status through serve gives the verdicts of --direct, plus serve's memory;
#   - a worker that a launcher started in a session of its own, the launcher SIGKILLed: a sure
#     leftover when serve saw it start (status and reap's plan), unsure for the one-shot view;
#     a launcher that exits by itself (status 0) or is hung up on: not promoted;
#   - serve restarted: it keeps its memory, and claims nothing it did not see;
#   - a second serve on the same socket is refused; SIGTERM removes the socket.
. "$TESTLIB"
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog # its event lines go nowhere here

start_serve() { serve_start --interval 100ms --listen none; } # (lib.sh)
stop_serve() {
        kill -TERM "$SERVE"
        wait "$SERVE" 2>/dev/null || true
}
verdict() { # JSON_FILE PID -> "judgement confidence"
        jq -r ".processes[] | select(.pid == $2) | .verdict | \"\(.judgement) \(.confidence)\"" "$1"
}

start_serve
ok "serve answers on its socket"
gr serve --interval 100ms --listen none
expect_rc 1 "a second serve on the same socket"
has err "another gpureap serve answers on" "it says why"

# the same verdicts as --direct: a ghost's hidden holder and a busy process
launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
launch pidfile "$PIDS" busy cuda 1 1 256 sleep
wait_role owner child busy
child=$(pid_of child) busy=$(pid_of busy)
until_served "([.processes[] | select(.pid == $child)] | length == 1) and ([.findings[] | select(.kind == \"ghost\")] | length == 1)"
gr_served status --json
cp "$T/out" "$T/served.json"
gr status --json --direct
cp "$T/out" "$T/direct.json"
pick='[.processes[] | select(.verdict) | [.pid, .verdict.judgement, .verdict.confidence]], [.findings[] | [.kind, .pids]], [.gpus[] | .state]'
[ "$(jq -c "$pick" "$T/served.json")" = "$(jq -c "$pick" "$T/direct.json")" ] ||
        fail "served $(jq -c "$pick" "$T/served.json") but direct $(jq -c "$pick" "$T/direct.json")"
ok "through serve: the verdicts, findings and states of --direct"
jq -e '.history.served_by > 0 and .history.events == true' "$T/served.json" >/dev/null || fail "no history in $(jq -c .history "$T/served.json")"
jq -e '.history == null' "$T/direct.json" >/dev/null || fail "--direct has a history"
ok "the served answer says it is serve's, with process events; --direct has no history"
gr status
doc_example serve-status.txt "$T/out" # docs/serve.md shows it
has out "^as seen by gpureap serve \\(PID $SERVE\\)" "the table says it comes from serve"
kill -KILL "$child" "$busy"
until_served "[.processes[] | select(.pid == $child or .pid == $busy)] == []"

# a launcher, its worker in a session of its own; serve sees the worker start
setsid_worker() { # ROLE EXTRA-VERBS...: launcher ROLE-l, worker ROLE-w on GPU 1
        local role=$1
        shift
        "$GPUHOLD" pidfile "$PIDS" "$role-l" "$@" setsid pidfile "$PIDS" "$role-w" cuda 1 1 512 sleep &
        LAUNCHED="$LAUNCHED $!"
        wait_role "$role-l" "$role-w"
        until_served ".processes[] | select(.pid == $(pid_of "$role-w")) | .seen.launcher.pid == $(pid_of "$role-l")"
}
setsid_worker k child
l=$(pid_of k-l) w=$(pid_of k-w)
gr_served status --json
[ "$(jq -r ".processes[] | select(.pid == $w) | .seen.launcher | \"\(.comm) \(.same_exe) \(.end)\"" "$T/out")" = "gpuhold true alive" ] ||
        fail "serve's memory of $w: $(jq -c ".processes[] | select(.pid == $w) | .seen" "$T/out")"
ok "serve saw worker $w start under its launcher $l (same program, alive)"
kill -KILL "$l"
until_served ".processes[] | select(.pid == $w) | .seen.launcher.end == \"signal\" and .seen.launcher.end_status == 9"
ok "the kernel's exit event: launcher $l was killed by signal 9"
gr_served status --json
cp "$T/out" "$T/served.json"
[ "$(verdict "$T/served.json" "$w")" = "leftover sure" ] || fail "through serve $w is $(verdict "$T/served.json" "$w")"
jq -e ".processes[] | select(.pid == $w) | .verdict.evidence | map(select(.key == \"seen\" and .lean == \"leftover\")) | length == 1" "$T/served.json" >/dev/null ||
        fail "no seen evidence: $(jq -c ".processes[] | select(.pid == $w) | .verdict.evidence" "$T/served.json")"
ok "through serve: $w is a sure leftover, by what serve saw"
gr status --json --direct
[ "$(verdict "$T/out" "$w")" = "unsure unsure" ] || fail "--direct says $(verdict "$T/out" "$w")"
ok "the one-shot view of the same process: unsure (a setsid'd process without its launcher)"
gr reap --dry-run --json
jq -e "[.plan.targets[] | select(.pid == $w)] | length == 1" "$T/out" >/dev/null || fail "reap's plan: $(jq -c .plan "$T/out")"
ok "reap's plan takes serve's memory: $w is a target of the default plan"
gr reap --dry-run --json --direct
jq -e "[.plan.targets[] | select(.pid == $w)] == []" "$T/out" >/dev/null || fail "reap --direct plans $w"
ok "reap --direct spares it"
kill -KILL "$w"

# a launcher that exits by itself (status 0) left its worker on purpose; a hangup is no kill
setsid_worker e child-exit-on-usr1 0
kill -USR1 "$(pid_of e-l)"
until_served ".processes[] | select(.pid == $(pid_of e-w)) | .seen.launcher.end == \"exit\""
gr_served status --json
[ "$(verdict "$T/out" "$(pid_of e-w)")" = "unsure unsure" ] || fail "after a clean exit: $(verdict "$T/out" "$(pid_of e-w)")"
ok "a launcher that exited with status 0: its worker stays unsure"
kill -KILL "$(pid_of e-w)"
setsid_worker f child-exit-on-usr1 1
kill -USR1 "$(pid_of f-l)"
until_served ".processes[] | select(.pid == $(pid_of f-w)) | .seen.launcher.end_status == 1"
gr_served status --json
[ "$(verdict "$T/out" "$(pid_of f-w)")" = "leftover likely" ] || fail "after a failed launcher: $(verdict "$T/out" "$(pid_of f-w)")"
ok "a launcher that failed (status 1): its worker is a likely leftover"
kill -KILL "$(pid_of f-w)"
setsid_worker h child
kill -HUP "$(pid_of h-l)"
until_served ".processes[] | select(.pid == $(pid_of h-w)) | .seen.launcher.end_status == 1 and .seen.launcher.end == \"signal\""
gr_served status --json
[ "$(verdict "$T/out" "$(pid_of h-w)")" = "unsure unsure" ] || fail "after SIGHUP: $(verdict "$T/out" "$(pid_of h-w)")"
ok "a launcher hung up on (SIGHUP): its worker stays unsure"

# serve stopped and started again: it keeps what it saw (docs/serve.md, tests/integration/
# serve-restart.sh for a SIGKILL), and claims nothing it did not see: a worker whose launcher
# started and ended while serve was down has no launcher in its memory
stop_serve
[ ! -e "$GPUREAP_SERVE_SOCKET" ] || fail "the socket is left after SIGTERM"
ok "SIGTERM: serve ends and removes its socket"
gr status --json
jq -e '.history == null' "$T/out" >/dev/null || fail "without serve there is a history"
ok "without serve, status reads the driver itself"
"$GPUHOLD" pidfile "$PIDS" d-l child setsid pidfile "$PIDS" d-w cuda 1 1 512 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role d-l d-w
kill -KILL "$(pid_of d-l)"
wait_state "$(pid_of d-l)" "Z gone"
start_serve
grep -q "^gpureap: history of 1 launcher (1 holder) recovered from '$T/serve.history'" "$T/serve.out" ||
        fail "no recovery message: $(cat "$T/serve.out")"
ok "restarted: serve says it recovered its history"
until_served ".processes[] | select(.pid == $(pid_of d-w)) | .seen != null"
gr_served status --json
jq -e ".processes[] | select(.pid == $(pid_of h-w)) | .seen.launcher.pid == $(pid_of h-l) and .seen.launcher.end == \"signal\"" "$T/out" >/dev/null ||
        fail "the restarted serve forgot: $(jq -c ".processes[] | select(.pid == $(pid_of h-w)) | .seen" "$T/out")"
[ "$(verdict "$T/out" "$(pid_of h-w)")" = "unsure unsure" ] || fail "after the restart: $(verdict "$T/out" "$(pid_of h-w)")"
ok "restarted: its memory of the worker it saw is kept (hung up on: still unsure)"
jq -e ".processes[] | select(.pid == $(pid_of d-w)) | .seen.launcher == null" "$T/out" >/dev/null ||
        fail "a restarted serve claims a launcher: $(jq -c ".processes[] | select(.pid == $(pid_of d-w)) | .seen" "$T/out")"
[ "$(verdict "$T/out" "$(pid_of d-w)")" = "unsure unsure" ] || fail "unseen worker: $(verdict "$T/out" "$(pid_of d-w)")"
ok "a worker started and orphaned while serve was down: no launcher it did not see"
stop_serve
done_testing
