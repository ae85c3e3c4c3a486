# Shared by the real-GPU checks (tests/gpu/*.sh, each run by hand on an NVIDIA machine as
# 'SCRIPT GPUREAP_BINARY OUTDIR'): the arguments, the output folder, the file where every
# process a check starts records "ROLE PID", and the cleanup that kills those PIDs (and only
# those) at exit. Sourced after 'set -u'.
G=${1:?gpureap binary}
OUT=${2:?output folder}
HERE=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
mkdir -p "$OUT"
PIDS=$OUT/pids
: >"$PIDS"
rc=0
cleanup() {
        for p in $(awk '{print $2}' "$PIDS"); do kill -KILL "$p" 2>/dev/null; done
        [ -n "${MON:-}" ] && kill -KILL "$MON" 2>/dev/null
        wait 2>/dev/null
}
trap cleanup EXIT
# pid_of ROLE: the last PID recorded for it
pid_of() { awk -v r="$1" '$1 == r {print $2}' "$PIDS" | tail -n1; }
