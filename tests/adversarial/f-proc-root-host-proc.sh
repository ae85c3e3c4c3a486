#!/bin/bash
# gpureap in a container of its own PID namespace, reading the host's /proc through a bind mount
# (GPUREAP_PROC_ROOT=/host/proc: what a DaemonSet does without hostPID). The plan and the identity
# checks read the host's /proc, but pidfd_open() and kill() take PIDs of gpureap's own namespace:
# host PID X, re-verified in /host/proc/X, is signalled as the container's process X -- another
# process entirely. Here the host's target is a 'sleep' named with --pid; the container's process
# with the same number (forced with ns_last_pid) is a bystander.
# What should happen: refuse to signal when the /proc it reads is not its own PID namespace's.
# (The second part: the same with the host's /proc mounted at /proc itself.)
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc true 2>/dev/null; then
        echo "1..0 # SKIP needs root and PID namespaces"; exit 77
fi
export GPUREAP_SYSLOG_SOCKET=$T/nolog
"$GPUHOLD" pidfile "$PIDS" host-target sleep &
LAUNCHED="$LAUNCHED $!"
wait_role host-target
X=$(pid_of host-target)
mkdir -p "$T/hostproc"
cat >"$T/inner.sh" <<'INNER'
set -u
# in the container: a bystander that gets PID X
echo $((X - 1)) >/proc/sys/kernel/ns_last_pid
sleep 1000 &
by=$!
echo "bystander $by" >"$T/result"
GPUREAP_PROC_ROOT=$T/hostproc "$GPUREAP" reap --yes --pid "$X" --grace 200ms --timeout 2s >"$T/out" 2>"$T/err"
echo "rc $?" >>"$T/result"
if kill -0 "$by" 2>/dev/null; then echo "bystander alive" >>"$T/result"; else echo "bystander dead" >>"$T/result"; fi
kill -KILL "$by" 2>/dev/null; true
INNER
export T GPUREAP X
# a mount namespace of our own: the host's /proc bound at $T/hostproc, then the container
unshare -m bash -c 'mount --make-rprivate / && mount --bind /proc "$T/hostproc" && unshare -p -f --mount-proc bash "$T/inner.sh"' || true
sed 's/^/# /' "$T/result"; f_show
grep -q "^bystander $X\$" "$T/result" || { echo "1..0 # SKIP ns_last_pid did not give PID $X"; exit 77; }
ok "the container's bystander has PID $X, the host target's number"
grep -q '^bystander alive$' "$T/result" && ok "the container's bystander survived" ||
        bad "reap --pid $X on the host's /proc (GPUREAP_PROC_ROOT) from a container killed the container's process $X, not the host's"
alive "$X" && echo "# the host's target $X is untouched"
# The same without GPUREAP_PROC_ROOT: a PID namespace of its own that sees the host's /proc at
# /proc itself (unshare -fp without --mount-proc). Before, the bystander was killed there too and
# reap said "ended", exit 0; now reap and run refuse to signal, with the reason, and a read-only
# status still answers.
cat >"$T/inner2.sh" <<'INNER'
set -u
# LeakSanitizer (the ASan build) reads /proc/PID/task by its own PID: not in this namespace
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
echo $((X - 1)) >/proc/sys/kernel/ns_last_pid
sleep 1000 &
by=$!
echo "bystander $by" >"$T/result2"
"$GPUREAP" reap --yes --pid "$X" --grace 200ms --timeout 2s >"$T/reap.out" 2>"$T/reap.err"
echo "reap $?" >>"$T/result2"
"$GPUREAP" run --quiet -- true >"$T/run.out" 2>"$T/run.err"
echo "run $?" >>"$T/result2"
"$GPUREAP" status --json >"$T/status.json" 2>"$T/status.err"
echo "status $?" >>"$T/result2"
if kill -0 "$by" 2>/dev/null; then echo "bystander alive" >>"$T/result2"; else echo "bystander dead" >>"$T/result2"; fi
kill -KILL "$by" 2>/dev/null; true
INNER
timeout 30 unshare -p -f bash "$T/inner2.sh" || true
sed 's/^/# /' "$T/result2"
grep -q '^bystander alive$' "$T/result2" && ok "host /proc at /proc: the namespace's bystander with the target's number survived" ||
        bad "reap --pid $X from a namespace that sees the host's /proc at /proc killed its own process $X"
alive "$X" && ok "the host's target is untouched" || bad "the host's target $X was signalled"
grep -q '^reap 2$' "$T/result2" && grep -q "not of gpureap's own PID namespace" "$T/reap.err" &&
        ok "reap refuses (exit 2) and says why: $(head -c 120 "$T/reap.err")" || bad "reap: $(grep '^reap' "$T/result2"), $(cat "$T/reap.err")"
grep -q '^run 2$' "$T/result2" && grep -q "not of gpureap's own PID namespace" "$T/run.err" &&
        ok "run refuses too: it signals its tree by the PIDs /proc shows" || bad "run: $(grep '^run' "$T/result2"), $(cat "$T/run.err")"
grep -Eq '^status [01]$' "$T/result2" && ok "status, which signals nothing, still answers" ||
        bad "status: $(grep '^status' "$T/result2"), $(cat "$T/status.err")"
f_done
