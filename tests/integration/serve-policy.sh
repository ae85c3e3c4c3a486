#!/bin/bash
# gpureap serve's policy (--reap-after, off by default): a holder judged a sure leftover at every
# look for longer than the given time is reaped by lib's cycle in a thread of serve's (what
# 'gpureap reap --only PID@START' does: reap's own plan, checks and audit lines; no second
# process, no argv); live jobs, unsure holders and monitors are never touched. And
# reap --only itself: the default plan limited to processes named with their start times.
. "$TESTLIB"
scenario "gpu 0 minor=0" "gpu 1 minor=1"
syslog_listener
start_of() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }

gr serve --reap-all-users
expect_rc 2 "--reap-all-users alone is a usage error"
gr serve --reap-after 0s
expect_rc 2 "--reap-after 0 is a usage error"

# reap --only: the default plan, limited to the processes named with their start times
launch pidfile "$PIDS" o1 cuda 0 0 256 spawn-holder "$PIDS" h1 exit
wait_role o1 h1
wait "$LAST" || true
h1=$(pid_of h1)
gr reap --dry-run --json --direct --only "$h1@$(( $(start_of "$h1") + 1 ))"
jq -e ".plan.targets == [] and (.plan.spared[] | select(.pid == $h1) | .refusal == \"not_only\")" "$T/out" >/dev/null ||
        fail "a wrong start time: $(jq -c .plan "$T/out")"
ok "reap --only with another start time spares the process (a PID reused since)"
gr reap --dry-run --json --direct --only "$h1@$(start_of "$h1")"
jq -e "[.plan.targets[] | select(.pid == $h1)] | length == 1" "$T/out" >/dev/null ||
        fail "the right start time: $(jq -c .plan "$T/out")"
ok "reap --only with its start time: a target"
gr reap --dry-run --json --direct --only "$$@$(start_of $$)"
jq -e ".plan.targets == []" "$T/out" >/dev/null || fail "--only of a non-leftover: $(jq -c .plan "$T/out")"
ok "reap --only never adds a process the plan would not take"
gr reap --dry-run --only 12x
expect_rc 2 "a malformed --only item"
kill -KILL "$h1"; wait_state "$h1" gone

# serve on a socket given with --socket, its environment naming one where nobody listens: its
# reap still joins this serve's memory (else it would not know the launchers it saw)
GPUREAP_SERVE_SOCKET=$T/nobody.sock "$GPUREAP" serve --socket "$T/policy.sock" --interval 100ms --listen none \
        --reap-after 600ms >"$T/serve.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE"
until_served() {
        local i=0
        until GPUREAP_SERVE_SOCKET=$T/policy.sock "$GPUREAP" status --json 2>/dev/null | jq -e "$1" >/dev/null; do
                i=$((i + 1)); [ $i -lt 1500 ] || fail "serve never said: $1"; sleep 0.02
        done
}
until_served ".history.served_by == $SERVE"
has_log() { # PATTERN DESCRIPTION: until the syslog has a line matching it (bounded)
        local i=0
        until grep -Eq -- "$1" "$T/syslog" 2>/dev/null; do
                i=$((i + 1)); [ $i -lt 6000 ] || { cp "$T/syslog" "$T/out"; fail "$2: no /$1/ in the log"; }; sleep 0.01
        done
        ok "$2"
}
has_log "policy: sure leftovers of serve's own user reaped after 600 ms" "serve logs its policy at the start"

# first what must never be reaped: a live job, an unsure holder (a setsid'd worker whose launcher
# exited by itself), a monitor, and another user's sure leftover (serve runs without
# --reap-all-users)
other=""
if command -v setpriv >/dev/null; then
        chmod 0755 "$T"; chmod 0666 "$T"/dev/* "$PIDS"; chmod 1777 "$T/ctx"
        setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" x-o cuda 0 0 64 spawn-holder "$PIDS" x-h exit &
        LAUNCHED="$LAUNCHED $!"
        wait_role x-o x-h
        other=$(pid_of x-h)
        until_served ".processes[] | select(.pid == $other) | .verdict.judgement == \"leftover\" and .verdict.confidence == \"sure\""
fi
"$GPUHOLD" pidfile "$PIDS" live-l worker "$PIDS" live-w 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
"$GPUHOLD" pidfile "$PIDS" u-l child-exit-on-usr1 0 setsid pidfile "$PIDS" u-w cuda 1 1 256 sleep &
LAUNCHED="$LAUNCHED $!"
launch pidfile "$PIDS" mon monitor 0 sleep
wait_role live-l live-w u-l u-w mon
kill -USR1 "$(pid_of u-l)"
live=$(pid_of live-w) unsure=$(pid_of u-w) mon=$(pid_of mon)
until_served "[.processes[] | select(.pid == $live or .pid == $unsure or .pid == $mon) | .verdict.judgement] | sort == [\"live\", \"live\", \"unsure\"]"
# then a sure leftover: a setsid'd worker whose launcher is SIGKILLed, seen starting by serve
"$GPUHOLD" pidfile "$PIDS" k-l child setsid pidfile "$PIDS" k-w cuda 1 1 512 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role k-l k-w
w=$(pid_of k-w) wstart=$(start_of "$(pid_of k-w)")
until_served ".processes[] | select(.pid == $w) | .seen.launcher.pid == $(pid_of k-l)"
kill -KILL "$(pid_of k-l)"
until_served ".processes[] | select(.pid == $w) | .verdict.confidence == \"sure\""
# bounded generously: the policy's 600 ms, then a reap of its own (slow under ASan on a busy host)
i=0; while [ -d "/proc/$w" ] && [ "$(sed 's/.*) //' "/proc/$w/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; do
        i=$((i + 1)); [ $i -lt 6000 ] || fail "the sure leftover $w was not reaped in 60 s"; sleep 0.01
done
ok "the sure leftover $w was reaped by the policy"
has_log "policy: 1 sure leftover for more than 600 ms: reaping --only $w@$wstart" "the policy names what it reaps"
has_log "gpureap\\[$SERVE\\]: serve by uid $(id -u) \\(euid $(id -u), parent [0-9]+ [^)]*\\): signalling pid $w start $wstart .*: leftover; judged leftover" \
        "the audit line for the target, with the verdict, is serve's own (no other process did it)"
has_log "policy: the reap ended with exit code 0" "the reap verified the GPU: exit code 0"
for p in $live $unsure $mon $other; do
        [ -d "/proc/$p" ] && [ "$(sed 's/.*) //' "/proc/$p/stat" | cut -d' ' -f1)" != Z ] || fail "process $p was ended by the policy"
done
ok "the live job, the unsure holder, the monitor and another user's leftover ($other), older than the reaped one, were never touched"
cp "$T/syslog" "$T/out"
hasnt out "signalling pid ($live|$unsure|$mon${other:+|$other}) " "no audit line names them"
hasnt out "--only .*${other:-NOBODY}@" "another user's leftover was never handed to reap"
kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true
done_testing
