#!/bin/bash
# The /proc holder scan on a host of threaded processes: PROCS sleeping processes of THREADS
# threads each (sharing their file table, as threads do) and FDS open files; every 50th also
# holds a fake nvidia0. Times 'gpureap status' with the /proc scan (GPUREAP_SCAN=proc) of this
# build against OTHER_GPUREAP (an older build, to see what the thread checks cost), interleaved.
#   bench/bench-scan-threads.sh BUILD_DIR OTHER_GPUREAP [PROCS] [THREADS] [FDS] [RUNS]
# It kills only the process group that its own mktree made.
set -u
B=${1:?build dir} OTHER=${2:?another gpureap binary} PROCS=${3:-300} THREADS=${4:-30} FDS=${5:-16} RUNS=${6:-30}
D=$(mktemp -d /tmp/gpureap-bench.XXXXXX)
mkdir "$D/dev"
for f in nvidiactl nvidia-uvm nvidia0; do truncate -s 4096 "$D/dev/$f"; done
printf 'gpu 0\n' >"$D/scenario"
"$B/bench/mktree" "$PROCS" "$FDS" 50 "$D/dev" "$THREADS" >"$D/ready" &
MK=$!
for _ in $(seq 6000); do grep -q ready "$D/ready" 2>/dev/null && break; sleep 0.05; done
PGID=$(awk '/ready/ {print $2}' "$D/ready")
[ -n "$PGID" ] || { echo "mktree did not get ready"; kill -KILL "$MK"; exit 1; }
nproc_total=$(ls -d /proc/[0-9]* | wc -l)
nthreads=$(ls -d /proc/[0-9]*/task/[0-9]* | wc -l)
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores: $nproc_total processes, $nthreads threads ($PROCS x $THREADS threads x $FDS fds synthetic)"
export GPUREAP_DEV_DIR=$D/dev GPUREAP_NVML_LIBRARY=$B/tests/libnvidia-ml.so.1 GPUREAP_FAKE_NVML_SCENARIO=$D/scenario GPUREAP_SCAN=proc
# the same holders found by both (a check of the benchmark itself, not timed)
n_new=$("$B/src/gpureap" status --json | jq '[.processes[] | select(.devices.gpus | length > 0)] | length')
n_old=$("$OTHER" status --json | jq '[.processes[] | select(.devices.gpus | length > 0)] | length')
echo "holders of nvidia0: this build $n_new, the other $n_old"
"$B/bench/runbench" -n "$RUNS" -w 2 \
        "status, /proc scan, this build" -- "$B/src/gpureap" status ::: \
        "status, /proc scan, $OTHER" -- "$OTHER" status
{ kill -KILL -- "-$PGID"; wait "$MK"; } 2>/dev/null
rm -rf "$D"
