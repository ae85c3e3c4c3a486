#!/bin/bash
# Attack (a): 'slurm-epilog' for job 77 when processes that are NOT job 77's carry SLURM_JOB_ID=77
# in their environment (inherited from an old job, or set by hand):
#   - a live process of another running job (its cgroup says job 88), another user's;
#   - a root daemon in a systemd service's cgroup;
# and a negative control: job 77's own setsid'd escapee (uid SLURM_JOB_UID, no job cgroup) that
# the epilog must reap. The epilog reaps 'every holder of the scope' with --ended --all-users: the
# environment match (GR_SCOPE_ESCAPED) is taken even when the cgroup names another job, and
# whatever the owner.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null || { echo "1..0 # SKIP needs root and setpriv"; exit 77; }
scenario "gpu 0 minor=0" "gpu 1 minor=1"
chmod 0755 "$T"; chmod 0666 "$T"/dev/* "$PIDS"; chmod 1777 "$T/ctx"
export GPUREAP_SYSLOG_SOCKET=$T/nolog

job88=$(f_cgroup "f-$$.slice/slurmstepd.scope/job_88/step_0/user/task_0")
svc=$(f_cgroup "f-$$.slice/system.slice/llm-$$.service")

# job 88's live worker (uid 4242), its environment still names job 77 (a shell started in job
# 77's allocation that submitted job 88 with --export=ALL keeps SLURM_JOB_ID only if the site's
# TaskProlog or the user re-exports it; a user can also simply set it)
setpriv --reuid=4242 --regid=4242 --clear-groups env SLURM_JOB_ID=77 \
        "$GPUHOLD" pidfile "$PIDS" job88-worker cuda 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
# a root daemon of a systemd service that an admin started from an srun shell of job 77
env SLURM_JOB_ID=77 "$GPUHOLD" pidfile "$PIDS" root-daemon cuda 1 1 256 listen "$PIDS" sleep &
LAUNCHED="$LAUNCHED $!"
# job 77's own escapee: uid 4243, setsid'd (its launcher gone, as at the epilog), out of any job cgroup
setpriv --reuid=4243 --regid=4243 --clear-groups env SLURM_JOB_ID=77 \
        setsid -f "$GPUHOLD" pidfile "$PIDS" job77-escapee cuda 0 0 128 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role job88-worker root-daemon job77-escapee
w88=$(pid_of job88-worker) rd=$(pid_of root-daemon) esc=$(pid_of job77-escapee)
LAUNCHED="$LAUNCHED $w88 $rd $esc"
f_move "$w88" "$job88"
f_move "$rd" "$svc"

gr status --json
jqok ".processes[] | select(.pid == $w88) | .placement.slurm_job == \"88\"" "status reads job 88 from the worker's cgroup"

# 1. SLURM_JOB_GPUS given (GPU 0 was job 77's; a GPU shared by two jobs through gres 'shard' or MPS)
SLURM_JOB_ID=77 SLURM_JOB_UID=4243 SLURM_JOB_GPUS=0 gr slurm-epilog --timeout 4s --grace 200ms
echo "# epilog rc $RC"; f_show
alive "$esc" && fail "job 77's escapee $esc survived its epilog (negative control)"
ok "job 77's own escapee was reaped (control)"
if alive "$w88"; then ok "job 88's live worker survived job 77's epilog"
else bad "the epilog of job 77 killed $w88, a live process of job 88 (its cgroup says job_88), uid 4242 (not SLURM_JOB_UID), because its environment said SLURM_JOB_ID=77"; fi

# 2. no SLURM_JOB_GPUS (a site without GRES): the GPUs come from what the scope's processes hold
SLURM_JOB_ID=77 SLURM_JOB_UID=4243 gr slurm-epilog --timeout 4s --grace 200ms
echo "# epilog rc $RC"; f_show
if alive "$rd"; then ok "the root daemon survived job 77's epilog"
else bad "the epilog of job 77 (uid 4243) killed $rd, a root daemon in a systemd service's cgroup listening on a port, on GPU 1 which job 77 never had, because its environment said SLURM_JOB_ID=77"; fi
f_done
