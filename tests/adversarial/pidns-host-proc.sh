#!/bin/bash
# gpureap in a PID namespace of its own that still sees another namespace's /proc at /proc
# (unshare -fp without --mount-proc; a container given the host's /proc): the PIDs it judges
# there are not the ones its signals reach (pidfd_open and kill resolve in its own namespace).
# A host 'sleep' named with --pid, and in the namespace a bystander given the same number
# (ns_last_pid): before, the bystander was killed and reap said "ended", exit 0. Now reap and
# run refuse to signal at all, with the reason, and a read-only status still answers.
. "$TESTLIB"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f true 2>/dev/null; then
        echo "1..0 # SKIP needs root and PID namespaces"; exit 77
fi
export GPUREAP_SYSLOG_SOCKET=$T/nolog
"$GPUHOLD" pidfile "$PIDS" host-target sleep &
LAUNCHED="$LAUNCHED $!"
wait_role host-target
X=$(pid_of host-target)
cat >"$T/inner.sh" <<'INNER'
set -u
echo $((X - 1)) >/proc/sys/kernel/ns_last_pid
sleep 1000 &
by=$!
echo "bystander $by" >"$T/result"
"$GPUREAP" reap --yes --pid "$X" --grace 200ms --timeout 2s >"$T/reap.out" 2>"$T/reap.err"
echo "reap $?" >>"$T/result"
"$GPUREAP" run --quiet -- true >"$T/run.out" 2>"$T/run.err"
echo "run $?" >>"$T/result"
"$GPUREAP" status --json >"$T/status.json" 2>"$T/status.err"
echo "status $?" >>"$T/result"
if kill -0 "$by" 2>/dev/null; then echo "bystander alive" >>"$T/result"; else echo "bystander dead" >>"$T/result"; fi
kill -KILL "$by" 2>/dev/null; true
INNER
export T GPUREAP X
timeout 30 unshare -p -f bash "$T/inner.sh" || true
sed 's/^/# /' "$T/result"
grep -q '^bystander alive$' "$T/result" || fail "reap --pid $X from a namespace that sees another's /proc killed its own process $X"
ok "the namespace's bystander with the host target's number survived"
alive() { kill -0 "$1" 2>/dev/null; }
alive "$X" || fail "the host's target $X was signalled"
ok "the host's target is untouched"
grep -q '^reap 2$' "$T/result" || fail "reap: $(grep '^reap' "$T/result"), $(cat "$T/reap.err")"
grep -q "not of gpureap's own PID namespace" "$T/reap.err" || fail "reap did not say why: $(cat "$T/reap.err")"
ok "reap refuses (exit 2) and says why: $(head -c 120 "$T/reap.err")"
grep -q '^run 2$' "$T/result" && grep -q "not of gpureap's own PID namespace" "$T/run.err" ||
        fail "run: $(grep '^run' "$T/result"), $(cat "$T/run.err")"
ok "run refuses too: it signals its tree by the PIDs /proc shows"
grep -Eq '^status [01]$' "$T/result" || fail "status: $(grep '^status' "$T/result"), $(cat "$T/status.err")"
ok "status, which signals nothing, still answers"
done_testing
