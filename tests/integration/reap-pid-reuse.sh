#!/bin/bash
# Forced PID reuse: between the plan and the signal the planned process dies and its PID is given
# to a new process (ns_last_pid in a PID namespace of our own). The newcomer must survive.
# The seam that runs between the plan and the signal exists only in the test build.
. "$TESTLIB"
: "${GPUREAP_TEST_HOOKS:?the test build of gpureap (src/gpureap-test-hooks)}"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f -m --mount-proc true 2>/dev/null; then
        echo "1..0 # SKIP needs root and PID namespaces"
        exit 77
fi
cat >"$T/inner.sh" <<'INNER'
set -eu
# inside: PID 1 is this shell; /proc is the namespace's
"$GPUHOLD" pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
child=$(awk '$1 == "child" {print $2}' "$PIDS")
cat >"$T/hook.sh" <<HOOK
kill -KILL $child
while [ -e /proc/$child/stat ] && ! grep -q ') Z' /proc/$child/stat; do sleep 0.01; done
sleep 0.1
echo $((child - 1)) >/proc/sys/kernel/ns_last_pid
sleep 1000 &
echo "newcomer \$!" >>"$PIDS"
HOOK
# inside a PID namespace the driver's PIDs name nothing: the plan takes only what is named
GPUREAP_TEST_BEFORE_SIGNAL="sh $T/hook.sh" "$GPUREAP_TEST_HOOKS" reap --yes --pid "$child" --grace 200ms --timeout 2s >"$T/out" 2>"$T/err" || true
newcomer=$(awk '$1 == "newcomer" {print $2}' "$PIDS")
echo "child $child newcomer $newcomer" >>"$T/result"
if kill -0 "$newcomer" 2>/dev/null; then echo alive >>"$T/result"; else echo dead >>"$T/result"; fi
INNER
export T PIDS GPUHOLD GPUREAP GPUREAP_TEST_HOOKS
unshare -p -f -m --mount-proc bash "$T/inner.sh"
cat "$T/result" >&2 || fail "the namespace run left no result"
read -r _ child _ newcomer <"$T/result"
[ "$child" = "$newcomer" ] || { echo "1..0 # SKIP ns_last_pid did not give the same PID ($child, $newcomer)"; exit 77; }
ok "the planned PID $child was given to a new process"
grep -q '^alive$' "$T/result" || fail "the newcomer with the recycled PID was killed"
ok "the newcomer survived"
has out "^  $child +changed" "reap reports the identity change and skipped it"
done_testing
