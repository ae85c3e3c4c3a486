#!/bin/bash
# Issue 9, item 1: inside a container's PID namespace the driver reports host PIDs, which name
# nothing in the container's /proc. A running CUDA job there was called a ghost "kept by process
# 4", sure, and 'reap --yes' killed it. Now: the listed PID is unmapped (never dead), nothing is a
# ghost, the plain reap kills nothing, and the advice says to run on the host.
. "$TESTLIB"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc true 2>/dev/null; then # root: mount a /proc
        echo "1..0 # SKIP needs root and PID namespaces"
        exit 77
fi
cat >"$T/inner.sh" <<'INNER'
set -u
# PID 1 of the container is this shell; the job is its child, holding 1 GiB. It starts while the
# host's /proc is still mounted, so that the fake driver lists its host PID as the real one does;
# then the container gets its own /proc, as docker gives it
sleep 1000 & s1=$!   # the container's own processes first: the job is not its PID 2
sleep 1000 & s2=$!
"$GPUHOLD" pidfile "$PIDS" job cuda 0 0 1024 sleep &
job=$!
while ! grep -q '^job ' "$PIDS"; do sleep 0.01; done
mount -t proc proc /proc
"$GPUREAP" status --json >"$T/in-status.json" 2>"$T/in-status.err"; echo "$?" >"$T/in-status.rc"
"$GPUREAP" reap --yes --timeout 2s >"$T/in-reap.out" 2>"$T/in-reap.err"; echo "$?" >"$T/in-reap.rc"
if kill -0 "$job" 2>/dev/null; then echo alive >"$T/in-job"; else echo dead >"$T/in-job"; fi
kill -KILL "$job" "$s1" "$s2" 2>/dev/null
wait
INNER
export T PIDS GPUHOLD GPUREAP
unshare -p -f -m bash "$T/inner.sh"
cp "$T/in-status.json" "$T/out"
[ "$(cat "$T/in-job")" = alive ] || { cat "$T/in-reap.out" >&2; fail "reap --yes killed the container's running job"; }
ok "reap --yes inside the container killed nothing"
grep -q "nothing to kill" "$T/in-reap.out" || fail "reap planned something: $(cat "$T/in-reap.out")"
ok "the plan is empty"
jqok '.view.pid_namespace == "other"' "gpureap knows it runs in a container's PID namespace"
jqok '[.findings[] | select(.kind == "ghost" or .kind == "teardown")] == []' "no ghost on the driver's word"
jqok '.gpus[0].context_owners[0].process == "unmapped"' "the listed (host) PID is unmapped, not dead"
jqok '[.findings[] | select(.kind == "unmapped")] | length == 1 and (.[0].advice | test("host"))' "the advice says to run it on the host or with hostPID"
jqok '.gpus[0].state == "busy"' "the GPU is busy, not dirty"

# negative control: the same job seen from the host is a live owner, found by its PID
launch pidfile "$PIDS" hostjob cuda 0 0 1024 sleep
wait_role hostjob
gr status --json
jqok '.view.pid_namespace == "host" and .gpus[0].context_owners[0].process == "alive"' "control: on the host the owner is found"
done_testing
