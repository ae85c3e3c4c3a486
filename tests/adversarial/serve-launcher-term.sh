#!/bin/bash
# With serve's memory, "its launcher, the same executable, was killed" made any process a sure
# leftover, which the default reap kills: also an idle server listening on a port of its own,
# started by a launcher in its own session that then got SIGTERM (any python starts another
# python: the same executable says little). Without serve the same server is live, likely. Now:
# a server whose launcher serve saw killed is unsure; a non-listening worker whose launcher
# got SIGTERM is a likely leftover (it could have ended it), and only SIGKILL makes it sure.
. "$TESTLIB"
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
serve_start --interval 100ms --listen none
verdict() { jq -r ".processes[] | select(.pid == $1) | .verdict | \"\(.judgement) \(.confidence)\"" "$T/out"; }
# ROLE MINOR EXTRA...: a launcher in its own session (ROLE-l) and its child (ROLE-w) on the GPU
started() {
        local role=$1 minor=$2
        shift 2
        "$GPUHOLD" pidfile "$PIDS" "$role-l" setsid child cuda "$minor" "$minor" 128 "$@" pidfile "$PIDS" "$role-w" sleep &
        LAUNCHED="$LAUNCHED $!"
        wait_role "$role-l" "$role-w"
        until_served ".processes[] | select(.pid == $(pid_of "$role-w")) | .seen.launcher.pid == $(pid_of "$role-l")"
}
started srv 0 listen "$PIDS"
started term 1
started kill 2
kill -TERM "$(pid_of srv-l)" "$(pid_of term-l)"
kill -KILL "$(pid_of kill-l)"
for r in srv term kill; do
        until_served ".processes[] | select(.pid == $(pid_of $r-w)) | .seen.launcher.end == \"signal\""
done
gr status --json
[ "$(verdict "$(pid_of srv-w)")" = "unsure unsure" ] || fail "a listening server whose launcher got SIGTERM: $(verdict "$(pid_of srv-w)")"
ok "through serve, a server whose launcher got SIGTERM is unsure"
[ "$(verdict "$(pid_of term-w)")" = "leftover likely" ] || fail "a worker whose launcher got SIGTERM: $(verdict "$(pid_of term-w)")"
ok "a worker whose launcher got SIGTERM: leftover likely"
[ "$(verdict "$(pid_of kill-w)")" = "leftover sure" ] || fail "(control) a worker whose launcher got SIGKILL: $(verdict "$(pid_of kill-w)")"
ok "(control) a worker whose launcher got SIGKILL: leftover sure"
gr status --json --direct
[ "$(verdict "$(pid_of srv-w)")" = "live likely" ] || fail "without serve the server is $(verdict "$(pid_of srv-w)")"
ok "without serve's memory the server is live likely"
gr reap --yes
[ -d "/proc/$(pid_of srv-w)" ] || fail "the default reap killed the server"
[ -d "/proc/$(pid_of term-w)" ] || fail "the default reap killed the likely leftover"
ok "the default reap spares the server and the likely leftover"
wait_state "$(pid_of kill-w)" "Z gone"
ok "and takes the sure one"
kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true
done_testing
