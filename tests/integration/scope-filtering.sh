#!/bin/bash
# A scope reports and acts on itself only. Two pods share GPU 0 (time-slicing): pod A runs a live
# process, pod B's worker is left over (its launcher killed), and a host process outside any pod
# is left over too; on GPU 1 pod A has only a monitor next to another host leftover; on GPU 2
# pod A's monitor sits next to stale memory that no process holds. With --pod A, status, check,
# metrics and reap see pod A's findings, counts, states and plan, and the stale memory (a fact
# about the GPU that no process ties to another scope); never pod B's or the host's leftovers.
# Real cgroup v2 directories in both layouts of the kubelet (systemd and cgroupfs drivers).
. "$TESTLIB"
MNT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
OWN=$(sed -n 's/^0:://p' /proc/self/cgroup)
BASE=$MNT${OWN%/}/gpureap-test-$$
if [ "$(id -u)" -ne 0 ] || [ -z "$MNT" ] || ! mkdir -p "$BASE" 2>/dev/null; then
        echo "1..0 # SKIP needs root and a writable cgroup v2 hierarchy"
        exit 77
fi
cleanup_cgroups() {
        cleanup
        for i in $(seq 1 200); do
                find "$BASE" -depth -type d -exec rmdir {} + 2>/dev/null || true
                [ -d "$BASE" ] || break
                sleep 0.01
        done
}
trap cleanup_cgroups EXIT
scenario "gpu 0" "gpu 1" "gpu 2" "stale 2 1024"
cg() { mkdir -p "$BASE/$1"; echo "$2" >"$BASE/$1/cgroup.procs"; }
A=5f0c1e2a-7b3d-4c1e-9a8b-1234567890ab
B=0d9c8b7a-6f5e-4d3c-2b1a-ba0987654321
PODA=kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${A//-/_}.slice/cri-containerd-$(printf 'a%.0s' $(seq 64)).scope
PODB=kubepods/besteffort/pod$B/$(printf 'b%.0s' $(seq 64))

launch pidfile "$PIDS" alive cuda 0 0 256 sleep
launch pidfile "$PIDS" amon monitor 1 monitor 2 sleep
launch pidfile "$PIDS" blauncher setpgid worker "$PIDS" bworker 0 0 512 sleep
launch pidfile "$PIDS" hlauncher setpgid worker "$PIDS" hworker 0 0 128 worker "$PIDS" hworker1 1 1 128 sleep
wait_role alive amon blauncher bworker hlauncher hworker hworker1
alive=$(pid_of alive); amon=$(pid_of amon); bw=$(pid_of bworker); hw=$(pid_of hworker); hw1=$(pid_of hworker1)
cg "$PODA" "$alive"; cg "$PODA" "$amon"
cg "$PODB" "$(pid_of blauncher)"; cg "$PODB" "$bw"
for l in blauncher hlauncher; do
        kill -KILL "$(pid_of $l)"
        wait_state "$(pid_of $l)" "gone"
done
others="[$bw, $hw, $hw1]"

# negative control: the whole machine has the leftovers
gr status --json
expect_rc 1 "the machine is dirty"
jqok '[.gpus[].state] == ["dirty", "dirty", "stale"]' "unscoped: GPUs 0 and 1 dirty, GPU 2 stale"
jqok "[.findings[].pids[]] | contains($others)" "unscoped: the leftovers are found"

gr status --json --pod $A
expect_rc 1 "pod A: busy on GPU 0, stale memory on GPU 2"
jqok '.gpus | map(.index) == [0, 1, 2]' "the GPUs pod A holds"
jqok '[.gpus[].state] == ["busy", "clean", "stale"]' "pod A's states: busy, clean (a monitor only), stale (memory no process holds)"
jqok "[.findings[].pids[]] | (index($bw) == null and index($hw) == null and index($hw1) == null)" "no finding names pod B's or the host's leftovers"
jqok '[.findings[] | select(.kind == "orphan")] == []' "no orphan finding"
jqok "[.findings[] | select(.kind == \"busy\") | .pids] == [[$alive]] and ([.findings[] | select(.kind == \"busy\")][0].in_scope == \"in\")" "the busy finding: pod A's process, in the scope"
jqok '[.findings[] | select(.kind == "stale")] | length == 1 and .[0].in_scope == "gpu" and .[0].gpus == [2]' "the stale memory: a fact about GPU 2 (in_scope gpu)"
jqok 'all(.findings[]; .in_scope == "in" or .in_scope == "gpu")' "every finding is the scope's or the GPU's"
jqok ".processes[] | select(.pid == $bw) | .in_scope == \"out\"" "the processes stay listed, pod B's marked out"

gr status --pod $A --gpu 1
expect_rc 0 "pod A on GPU 1: a monitor only, clean for the pod"
hasnt out "$hw1" "the table does not show the host's leftover"
gr status --pod $A
has out "^    $alive .* pod $A$" "the table shows pod A's process"
hasnt out "\\b$bw\\b" "nor pod B's worker"
hasnt out "\\b$hw\\b" "nor the host's"
# --why: the GPU's details are the driver's (every context it lists); the holders, findings and
# evidence are the pod's
gr status --pod $A --why
sed -n '/^holders:/,$p' "$T/out" >"$T/scoped"
grep -q "$alive" "$T/scoped" && ! grep -Eq "\\b($bw|$hw|$hw1)\\b" "$T/scoped" || fail "--why: holders, findings or evidence outside pod A"
ok "--why: holders, findings and evidence are pod A's"

gr status --json --pod ${B//-/_}
expect_rc 1 "pod B is dirty"
jqok '(.gpus | map(.index)) == [0] and .gpus[0].state == "dirty"' "pod B: GPU 0, dirty"
jqok "[.findings[] | select(.kind == \"orphan\") | .pids] == [[$bw]]" "its orphan finding names its worker only"
jqok "[.findings[].pids[]] | (index($alive) == null and index($hw) == null)" "not pod A's process nor the host's"
jqok ".findings[] | select(.kind == \"orphan\") | .next_step == \"gpureap reap --gpu 0 --pid $bw\"" "its next step ends exactly its worker"

# check: pod A has no leftover (the stale memory on GPU 2 counts: it may be anyone's)
gr check
expect_rc 2 "unscoped check: critical"
gr check --pod $A --gpu 0,1
expect_rc 0 "check --pod A on GPUs 0 and 1: OK"
has out "^GPUREAP OK - 2 GPUs, 1 busy, none with leftovers$" "the line says pod A's GPUs"
gr check --pod $A
expect_rc 2 "check --pod A with GPU 2: the stale memory is critical"
has out "GPU 2: 1.0 GiB stale" "it names the stale memory"
hasnt out "GPU 0" "not GPU 0's leftovers"
gr check --pod $B
expect_rc 2 "check --pod B: its leftover"
has out "GPU 0: 1 likely leftover hold 512 MiB \\(gpureap reap --pod $B --gpu 0 --likely\\)$" "the hint's reap keeps the scope"

# metrics: the scope's leftovers, holders and processes
gr metrics
has out '^gpureap_gpu_leftovers{gpu="0",.*,kind="orphan"} 2$' "unscoped: two orphans on GPU 0"
gr metrics --pod $A
expect_rc 0 "metrics --pod A"
has out '^gpureap_gpu_leftovers{gpu="0",.*,kind="orphan"} 0$' "pod A: no orphan on GPU 0"
has out '^gpureap_gpu_leftovers{gpu="1",.*,kind="orphan"} 0$' "nor on GPU 1"
has out '^gpureap_gpu_state{gpu="0",.*,state="busy"} 1$' "GPU 0 busy for pod A"
has out '^gpureap_gpu_holders{gpu="0",.*,role="owner"} 1$' "one owner of GPU 0 in pod A"
has out "^gpureap_process_gpu_memory_bytes{gpu=\"0\",.*,pid=\"$alive\"" "pod A's process has its series"
hasnt out "pid=\"$bw\"" "pod B's worker has none"

# reap: the plan is the scope's; the verify is too (the host's leftover on GPU 0 stays)
gr reap --dry-run --json --pod $A --likely
jqok "([.plan.targets[].pid, .plan.spared[].pid] | sort) == ([$alive, $amon] | sort)" "pod A's plan: its own two processes, spared; neither pod B's nor the host's"
gr reap --yes --pod $B --likely --grace 300ms --timeout 5s
expect_rc 0 "pod B's leftover ended and verified, though the host's stays on GPU 0"
has out "^  kill   $bw " "pod B's worker is the target"
hasnt out "\\b$hw\\b" "the host's leftover is not in the plan"
hasnt out "\\b$alive\\b" "nor pod A's process"
wait_state "$bw" "gone Z"
kill -0 "$hw" && kill -0 "$alive" || fail "a process outside pod B was killed"
ok "the host's leftover and pod A's process live"
done_testing
