#!/bin/bash
# The leaf cgroup of 'gpureap run' (issue 21, item 6): named gpureap-run-N-RANDOM, N the run's PID in
# its own namespace and 64 random bits, so that the PID 1 of every container does not share one
# name (a gpureap-run-1 that exists, even one that cannot be removed, does not disable it); the
# empty leaves of runs that are gone (SIGKILLed) are removed at the next run; a leaf whose owner
# lives (its lock is held) or that has members stays, and nothing in it is signalled.
. "$TESTLIB"
mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
dir=$mnt${own%/}
[ -n "$mnt" ] && [ -w "$dir" ] || { echo "1..0 # SKIP no writable cgroup v2 here"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
# a cgroup of this test's own, which it moves into: the runs of other tests (beside it under
# meson) make and remove their leaves in their own cgroup, so they never take this test's
# leaves for stale ones in the moment between their mkdir and their lock or member
top=$dir
dir=$top/gpureap-test-names-$$
mkdir "$dir" || { echo "1..0 # SKIP cannot make a cgroup under $top"; exit 77; }
echo $$ >"$dir/cgroup.procs" || { rmdir "$dir"; echo "1..0 # SKIP cannot move into a cgroup of its own"; exit 77; }
MADE=""
cg_cleanup() {
        local d
        cleanup_pids
        for d in $MADE; do rmdir "$d" 2>/dev/null || true; done
        echo $$ >"$top/cgroup.procs" 2>/dev/null || true
        for d in "$dir"/gpureap-run-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rmdir "$dir" 2>/dev/null || true
}
cleanup_pids() {
        local p
        for p in $LAUNCHED; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
        LAUNCHED=""
}
trap 'cg_cleanup; cleanup' EXIT
mk() { mkdir "$dir/$1"; MADE="$MADE $dir/$1"; }

# a run killed before it removed its leaf, of the old kind and of the new
mk gpureap-run-1
mk gpureap-run-999999-0123456789abcdef
# a live run's leaf: its lock held
mk gpureap-run-888888-00000000000000aa
python3 -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(120)' "$dir/gpureap-run-888888-00000000000000aa" "$T/locked" &
LAUNCHED="$LAUNCHED $!"
# an unlocked leaf with a member: not empty, never touched
mk gpureap-run-777777-00000000000000bb
sleep 120 &
member=$!
LAUNCHED="$LAUNCHED $member"
echo "$member" >"$dir/gpureap-run-777777-00000000000000bb/cgroup.procs"
i=0; until [ -e "$T/locked" ]; do i=$((i + 1)); [ $i -lt 1000 ] || fail "no lock"; sleep 0.01; done

# past the first sample (50 ms), where the leaf is made
gr run --quiet --json - -- sleep 1
expect_rc 0 "a run"
jqok '.cgroup | test("/gpureap-run-[0-9]+-[0-9a-f]{16}$")' "its leaf is gpureap-run-N-RANDOM"
[ ! -d "$dir/gpureap-run-1" ] && [ ! -d "$dir/gpureap-run-999999-0123456789abcdef" ] ||
        fail "stale leaves left: $(ls -d "$dir"/gpureap-run-* | tr '\n' ' ')"
ok "the empty leaves of runs that are gone were removed"
[ -d "$dir/gpureap-run-888888-00000000000000aa" ] || fail "a locked leaf was removed"
ok "a leaf whose owner lives (locked) stays"
[ -d "$dir/gpureap-run-777777-00000000000000bb" ] || fail "a leaf with a member was removed"
kill -0 "$member" || fail "the member of a stale leaf was killed"
ok "a leaf with a member stays, its member alive"

# a gpureap-run-1 that cannot be removed (it has a member) does not disable the cgroup of a run
# that is PID 1 of its namespace
mk gpureap-run-1
echo "$member" >"$dir/gpureap-run-1/cgroup.procs"
if unshare --pid --fork --mount-proc true 2>/dev/null; then
        gr_ns() { set +e; unshare --pid --fork --mount-proc "$GPUREAP" "$@" >"$T/out" 2>"$T/err"; RC=$?; set -e; }
        gr_ns run --quiet --json - -- sleep 1
        expect_rc 0 "gpureap as PID 1 of a namespace, in our cgroup"
        jqok '.cgroup | test("/gpureap-run-1-[0-9a-f]{16}$")' "as PID 1 its leaf is gpureap-run-1-RANDOM beside a gpureap-run-1 in use"
else
        echo "# no private PID namespace here: the PID 1 case is left out"
fi
[ -d "$dir/gpureap-run-1" ] && kill -0 "$member" || fail "the gpureap-run-1 in use or its member was touched"
ok "the gpureap-run-1 in use and its member untouched"
echo "$member" >"$dir/cgroup.procs" # out again, so its leaves can be removed
cg_cleanup
done_testing
