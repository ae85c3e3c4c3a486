#!/bin/bash
# 'gpureap run' supervising a tree that escapes: the command starts a holder through setsid and a
# double fork, the holder moves itself into a cgroup of its own (as root may) and renames itself,
# and the command exits at once; a second variant escapes only after gpureap made its cgroup.
# gpureap must end the escapee (the subreaper keeps it a descendant) and the GPU must be clean.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (cgroups)"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
esc=$(f_cgroup "f-$$-escape")
export GPUHOLD PIDS esc
for when in early late nocg; do
        : >"$PIDS"
        opt=""; [ $when = nocg ] && opt=--no-cgroup
        delay=0; [ $when = late ] && delay=0.3
        set +e
        "$GPUREAP" run $opt --grace 300ms --drain-timeout 2s -- bash -c '
                sleep '"$delay"'
                setsid bash -c "echo \$\$ >\"$esc/cgroup.procs\"; exec \"$GPUHOLD\" name kworker/0:1 daemon-worker \"$PIDS\" escapee 0 0 64 sleep" </dev/null >/dev/null 2>&1 &
                for i in $(seq 300); do grep -q "^escapee " "$PIDS" && break; sleep 0.01; done
                exit 0' >"$T/run.out" 2>&1
        rc=$?
        set -e
        e=$(pid_of escapee)
        [ -n "$e" ] || fail "($when) the escapee never started: $(cat "$T/run.out")"
        LAUNCHED="$LAUNCHED $e"
        sed 's/^/# /' "$T/run.out"
        i=0; while alive "$e" && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.01; done
        if alive "$e"; then
                bad "($when) the escapee $e (setsid, double fork, own cgroup, renamed) outlived 'gpureap run' (exit $rc)"
                kill -KILL "$e"
        else
                ok "($when) the escapee ended with the run (exit $rc)"
        fi
done
f_done
