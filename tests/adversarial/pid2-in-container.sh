#!/bin/bash
# PID 2 is kthreadd in the initial PID namespace only. In a container started with an init
# (tini, docker --init) PID 2 is the application, and the workers it starts are children of
# PID 2: gpureap inside that container refused every one of them as "a kernel thread", so
# nothing was ever reaped there (and slurm-epilog said clean with the job still on its GPU).
# Negative control: a real kernel thread of the host is still refused by name of its flag.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root for a PID namespace with its own /proc"; exit 77; }
command -v tini >/dev/null || { echo "1..0 # SKIP tini is not installed"; exit 77; }
unshare -p -f --mount-proc true 2>/dev/null || { echo "1..0 # SKIP cannot create a PID namespace here"; exit 77; }
# the container: tini as its PID 1, the application PID 2, its worker PID 3 on the GPU; the
# PIDs recorded are the namespace's, in a file of their own (never signalled from the host)
NS=$T/nspids; : >"$NS"
unshare -p -f --kill-child --mount-proc tini -s -- "$GPUHOLD" pidfile "$NS" app child pidfile "$NS" worker cuda 0 0 128 sleep &
LAUNCHED="$LAUNCHED $!"
U=$!
i=0; until [ "$(awk '$1 == "worker"' "$NS" | wc -l)" = 1 ]; do i=$((i + 1)); [ $i -lt 500 ] || fail "the container did not start"; sleep 0.02; done
[ "$(awk '$1 == "app" {print $2}' "$NS")" = 2 ] || fail "the application is not PID 2 there: $(cat "$NS")"
tini_host=$(cat /proc/$U/task/$U/children)
tini_host=${tini_host%% *}
[ -n "$tini_host" ] || fail "no tini under unshare"
inside() { # gpureap run inside the container, with the container's /proc
        set +e
        nsenter -t "$tini_host" -p -m -- "$GPUREAP" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
}
inside status --json
jqok '.processes[] | select(.nspid[-1] == 3 or .pid == 3) | .ppid == 2' "inside, the worker is a child of PID 2"
inside reap --yes --pid 3
expect_rc 0 "reap --pid 3 inside the container ends the application's worker"
hasnt out "kernel thread" "not refused as a kernel thread"
has out "^  3 +ended" "it ended"
# control: on the host, a real kernel thread (the host's kthreadd, PID 2) is refused
gr reap --dry-run --pid 2
hasnt out "^  kill +2 " "the host's kthreadd is never in a plan"
done_testing
