#!/bin/bash
# The test cluster against the real daemons: the node comes up idle with 4 GPUs, jobs run and see
# their GPUs, the epilog runs with the job's environment, a failing epilog drains the node, a
# drain reason shows in sinfo -R and resume makes it idle, and a job's setsid'd leftover survives
# the job under proctrack/linuxproc (is killed by slurmstepd under proctrack/cgroup).
. "$TESTLIB"
. "$(dirname "$0")/cluster.sh"
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2" "gpu 3 minor=3"

# an epilog that keeps what it was given, and fails while $T/epilog-fail exists; slurmd runs it
# with an environment of its own (no PATH), so it names its programs in full
cat >"$T/epilog" <<EOF
#!/bin/bash
/usr/bin/env >"$T/epilog-env.\$SLURM_JOB_ID"
[ ! -e "$T/epilog-fail" ]
EOF
sed 's/epilog-env/prolog-env/; s/epilog-fail/prolog-fail/' "$T/epilog" >"$T/prolog"
chmod 0755 "$T/epilog" "$T/prolog"

slurm_start_or_skip "$T/prolog" "$T/epilog"
echo "# cluster up in $SLURM_START_MS ms ($SLURM_PROCTRACK, node $SLURM_NODE)"
ok "the cluster starts"

[ "$(slurm_node_state)" = idle ] || fail "node is '$(slurm_node_state)', not idle"
ok "node $SLURM_NODE is idle"
scontrol -o show node "$SLURM_NODE" | grep -q ' Gres=gpu:4 ' || fail "no Gres=gpu:4: $(scontrol -o show node "$SLURM_NODE")"
ok "the node has Gres=gpu:4"

srun -n1 true || fail "srun -n1 true failed"
ok "srun -n1 true"

# a job with one GPU: what its task sees
out=$(srun -n1 --gres=gpu:1 /usr/bin/env) || fail "srun --gres=gpu:1 failed"
echo "$out" | grep -E '^(SLURM_JOB_ID|SLURM_JOB_GPUS|SLURM_STEP_GPUS|CUDA_VISIBLE_DEVICES|SLURM_GPUS_ON_NODE)=' | sed 's/^/# task: /'
job=$(echo "$out" | sed -n 's/^SLURM_JOB_ID=//p')
[ "$(echo "$out" | sed -n 's/^CUDA_VISIBLE_DEVICES=//p')" = 0 ] || fail "the task's CUDA_VISIBLE_DEVICES is not 0"
ok "a --gres=gpu:1 task has CUDA_VISIBLE_DEVICES=0"

# the epilog ran after that job, with its id and GPUs
slurm_wait_job_done "$job" || fail "job $job did not end"
[ -f "$T/epilog-env.$job" ] || fail "no epilog ran for job $job"
sed 's/^/# epilog: /' "$T/epilog-env.$job"
grep -qx "SLURM_JOB_ID=$job" "$T/epilog-env.$job" || fail "the epilog has no SLURM_JOB_ID=$job"
ok "the epilog ran after job $job with SLURM_JOB_ID=$job"
grep -qx "SLURM_JOB_UID=$(id -u)" "$T/epilog-env.$job" || fail "the epilog has no SLURM_JOB_UID"
grep -qx "SLURM_JOB_GPUS=0" "$T/epilog-env.$job" || fail "the epilog has no SLURM_JOB_GPUS=0"
grep -qx "CUDA_VISIBLE_DEVICES=0" "$T/epilog-env.$job" || fail "the epilog has no CUDA_VISIBLE_DEVICES=0"
ok "the epilog has SLURM_JOB_UID, SLURM_JOB_GPUS=0, CUDA_VISIBLE_DEVICES=0"
! grep -q '^PATH=' "$T/epilog-env.$job" || fail "the epilog got a PATH: $(grep '^PATH=' "$T/epilog-env.$job")"
ok "the epilog has no PATH"
grep -qx "SLURM_JOB_ID=$job" "$T/prolog-env.$job" && grep -qx "SLURM_JOB_GPUS=0" "$T/prolog-env.$job" ||
        fail "the prolog (PrologFlags=Alloc) did not run with the job's id and GPUs"
ok "the prolog ran at allocation with SLURM_JOB_ID and SLURM_JOB_GPUS"

# a job on two GPUs leaves a setsid'd process that holds its first GPU's fake device file; its
# output goes elsewhere: one that keeps the step's stdout makes srun wait about 60 s
out=$(srun -n1 --gres=gpu:2 bash -c 'echo $SLURM_JOB_ID; echo $CUDA_VISIBLE_DEVICES
        setsid sleep 1000 3<"$GPUREAP_DEV_DIR/nvidia${CUDA_VISIBLE_DEVICES%%,*}" </dev/null >/dev/null 2>&1 &
        echo $!') || fail "the leftover's job failed"
job=$(echo "$out" | sed -n 1p) gpus=$(echo "$out" | sed -n 2p) left=$(echo "$out" | sed -n 3p)
case $left in '' | *[!0-9]*) fail "no leftover PID from job $job: '$out'" ;; esac
echo "leftover $left" >>"$PIDS" # lib.sh kills it at exit
[ "$gpus" = 0,1 ] || fail "a --gres=gpu:2 task has CUDA_VISIBLE_DEVICES='$gpus', not 0,1"
ok "a --gres=gpu:2 task has CUDA_VISIBLE_DEVICES=0,1"
slurm_wait_job_done "$job" || fail "job $job did not end"
if [ -d "/proc/$left" ] && [ "$(sed 's/.*) //' "/proc/$left/stat" | cut -c1)" != Z ]; then
        survived=yes
else
        survived=no
fi
echo "# setsid'd leftover $left of job $job survived the job: $survived ($SLURM_PROCTRACK)"
case $SLURM_PROCTRACK in
proctrack/cgroup) [ $survived = no ] || fail "proctrack/cgroup left the setsid'd process $left alive" ;;
*) [ $survived = yes ] || fail "$SLURM_PROCTRACK killed the setsid'd process $left" ;;
esac
ok "the setsid'd leftover survived: $survived, as $SLURM_PROCTRACK does"
if [ $survived = yes ]; then
        echo "# leftover: $(ps -o pid=,ppid=,pgid=,sid=,stat=,args= -p "$left")"
        echo "# leftover cgroup: $(grep -E 'freezer|^0::' "/proc/$left/cgroup" | tr '\n' ' ')"
        tr '\0' '\n' <"/proc/$left/environ" | grep -qx "SLURM_JOB_ID=$job" || fail "the leftover has no SLURM_JOB_ID=$job"
        ok "the leftover carries SLURM_JOB_ID=$job in its environment"
        [ "$(awk '{print $4}' "/proc/$left/stat")" = 1 ] || fail "the leftover's parent is not PID 1"
        ok "the leftover is reparented to PID 1"
        gr status --json
        jqok ".gpus[0].holders == [{pid: $left, fds: 1}] and ([.gpus[1:][].holders[]] == [])" "gpureap sees the leftover holding GPU 0 only"
        kill -KILL "$left"
        wait_state "$left" "gone Z"
        sed -i "/^leftover $left\$/d" "$PIDS" # gone: its PID is no longer ours to kill at exit
fi

# a failing epilog drains the node, with a reason
touch "$T/epilog-fail"
job=$(sbatch --parsable -o /dev/null --wrap /bin/true) || fail "sbatch failed"
slurm_wait_job_done "$job" || fail "job $job did not end"
rm -f "$T/epilog-fail"
slurm_wait_node_state drained || fail "no drain after a failed epilog"
echo "# after a failing epilog: state $(slurm_node_state), reason '$(slurm_node_reason)'"
[ -n "$(slurm_node_reason)" ] || fail "no reason in sinfo -R after a failed epilog"
ok "a failing epilog drains the node: '$(slurm_node_reason)'"
scontrol update nodename="$SLURM_NODE" state=resume || fail "resume failed"
slurm_wait_node_state idle || fail "not idle after resume"
ok "resume makes it idle again"

# a drain with gpureap's reason, and resume
scontrol update nodename="$SLURM_NODE" state=drain reason="gpureap: test" || fail "drain failed"
slurm_wait_node_state drained || fail "no drain after scontrol update"
[ "$(slurm_node_reason)" = "gpureap: test" ] || fail "sinfo -R shows '$(slurm_node_reason)'"
sinfo -R -n "$SLURM_NODE" | sed 's/^/# /'
ok "scontrol drain shows 'gpureap: test' in sinfo -R"
scontrol update nodename="$SLURM_NODE" state=resume || fail "resume failed"
slurm_wait_node_state idle && [ -z "$(slurm_node_reason)" ] || fail "node is '$(slurm_node_state)' '$(slurm_node_reason)' after resume"
ok "resume: idle, no reason"

# the harness stops what it started, by PID
ctld=$(cat "$SLURM_DIR/slurmctld.pid") slurmd=$(cat "$SLURM_DIR/slurmd.pid") munged=$(cat "$SLURM_DIR/munge/munged.pid")
slurm_stop
for p in $ctld $slurmd $munged; do wait_state "$p" "gone Z"; done
[ -z "$(slurm_cluster_pids)" ] || fail "processes of the cluster still run: $(slurm_cluster_pids)"
ok "slurm_stop ends slurmctld, slurmd, munged and every slurmstepd"
done_testing
