#!/bin/bash
# The next step gpureap prints for a leftover is 'gpureap reap --gpu N --pid PIDS': no start
# time, so it is only as good as the moment it was printed. Pasted later, after the leftover
# ended and its PID went to a new process, it signals the newcomer: the plan does not require a
# process named by --pid to hold (or own a context on) the --gpu it was given for.
#   1. --gpu 0 --pid P where P holds nothing at all (a plain sleep): is it killed?
#   2. the real sequence: status prints the step for a ghost's holder; the holder ends; its PID
#      is given to a new process (ns_last_pid in a PID namespace of our own); the pasted step runs.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
export GPUREAP_SYSLOG_SOCKET=$T/nolog

"$GPUHOLD" pidfile "$PIDS" bystander sleep &
LAUNCHED="$LAUNCHED $!"
wait_role bystander
by=$(pid_of bystander)
gr reap --gpu 0 --pid "$by" --yes --grace 200ms --timeout 2s
f_show
if alive "$by"; then ok "a process that holds no GPU, named with --gpu 0 --pid, is spared"
else bad "'reap --gpu 0 --pid $by' killed $by, which holds no GPU at all (exit $RC)"; fi

# 2. in a PID namespace (root): the printed step, then PID reuse, then the paste
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc true 2>/dev/null; then
        f_done; exit
fi
cat >"$T/inner.sh" <<'INNER'
set -u
"$GPUHOLD" pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
child=$(awk '$1 == "child" {print $2}' "$PIDS")
i=0; while [ -d /proc/$child ] && [ "$(wc -l <"$PIDS")" -lt 2 ] && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done
sleep 0.2
"$GPUREAP" status >"$T/status.out" 2>&1
step=$(grep -Eo 'gpureap reap --gpu 0 --pid [0-9,]+' "$T/status.out" | head -n 1)
echo "step $step" >>"$T/result"
# the leftover ends by itself (its job finished it, or someone else killed it)
kill -KILL "$child"; while [ -e /proc/$child/stat ] && ! grep -q ') Z' /proc/$child/stat; do sleep 0.01; done
sleep 0.1
echo $((child - 1)) >/proc/sys/kernel/ns_last_pid
sleep 1000 &
echo "newcomer $!" >>"$T/result"
$step --yes --grace 200ms --timeout 2s >"$T/out" 2>"$T/err"
echo "rc $?" >>"$T/result"
if kill -0 "$child" 2>/dev/null; then echo alive >>"$T/result"; else echo dead >>"$T/result"; fi
INNER
export T PIDS GPUHOLD GPUREAP
unshare -p -f -m --mount-proc bash "$T/inner.sh"
sed 's/^/# /' "$T/status.out" "$T/result"
f_show
nc=$(awk '$1 == "newcomer" {print $2}' "$T/result")
grep -q "^step gpureap reap --gpu 0 --pid $nc\$" "$T/result" || { echo "# the PID was not reused ($nc)"; f_done; exit; }
ok "status printed 'gpureap reap --gpu 0 --pid $nc'; PID $nc now names a plain 'sleep'"
if grep -q '^alive$' "$T/result"; then ok "the pasted step spared the newcomer"
else bad "the pasted next step killed the newcomer $nc (a 'sleep' holding no GPU) that reused the leftover's PID"; fi
f_done
