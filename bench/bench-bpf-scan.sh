#!/bin/bash
# The kernel-side holder scan (BPF task-file iterator) against the /proc scan and fuser -v over
# the same synthetic tree: PROCS sleeping processes with FDS open files each, every 50th also
# holding a fake nvidia0. 'gpureap status' runs in full with the fake NVML (no contexts), once
# with GPUREAP_SCAN=bpf and once with GPUREAP_SCAN=proc, interleaved with fuser -v by runbench;
# medians are reported. Needs root (the BPF scan); checks first that both scans and fuser find
# the same holders and that the bpf run really used the iterator.
#   bench/bench-bpf-scan.sh BUILD_DIR [PROCS] [FDS] [RUNS]
# It kills only the process group that its own mktree made.
set -u
B=${1:?build dir} PROCS=${2:-10000} FDS=${3:-16} RUNS=${4:-20}
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
nfds=$(cut -f1 /proc/sys/fs/file-nr)
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, kernel $(uname -r): $nproc_total processes, $nfds open files system-wide ($PROCS x $FDS synthetic)"
export GPUREAP_DEV_DIR=$D/dev GPUREAP_NVML_LIBRARY=$B/tests/libnvidia-ml.so.1 GPUREAP_FAKE_NVML_SCENARIO=$D/scenario
holders='[.processes[] | select(.devices.gpus | length > 0) | .pid] | sort'
GPUREAP_SCAN=bpf "$B/src/gpureap" status --json >"$D/bpf.json"
GPUREAP_SCAN=proc "$B/src/gpureap" status --json >"$D/proc.json"
scan=$(jq -r '.proc.scan + " " + (.proc.scan_fallback // "")' "$D/bpf.json")
same=$(jq -n --slurpfile a "$D/bpf.json" --slurpfile b "$D/proc.json" "(\$a[0] | $holders) == (\$b[0] | $holders)")
echo "GPUREAP_SCAN=bpf used: $scan; holders of nvidia0: bpf $(jq "$holders | length" "$D/bpf.json"), proc $(jq "$holders | length" "$D/proc.json"), fuser $(fuser "$D/dev/nvidia0" 2>/dev/null | wc -w); the same: $same"
"$B/bench/runbench" -n "$RUNS" -w 2 \
        "status (bpf scan)" -- env GPUREAP_SCAN=bpf "$B/src/gpureap" status ::: \
        "status (proc scan)" -- env GPUREAP_SCAN=proc "$B/src/gpureap" status ::: \
        "status (auto)" -- env GPUREAP_SCAN=auto "$B/src/gpureap" status ::: \
        "fuser -v DEV/nvidia*" -- fuser -v "$D/dev/nvidia0" "$D/dev/nvidiactl" "$D/dev/nvidia-uvm"
{ kill -KILL -- "-$PGID"; wait "$MK"; } 2>/dev/null
rm -rf "$D"
