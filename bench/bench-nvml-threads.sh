#!/bin/bash
# gpureap status with the GPUs read one after another (BEFORE: a build of the serial helper)
# against the threaded helper (AFTER), interleaved (bench/runbench.c), on the fake NVML with
# 1, 8 and 64 GPUs whose first handle (the attach: 6.6 ms on an H200) takes DELAY ms, and with
# no delay (what the threads cost). No contexts and no holders: what is timed is the driver
# part and the rendering; the /proc scan of the machine runs beside it in both.
#   bench/bench-nvml-threads.sh BEFORE AFTER FAKE_NVML RUNBENCH [RUNS] [DELAY]
# Starts only gpureap; the fake library sleeps, nothing else is touched.
set -u
BEFORE=${1:?gpureap before} AFTER=${2:?gpureap after} FAKE=${3:?fake libnvidia-ml.so.1}
RB=${4:?runbench} RUNS=${5:-30} DELAY=${6:-7}
D=$(mktemp -d /tmp/gpureap-bench.XXXXXX)
trap 'rm -rf "$D"' EXIT
mkdir "$D/dev"
export GPUREAP_DEV_DIR=$D/dev GPUREAP_NVML_LIBRARY=$FAKE
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, $(ls -d /proc/[0-9]* | wc -l) processes"
for delay in "$DELAY" 0; do
        for n in 1 8 64; do
                sc=$D/scenario-$n-$delay
                { for ((i = 0; i < n; i++)); do echo "gpu $i"; done
                  [ "$delay" -eq 0 ] || echo "delay nvmlDeviceGetHandleByIndex_v2 $delay"; } >"$sc"
                # both read every GPU (a check of the benchmark itself, not timed)
                for g in "$BEFORE" "$AFTER"; do
                        got=$(GPUREAP_FAKE_NVML_SCENARIO=$sc "$g" status --json | jq '.gpus | length')
                        [ "$got" = "$n" ] || { echo "$g read $got of $n GPUs"; exit 1; }
                done
                echo "### $n GPUs, ${delay} ms per handle"
                GPUREAP_FAKE_NVML_SCENARIO=$sc "$RB" -n "$RUNS" -w 3 \
                        "before (serial)" -- "$BEFORE" status --json ::: \
                        "after (threads)" -- "$AFTER" status --json
        done
done
