#!/bin/bash
# gpureap run, 100 times in a row, each of: a double-forked daemon, a setsid escapee, a
# SIGTERM-ignorer, a stopped child, a process forking during the kill, a child holding a fake GPU.
# After each run, no process of its tree may be left (checked by the PIDs the tree recorded).
#   tests/stress/run-100.sh BUILD_DIR [ROUNDS]
set -u
. "$(dirname "$0")/../integration/signals.sh"
B=${1:?build dir} N=${2:-100}
G=$B/src/gpureap
T=$(mktemp -d /tmp/gpureap-stress.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir "$T/dev" "$T/ctx"
for f in nvidiactl nvidia-uvm nvidia0; do truncate -s 4096 "$T/dev/$f"; done
printf 'contexts %s\ngpu 0\nteardown_ms 50\n' "$T/ctx" >"$T/scenario"
export GPUREAP_DEV_DIR=$T/dev GPUREAP_FAKE_CTX_DIR=$T/ctx GPUREAP_NVML_LIBRARY=$B/tests/libnvidia-ml.so.1 \
        GPUREAP_FAKE_NVML_SCENARIO=$T/scenario
cat >"$T/tree.sh" <<SH
(sh -c 'sleep 1000 & echo \$! >>"\$1"' x "\$1" &)
setsid sh -c 'sleep 1000 & echo \$! >>"\$1"; wait' x "\$1" &
sh -c 'trap "" TERM HUP; echo \$\$ >>"\$1"; while :; do sleep 0.05; done' x "\$1" &
sleep 1000 & echo \$! >>"\$1"; kill -STOP \$!
sh -c 'trap "" TERM HUP; while :; do sleep 1000 & echo \$! >>"\$1"; sleep 0.01; done' x "\$1" &
$B/tests/gpuhold pidfile "\$1" gpu cuda 0 0 100 sleep &
sleep 0.2
SH
fails=0 left_total=0
for i in $(seq "$N"); do
        : >"$T/pids"
        "$G" run --quiet --grace 100ms -- sh "$T/tree.sh" "$T/pids" >/dev/null 2>"$T/err"
        rc=$?
        left=0
        for p in $(awk '{print $NF}' "$T/pids"); do
                st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
                if [ -n "$st" ] && [ "$st" != Z ]; then
                        left=$((left + 1))
                        kill -KILL "$p" 2>/dev/null # ours: recorded by the tree this script started
                fi
        done
        used=$("$G" status --json | jq '.gpus[0].memory.used')
        if [ $rc -ne 0 ] || [ $left -ne 0 ] || [ "$used" != 0 ]; then
                fails=$((fails + 1))
                echo "round $i: exit $rc, $left left, GPU used $used: $(cat "$T/err")"
        fi
        left_total=$((left_total + left))
done
echo "$N rounds: $fails failed, $left_total processes left in all"
[ $fails -eq 0 ]
