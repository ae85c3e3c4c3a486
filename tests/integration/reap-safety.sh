#!/bin/bash
# What reap never touches: PID 1, gpureap's ancestors, another user's process (unless root asks
# with --all-users), monitors; and nothing at all when --pid names a process that is not there.
. "$TESTLIB"

launch pidfile "$PIDS" mon monitor 0 sleep
wait_role mon
mon=$(pid_of mon)
gr reap --yes --all
expect_rc 0 "nothing but a monitor"
has out "^  spare  $mon .*a monitor" "the monitor is spared"
kill -0 "$mon" || fail "the monitor was killed"
ok "the monitor lives"

gr reap --yes --pid 1,$$,$PPID
has out "^  spare  1 .*PID 1 is never signalled" "PID 1 spared"
has out "^  spare  $$ .*gpureap itself or one of its ancestors" "the calling shell spared"
ok "still here to tell"

# --pid of a process that does not exist: a usage mistake (exit 2) said in one line, before
# anything is signalled, also to a leftover named beside it; a dry run says the same
launch pidfile "$PIDS" owner cuda 0 0 256 spawn-holder "$PIDS" child exit
wait_role owner child
wait "$LAST" || true
child=$(pid_of child)
sh -c 'exit 0' &
gone=$!
wait "$gone"
! kill -0 "$gone" 2>/dev/null || fail "PID $gone is there again"
for args in "--yes --pid $gone" "--yes --pid $child,$gone" "--dry-run --pid $gone"; do
        gr reap $args
        expect_rc 2 "reap $args: a PID that names no process"
        [ "$(cat "$T/err")" = "gpureap: no process $gone (--pid): it has ended, or the PID is wrong; nothing was signalled" ] ||
                fail "not the one line: $(cat "$T/err")"
        [ ! -s "$T/out" ] || fail "reap $args printed a plan: $(cat "$T/out")"
        ok "one line, no plan"
        kill -0 "$child" || fail "reap $args signalled the leftover named beside it"
done
gr reap --yes --pid "$child"
expect_rc 0 "negative control: --pid of the leftover alone reaps it"
has out "^  $child +ended" "it ended"

if [ "$(id -u)" -eq 0 ]; then
        chmod 0755 "$T"; chmod 0666 "$T"/dev/*; chmod 1777 "$T/ctx"; chmod 0666 "$PIDS"
        setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" other cuda 0 0 128 sleep &
        LAUNCHED="$LAUNCHED $!"
        wait_role other
        o=$(pid_of other)
        gr reap --yes --all --grace 200ms --timeout 1s
        has out "^  spare  $o .*another user's process" "another user's process spared without --all-users"
        kill -0 "$o" || fail "another user's process was killed"
        ok "it lives"
        gr reap --yes --all --all-users --grace 200ms
        expect_rc 0 "with --all-users as root"
        has out "^  $o +ended" "now it is reaped"
else
        echo "# not root: the --all-users part is skipped"
fi
done_testing
