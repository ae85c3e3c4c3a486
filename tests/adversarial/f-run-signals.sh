#!/bin/bash
# 'gpureap run' supervising a tree that signals gpureap itself. INT, TERM, HUP, QUIT end the tree
# (documented, 128+N); USR1/USR2 are passed on; PIPE is ignored. Every other signal whose default
# action ends a process (ALRM, VTALRM, PROF, XCPU, XFSZ, PWR, STKFLT, SYS, a real-time one) kills
# the supervisor outright: its tree lives on, orphaned, holding the GPU. A supervisor should not
# be ended by a signal without ending its tree (tini passes every catchable signal on).
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
for sig in ALRM VTALRM PROF XCPU PWR RTMIN+3 TERM; do
        : >"$PIDS"
        "$GPUREAP" run --grace 200ms --drain-timeout 1s -- "$GPUHOLD" pidfile "$PIDS" holder cuda 0 0 64 \
                spawn-holder "$PIDS" worker sleep >"$T/run.out" 2>&1 &
        rp=$!
        LAUNCHED="$LAUNCHED $rp"
        wait_role holder worker
        h=$(pid_of holder) w=$(pid_of worker)
        LAUNCHED="$LAUNCHED $h $w"
        sleep 0.2 # past the first sample: the cgroup exists
        # the tree signals its supervisor (its parent: GPUREAP_RUN_PID)
        kill -s "$sig" "$(tr '\0' '\n' <"/proc/$h/environ" | sed -n 's/^GPUREAP_RUN_PID=//p')"
        set +e
        i=0; while alive "$rp" && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
        wait "$rp"; rc=$?
        set -e
        i=0; while { alive "$h" || alive "$w"; } && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.01; done
        if alive "$h" || alive "$w"; then
                bad "SIG$sig sent to 'gpureap run' by its own tree: gpureap exited $rc and left its tree ($h, $w) alive, holding the GPU"
                kill -KILL "$h" "$w" 2>/dev/null || true
        else
                ok "SIG$sig to 'gpureap run': exit $rc, the tree ended with it"
        fi
done

# INT and HUP that end gpureap reach the command alone first, with time to act on them (its
# handler runs, it exits by itself), not followed at once by SIGTERM to its group. (At their
# default action: a script's background job starts with INT and QUIT ignored, and an ignored one
# is passed on, not the end of the run)
for sig in INT HUP; do
        rm -f "$T/handled"
        env --default-signal=INT,HUP,QUIT "$GPUREAP" run --grace 3s --json "$T/run.json" -- bash -c \
                "trap 'echo \$\$ >\"$T/handled\"; exit 9' $sig; echo \"cmd \$\$\" >>\"$PIDS\"; while :; do sleep 0.05; done" \
                >"$T/run.out" 2>&1 &
        rp=$!
        LAUNCHED="$LAUNCHED $rp"
        wait_role cmd
        kill -s "$sig" "$rp"
        set +e
        wait "$rp"; rc=$?
        set -e
        if [ -s "$T/handled" ] && [ "$(jq .command_exit_status "$T/run.json")" = 9 ]; then
                ok "SIG$sig to 'gpureap run': the command's handler ran and it exited 9 (gpureap exit $rc)"
        else
                bad "SIG$sig to 'gpureap run': the command's handler did not run to its end (handled: $(cat "$T/handled" 2>/dev/null), $(jq -c '{command_exit_status, command_signal}' "$T/run.json"))"
        fi
        sed -i '/^cmd /d' "$PIDS"
done
f_done
