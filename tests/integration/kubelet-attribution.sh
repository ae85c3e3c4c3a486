#!/bin/bash
# Holders in pods named by the kubelet (docs/architecture.md, "The kubelet"): real processes in
# real pod cgroups of both drivers' layouts, the fake driver listing their GPUs, the fake kubelet
# assigning them. Pod A (systemd layout) holds GPU 0, assigned by UUID to ml/train-0's worker;
# pod B (cgroupfs layout) holds GPU 1, assigned as a time-sliced replica (UUID::2); pod C holds
# GPU 2, which no listed pod was assigned (a deleted pod's leftover); pods D and E share GPU 3,
# whose two replicas went to two listed pods (which is which, the devices cannot tell). Named in
# the table, the JSON and the metrics, one-shot and through serve (both served forms); a
# missing socket and a hanging kubelet: not named, said why, the command still answers in time.
. "$TESTLIB"
[ -n "${KUBELET_MODULE:-}" ] || { echo "1..0 # SKIP built without the kubelet module (nghttp2, protobuf-c)"; exit 77; }
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || { echo "1..0 # SKIP no python3-grpcio"; exit 77; }
MNT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
OWN=$(sed -n 's/^0:://p' /proc/self/cgroup)
BASE=$MNT${OWN%/}/gpureap-test-$$
if [ "$(id -u)" -ne 0 ] || [ -z "$MNT" ] || ! mkdir -p "$BASE" 2>/dev/null; then
        echo "1..0 # SKIP needs root and a writable cgroup v2 hierarchy"
        exit 77
fi
cleanup_cgroups() {
        cleanup
        for _ in $(seq 1 200); do
                find "$BASE" -depth -type d -exec rmdir {} + 2>/dev/null || true
                [ -d "$BASE" ] || break
                sleep 0.01
        done
}
trap cleanup_cgroups EXIT
export GPUREAP_KUBELET_MODULE=$KUBELET_MODULE
unset GPUREAP_KUBELET_SOCKET
scenario "gpu 0" "gpu 1" "gpu 2" "gpu 3"
uuid() { printf 'GPU-fa4e0000-0000-4000-8000-%012u' "$1"; }
cg() { mkdir -p "$BASE/$1"; echo "$2" >"$BASE/$1/cgroup.procs"; }
hex() { printf "$1%.0s" $(seq 64); }
A=5f0c1e2a-7b3d-4c1e-9a8b-1234567890ab
B=0d9c8b7a-6f5e-4d3c-2b1a-ba0987654321
C=11111111-2222-4333-8444-555555555555
D=dddddddd-0000-4000-8000-000000000001
E=eeeeeeee-0000-4000-8000-000000000002
launch pidfile "$PIDS" pa cuda 0 0 256 sleep
launch pidfile "$PIDS" pb cuda 1 1 128 sleep
launch pidfile "$PIDS" pc cuda 2 2 64 sleep
launch pidfile "$PIDS" pd cuda 3 3 32 sleep
launch pidfile "$PIDS" pe cuda 3 3 32 sleep
wait_role pa pb pc pd pe
pa=$(pid_of pa); pb=$(pid_of pb); pc=$(pid_of pc); pd=$(pid_of pd); pe=$(pid_of pe)
cg "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${A//-/_}.slice/cri-containerd-$(hex a).scope" "$pa"
cg "kubepods/besteffort/pod$B/$(hex b)" "$pb"
cg "kubepods/besteffort/pod$C/$(hex c)" "$pc"
cg "kubepods/besteffort/pod$D/$(hex d)" "$pd"
cg "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${E//-/_}.slice/cri-containerd-$(hex e).scope" "$pe"

fixture() { # the kubelet's pods; $1: a pod that holds GPU 2 too (a new one, once listed)
        cat >"$T/pods.json.tmp" <<JSON
{"pods": [
  {"name": "train-0", "namespace": "ml", "containers": [
     {"name": "worker", "devices": [{"resource": "nvidia.com/gpu", "ids": ["$(uuid 0)"]}]},
     {"name": "sidecar"}]},
  {"name": "infer-1", "namespace": "serving", "containers": [
     {"name": "server", "devices": [{"resource": "nvidia.com/gpu", "ids": ["$(uuid 1)::2"]}]}]},
  {"name": "share-a", "namespace": "lab", "containers": [
     {"name": "nb", "devices": [{"resource": "nvidia.com/gpu", "ids": ["$(uuid 3)::0"]}]}]},
  {"name": "share-b", "namespace": "lab", "containers": [
     {"name": "nb", "devices": [{"resource": "nvidia.com/gpu", "ids": ["$(uuid 3)::1"]}]}]}$1
 ]}
JSON
        mv "$T/pods.json.tmp" "$T/pods.json"
}
fixture ""
start_kubelet() { # SOCKET ARGS...
        local sock=$1; shift
        rm -f "$T/kubelet.ready"
        /usr/bin/python3 "$FAKE_KUBELET" "$sock" "$T/pods.json" --ready "$T/kubelet.ready" --log "$T/kubelet.log" "$@" 2>"$T/kubelet.err" &
        LAUNCHED="$LAUNCHED $!"
        for _ in $(seq 1 300); do [ -s "$T/kubelet.ready" ] && return 0; sleep 0.05; done
        fail "the fake kubelet did not start: $(cat "$T/kubelet.err")"
}
start_kubelet "$T/kubelet.sock"
K="--kubelet-socket $T/kubelet.sock"
pod() { echo "(.processes[] | select(.pid == $1) | .kubernetes)"; }

# shellcheck disable=SC2086
gr status --json --direct $K
jqok '.kubelet.state == "ok" and .kubelet.pods == 4 and .kubelet.socket == "'"$T/kubelet.sock"'"' "the kubelet answered, its four pods"
jqok "$(pod "$pa") == {\"pod_uid\": \"$A\", \"container_id\": \"$(hex a)\", \"pod\": \"train-0\", \"namespace\": \"ml\", \"container\": \"worker\", \"naming\": \"named\", \"container_naming\": \"named\", \"named_by\": \"kubelet\"}" \
        "pod A (systemd layout, the GPU's UUID): pod, namespace, container and UID"
jqok "$(pod "$pb") | .pod == \"infer-1\" and .namespace == \"serving\" and .container == \"server\" and .pod_uid == \"$B\"" \
        "pod B (cgroupfs layout, a time-sliced replica UUID::2): named"
jqok "$(pod "$pc") | .naming == \"unassigned\" and .pod == null and .container == null and .pod_uid == \"$C\"" \
        "pod C's GPU was assigned to no listed pod: unknown, said why, its UID kept"
jqok "[$(pod "$pd"), $(pod "$pe")] | all(.naming == \"ambiguous\" and .pod == null)" \
        "pods D and E on two replicas of one GPU: ambiguous, neither guessed"
[ "$(grep -c '^List$' "$T/kubelet.log")" = 1 ] || fail "one status asked List $(grep -c '^List$' "$T/kubelet.log") times"
ok "one status, one List"
# GPU 2 is in use and no listed pod was assigned it (the scheduler takes it for free): one
# finding, with its holder; GPUs 0, 1 and 3 are assigned (3 to two replicas): none
jqok "[.findings[] | select(.kind == \"no_pod\") | {gpus, pids, leftover, action}] == [{\"gpus\": [2], \"pids\": [$pc], \"leftover\": false, \"action\": \"none\"}]" \
        "GPU 2, in use and assigned to no listed pod: a no_pod finding with its holder, no action"
jqok '.kubelet.gpus_assigned == [0, 1, 3] and .kubelet.devices_unmapped == false' "the GPUs the kubelet assigned"
# shellcheck disable=SC2086
gr check --direct $K
expect_rc 1 "check warns of a GPU in use that no pod was assigned"
has out "GPU 2: in use, assigned to no pod by the kubelet" "check names the GPU"
hasnt out "GPU [013]: in use, assigned" "and only that GPU"

# the device manager's checkpoint (GPUREAP_KUBELET_CHECKPOINT): each pod UID's devices. Pod C
# holds GPU 2 and was given GPU 3: a process of a pod holding a GPU it was not assigned. Both
# forms of DeviceIDs (by NUMA node since 1.20, a plain list before)
checkpoint() { # the entry of pod C's devices
        cat >"$T/checkpoint.tmp" <<JSON
{"Data": {"PodDeviceEntries": [
  {"PodUID": "$A", "ContainerName": "worker", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"-1": ["$(uuid 0)"]}},
  {"PodUID": "$B", "ContainerName": "server", "ResourceName": "nvidia.com/gpu", "DeviceIDs": ["$(uuid 1)::2"]},
  {"PodUID": "$C", "ContainerName": "w", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": ["$1"]}},
  {"PodUID": "$D", "ContainerName": "nb", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": ["$(uuid 3)::0"]}},
  {"PodUID": "$E", "ContainerName": "nb", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": ["$(uuid 3)::1"]}},
  {"PodUID": "$A", "ContainerName": "worker", "ResourceName": "rdma/hca", "DeviceIDs": {"0": ["hca0"]}}],
 "RegisteredDevices": {"nvidia.com/gpu": ["$(uuid 0)", "$(uuid 1)", "$(uuid 2)", "$(uuid 3)"]}},
 "Checksum": 1234}
JSON
        chmod 644 "$T/checkpoint.tmp"
        mv "$T/checkpoint.tmp" "$T/checkpoint"
}
checkpoint "$(uuid 3)"
export GPUREAP_KUBELET_CHECKPOINT=$T/checkpoint
# shellcheck disable=SC2086
gr status --json --direct $K
jqok '.kubelet.checkpoint == {"state": "ok", "path": "'"$T/checkpoint"'", "error": null, "devices": 6}' "the checkpoint read: its six devices"
jqok "[$(pod "$pa"), $(pod "$pb"), $(pod "$pc"), $(pod "$pd")] | map(.gpus_assigned) == [[0], [1], [3], [3]]" \
        "each pod UID's GPUs, by UUID, by a replica's UUID::N, from both forms"
jqok "[.findings[] | select(.kind == \"not_assigned\") | {gpus, pids, leftover, action}] == [{\"gpus\": [2], \"pids\": [$pc], \"leftover\": false, \"action\": \"none\"}]" \
        "pod C's process on GPU 2, which its pod was not assigned: a not_assigned finding, no action"
# shellcheck disable=SC2086
gr check --direct $K
has out "GPU 2: held by 1 process of a pod not assigned it" "check names the GPU"
checkpoint "$(uuid 2)"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok '[.findings[] | select(.kind == "not_assigned")] == []' "pod C given GPU 2: no finding (control)"
checkpoint "MIG-5a1c0000-0000-4000-8000-000000000001"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok "[.findings[] | select(.kind == \"not_assigned\")] == [] and ($(pod "$pc") | has(\"gpus_assigned\") | not)" \
        "pod C given a MIG device (its GPU unknown): what it was assigned is not known, nothing said"
checkpoint "$(uuid 3)"
chmod 666 "$T/checkpoint"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok '.kubelet.checkpoint.state == "error" and (.kubelet.checkpoint.error | test("^not reading the checkpoint: ")) and ([.findings[] | select(.kind == "not_assigned")] == [])' \
        "a checkpoint others may write: not read, said, nothing found on it"
echo '{"Data": {"PodDeviceEntries": [{"PodUID": 5}]}}' >"$T/checkpoint"
chmod 644 "$T/checkpoint"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok '.kubelet.checkpoint.state == "error" and (.kubelet.checkpoint.error | test("malformed"))' "a malformed checkpoint: an error, said"
echo '{"Data": {"PodDeviceEntries": null, "RegisteredDevices": null}, "Checksum": 1}' >"$T/checkpoint"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok "(.kubelet.checkpoint | [.state, .devices]) == [\"ok\", 0] and ($(pod "$pc") | .gpus_assigned == []) and ([.findings[] | select(.kind == \"not_assigned\") | .gpus] == [[0, 1, 2, 3]])" \
        "a checkpoint that gave no pod a device: every pod's process on a GPU is not_assigned"
mkfifo "$T/fifo"
GPUREAP_KUBELET_CHECKPOINT=$T/fifo gr status --json --direct $K
jqok '.kubelet.checkpoint.state == "error" and (.kubelet.checkpoint.error | test("not a regular file"))' "a FIFO: refused at once, no hang"
rm "$T/checkpoint"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok '.kubelet.checkpoint.state == "missing" and .kubelet.state == "ok"' "no checkpoint: missing, List still answers"
unset GPUREAP_KUBELET_CHECKPOINT
# shellcheck disable=SC2086
gr status --json --direct $K
jqok '.kubelet | has("checkpoint") | not' "beside a socket that is not the default, no checkpoint is read unless named"

# shellcheck disable=SC2086
gr status --direct --wide $K
has out "^ *$pa .* pod ml/train-0 container worker$" "the table names pod A's holder"
has out "^ *$pb .* pod serving/infer-1 container server$" "and pod B's"
has out "^ *$pc .* pod $C \\(not named: no pod the kubelet lists was assigned the GPUs it holds\\)$" "pod C: its UID, and why it is not named"
hasnt out "^note: pods are shown" "no note where the kubelet answered"

# shellcheck disable=SC2086
gr metrics --direct $K
has out "^gpureap_process_gpu_memory_bytes{gpu=\"0\",.*,pid=\"$pa\",.*,pod=\"train-0\",namespace=\"ml\",container=\"worker\"} 268435456$" \
        "the process series has dcgm-exporter's pod, namespace and container"
has out "^gpureap_process_gpu_memory_bytes{gpu=\"2\",.*,pid=\"$pc\",.*,pod=\"\",namespace=\"\",container=\"\"} " "none for the pod not named"
hasnt out '^gpureap_gpu_state{.*pod=' "the GPU series carry no pod"

GPUREAP_KUBELET_SOCKET=$T/kubelet.sock gr status --json --direct
jqok "$(pod "$pa") | .pod == \"train-0\"" "GPUREAP_KUBELET_SOCKET names the socket"
# shellcheck disable=SC2086
GPUREAP_KUBELET_SOCKET=$T/no-such.sock gr status --json --direct $K
jqok "$(pod "$pa") | .pod == \"train-0\"" "--kubelet-socket over GPUREAP_KUBELET_SOCKET"

# no socket: everything as before, the pods by UID, and it says why
gr status --json --direct --kubelet-socket "$T/no-such.sock"
expect_rc 1 "status still judges"
jqok '.kubelet.state == "no_socket" and (.kubelet.error | test("no kubelet socket at"))' "not asked: no socket, said"
jqok "$(pod "$pa") | .naming == \"not_asked\" and .pod == null and .pod_uid == \"$A\"" "the UID from the cgroup, no name"
jqok '[.gpus[].state] == ["busy", "busy", "busy", "busy"]' "the GPUs' states as ever"
jqok '[.findings[] | select(.kind == "no_pod")] == []' "no no_pod finding where the kubelet was not asked (control)"
gr status --direct --wide --kubelet-socket "$T/no-such.sock"
has out "^ *$pa .* pod $A$" "the table: the pod's UID"
has out "^note: pods are shown by their UIDs only: the kubelet was not asked \(no kubelet socket at '$T/no-such.sock'\)$" \
        "a note says why, since processes run in pods' cgroups"
# negative control: no socket and no process in a pod (a machine without Kubernetes): no note
mkdir -p "$T/dev0" "$T/ctx0"
sed "s|^contexts .*|contexts $T/ctx0|" "$T/scenario" >"$T/scenario0"
GPUREAP_DEV_DIR=$T/dev0 GPUREAP_FAKE_NVML_SCENARIO=$T/scenario0 gr status --direct --wide --kubelet-socket "$T/no-such.sock"
expect_rc 0 "nothing held"
hasnt out "kubelet" "no word of the kubelet where nothing runs in a pod and there is no socket"

# a kubelet that accepts and never answers: the deadline holds, the command answers
start_kubelet "$T/hang.sock" --hang
t0=$(date +%s%N)
gr status --json --direct --kubelet-socket "$T/hang.sock"
t1=$(date +%s%N)
expect_rc 1 "status answers past a hanging kubelet"
jqok '.kubelet.state == "timeout" and .kubelet.elapsed_ms >= 900 and .kubelet.elapsed_ms < 3000' "the kubelet's deadline (1 s) held"
jqok "$(pod "$pa") | .naming == \"not_asked\" and .pod_uid == \"$A\"" "nothing taken from it"
[ $(( (t1 - t0) / 1000000 )) -lt 10000 ] || fail "status took $(( (t1 - t0) / 1000000 )) ms"
gr status --direct --wide --kubelet-socket "$T/hang.sock"
has out "^note: pods are shown by their UIDs only: the kubelet did not answer \(" "the table says the kubelet did not answer"
gr check --direct --format npd --timeout 1500ms --kubelet-socket "$T/hang.sock"
expect_rc 0 "check answers inside its own deadline, past the kubelet's (no pod warning: it did not answer)"
has out "^gpureap OK: 4 GPUs, 4 busy" "and judges (busy GPUs are fine)"
# reap asks it once, for its plan, within a quarter of --timeout, and not for its verifying
# looks (each took the kubelet's whole second: sixth adversarial round)
lists() { grep -c '^List$' "$T/kubelet.log" || true; }
before=$(lists)
gr reap --yes --json --timeout 2s --kubelet-socket "$T/hang.sock"
jqok '.plan.targets == []' "nothing to reap (the GPUs are busy with live jobs)"
[ "$(lists)" = $((before + 1)) ] || fail "reap asked the hanging kubelet $(( $(lists) - before )) times"
ok "reap asked the hanging kubelet once: its plan's look, not its verifying one"

# a process of pod C whose lineage cannot tell (its launcher's group is gone, but it ignores
# SIGHUP: started to outlive its shell?): with the kubelet's List, answered after it started,
# assigning pod C's GPU to no listed pod, it is a likely leftover, with that evidence; pod C's
# other process, whose parent is alive, stays live (the kubelet's word never overrules that)
nohup "$GPUHOLD" pidfile "$PIDS" pflauncher setsid child pidfile "$PIDS" pf cuda 2 2 64 sleep >/dev/null 2>&1 &
LAUNCHED="$LAUNCHED $!"
# and one of pod E in the same way, on the time-sliced GPU 3 (its pod ambiguous by the devices)
nohup "$GPUHOLD" pidfile "$PIDS" pglauncher setsid child pidfile "$PIDS" pg cuda 3 3 32 sleep >/dev/null 2>&1 &
LAUNCHED="$LAUNCHED $!"
wait_role pflauncher pf pglauncher pg
pf=$(pid_of pf); pg=$(pid_of pg)
cg "kubepods/besteffort/pod$C/$(hex c)" "$pf"
cg "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${E//-/_}.slice/cri-containerd-$(hex e).scope" "$pg"
kill -KILL "$(pid_of pflauncher)" "$(pid_of pglauncher)"
wait_state "$(pid_of pflauncher)" "gone"
wait_state "$(pid_of pglauncher)" "gone"
sleep 2.1 # the kubelet's answer must come 2 s after the process started (the boot time is whole seconds)
verdict() { echo "(.processes[] | select(.pid == $1) | .verdict)"; }
gr status --json --direct --kubelet-socket "$T/no-such.sock"
jqok "$(verdict "$pf") | .judgement == \"unsure\" and ([.evidence[].key] | index(\"kubelet\") == null)" "without the kubelet: unsure (control)"
gr status --json --direct $K
jqok "$(verdict "$pf") | .judgement == \"leftover\" and .confidence == \"likely\" and (.reason | test(\"its pod $C is not among the pods the kubelet lists\"))" \
        "with the kubelet's List: a likely leftover, its pod not listed"
jqok "$(verdict "$pf") | [.evidence[] | select(.key == \"kubelet\" and .lean == \"leftover\")] | length == 1" "the kubelet's evidence, leaning leftover"
# shellcheck disable=SC2086
gr reap --dry-run --likely --json $K
jqok "[.plan.targets[] | select(.pid == $pf) | .judgement] == [\"leftover\"]" \
        "reap asks the kubelet as status does: --likely plans the holder that check counts"
# shellcheck disable=SC2086
gr check --direct $K
has out "1 likely.*gpureap reap --gpu 2 --likely" "check counts it likely and names reap --likely"
# shellcheck disable=SC2086
gr status --json --direct $K
jqok "$(verdict "$pc") | .judgement == \"live\"" "pod C's process with a live parent stays live"
jqok "$(verdict "$pa") | [.evidence[].key] | index(\"kubelet\") == null" "a named pod's process has no such evidence"
# a kubelet socket served by another user (the path may come from the environment): not
# believed, since its answer would make a holder a likely leftover (sixth adversarial round)
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
        mkdir -p "$T/foreign"
        chmod 711 "$T"
        chmod 777 "$T/foreign"
        cp "$T/pods.json" "$T/foreign/pods.json"
        chmod 644 "$T/foreign/pods.json"
        setpriv --reuid 4242 --regid 4242 --clear-groups /usr/bin/python3 "$FAKE_KUBELET" "$T/foreign/k.sock" \
                "$T/foreign/pods.json" --ready "$T/foreign/ready" --log "$T/foreign/log" 2>"$T/foreign.err" &
        LAUNCHED="$LAUNCHED $!"
        for _ in $(seq 1 300); do [ -s "$T/foreign/ready" ] && break; sleep 0.05; done
        [ -s "$T/foreign/ready" ] || fail "the foreign kubelet did not start: $(cat "$T/foreign.err")"
        [ "$(stat -c %u "$T/foreign/k.sock")" = 4242 ] || fail "the foreign socket is not uid 4242's"
        gr status --json --direct --kubelet-socket "$T/foreign/k.sock"
        jqok '.kubelet.state == "error" and (.kubelet.error | test("is served by neither root nor this user: not believed"))' \
                "a kubelet socket served by uid 4242: not believed, said why"
        jqok "$(verdict "$pf") | .judgement == \"unsure\" and ([.evidence[].key] | index(\"kubelet\") == null)" \
                "its answer does not make the holder a likely leftover"
        jqok "$(pod "$pa") | .pod == null" "nor names a pod"
        gr reap --dry-run --likely --json --kubelet-socket "$T/foreign/k.sock"
        jqok "[.plan.targets[] | select(.pid == $pf)] == []" "reap --likely does not plan the holder on its word"
        chmod 700 "$T"
else
        ok "# SKIP a foreign kubelet needs root and setpriv"
fi
# the container runtime (CRI ContainerStatus, GPUREAP_CRI_SOCKET) names pod C's container's pod
# by its labels, for pod C's UID: ml/old-c; the kubelet's Get knows no such pod: it is gone, and
# the holder a sure leftover (issue 23's verdict). Controls: Get knows it, the labels give
# another UID, the runtime does not know the container, no runtime socket
# The runtime knows pods D and E too (time-sliced replicas of GPU 3, which the devices cannot
# tell apart): D is lab/share-a, listed, its container running; E is lab/old-e, deleted since,
# its container exited (as pod C's)
labels() { # POD NAMESPACE UID CONTAINER STATE
        printf '{"name": "%s", "state": "%s", "labels": {"io.kubernetes.pod.name": "%s", "io.kubernetes.pod.namespace": "%s",
                "io.kubernetes.pod.uid": "%s", "io.kubernetes.container.name": "%s"}}' "$4" "$5" "$1" "$2" "$3" "$4"
}
cri() { # LABEL_UID [JQ_EXTRA]: the CRI kubelet's fixture, the pods as the kubelet's
        jq --arg c "$(hex c)" --arg d "$(hex d)" --arg e "$(hex e)" --argjson lc "$(labels old-c ml "$1" w exited)" \
                --argjson ld "$(labels share-a lab "$D" nb running)" --argjson le "$(labels old-e lab "$E" nb exited)" \
                '. + {"containers": {($c): $lc, ($d): $ld, ($e): $le}}'"${2:-}" \
                "$T/pods.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
}
cri "$C"
rm -f "$T/cri-k.ready"
/usr/bin/python3 "$FAKE_KUBELET" "$T/cri-k.sock" "$T/cri.json" --cri "$T/cri.sock" --ready "$T/cri-k.ready" \
        --log "$T/cri.log" 2>"$T/cri-k.err" &
LAUNCHED="$LAUNCHED $!"
for _ in $(seq 1 300); do [ -s "$T/cri-k.ready" ] && break; sleep 0.05; done
[ -s "$T/cri-k.ready" ] || fail "the CRI kubelet did not start: $(cat "$T/cri-k.err")"
KC="--kubelet-socket $T/cri-k.sock"
export GPUREAP_CRI_SOCKET=$T/cri.sock
gone() { echo "($(pod "$1") | .gone)"; }
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(gone "$pf") == {\"state\": \"confirmed\", \"pod\": \"old-c\", \"namespace\": \"ml\", \"why\": null}" \
        "the runtime names its pod ml/old-c, the kubelet's Get knows none: gone"
jqok "$(verdict "$pf") | .judgement == \"leftover\" and .confidence == \"sure\" and (.reason | test(\"its pod ml/old-c is gone\"))" \
        "its holder: a sure leftover"
jqok "$(verdict "$pc") | .judgement == \"live\"" "pod C's process with a live parent stays live (the pod's end never overrules that)"
grep -q "^ContainerStatus $(hex c)\$" "$T/cri.log" || fail "no ContainerStatus for pod C's container: $(cat "$T/cri.log")"
grep -q "^Get ml/old-c\$" "$T/cri.log" || fail "no Get of ml/old-c: $(cat "$T/cri.log")"
[ "$(grep -c '^ContainerStatus' "$T/cri.log")" = 3 ] || fail "ContainerStatus asked $(grep -c '^ContainerStatus' "$T/cri.log") times for three containers"
[ "$(grep -c '^Get' "$T/cri.log")" = 2 ] || fail "Get asked $(grep -c '^Get' "$T/cri.log") times for two pods whose containers exited"
ok "one ContainerStatus for each unnamed container (pod C's two processes share one), one Get for each pod whose container exited"
# time-sliced: pods D and E, ambiguous by the devices, named by the runtime's labels; E is gone:
# its orphan a sure leftover, its process with a live parent stays live (never against that)
jqok "$(pod "$pd") | .naming == \"ambiguous\" and .named_by == \"runtime\" and .pod == \"share-a\" and .namespace == \"lab\" and .container == \"nb\" and .gone.state == \"running\"" \
        "pod D (a time-sliced replica): named lab/share-a by the runtime, its container running (the kubelet not asked)"
jqok "$(verdict "$pd") | .judgement == \"live\"" "and its process stays live"
jqok "[$(pod "$pe"), $(pod "$pg")] | all(.named_by == \"runtime\" and .pod == \"old-e\" and .container == \"nb\" and .gone.state == \"confirmed\")" \
        "pod E (the other replica): named lab/old-e by the runtime, gone"
jqok "$(verdict "$pg") | .judgement == \"leftover\" and .confidence == \"sure\" and (.reason | test(\"its pod lab/old-e is gone\"))" \
        "pod E's orphan on a time-sliced GPU: a sure leftover"
jqok "$(verdict "$pe") | .judgement == \"live\"" "pod E's process with a live parent stays live"
# shellcheck disable=SC2086
gr reap --dry-run --json $KC
jqok "[.plan.targets[] | select(.pid == $pf or .pid == $pg) | .judgement] == [\"leftover\", \"leftover\"]" "reap without --likely plans both"
jqok "[.plan.targets[] | select(.pid == $pc or .pid == $pd or .pid == $pe)] == []" "and not the live ones"
# shellcheck disable=SC2086
gr status --wide --direct $KC
has out "^ *$pf .* pod ml/old-c $C \\(gone: the kubelet knows no such pod\\)" "the table says its pod is gone"
has out "^ *$pd .* pod lab/share-a container nb \\(named by the container runtime: the kubelet's devices fit more than one\\)" \
        "the table names a time-sliced pod by the runtime, and says why the devices could not"
# MIG: the kubelet assigned a MIG device (which GPU it is on, the report does not say): pod C is
# unmapped by the devices, named by the runtime, and gone all the same
jq '.pods += [{"name": "mig-0", "namespace": "ml", "containers": [{"name": "w", "devices": [{"resource": "nvidia.com/mig-1g.10gb", "ids": ["MIG-5a1c0000-0000-4000-8000-000000000001"]}]}]}]' \
        "$T/cri.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(pod "$pf") | .naming == \"unmapped\" and .named_by == \"runtime\" and .pod == \"old-c\" and .gone.state == \"confirmed\"" \
        "beside a MIG device: pod C unmapped by the devices, named by the runtime, gone"
jqok "$(verdict "$pf") | .confidence == \"sure\"" "its orphan still a sure leftover"
# a kubelet that restarts lists no pod and knows none by Get for a while (found by an
# adversary: the holder of a live time-sliced pod became a sure leftover, and reap killed it):
# the runtime says the container runs, so it is not gone; and a List of no pod at all is no
# evidence against a holder
jq '.pods = [] | .get_unknown = true | .containers[$e].labels["io.kubernetes.pod.name"] = "share-b"' --arg e "$(hex e)" \
        "$T/cri.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
jq '.containers[$e].state = "running"' --arg e "$(hex e)" "$T/cri.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(pod "$pg") | .gone.state == \"running\" and .pod == \"share-b\"" "the kubelet lists nothing: its running container's pod is not gone"
jqok "$(verdict "$pg") | .judgement == \"unsure\" and ([.evidence[].key] | index(\"kubelet\") == null)" \
        "and its unsure holder stays unsure: an empty List is no evidence"
# shellcheck disable=SC2086
gr reap --dry-run --likely --json $KC
jqok "[.plan.targets[] | select(.pid == $pg)] == []" "reap --likely does not plan it"
jq '.containers[$e].state = "exited"' --arg e "$(hex e)" "$T/cri.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(pod "$pg") | .gone.state == \"unknown\" and (.gone.why | test(\"lists no pod at all\"))" \
        "its container exited, but a kubelet that lists no pod is not believed: unknown, said why"
cri "$C"
# crafted labels: a pod name Kubernetes does not allow is asked about nowhere (an adversary's: its
# sanitized form was asked by Get, not found, and the holder became a sure leftover)
jq '.containers[$e].labels["io.kubernetes.pod.name"] = "old-e\u202e"' --arg e "$(hex e)" \
        "$T/cri.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
: >"$T/cri.log"
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(pod "$pg") | .gone.state == \"unknown\" and .named_by != \"runtime\" and (.gone.why | test(\"by a name Kubernetes allows\"))" \
        "a label no kubelet writes: not named, not gone"
! grep -q "^Get lab/old-e" "$T/cri.log" || fail "Get was asked about a name Kubernetes does not allow"
ok "and the kubelet is not asked about it"
cri "$C"
# shellcheck disable=SC2086
gr metrics $KC
has out "gpureap_process_gpu_memory_bytes{.*pid=\"$pd\".*pod=\"share-a\",namespace=\"lab\",container=\"nb\"}" \
        "the metrics label a time-sliced pod's process with the runtime's names"
cri "$C"
cri "$C" ' | .get_unknown = true'
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(gone "$pf") | .state == \"confirmed\"" "Get's not-found in the kubelet's own words (UNKNOWN, 'pod old-c in namespace ml not found'): gone"
cri "$C" ' | .get_only = [{"name": "old-c", "namespace": "ml"}]'
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "($(gone "$pf") | .state == \"present\") and ($(verdict "$pf") | .confidence == \"likely\")" \
        "Get knows a pod ml/old-c (maybe a new one of that name): not proved gone, likely (control)"
cri "$E"
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "($(gone "$pf") | .state == \"unknown\" and (.why | test(\"not its cgroup's pod\"))) and ($(verdict "$pf") | .confidence == \"likely\")" \
        "the runtime's labels name another UID: unknown, likely (control)"
jq 'del(.containers)' "$T/cri.json" >"$T/cri.json.tmp" && mv "$T/cri.json.tmp" "$T/cri.json"
# shellcheck disable=SC2086
gr status --json --direct $KC
jqok "$(gone "$pf") | .state == \"unknown\" and (.why | test(\"does not know its container\"))" \
        "the runtime does not know the container: unknown, said why (control)"
cri "$C"
# shellcheck disable=SC2086
GPUREAP_CRI_SOCKET=$T/no-such-cri.sock gr status --json --direct $KC
jqok "($(gone "$pf") | .state == \"unknown\" and (.why | test(\"no container runtime socket\"))) and ($(verdict "$pf") | .confidence == \"likely\")" \
        "no runtime socket: unknown, likely (control)"
# through serve (both served forms): the same verdict; serve remembers the pods proved gone (a
# UID never comes back), so it asks the runtime once, not at every look
: >"$T/cri.log"
serve_start --interval 100ms --listen none $KC --nvml-timeout 2s
for wire in 1 0; do
        GPUREAP_SERVE_WIRE=$wire gr_served status --json
        jqok "($(gone "$pf") | .state == \"confirmed\") and ($(verdict "$pf") | .confidence == \"sure\")" \
                "served (wire $wire): its pod gone, a sure leftover"
done
for wire in 1 0; do
        GPUREAP_SERVE_WIRE=$wire gr_served status --json
        jqok "$(pod "$pd") | .named_by == \"runtime\" and .pod == \"share-a\"" "served (wire $wire): a time-sliced pod named by the runtime"
done
sleep 1
[ "$(grep -c '^ContainerStatus' "$T/cri.log")" = 3 ] ||
        fail "serve asked ContainerStatus $(grep -c '^ContainerStatus' "$T/cri.log") times about 3 containers in a second of looks every 100 ms"
[ "$(grep -c '^Get' "$T/cri.log")" = 2 ] ||
        fail "serve asked Get $(grep -c '^Get' "$T/cri.log") times about 2 gone pods in a second of looks every 100 ms"
ok "serve asked the runtime once about each container, and Get once about each gone pod"
term_and_wait "$SERVE"
unset GPUREAP_CRI_SOCKET
fixture ', {"name": "c-pod", "namespace": "ml", "containers": [{"name": "w", "devices": [{"resource": "nvidia.com/gpu", "ids": ["'"$(uuid 2)"'"]}]}]}'
gr status --json --direct $K
jqok "$(verdict "$pf") | .judgement == \"unsure\"" "its pod listed (with the GPU): unsure again (control)"
jqok '[.findings[] | select(.kind == "no_pod")] == []' "GPU 2 assigned to a listed pod: no no_pod finding (control)"
# a MIG device names no GPU the report has: which GPUs are assigned is not known, nothing said
fixture ', {"name": "mig-0", "namespace": "ml", "containers": [{"name": "w", "devices": [{"resource": "nvidia.com/mig-1g.10gb", "ids": ["MIG-5a1c0000-0000-4000-8000-000000000001"]}]}]}'
gr status --json --direct $K
jqok '.kubelet.devices_unmapped == true and [.findings[] | select(.kind == "no_pod")] == []' \
        "with a MIG device assigned (its GPU unknown): no no_pod finding"
fixture ""

# serve: the kubelet's answer cached (not one List per look), carried to clients in both served
# forms, and asked again soon when a pod it could not name is seen
: >"$T/kubelet.log"
checkpoint "$(uuid 3)"
GPUREAP_KUBELET_CHECKPOINT=$T/checkpoint serve_start --interval 100ms --listen none --kubelet-socket "$T/kubelet.sock" --nvml-timeout 2s
for wire in 1 0; do
        GPUREAP_SERVE_WIRE=$wire gr_served status --json
        jqok "$(pod "$pa") | .pod == \"train-0\" and .container == \"worker\"" "served (wire $wire): pod A named"
        jqok '.kubelet.state == "ok" and .kubelet.pods == 4' "served (wire $wire): the kubelet's state"
        jqok "$(pod "$pc") | .naming == \"unassigned\"" "served (wire $wire): pod C not named"
        jqok "($(pod "$pc") | .gpus_assigned == [3]) and ([.findings[] | select(.kind == \"not_assigned\") | .pids | index($pc) != null] == [true])" \
                "served (wire $wire): the checkpoint's GPUs and the not_assigned finding"
done
gr status --wide
has out "^as seen by gpureap serve \\(PID $SERVE\\)" "the table through serve"
has out "^ *$pa .* pod ml/train-0 container worker$" "served: the table names pod A's holder"
sleep 2
looks=$(grep -c '^List$' "$T/kubelet.log")
[ "$looks" -ge 1 ] && [ "$looks" -le 5 ] || fail "serve asked List $looks times in some 2 s of looks every 100 ms"
ok "serve asked List $looks times in some 2 s (a look every 100 ms): cached"
fixture ', {"name": "new-2", "namespace": "ml", "containers": [{"name": "w", "devices": [{"resource": "nvidia.com/gpu", "ids": ["'"$(uuid 2)"'"]}]}]}'
until_served "$(pod "$pc") | .pod == \"new-2\" and .container == \"w\""
ok "a pod listed since is named by serve within seconds"
term_and_wait "$SERVE"
done_testing
