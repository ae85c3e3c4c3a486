#!/bin/bash
# GPUREAP_PROC_ROOT (documented as "for tests": recorded /proc trees) is honoured by 'reap' in the
# installed binary, as root too, and the identity checks before each signal read the same
# fixture: a recorded tree that names a PID which, on this machine, is a real process, has that
# real process signalled. The fixture's owner and start time are what the pidfd check compares
# against, so it also passes for another user's process without --all-users.
#   The fixture: PID V (really a 'sleep' of uid 4242) recorded as uid 0's orphaned multiprocessing
#   worker holding nvidia0 (a sure leftover); 'gpureap reap --yes' with no other option.
# What should happen: reap refuses to signal anything when /proc is not the live /proc (or checks
# identities against the real /proc, where V's start time and owner differ).
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null || { echo "1..0 # SKIP needs root and setpriv"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
setpriv --reuid=4242 --regid=4242 --clear-groups sleep 1000 &
V=$!
LAUNCHED="$LAUNCHED $V"
wait_state "$V" S
F=$T/fixture
mkdir -p "$F"
tail=" 0 0 4194560 100 0 0 0 5 3 0 0 20 0 1 0 %s 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0"
grep btime /proc/stat | { printf 'cpu  1 2 3 4\n'; cat; } >"$F/stat"
proc() { # pid comm state ppid pgrp sid start uid
        mkdir -p "$F/$1/fd"
        printf "%s (%s) %s %s %s %s$tail\n" "$1" "$2" "$3" "$4" "$5" "$6" "$7" >"$F/$1/stat"
        printf 'Name:\t%s\nState:\t%s\nUid:\t%s\t%s\t%s\t%s\nNSpid:\t%s\n' "$2" "$3" "$8" "$8" "$8" "$8" "$1" >"$F/$1/status"
        printf '0::/\n' >"$F/$1/cgroup"
        : >"$F/$1/cmdline"
        : >"$F/$1/maps"
}
proc 1 systemd S 0 1 1 10 0
proc "$V" python3 S 1 "$V" "$V" 5000 0
printf 'python3\0-c\0from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)\0--multiprocessing-fork\0' >"$F/$V/cmdline"
for i in $(seq 3 14); do ln -s "$GPUREAP_DEV_DIR/nvidia0" "$F/$V/fd/$i"; done
ln -s "$GPUREAP_DEV_DIR/nvidiactl" "$F/$V/fd/15"
ln -s 1 "$F/self"

GPUREAP_PROC_ROOT=$F gr reap --dry-run
f_show
grep -Eq "^  kill   $V " "$T/out" && echo "# the plan from the fixture takes real PID $V"
GPUREAP_PROC_ROOT=$F gr reap --yes --grace 200ms --timeout 2s
f_show
if alive "$V"; then ok "the real process $V named by a recorded tree survived"
else bad "reap on a recorded /proc tree (GPUREAP_PROC_ROOT) killed the real process $V, uid 4242, without --all-users"; fi
f_done
