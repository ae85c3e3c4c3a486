#!/bin/bash
# While reap ends two targets, one (T1, leading its own session and group) ends at once and a
# new, unrelated daemon takes its PID: it leads a group of that number, forks a worker that
# holds the GPU, and exits, as daemons do. Found by the second adversarial review: the worker
# was in "a target's group whose leader is gone", and was killed. In a PID namespace of our own,
# where ns_last_pid gives the daemon T1's number; there reap cannot use the kernel's process
# events (they carry the initial namespace's PIDs), so this checks the rules without them: the
# worker was born after every member of that group had ended, so it is not theirs. The number
# is taken 300 ms after T1 ended: a PID comes round again only after the counter wraps, never
# within the same few milliseconds (the clock ticks of a start time are 10 ms).
. "$TESTLIB"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc true 2>/dev/null; then
        echo "1..0 # SKIP needs root and PID namespaces"; exit 77
fi
export GPUREAP_SYSLOG_SOCKET=$T/nolog
NSP=$T/nspids # the namespace's PIDs: never in $PIDS, whose cleanup kills by host PID
: >"$NSP"
cat >"$T/inner.sh" <<'INNER'
set -u
setsid "$GPUHOLD" pidfile "$NSP" T1 cuda 0 0 100 sleep &
t1=$!
setsid "$GPUHOLD" pidfile "$NSP" T2 ignore-term cuda 0 0 100 sleep &
t2=$!
while [ "$(grep -c '^T' "$NSP")" -lt 2 ]; do sleep 0.01; done
"$GPUREAP" reap --yes --pid "$t1,$t2" --grace 3s --timeout 6s >"$T/out" 2>"$T/err" &
rp=$!
i=0; while [ "$(awk '{print $3}' /proc/$t1/stat 2>/dev/null)" = S ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
wait "$t1" 2>/dev/null
sleep 0.3
echo $((t1 - 1)) >/proc/sys/kernel/ns_last_pid
setsid bash -c '"$GPUHOLD" pidfile "$NSP" W cuda 0 0 300 sleep & exit 0' &
dpid=$!
wait $dpid
while ! grep -q '^W ' "$NSP"; do sleep 0.01; done
w=$(awk '$1=="W"{print $2}' "$NSP")
echo "t1 $t1 daemon $dpid worker $w worker_group $(awk '{print $5}' /proc/$w/stat)" >"$T/result"
wait "$rp"; echo "rc $?" >>"$T/result"
sleep 0.2
if [ "$(awk '{print $3}' /proc/$w/stat 2>/dev/null)" = S ]; then echo alive >>"$T/result"; else echo dead >>"$T/result"; fi
kill -KILL "$w" "$t2" 2>/dev/null; true
INNER
export T GPUHOLD GPUREAP NSP
timeout -s KILL 40 unshare -p -f -m --mount-proc --kill-child bash "$T/inner.sh" || true
sed 's/^/# /' "$T/result" "$T/out"
read -r _ t1 _ d _ w _ g <"$T/result"
# the daemon leads its session and group (setsid), and its worker, started in the background
# by a shell without job control, stays in that group: the number is the daemon's PID
[ "$d" = "$t1" ] || { echo "1..0 # SKIP the daemon did not get T1's number (it got $d, T1 $t1)"; exit 77; }
ok "the new daemon took T1's PID ($t1), and so its worker is in a group of that number (group $g)"
grep -q '^alive$' "$T/result" || fail "the new daemon's worker (not a target's descendant) was killed"
ok "its worker, which descends from no target, is spared"
grep -Eq "^  $t1 +ended" "$T/out" && ok "T1 itself ended" || fail "T1 was not reported ended: $(cat "$T/out")"
done_testing
