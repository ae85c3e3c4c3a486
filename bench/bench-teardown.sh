#!/bin/bash
# Issue 12's run figures in one go, side by side (bench/teardown): the teardown of 100 and 1000
# sleepers by 'gpureap run', 'tini -s -g' and a bare subreaper (the floor), with and without
# NVIDIA device files on the node (fake ones: the tree is then looked at for GPU files), first
# on the machine as it is, then with 10,000 other processes (bench/mktree); and the CPU time of
# 'run -- sleep 1' against tini's, with the 10,000 there.
#   bench/bench-teardown.sh BUILD_DIR [RUNS_100] [RUNS_1000]
set -u
B=$(cd "${1:?build dir}" && pwd) N1=${2:-20} N2=${3:-5}
command -v tini >/dev/null || { echo "tini is not installed (apt-get install tini)"; exit 1; }
D=$(mktemp -d /tmp/gpureap-bench.XXXXXX)
truncate -s 4096 "$D/nvidiactl" "$D/nvidia0"
MK=""
cleanup() {
        [ -n "$MK" ] && kill -- "-$MK" 2>/dev/null
        rm -rf "$D"
}
trap cleanup EXIT
round() {
        echo "### $1 ($(ps -e --no-headers | wc -l) processes on the machine)"
        "$B/bench/teardown" -n "$N1" 100 "$B/src/gpureap"
        "$B/bench/teardown" -n "$N2" 1000 "$B/src/gpureap"
        echo "with NVIDIA device files (GPUREAP_DEV_DIR):"
        GPUREAP_DEV_DIR=$D "$B/bench/teardown" -n "$N1" 100 "$B/src/gpureap"
        GPUREAP_DEV_DIR=$D "$B/bench/teardown" -n "$N2" 1000 "$B/src/gpureap"
}
echo "## $(date -u +%FT%TZ) $(uname -r) $(nproc) cores"
round "the machine as it is"
"$B/bench/mktree" 10000 4 0 "$D" >"$D/mktree.out" &
for _ in $(seq 120); do grep -q '^ready' "$D/mktree.out" 2>/dev/null && break; sleep 1; done
MK=$(awk '/^ready/ {print $2}' "$D/mktree.out")
[ -n "$MK" ] || { echo "mktree did not start"; exit 1; }
round "10,000 other processes"
"$B/bench/teardown" --cpu -n 9 "$B/src/gpureap"
