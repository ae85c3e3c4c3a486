#!/bin/bash
# Issue 26, item 12: write errors went unreported. 'metrics >/dev/full' and 'status --json
# >/dev/full' exited 0; with a full state directory 'reap' exited 0 and silently kept no record
# of the reap (the metrics went on telling an older one); 'reap | head -1' ended with SIGPIPE
# (141) after a reap that succeeded. Now a write error is exit 4 (check: 3, UNKNOWN) with one
# line that says why, and a reader that went away after reap's act is no error.
. "$TESTLIB"
: "${GPUREAP_TEST_HOOKS:?the test build of gpureap}"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
[ -w /dev/full ] || { echo "1..0 # SKIP no /dev/full"; exit 77; }
REC=$(dirname "$TESTLIB")/../fixtures/h200-2026-12-03/orphans.json

# grfull ARGS...: gpureap with stdout on /dev/full
grfull() {
        set +e
        "$GPUREAP" "$@" >/dev/full 2>"$T/err"
        RC=$?
        set -e
}
one_line() {
        [ "$(wc -l <"$T/err")" -eq 1 ] || fail "not one line on stderr"
        ok "one line on stderr"
}

# negative control: the same commands to a file exit as they always did
gr metrics --replay "$REC"
expect_rc 0 "metrics to a file"
grfull metrics --replay "$REC"
expect_rc 4 "metrics >/dev/full fails"
has err "^gpureap: cannot write the output: No space left on device$" "says why"
one_line
grfull status --json
expect_rc 4 "status --json >/dev/full fails (clean GPU: 0 before)"
has err "cannot write the output: No space left on device" "says why"
one_line
grfull status --json --replay "$REC"
expect_rc 4 "status --json >/dev/full fails (dirty GPU: 1 before)"
grfull status --replay "$REC"
expect_rc 4 "the table >/dev/full fails"
grfull check --replay "$REC"
expect_rc 3 "check >/dev/full is UNKNOWN, its own failure"
grfull --version
expect_rc 4 "--version >/dev/full fails"
grfull status --replay "$T/none.json"
expect_rc 2 "a usage error stays a usage error"
gr metrics --textfile "$T/metrics.prom"
expect_rc 0 "metrics --textfile"

# a read command whose reader went away fails too: the answer did not arrive. Its stdout is a
# pipe whose reader is gone before it starts, with SIGPIPE as a shell leaves it (141 before)
set +e
python3 -c 'import os, subprocess, sys
r, w = os.pipe()
os.close(r)
rc = subprocess.call(sys.argv[1:], stdout=w)
sys.exit(128 - rc if rc < 0 else rc)' "$GPUREAP" status --json --replay "$REC" 2>"$T/err"
RC=$?
set -e
expect_rc 4 "status --json into a pipe with no reader fails"
has err "cannot write the output: Broken pipe" "says why"

# a leftover to reap: a ghost's hidden holder
leftover() {
        sed -i '/^owner /d; /^child /d' "$PIDS"
        launch pidfile "$PIDS" owner cuda 0 0 256 spawn-holder "$PIDS" child exit
        wait_role owner child
        wait "$LAST" || true
        child=$(pid_of child)
}

# reap | head -1: the reader reads the plan and is gone (the hook waits for it) before the
# signals; what reap prints after them goes nowhere, and is no error
leftover
set +e
GPUREAP_TEST_BEFORE_SIGNAL="while [ ! -e $T/gone ]; do sleep 0.01; done" \
        "$GPUREAP_TEST_HOOKS" reap --yes --grace 200ms --timeout 5s 2>"$T/err" |
        { head -1 >"$T/first"; exec 0<&-; touch "$T/gone"; }
RC=${PIPESTATUS[0]}
set -e
[ -s "$T/first" ] || fail "the reader read nothing"
expect_rc 0 "reap | head -1 after a reap that succeeded (141: SIGPIPE ended it)"
wait_state "$child" "gone Z"
ok "the leftover was reaped"
hasnt err "Broken pipe|cannot write" "the reader gone is not reported"
[ -s "$GPUREAP_STATE_DIR/last-reap" ] || fail "no record of the reap"
ok "the reap was recorded"

# reap >/dev/full: the act is done, the output lost: 4
leftover
set +e
"$GPUREAP" reap --yes --grace 200ms --timeout 5s >/dev/full 2>"$T/err"
RC=$?
set -e
expect_rc 4 "reap >/dev/full"
has err "cannot write the output: No space left on device" "says why"
wait_state "$child" "gone Z"
ok "and the leftover was reaped all the same"

# a state directory that cannot take the record: metrics would tell an older reap
: >"$T/notadir"
leftover
GPUREAP_STATE_DIR=$T/notadir/state gr reap --yes --grace 200ms --timeout 5s
expect_rc 4 "reap whose record cannot be written"
has err "^gpureap: cannot record the reap in '$T/notadir/state/last-reap': Not a directory$" "says where and why"
one_line
has out "^  $child +ended" "the leftover was reaped"

# a full one: a tmpfs of one page in a mount namespace of its own (it goes with the process)
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
        leftover
        mkdir -p "$T/full"
        set +e
        GPUREAP_STATE_DIR=$T/full unshare -m sh -c '
                mount -t tmpfs -o size=4k tmpfs "$1" || exit 99
                dd if=/dev/zero of="$1/filler" bs=1k count=64 2>/dev/null
                exec "$2" reap --yes --grace 200ms --timeout 5s' sh "$T/full" "$GPUREAP" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        [ $RC -ne 99 ] || fail "no tmpfs"
        expect_rc 4 "reap with a full state directory"
        has err "^gpureap: cannot record the reap in '$T/full/last-reap': No space left on device$" "says why"
        one_line
        has out "^  $child +ended" "the leftover was reaped"
        [ -z "$(ls -A "$T/full")" ] || fail "the tmpfs outlived its namespace: $(ls -A "$T/full")"
        ok "nothing left of the tmpfs"
else
        echo "# no root or no unshare -m: the full tmpfs case is left out"
fi
done_testing
