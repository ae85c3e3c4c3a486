#!/bin/bash
# Scopes: --job, --cgroup, --container and --pod, as the cgroup paths of Slurm, cgroupfs and the
# container runtimes lay them out (real cgroup v2 directories, real processes moved in), and a
# job's escapee found by its SLURM_JOB_ID. In an ended job every holder of the job is a leftover
# (--ended); the other job on the node is untouched.
. "$TESTLIB"
MNT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
OWN=$(sed -n 's/^0:://p' /proc/self/cgroup)
BASE=$MNT${OWN%/}/gpureap-test-$$
if [ "$(id -u)" -ne 0 ] || [ -z "$MNT" ] || ! mkdir -p "$BASE" 2>/dev/null; then
        echo "1..0 # SKIP needs root and a writable cgroup v2 hierarchy"
        exit 77
fi
REL=${OWN%/}/gpureap-test-$$
cleanup_cgroups() {
        cleanup
        # the processes are killed; their cgroups go once they are reaped
        for i in $(seq 1 200); do
                find "$BASE" -depth -type d -exec rmdir {} + 2>/dev/null || true
                [ -d "$BASE" ] || break
                sleep 0.01
        done
}
trap cleanup_cgroups EXIT
scenario "gpu 0" "gpu 1" "gpu 2" "gpu 3"
cg() { mkdir -p "$BASE/$1"; echo "$2" >"$BASE/$1/cgroup.procs"; }
J1=slurm/uid_0/job_4242/step_0
J2=slurm/uid_0/job_4343/step_0
CT=system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope
POD=kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod5f0c1e2a_7b3d_4c1e_9a8b_1234567890ab.slice/cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope

# job 4242 on GPU 0: a live worker under its launcher, and a setsid'd escapee (its launcher gone) that left the
# job's cgroup (it kept SLURM_JOB_ID); job 4343 on GPU 1; a container on GPU 2, a pod on GPU 3
launch pidfile "$PIDS" j1 setpgid worker "$PIDS" j1w 0 0 512 sleep
wait_role j1 j1w
cg "$J1" "$(pid_of j1)"; cg "$J1" "$(pid_of j1w)"
SLURM_JOB_ID=4242 setsid -f "$GPUHOLD" pidfile "$PIDS" escapee cuda 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
launch pidfile "$PIDS" j2 setpgid worker "$PIDS" j2w 1 1 512 sleep
wait_role escapee j2 j2w
cg "$J2" "$(pid_of j2)"; cg "$J2" "$(pid_of j2w)"
launch pidfile "$PIDS" ct cuda 2 2 128 sleep
launch pidfile "$PIDS" pod cuda 3 3 128 sleep
wait_role ct pod
cg "$CT" "$(pid_of ct)"; cg "$POD" "$(pid_of pod)"
j1w=$(pid_of j1w); esc=$(pid_of escapee); j2w=$(pid_of j2w)

gr status --json --job 4242
expect_rc 1 "job 4242's GPU is in use"
jqok '.scope == {kind: "slurm_job", id: "4242"}' "the scope is recorded"
jqok '.gpus | map(.index) == [0]' "only the GPU its processes hold"
jqok ".processes[] | select(.pid == $j1w) | .in_scope == \"in\" and .placement.slurm_job == \"4242\"" "the worker is in the job, by its cgroup"
jqok ".processes[] | select(.pid == $esc) | .in_scope == \"escaped\" and .placement.slurm_job == \"4242\"" "the escapee is the job's, by its environment"
jqok ".processes[] | select(.pid == $j2w) | .in_scope == \"out\"" "job 4343's worker is not"
gr status
has out "^    $j1w .* job 4242$" "the table names the job"
has out "^    $esc .* job 4242 \\(escaped its cgroup\\)$" "and the escapee"
gr status --json --container 0123456789ab
jqok '.gpus | map(.index) == [2]' "--container: the container's GPU"
jqok ".processes[] | select(.pid == $(pid_of ct)) | .placement.container == \"0123456789ab\"" "placement: container"
gr status --json --pod 5f0c1e2a-7b3d-4c1e-9a8b-1234567890ab
jqok '.gpus | map(.index) == [3]' "--pod: the pod's GPU (the cgroup writes the UID with underscores)"
jqok ".processes[] | select(.pid == $(pid_of pod)) | .placement.kubernetes_pod == \"5f0c1e2a-7b3d-4c1e-9a8b-1234567890ab\"" "placement: pod"
gr status --json --cgroup "$REL/slurm/uid_0"
jqok '.gpus | map(.index) == [0, 1]' "--cgroup: everything below it"

# the job is live: a plain reap of its scope kills nothing
gr reap --yes --job 4242
has out "^nothing to kill$" "while the job runs: nothing to kill"
kill -0 "$j1w" && kill -0 "$esc" || fail "a live job's process was killed"
ok "the job's processes live"
# the epilog: the job is over, every holder of it on its GPUs goes; job 4343 stays
gr reap --yes --job 4242 --ended --all-users --grace 300ms
expect_rc 0 "the ended job's GPU verified"
has out "^  kill   $j1w .*a process of the ended scope" "the worker is a target, because the job ended"
has out "^  kill   $esc .*a process of the ended scope" "the escapee too"
hasnt out "\\b$j2w\\b" "job 4343's worker is not in the plan: another job's"
wait_state "$j1w" "gone Z"; wait_state "$esc" "gone Z"
kill -0 "$j2w" || fail "the other job was killed"
ok "job 4343 lives"

for bad in "--job abc" "--job 1 --pod 5f0c" "--container 0123" "--cgroup relative/path" "--ended"; do
        gr reap --dry-run $bad
        expect_rc 2 "reap $bad"
done
gr status --job 99999
expect_rc 0 "a job that holds no GPU: nothing shown, clean"
done_testing
