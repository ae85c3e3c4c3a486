#!/bin/bash
# The LBNL NHC check that contrib/nhc/gpureap.nhc ships, run by bash as NHC runs it (NHC is not
# packaged for Debian 12): NHC sources every scripts/*.nhc file, reads nhc.conf's "TARGET ||
# CHECK" lines and evals each CHECK; a check that fails calls NHC's die, which logs the reason
# and ends NHC with its code (the stand-ins below do what NHC 1.4's die and log do with it).
# The node fails only on CRITICAL, with gpureap's line as the reason; busy, WARNING, a node
# without NVIDIA GPUs and UNKNOWN pass.
. "$TESTLIB"
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
NHC_SCRIPT=$ROOT/contrib/nhc/gpureap.nhc
export GPUREAP_CMD=$GPUREAP

# nhc CONF-LINE: a node health check run with that nhc.conf; exit status in RC, what NHC logged
# in $T/nhc.log
nhc() {
        printf '%s\n' "# nhc.conf" "$1" >"$T/nhc.conf"
        set +e
        bash -c '
                log() { echo "$*" >>"$NHC_LOG"; }
                die() { local rc=$1; shift; log "Health check failed:  $*"; exit "$rc"; }
                set -f
                . "$1"
                while read LINE; do
                        TARGET=${LINE%%||*} CHECK=${LINE#*||}
                        [[ "$LINE" == *"||"* && "${TARGET// }" != "#"* ]] || continue
                        eval $CHECK
                        RET=$?
                        [ "$RET" -eq 0 ] || exit "$RET"
                done <"$2"
                exit 0' nhc "$NHC_SCRIPT" "$T/nhc.conf"
        RC=$?
        set -e
}
export NHC_LOG=$T/nhc.log
scenario "gpu 0 minor=0" "gpu 1 minor=1"

: >"$NHC_LOG"
nhc "* || check_gpureap"
expect_rc 0 "a clean node passes"
[ ! -s "$NHC_LOG" ] || fail "a clean node logged: $(cat "$NHC_LOG")"

launch pidfile "$PIDS" launcher setpgid worker "$PIDS" w1 0 0 1024 sleep
wait_role launcher w1
nhc "* || check_gpureap"
expect_rc 0 "a busy node passes"
kill -KILL "$(pid_of w1)" "$(pid_of launcher)"
wait_state "$(pid_of w1)" gone

# a warning (a worker in a session of its own whose launcher was killed: unsure) passes
"$GPUHOLD" pidfile "$PIDS" k-l child setsid cuda 0 0 512 pidfile "$PIDS" k-w sleep &
LAUNCHED="$LAUNCHED $!"
wait_role k-l k-w
kill -KILL "$(pid_of k-l)"
wait_state "$(pid_of k-l)" "Z gone"
gr check --direct
expect_rc 1 "gpureap check says WARNING here"
nhc "* || check_gpureap --direct"
expect_rc 0 "WARNING passes NHC"
[ ! -s "$NHC_LOG" ] || fail "a warning logged: $(cat "$NHC_LOG")"
kill -KILL "$(pid_of k-w)"
wait_state "$(pid_of k-w)" gone

# a ghost: the node fails, and the reason is gpureap's line
launch pidfile "$PIDS" owner cuda 0 0 2048 spawn-holder "$PIDS" child exit
wait_role owner child
wait "$LAST" || true
nhc "* || check_gpureap"
expect_rc 1 "a leftover fails the node"
grep -qx "Health check failed:  check_gpureap:  GPU 0: 1 leftover hold 2.0 GiB (gpureap reap --gpu 0)" "$NHC_LOG" ||
        fail "the reason is not gpureap's line: $(cat "$NHC_LOG")"
ok "NHC's reason: $(cat "$NHC_LOG")"
: >"$NHC_LOG"
nhc "* || check_gpureap -i 1"
expect_rc 0 "another GPU's leftover: GPU 1 alone passes"
[ ! -s "$NHC_LOG" ] || fail "GPU 1 alone logged: $(cat "$NHC_LOG")"
kill -KILL "$(pid_of child)"
wait_state "$(pid_of child)" gone

# a hung driver is critical: the node fails within gpureap's own deadline
scenario "gpu 0" "hang nvmlDeviceGetMemoryInfo_v2"
: >"$NHC_LOG"
nhc "* || check_gpureap --timeout 1s"
expect_rc 1 "a hung driver fails the node"
grep -q "^Health check failed:  check_gpureap:  GPU 0: driver hung, no answer in " "$NHC_LOG" || fail "reason: $(cat "$NHC_LOG")"
ok "the reason names the hung driver"

# a node without NVIDIA GPUs: no driver library, no GPU device file
mkdir "$T/nodev"
: >"$NHC_LOG"
GPUREAP_DEV_DIR=$T/nodev GPUREAP_NVML_LIBRARY=$T/no/libnvidia-ml.so.1 nhc "* || check_gpureap"
expect_rc 0 "a node without NVIDIA GPUs passes"
[ ! -s "$NHC_LOG" ] || fail "a node without GPUs logged: $(cat "$NHC_LOG")"

# UNKNOWN (here a bad option) passes, logged; a gpureap that cannot run fails
scenario "gpu 0"
nhc "* || check_gpureap --format xml"
expect_rc 0 "UNKNOWN passes"
grep -q "^check_gpureap:  gpureap: unknown --format 'xml' (nagios or npd) (passed)$" "$NHC_LOG" || fail "UNKNOWN not logged: $(cat "$NHC_LOG")"
ok "UNKNOWN logged, with gpureap's reason"
: >"$NHC_LOG"
GPUREAP_CMD=$T/no/gpureap nhc "* || check_gpureap"
expect_rc 1 "gpureap missing: the check did not run, the node fails"
has nhc.log "did not run \\(exit 127\\)" "says it did not run"
done_testing
