#!/bin/bash
# Issue 9, item 13: 'reap --pid N' waited the whole timeout, silently, on every GPU when an
# unrelated GPU was dirty. It verifies the GPUs its targets held (or --gpu); --timeout bounds the
# whole command; stdout and stderr to one file read in the order things happened.
. "$TESTLIB"
scenario "gpu 0" "gpu 1" "stale 1 4096"
launch pidfile "$PIDS" target cuda 0 0 256 sleep
wait_role target
t=$(pid_of target)
gr reap --yes --pid "$t" --timeout 20s
expect_rc 0 "the target's GPU verified, the unrelated stale GPU not awaited"
has out "^GPU 0  clean" "GPU 0 verified"
hasnt out "^GPU 1" "GPU 1 not verified"
# negative control: asked for, GPU 1's stale memory is reported at once (nothing to kill there)
gr reap --yes --gpu 1 --timeout 20s
expect_rc 1 "GPU 1 named: not clean"
has err "not clean" "said"
# --timeout bounds everything, the grace too: a TERM-ignorer with a grace longer than the timeout
launch pidfile "$PIDS" stubborn ignore-term cuda 0 0 64 sleep
wait_role stubborn
set +e
"$GPUREAP" reap --yes --pid "$(pid_of stubborn)" --grace 60s --timeout 1s >"$T/out" 2>&1
RC=$?
set -e
expect_rc 0 "the SIGKILL came within the timeout, and it ended"
has out "^  $(pid_of stubborn) +killed" "it needed SIGKILL"
# one file for both streams: the plan comes before the verdict
gr reap --yes --gpu 1 --timeout 1s
cat "$T/out" "$T/err" >/dev/null
set +e
"$GPUREAP" reap --yes --gpu 1 --timeout 1s >"$T/both" 2>&1
set -e
first=$(grep -n "nothing to kill" "$T/both" | cut -d: -f1)
second=$(grep -n "not clean" "$T/both" | cut -d: -f1)
[ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ] || fail "out of order: $(cat "$T/both")"
ok "stdout and stderr in the order they happened"
hasnt both $'\r' "no progress line when not on a terminal"
# a GPU whose process list cannot be read: reap says so at once (3), it does not wait its timeout
launch pidfile "$PIDS" t2 cuda 0 0 64 sleep
wait_role t2
scenario "gpu 0" "gpu 1" "fail nvmlDeviceGetComputeRunningProcesses_v3 999"
set +e
timeout -s KILL 60 "$GPUREAP" reap --yes --pid "$(pid_of t2)" --timeout 40s >"$T/out" 2>"$T/err"; RC=$?
set -e
expect_rc 3 "an unknown GPU is a driver failure, reported without waiting out --timeout"
has err "a GPU could not be read: cannot verify" "said so"
done_testing
