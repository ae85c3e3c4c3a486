#!/bin/bash
# Issue 9, item 9: inputs that never end or never come. 'status --replay /dev/zero' grew until
# memory ran out; a FIFO as the replay file, or as a file of a recorded /proc tree
# ($GPUREAP_PROC_ROOT), blocked for ever. Now the replay is a regular file of at most 64 MiB and
# every file is opened without blocking and read only if it is a regular file. The outer
# timeout(1) only turns a hang into a failure; no timing is asserted.
. "$TESTLIB"

# run ARGS...: gpureap under a deadline that only a hang reaches
run() {
        set +e
        timeout -s KILL 20 "$GPUREAP" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        [ $RC -ne 137 ] || fail "gpureap hung: $*"
}

# negative control: a FIFO with no writer blocks a plain reader
mkfifo "$T/fifo"
set +e
timeout -s KILL 1 cat "$T/fifo" >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 137 ] || fail "a FIFO with no writer did not block cat ($rc)"
ok "negative control: the FIFO blocks a reader"

# negative control: a real recording replays
gr status --json
cp "$T/out" "$T/good.json"
run status --replay "$T/good.json"
expect_rc 0 "a recorded snapshot replays"

run status --replay /dev/zero
expect_rc 2 "/dev/zero is refused"
has err "'/dev/zero' is not a regular file" "says why, in one line"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "more than one line on stderr"
ok "one line"

run status --replay "$T/fifo"
expect_rc 2 "a FIFO is refused without waiting for a writer"
has err "is not a regular file" "says why"

run status --replay "$T"
expect_rc 2 "a directory is refused"

truncate -s 65M "$T/huge.json"
run status --replay "$T/huge.json"
expect_rc 2 "a file past the size limit is refused"
has err "larger than a snapshot may be \(64 MiB\)" "names the limit"

{ cat "$T/good.json"; echo '{}'; } >"$T/two.json"
run status --replay "$T/two.json"
expect_rc 2 "a recording with something after it is refused"

# a recorded /proc tree with FIFOs planted where the files of processes are
scenario "gpu 0" "gpu 1 minor=1"
for f in stat 200/stat 200/status 200/cmdline 200/cgroup 200/maps 300/stat 1/stat; do
        rm -rf "$T/proc"
        cp -a "$FIXTURES_PROC" "$T/proc"
        rm "$T/proc/$f"
        mkfifo "$T/proc/$f"
        GPUREAP_PROC_ROOT=$T/proc GPUREAP_DEV_DIR=/dev run status --json
        [ $RC -le 1 ] || fail "a FIFO as $f: exit $RC"
        ok "a FIFO as /proc/$f does not block the scan (exit $RC)"
        case $f in
        200/stat)
                jqok '[.processes[].pid] | index(200) == null' "the process whose stat is a FIFO is left out"
                ;;
        200/*)
                jqok '[.processes[] | select(.pid == 200)][0].devices.gpus | length == 2' "the holder is still found"
                ;;
        esac
done
done_testing
