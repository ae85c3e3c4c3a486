#!/bin/bash
# Issue 12's and issue 25's run figures in one go, side by side (bench/teardown): the teardown of
# 100 and 1000 sleepers by 'gpureap run' (this build, and others given, e.g. the one before a
# change), 'tini -s -g' and a bare subreaper (the floor) when the supervisor gets SIGTERM; the
# same when the command exits and leaves them, against dumb-init; with and without NVIDIA device
# files on the node (fake ones where there is no driver: the tree is then looked at for GPU
# files), first on the machine as it is, then with 10,000 other processes (bench/mktree); the
# CPU time of 'run -- sleep 1' against tini's, with the 10,000 there; and 'run -- true' against
# 'tini -s -- true': wall and CPU (bench/runbench), and instructions (callgrind, when valgrind is
# installed: the figure that does not move with the machine's load).
#   bench/bench-teardown.sh BUILD_DIR [RUNS_100] [RUNS_1000] [OTHER_GPUREAP...]
set -u
B=$(cd "${1:?build dir}" && pwd) N1=${2:-20} N2=${3:-5}
shift $(($# < 3 ? $# : 3))
OTHERS=("$@")
for p in tini dumb-init; do
        command -v $p >/dev/null || { echo "$p is not installed (apt-get install $p)"; exit 1; }
done
D=$(mktemp -d /tmp/gpureap-bench.XXXXXX)
DEV=""
if [ ! -e /dev/nvidiactl ] && [ ! -e /proc/driver/nvidia ]; then
        truncate -s 4096 "$D/nvidiactl" "$D/nvidia0"
        DEV=$D
fi
MK=""
cleanup() {
        [ -n "$MK" ] && kill -- "-$MK" 2>/dev/null
        rm -rf "$D"
}
trap cleanup EXIT
G=("$B/src/gpureap" "${OTHERS[@]}")
both() { # N RUNS: the two ways the tree ends
        "$B/bench/teardown" -n "$2" "$1" "${G[@]}"
        "$B/bench/teardown" -n "$2" --exit "$1" "${G[@]}"
}
round() {
        echo "### $1 ($(ps -e --no-headers | wc -l) processes on the machine)"
        if [ -n "$DEV" ]; then
                both 100 "$N1"
                both 1000 "$N2"
                echo "with NVIDIA device files (fake: GPUREAP_DEV_DIR):"
                (export GPUREAP_DEV_DIR=$DEV; both 100 "$N1"; both 1000 "$N2")
        else
                echo "(the driver is present)"
                both 100 "$N1"
                both 1000 "$N2"
        fi
}
echo "## $(date -u +%FT%TZ) $(uname -r) $(nproc) cores, $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null)"
round "the machine as it is"
echo "### run -- true"
args=()
for g in "${G[@]}"; do args+=(::: "gpureap run ($g)" -- "$g" run --quiet -- true); done
"$B/bench/runbench" -n 300 -w 10 "tini -s -- true" -- tini -s -- true "${args[@]}"
if command -v valgrind >/dev/null; then
        ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ {print $4}'; }
        for i in 1 2 3; do
                line="instructions (callgrind): tini -s -- true $(ir tini -s -- true)"
                for g in "${G[@]}"; do line="$line; gpureap run ($g) $(ir "$g" run --quiet -- true)"; done
                echo "$line"
        done
fi
"$B/bench/mktree" 10000 4 0 "$D" >"$D/mktree.out" &
for _ in $(seq 120); do grep -q '^ready' "$D/mktree.out" 2>/dev/null && break; sleep 1; done
MK=$(awk '/^ready/ {print $2}' "$D/mktree.out")
[ -n "$MK" ] || { echo "mktree did not start"; exit 1; }
round "10,000 other processes"
"$B/bench/teardown" --cpu -n 9 "$B/src/gpureap"
