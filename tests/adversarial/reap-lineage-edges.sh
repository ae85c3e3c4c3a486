#!/bin/bash
# What reap follows while it ends a target, at the edges found by the third adversarial review:
# - a target whose main thread ends alone (pthread_exit) and whose other thread forks a child
#   that keeps the GPU files: the kernel tells the main thread's end as the process's exit, and
#   the lineage dropped the target; the child was left (with events, as root);
# - without the kernel's events (not root): a process that joins the target's group with
#   setpgid from a live sibling job is not the target's fork, and is spared;
# - a plain fork-and-exit leftover is followed both ways (the control).
. "$TESTLIB"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
alive() { [ -d "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
reap_it() { # EVENTS|NO-EVENTS ARGS...
        local mode=$1
        shift
        RC=0
        if [ "$mode" = events ]; then "$GPUREAP" reap "$@" >"$T/out" 2>"$T/err" || RC=$?
        else GPUREAP_TEST_NO_EVENTS=1 "$GPUREAP_TEST_HOOKS" reap "$@" >"$T/out" 2>"$T/err" || RC=$?; fi
}
for how in leader-exit fork-exit; do
        for mode in events no-events; do
                : >"$PIDS"
                setsid "$LINEAGE_TARGET" "$how" "$PIDS" &
                LAUNCHED="$LAUNCHED $!"
                wait_role target
                t=$(pid_of target)
                reap_it "$mode" --yes --pid "$t" --grace 1s --timeout 5s
                c=$(pid_of child)
                [ -n "$c" ] || fail "($how, $mode) the target never forked its child: $(cat "$T/out")"
                for _ in $(seq 100); do alive "$c" || break; sleep 0.01; done
                ! alive "$c" || fail "($how, $mode) the target's child $c, holding the GPU, outlived the reap: $(cat "$T/out")"
                ok "($how, $mode) the target's child was followed and ended (exit $RC)"
                kill -KILL "$t" "$c" 2>/dev/null || true
        done
done

# a sibling job's child joins the target's group (its leader gone) with setpgid and opens the
# GPU while reap runs without events: not the target's
cat >"$T/sibling.py" <<'PY'
import os, sys, time
pidfile, group, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.setpgid(0, 0)
with open(pidfile, "a") as f:
    f.write("sibling %d\n" % os.getpid())
while not os.path.exists(go):
    time.sleep(0.02)
if os.fork() == 0:
    os.setpgid(0, group)
    fds = [os.open(os.environ["GPUREAP_DEV_DIR"] + "/nvidia0", os.O_RDWR) for _ in range(4)]
    with open(pidfile, "a") as f:
        f.write("joiner %d\n" % os.getpid())
    while True:
        time.sleep(1)
while True:
    time.sleep(1)
PY
: >"$PIDS"
export GPUHOLD PIDS T
setsid bash -c '"$GPUHOLD" pidfile "$PIDS" target ignore-term cuda 0 0 100 sleep & python3 "$T/sibling.py" "$PIDS" $$ "$T/go" & echo "leader $$" >>"$PIDS"; sleep 0.5; exit 0' </dev/null >/dev/null 2>&1 &
wait_role target sibling leader
t=$(pid_of target)
wait_state "$(pid_of leader)" gone
(sleep 0.6; touch "$T/go") &
reap_it no-events --yes --pid "$t" --grace 2s --timeout 5s
j=$(pid_of joiner)
[ -n "$j" ] || fail "the sibling's child never joined: $(cat "$T/out")"
[ "$(awk '{print $5}' "/proc/$j/stat")" = "$(pid_of leader)" ] || fail "the joiner is not in the target's group"
alive "$j" || fail "(no events) the sibling's child $j, which joined the target's group, was killed: $(cat "$T/out")"
ok "(no events) a process that joined the target's group from a live sibling job is spared"
alive "$t" && fail "the target $t was not ended"
ok "and the target ended"
kill -KILL "$(pid_of sibling)" "$j" 2>/dev/null || true
done_testing
