#!/bin/bash
# scripts/demo.sh, the fake node of the README for a newcomer without a GPU: its real output
# finds the ghost, reaps its hidden holder and verifies the memory came back, and check says OK;
# afterwards, and after a Ctrl-C in the middle, nothing the demo started is left running and its
# directory is gone.
. "$TESTLIB"
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
BUILD=$(cd "$(dirname "$GPUREAP")/.." && pwd)
mkdir "$T/tmp"

# left: the processes whose command line or environment names the demo's directories (the
# demo's gpuhold processes name their pidfile, gpureap and its helper the fake scenario)
left() {
        local p
        for p in /proc/[0-9]*; do
                { tr '\0' '\n' <"$p/cmdline"; tr '\0' '\n' <"$p/environ"; } 2>/dev/null |
                        grep -q "^.*$T/tmp/gpureap-demo\." && echo "${p#/proc/}"
        done
        return 0
}
demo_dirs() { find "$T/tmp" -maxdepth 1 -name 'gpureap-demo.*' | wc -l; }

set +e
TMPDIR=$T/tmp BUILD=$BUILD timeout -s KILL 60 "$ROOT/scripts/demo.sh" >"$T/out" 2>"$T/err"
RC=$?
set -e
expect_rc 0 "the demo ran"
has out "^\\$ gpureap status$" "it runs status"
has out "^0    DIRTY  2\\.0/140\\.4 GiB  ghost of PID [0-9]+, kept by [0-9]+ \\(gpuhold\\) \\[sure\\]" "status finds the ghost"
has out "^1    BUSY " "and the live job"
has out "^  kill   [0-9]+ +gpuhold +uid [0-9]+ +leftover, sure" "the dry run plans the ghost's holder"
has out "^  spare  [0-9]+ +gpuhold +a live job" "and spares the live job"
has out "^\\$ gpureap reap --yes --pid [0-9]+$" "reap limited to the demo's process"
has out "^GPU 0  clean  memory 2\\.0 GiB -> 0 B$" "the memory came back"
has out "^verified in [0-9]+ ms: no leftover on the targets' GPUs$" "the reap verified"
has out "^GPUREAP OK - 2 GPUs, 1 busy, none with leftovers$" "check: OK, the live job busy"
[ -z "$(left)" ] || fail "left running after the demo: $(left)"
ok "nothing of the demo left running"
[ "$(demo_dirs)" -eq 0 ] || fail "the demo's directory is left"
ok "its directory removed"

# Ctrl-C in the middle (--step waits for Enter before each command; INT given its default
# action first: a background job of a script has it ignored)
mkfifo "$T/keys"
TMPDIR=$T/tmp BUILD=$BUILD env --default-signal=INT "$ROOT/scripts/demo.sh" --step <"$T/keys" >"$T/out" 2>"$T/err" &
d=$!
LAUNCHED="$LAUNCHED $d"
exec 9>"$T/keys" # the demo's stdin open: it waits at its first step
i=0
until grep -q "press Enter" "$T/out"; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "the demo never reached its first step"; sleep 0.01
done
[ -n "$(left)" ] || fail "no process of the demo found while it waits: the check below proves nothing"
ok "negative control: the demo's processes are found while it runs"
kill -INT "$d"
set +e
wait "$d"
RC=$?
set -e
exec 9>&-
expect_rc 130 "Ctrl-C ends the demo"
has err "interrupted; cleaning up" "says so"
[ -z "$(left)" ] || fail "left running after a Ctrl-C: $(left)"
ok "nothing of the demo left running after a Ctrl-C"
[ "$(demo_dirs)" -eq 0 ] || fail "the demo's directory is left after a Ctrl-C"
ok "its directory removed"
done_testing
