#!/bin/bash
# The /proc holder scan against fuser -v over the same synthetic tree: PROCS sleeping processes
# with FDS open files each; every 50th also holds a fake nvidia0. gpureap runs its full 'status'
# with the fake NVML (no contexts), so the driver part costs next to nothing and what is timed is
# the scan and the rendering; fuser -v gets the same device files.
#   bench/bench-scan.sh BUILD_DIR [PROCS] [FDS] [RUNS]
# It kills only the process group that its own mktree made.
set -u
B=${1:?build dir} PROCS=${2:-4000} FDS=${3:-100} RUNS=${4:-30}
D=$(mktemp -d /tmp/gpureap-bench.XXXXXX)
mkdir "$D/dev"
for f in nvidiactl nvidia-uvm nvidia0; do truncate -s 4096 "$D/dev/$f"; done
printf 'gpu 0\n' >"$D/scenario"
"$B/bench/mktree" "$PROCS" "$FDS" 50 "$D/dev" >"$D/ready" &
MK=$!
for _ in $(seq 6000); do grep -q ready "$D/ready" 2>/dev/null && break; sleep 0.05; done
PGID=$(awk '/ready/ {print $2}' "$D/ready")
[ -n "$PGID" ] || { echo "mktree did not get ready"; kill -KILL "$MK"; exit 1; }
nproc_total=$(ls -d /proc/[0-9]* | wc -l)
nfds=$(cat /proc/sys/fs/file-nr | cut -f1)
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores: $nproc_total processes, $nfds open files system-wide ($PROCS x $FDS synthetic)"
export GPUREAP_DEV_DIR=$D/dev GPUREAP_NVML_LIBRARY=$B/tests/libnvidia-ml.so.1 GPUREAP_FAKE_NVML_SCENARIO=$D/scenario
# the same holders found by both (a check of the benchmark itself, not timed)
n_gr=$("$B/src/gpureap" status --json | jq '[.processes[] | select(.devices.gpus | length > 0)] | length')
n_fu=$(fuser "$D/dev/nvidia0" 2>/dev/null | wc -w)
echo "holders of nvidia0: gpureap $n_gr, fuser $n_fu"
"$B/bench/runbench" -n "$RUNS" -w 2 \
        "gpureap status" -- "$B/src/gpureap" status ::: \
        "gpureap status --json" -- "$B/src/gpureap" status --json ::: \
        "fuser -v DEV/nvidia*" -- fuser -v "$D/dev/nvidia0" "$D/dev/nvidiactl" "$D/dev/nvidia-uvm"
{ kill -KILL -- "-$PGID"; wait "$MK"; } 2>/dev/null
rm -rf "$D"
