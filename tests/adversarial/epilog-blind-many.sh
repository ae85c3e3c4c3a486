#!/bin/bash
# slurm-epilog with the driver unreadable: the ended job's holders are ended by PID from /proc
# (src/cmd-slurm.c blind_pids_of_scope). The PIDs were a pid_t array capped at 256 and one reap
# took them: a job with more holders (N=300 here; 8 GPUs x 40 data-loader workers) kept the
# rest alive (fifth adversarial round). Now up to 4096 are taken, and more are said.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
N=${N:-300}
for i in $(seq 1 "$N"); do
        env SLURM_JOB_ID=91 setsid -f "$GPUHOLD" cuda 0 0 1 pidfile "$PIDS" "w$i" sleep </dev/null >/dev/null 2>&1
done
wait_role "w$N"
for i in $(seq 1 "$N"); do LAUNCHED="$LAUNCHED $(pid_of "w$i")"; done
SLURM_JOB_ID=91 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0 GPUREAP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
        gr slurm-epilog --timeout 30s --grace 200ms
left=0
for i in $(seq 1 "$N"); do alive "$(pid_of "w$i")" && left=$((left + 1)); done
echo "# exit $RC; $left of $N holders of the ended job still alive; stderr: $(tr '\n' ' ' <"$T/err" | cut -c1-300)"
[ "$left" -eq 0 ] || fail "$left of the ended job's $N holders were left alive (blind path takes 256)"
ok "every holder of the ended job was ended with the driver unreadable"
done_testing
