#!/bin/bash
# 'reap --tree' re-reads its targets' process groups by number every 50 ms while the ladder runs,
# and signals newcomers. A group number names the same group only while the group exists: once
# every member of group G is gone the kernel may hand out PID G again, and a new process that
# leads a session or group of its own (setsid, a login, a job of a shell) is group G. The ladder
# goes on while another target lives (here one that ignores SIGTERM until the SIGKILL at the end
# of the grace): the newcomer with PID G is found in "group G" and signalled.
# Forced with ns_last_pid in a PID namespace of our own (as reap-pid-reuse.sh does).
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc true 2>/dev/null; then
        echo "1..0 # SKIP needs root and PID namespaces"; exit 77
fi
export GPUREAP_SYSLOG_SOCKET=$T/nolog
cat >"$T/inner.sh" <<'INNER'
set -u
setsid sleep 1000 &
t1=$!
setsid "$GPUHOLD" ignore-term sleep &
t2=$!
sleep 0.2
"$GPUREAP" reap --yes --tree --pid "$t1,$t2" --grace 2s --timeout 4s >"$T/out" 2>"$T/err" &
rp=$!
# group t1 ends at the SIGTERM: its only member exits and is reaped by us
i=0; while [ -d /proc/$t1 ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
wait "$t1" 2>/dev/null
echo $((t1 - 1)) >/proc/sys/kernel/ns_last_pid
setsid sleep 1000 &
nc=$!
echo "t1 $t1 t2 $t2 newcomer $nc" >"$T/result"
wait "$rp"
echo "rc $?" >>"$T/result"
if kill -0 "$nc" 2>/dev/null; then echo alive >>"$T/result"; else echo dead >>"$T/result"; fi
kill -KILL "$nc" "$t2" 2>/dev/null; true
INNER
export T GPUHOLD GPUREAP
unshare -p -f -m --mount-proc bash "$T/inner.sh" || true
cat "$T/result" | sed "s/^/# /"; cat "$T/out" "$T/err" | sed "s/^/# /"
f_show
read -r _ t1 _ t2 _ nc <"$T/result"
[ "$t1" = "$nc" ] || { echo "1..0 # SKIP ns_last_pid did not give the same PID ($t1, $nc)"; exit 77; }
ok "group $t1 ended and PID $t1 went to a new session leader during the ladder"
if grep -q '^alive$' "$T/result"; then ok "the newcomer in the recycled group number survived"
else bad "'reap --tree' signalled the newcomer $nc: a new process that reused the PID (and so the group number) of its target $t1's dead group"; fi
f_done
