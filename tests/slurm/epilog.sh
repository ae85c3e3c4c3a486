#!/bin/bash
# gpureap as a real cluster's Prolog and Epilog (slurm.conf lines of docs/integrations.md), with
# real slurmctld, slurmd and munge (tests/slurm/cluster.sh) and jobs that hold the fake GPUs:
#   - a job's setsid'd leftover (it outlives the job under proctrack/linuxproc) is reaped by the
#     epilog, the node stays idle, and a second job running on another GPU is untouched;
#   - a leftover whose memory the driver never gives back: the epilog drains the node with
#     gpureap's reason (sinfo -R), and resume makes it idle again;
#   - a prolog on a GPU that a process outside any job holds: the node is drained before the
#     job can start there.
. "$TESTLIB"
. "$(dirname "$0")/cluster.sh"
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2" "gpu 3 minor=3"

export PIDS # the jobs' tasks (srun passes the environment on) record their processes there

# the syslog of the test: gpureap's audit trail
syslog_listener

# slurmd runs the prolog and epilog with an environment of its own (no PATH): these wrappers
# add only the fake driver's variables of this test, then run gpureap exactly as a site would
wrapper() { # COMMAND OPTIONS...: $T/COMMAND runs 'gpureap COMMAND OPTIONS...', its output to $T/COMMAND.log
        {
                echo '#!/bin/sh'
                env | grep -E '^GPUREAP_[A-Z_]*=' | sed "s/'/'\\\\''/g; s/^\([A-Z_]*\)=\(.*\)$/export \1='\2'/"
                echo "exec '$GPUREAP' $* >>'$T/$1.log' 2>&1"
        } >"$T/$1"
        chmod 0755 "$T/$1"
}
wrapper slurm-prolog --drain --timeout 5s
wrapper slurm-epilog --drain --timeout 8s --grace 1s
grep -qF "exec '$GPUREAP' slurm-epilog --drain" "$T/slurm-epilog" || fail "wrapper: $(cat "$T/slurm-epilog")"

slurm_start_or_skip "$T/slurm-prolog" "$T/slurm-epilog"
echo "# cluster up in $SLURM_START_MS ms ($SLURM_PROCTRACK, node $SLURM_NODE)"
[ "$(slurm_node_state)" = idle ] || fail "node is '$(slurm_node_state)', not idle"
ok "the cluster is up with gpureap as its Prolog and Epilog, the node idle"
if [ "$SLURM_PROCTRACK" = proctrack/cgroup ]; then
        echo "1..$CHECKS # SKIP the leftover scenarios need proctrack/linuxproc (slurmstepd kills setsid'd processes itself)"
        exit 0
fi

alive() { [ -d "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }

# job B: runs on its GPU (a CUDA process of the job's own step) for the whole first part
jobb=$(sbatch --parsable --gres=gpu:1 -o /dev/null --wrap \
        "exec '$GPUHOLD' pidfile '$PIDS' jobb-worker cuda \${CUDA_VISIBLE_DEVICES%%,*} \${CUDA_VISIBLE_DEVICES%%,*} 512 sleep") ||
        fail "sbatch of job B failed"
wait_role jobb-worker
bw=$(pid_of jobb-worker)
bgpu=$(tr '\0' '\n' <"/proc/$bw/environ" | sed -n 's/^CUDA_VISIBLE_DEVICES=//p')
ok "job $jobb runs a CUDA process ($bw) on GPU $bgpu"

# job A: its step leaves a setsid'd CUDA process (it keeps nothing of the step's output) and
# ends; the epilog must reap it
out=$(srun -n1 --gres=gpu:1 bash -c 'echo $SLURM_JOB_ID; g=${CUDA_VISIBLE_DEVICES%%,*}; echo $g
        setsid "$GPUHOLD" pidfile "$PIDS" joba-leftover cuda $g $g 768 sleep </dev/null >/dev/null 2>&1 &
        for i in $(seq 200); do grep -q "^joba-leftover " "$PIDS" && break; sleep 0.05; done') ||
        fail "job A failed: $out"
joba=$(echo "$out" | sed -n 1p) agpu=$(echo "$out" | sed -n 2p)
left=$(pid_of joba-leftover)
[ -n "$left" ] && [ "$agpu" != "$bgpu" ] || fail "job A: leftover '$left' on GPU '$agpu' (job B on $bgpu)"
slurm_wait_job_done "$joba" || fail "job $joba did not end"
i=0; while alive "$left" && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
alive "$left" && fail "job A's leftover $left survived the epilog: $(cat "$T/slurm-epilog.log")"
ok "job $joba's setsid'd leftover ($left, GPU $agpu) was reaped by the epilog"
alive "$bw" || fail "job B's process $bw was killed by job A's epilog"
[ "$(squeue -h -j "$jobb" -o %T)" = RUNNING ] || fail "job B is not running: $(squeue -h -j "$jobb" -o %T)"
ok "job $jobb (GPU $bgpu) runs on, its process untouched"
st=$(slurm_node_state)
case $st in mixed | allocated | idle) ;; *) fail "node is '$st' ($(slurm_node_reason)) after a clean epilog" ;; esac
[ -z "$(slurm_node_reason)" ] || fail "the node has a reason: $(slurm_node_reason)"
ok "the node is not drained ($st, job B on it)"
i=0; until grep -q "slurm-epilog.*job $joba: its GPUs are clean" "$T/syslog" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 200 ] || fail "no audit line of the clean epilog: $(cat "$T/syslog")"; sleep 0.05
done
grep -q "signalling pid $left .* slurm job $joba: a process of the ended scope" "$T/syslog" || fail "the audit trail has no signal to $left: $(cat "$T/syslog")"
ok "the audit trail names the signal to $left and says job $joba's GPUs are clean"

scancel "$jobb"
slurm_wait_job_done "$jobb" || fail "job B did not end after scancel"
alive "$bw" && fail "job B's process $bw outlived scancel and the epilog"
[ "$(slurm_node_state)" = idle ] || fail "node '$(slurm_node_state)' after job B"
ok "job $jobb cancelled: its processes are gone, the node is idle"

# job C leaves a leftover whose memory the driver never gives back (torn down for 10 minutes):
# the epilog kills it, waits out its --timeout, and drains the node with its own reason
# (the contexts of the jobs before, all ended and torn down, are forgotten first: the fake
# driver would hold their memory for the new teardown time too)
rm -f "$T"/ctx/*
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2" "gpu 3 minor=3" "teardown_ms 600000"
out=$(srun -n1 --gres=gpu:1 bash -c 'echo $SLURM_JOB_ID; g=${CUDA_VISIBLE_DEVICES%%,*}
        setsid "$GPUHOLD" pidfile "$PIDS" jobc-leftover cuda $g $g 1024 sleep </dev/null >/dev/null 2>&1 &
        for i in $(seq 200); do grep -q "^jobc-leftover " "$PIDS" && break; sleep 0.05; done') ||
        fail "job C failed: $out"
jobc=$(echo "$out" | sed -n 1p)
cl=$(pid_of jobc-leftover)
slurm_wait_job_done "$jobc" 60 || fail "job $jobc did not end"
slurm_wait_node_state drained 30 || fail "node '$(slurm_node_state)' ($(slurm_node_reason)), not drained: $(cat "$T/slurm-epilog.log")"
alive "$cl" && fail "job C's leftover $cl is alive"
reason=$(slurm_node_reason)
echo "# sinfo -R: $reason"
echo "$reason" >>"$T/reasons"
case $reason in "gpureap: job $jobc: "*) ;; *) fail "the drain reason is not gpureap's: '$reason'" ;; esac
ok "memory never given back: the node is drained with gpureap's reason"
grep -q "node $SLURM_NODE drained: job $jobc" "$T/syslog" || fail "no audit line of the drain: $(cat "$T/syslog")"
ok "the audit trail says the node was drained and why"

# the driver gives the memory back; an admin resumes the node
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2" "gpu 3 minor=3"
scontrol update nodename="$SLURM_NODE" state=resume || fail "resume failed"
slurm_wait_node_state idle 20 || fail "node '$(slurm_node_state)' after resume"
srun -n1 --gres=gpu:4 true || fail "a job on all four GPUs failed after resume: $(cat "$T/slurm-prolog.log")"
ok "resumed: a job on all four GPUs runs (the prolog finds them clean)"

# a process outside any job holds GPU 2: a job given GPU 2 must not start on it
"$GPUHOLD" pidfile "$PIDS" stranger cuda 2 2 256 sleep </dev/null >/dev/null 2>&1 &
LAUNCHED="$LAUNCHED $!"
wait_role stranger
jobd=$(sbatch --parsable --gres=gpu:4 -o /dev/null --wrap true) || fail "sbatch of job D failed"
slurm_wait_node_state drained 30 || fail "node '$(slurm_node_state)', not drained by the prolog: $(cat "$T/slurm-prolog.log")"
reason=$(slurm_node_reason)
echo "# sinfo -R: $reason"
echo "$reason" >>"$T/reasons"
case $reason in "gpureap: job $jobd: GPU 2: held by PID $(pid_of stranger) (gpuhold), not of this job"*) ;; *) fail "the prolog's drain reason: '$reason'" ;; esac
alive "$(pid_of stranger)" || fail "the prolog killed the stranger"
ok "a GPU held outside any job: the prolog drains the node (reason names GPU 2), kills nothing"
scancel "$jobd" 2>/dev/null || true
doc_example slurm-reasons.txt "$T/reasons" # docs/integrations.md shows them
done_testing
