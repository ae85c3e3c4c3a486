#!/bin/bash
# AMD and Intel GPUs (docs/drm.md), without the hardware: the recorded /proc and /sys trees of
# tests/fixtures/drm-{amdgpu,i915,xe} (built from the documented formats by
# make-drm-fixtures.sh) replayed through GPUREAP_PROC_ROOT and GPUREAP_SYS_ROOT, with no NVML
# and with the fake one; the table, the JSON, the metrics and reap's refusal checked on each.
# Real processes that share one fd of a DRM device cannot be made here (no DRM driver: a
# character device 226 opens with ENXIO), so the sharing is in the recordings; the real
# processes below share a file that is named like a render node and is no DRM client.
. "$TESTLIB"
FIX=$(dirname "$FIXTURES_PROC")
NONVML=$T/no-such-libnvidia-ml.so.1
# FIXTURE ARGS...: gpureap on a recorded tree, without NVML; its fds name /dev as recorded
replay() {
        local f=$FIX/drm-$1
        shift
        GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys GPUREAP_NVML_LIBRARY=$NONVML gr "$@"
}

# ---- amdgpu, with the AMD ghost ----
replay amdgpu status --json
expect_rc 1 "amdgpu: leftovers, without NVML: not a driver failure"
jqok '.driver.status == "no_library" and (.drm.gpus | map(.pci_bus_id)) == ["0000:03:00.0", "0000:83:00.0"]' \
        "two AMD GPUs by PCI address, in PCI order; the BMC's display is not one"
jqok '[.drm.gpus[] | .vendor + "/" + .driver + "/" + .state] == ["amd/amdgpu/dirty", "amd/amdgpu/dirty"]' "vendor, driver and state of each"
jqok '.drm.gpus[0].kfd_gpu_id == 1234 and .drm.gpus[0].render_minor == 128 and .drm.gpus[0].sources == ["drm", "kfd"]' \
        "KFD's topology joined to the render node by PCI address"
jqok '[.drm.clients[] | .client_id] == [41, 52, 53, 54]' "clients keyed by (pdev, drm-client-id), each once"
jqok '(.drm.clients[] | select(.client_id == 53) | .holders) == [{"pid": 810, "fd": 5}, {"pid": 811, "fd": 5}]' \
        "a client shared by two processes lists both holders, with their fds"
jqok '(.drm.clients[] | select(.client_id == 53) | .memory) == 1073741824' "its memory counted once, not once per holder"
jqok '(.drm.clients[] | select(.client_id == 54) | [.memory_shared, .regions.vram.shared, .regions.gtt.device]) == [1073741824, 1073741824, false]' \
        "memory per region, the shared part apart"
jqok '(.drm.clients[] | select(.client_id == 53) | .verdict | [.judgement, .confidence]) == ["leftover", "sure"]' \
        "a client all of whose holders are leftovers is a leftover"
jqok '(.drm.clients[] | select(.client_id == 54) | .verdict | [.judgement, .holders_leftover, .holders_live]) == ["live", 1, 1]' \
        "a client one of whose holders is live is not a leftover (killing the other frees nothing)"
jqok '(.drm.clients[] | select(.client_id == 52) | .verdict.judgement) == "live"' "the live job's client is live"
jqok '.drm.ghosts == [{"pid": 700, "process": "not_found", "pci_bus_id": "0000:03:00.0", "kfd_gpu_id": 1234, "memory": 8589934592, "hidden_holders": [710], "confidence": "sure"}]' \
        "the AMD ghost: the dead PID's KFD entry, named with its hidden holder"
jqok '[.drm.kfd[] | [.pid, .memory]] == [[700, 8589934592], [700, 0], [800, 2147483648]]' "KFD's per-process VRAM, a dead PID's too"
jqok '.drm.gpus[0].leftover_memory == 8589934592' "the ghost's VRAM and its client's are the same memory: counted once"
jqok '[.processes[] | select(.pid == 710 or .pid == 810 or .pid == 811 or .pid == 800) | .pid] == [710, 800, 810, 811]' \
        "the DRM holders are listed among the processes"
jqok '.gpus == [] and .drm.reaped == true' "no NVML GPU; the AMD view is one reap acts on"

replay amdgpu status
expect_rc 1 "amdgpu table"
has out "no NVIDIA driver  2 AMD/Intel GPUs" "the title counts the AMD GPUs"
has out "^  0000:03:00.0  amd    amdgpu  dirty  8.1 GiB / 64.0 GiB VRAM" "a GPU line names vendor, driver, state and VRAM"
has out "client 53: 1.0 GiB of VRAM, leftover \(sure\); held by 810 \(python3\), 811 \(pt_data_worker\)" "a shared client, its holders"
has out "client 54: 1.0 GiB of VRAM \(1.0 GiB shared\), live \(sure\)" "shared memory reported apart"
has out "AMD ghost: PID 700 is gone, KFD still counts 8.0 GiB of VRAM for it on 0000:03:00.0; kept by 710 \(python3\) \(sure\)" \
        "the ghost named with its hidden holder"
has out "note: gpureap reap ends a leftover client.s holders together" "the table says how reap takes them"
has err "no NVIDIA driver found; 2 AMD or Intel GPUs" "a hint, not an error"

replay amdgpu metrics
expect_rc 0 "metrics without NVML, with AMD GPUs"
has out '^gpureap_drm_gpu_state\{pci_bus_id="0000:03:00.0",vendor="amd",driver="amdgpu",state="dirty"\} 1$' "metrics name the vendor"
has out '^gpureap_drm_gpu_leftover_bytes\{pci_bus_id="0000:83:00.0",vendor="amd",driver="amdgpu"\} 1073741824$' "leftover VRAM per GPU"

# reap plans the AMD leftovers by their verdicts and their clients' (tests/integration/reap-drm.sh
# ends real ones): the ghost's holder 710 (uid 1000's: with --all-users), not 810 and 811, whose
# client 53 is theirs alone but 810 shares client 54 with the live 800 (drm_shared, both: ending
# 811 alone would free nothing); with --pid too
replay amdgpu reap --dry-run --pid 710 --json
jqok '.plan.targets == [] and (.plan.spared[0] | .pid == 710 and .refusal == "other_user")' \
        "reap --pid of another user's ghost holder: refused as another user's"
replay amdgpu reap --dry-run --all-users --likely --json
jqok '[.plan.targets[].pid] == [710] and ([.plan.spared[] | {pid, refusal}] == [{"pid": 810, "refusal": "drm_shared"}, {"pid": 811, "refusal": "drm_shared"}])' \
        "without NVML: the ghost's holder planned; the workers sharing a live job's client spared"
f=$FIX/drm-amdgpu
GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys gr reap --dry-run --json --all-users --likely
expect_rc 0 "reap with NVML (the fake) and AMD leftovers"
jqok '[.plan.targets[].pid] == [710] and ([.plan.spared[] | select(.refusal == "drm_shared") | .pid] == [810, 811])' \
        "beside NVML's GPU the same AMD plan"
GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys gr status --json
jqok '.driver.status == "ok" and (.gpus | length) == 1 and .gpus[0].vendor == "nvidia" and (.drm.gpus | length) == 2' \
        "NVML's GPU (vendor nvidia) and the AMD GPUs side by side"

# check (a health framework's line) agrees with status: a dirty AMD GPU is critical, its hint
# the status that shows it (reap does not end AMD/Intel holders yet: no hint names a reap that
# would refuse them); before, check said "OK - no NVIDIA GPU here" on this node
replay amdgpu check --direct
expect_rc 2 "check: AMD leftovers without NVML are CRITICAL"
has out "^GPUREAP CRITICAL - GPU 0000:03:00.0 \\(amd\\): 1 leftover hold 8.0 GiB \\(gpureap reap --all-users\\); GPU 0000:83:00.0 \\(amd\\): 2 leftovers hold 1.0 GiB, none that this user may end \\(gpureap status\\)" \
        "check names each dirty AMD GPU, and the reap that ends what it counted (none where that reap spares them)"
replay amdgpu check --direct --format npd
expect_rc 1 "check --format npd: a problem"
replay amdgpu check --direct --gpu 83:00.0
has out "^GPUREAP CRITICAL - GPU 0000:83:00.0 \\(amd\\)" "check --gpu by PCI address: that GPU only"
hasnt out "03:00.0" "and not the other"
replay amdgpu check --direct --gpu 7
expect_rc 3 "check --gpu naming no AMD GPU: a usage error (UNKNOWN)"
has err "no AMD or Intel GPU matches '7' \\(give its PCI address" "said which"
replay i915 check --direct
expect_rc 0 "check: a live client on an Intel GPU is fine (control)"
has out "^GPUREAP OK - 1 GPU, 1 busy, none with leftovers$" "busy, said so"
GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys gr check --direct
expect_rc 2 "check beside NVIDIA's GPU: the dirty AMD GPUs are CRITICAL, as status counts them"
has out "GPU 0000:03:00.0 \\(amd\\): 1 leftover hold 8.0 GiB \\(gpureap reap --all-users\\)" "named beside NVIDIA's"

# every face agrees on what no NVIDIA GPU means (an adversary found check and status apart): no
# library, an NVML that lists none (its GPUs given to VMs), one that does not start (installed
# without its kernel module): the AMD GPUs answer in status, check and reap alike
for how in none-listed init-failed; do
        case $how in
        none-listed) scenario ;;
        init-failed) scenario "gpu 0" "fail nvmlInit_v2 9" ;;
        esac
        GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys gr status --json --direct
        expect_rc 1 "status, NVML $how: the dirty AMD GPUs answer"
        GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys gr check --direct
        expect_rc 2 "check, NVML $how: CRITICAL, as status"
        has out "GPU 0000:03:00.0 \\(amd\\): 1 leftover hold 8.0 GiB" "check, NVML $how: the AMD GPU named"
        GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys gr reap --dry-run --json --all-users --likely
        jqok '[.plan.targets[].pid] == [710]' "reap, NVML $how: the AMD plan"
done
scenario "gpu 0 minor=0"
# --gpu by PCI address on an AMD-only node: status counts that GPU (exit 1, dirty), and an
# address of no GPU, or an NVML index, is a usage error, in status as in check and wait
replay amdgpu status --gpu 83:00.0
expect_rc 1 "status --gpu of a dirty AMD GPU: not clean"
replay amdgpu status --gpu 0
expect_rc 2 "status --gpu 0 with no NVIDIA GPU: a usage error"
has err "no AMD or Intel GPU matches '0'" "said why"
replay i915 status --gpu 0000:03:00.0
expect_rc 1 "status --gpu of a busy Intel GPU, no NVIDIA driver: busy (as without --gpu)"

# through gpureap serve (its snapshot as structs on the wire): the same view as a direct look
replay amdgpu status --json --direct
cp "$T/out" "$T/direct.json"
GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys GPUREAP_NVML_LIBRARY=$NONVML \
        GPUREAP_SYSLOG_SOCKET=$T/nolog "$GPUREAP" serve --interval 100ms --listen none >"$T/serve.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE" # ended by PID at exit, whatever fails first
(
        export GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$f/proc GPUREAP_SYS_ROOT=$f/sys GPUREAP_NVML_LIBRARY=$NONVML
        gr_served status --json
        cp "$T/out" "$T/served.json"
        gr metrics
        cp "$T/out" "$T/served.prom"
)
term_and_wait "$SERVE"
d=$(diff <(jq -S .drm "$T/direct.json") <(jq -S .drm "$T/served.json")) || fail "the drm view through serve differs: $d"
ok "through serve the same AMD view, the ghost and the verdicts"
grep -q '^gpureap_drm_gpu_state{pci_bus_id="0000:03:00.0",vendor="amd",driver="amdgpu",state="dirty"} 1$' "$T/served.prom" ||
        fail "serve's metrics lack the AMD GPU"
ok "serve's metrics name the AMD GPU"

# ---- amdgpu, its live job 800's main thread ended alone, five threads sharing its files ----
# (the leader's stat Z and its fd directory empty, each task/TID with the files): its clients
# hold it once each, not once per thread (64 copies pushed the other holders out of the list)
cp -a "$FIX/drm-amdgpu" "$T/le"
p800=$T/le/proc/800
sed -i 's/^800 (python3) S \(.*\) 1 0 4100 /800 (python3) Z \1 6 0 4100 /' "$p800/stat"
grep -q '^800 (python3) Z .* 6 0 4100 ' "$p800/stat" || fail "the fixture's stat of 800 was not made a zombie leader's"
for t in 8001 8002 8003 8004 8005; do
        mkdir -p "$p800/task/$t"
        cp -a "$p800/fd" "$p800/fdinfo" "$p800/status" "$p800/cmdline" "$p800/environ" "$p800/maps" "$p800/task/$t/"
        sed "s/^800 (python3) Z /$t (python3) S /; s/ 6 0 4100 / 6 0 4101 /" "$p800/stat" >"$p800/task/$t/stat"
done
rm -f "$p800"/fd/* "$p800"/fdinfo/*
GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$T/le/proc GPUREAP_SYS_ROOT=$T/le/sys GPUREAP_NVML_LIBRARY=$NONVML gr status --json
jqok '[.drm.clients[] | select(.client_id == 52) | .holders[] | select(.pid == 800)] | length == 1' \
        "a process whose main thread ended alone holds its client once, whatever its threads"
jqok '(.drm.clients[] | select(.client_id == 54) | [.holders[].pid] | sort) == [800, 810]' \
        "and a client it shares lists both holders"

# ---- i915 ----
replay i915 status --json
expect_rc 1 "i915: a live client keeps its GPU busy"
jqok '.drm.gpus == [.drm.gpus[0]] and (.drm.gpus[0] | [.vendor, .driver, .state, .pci_bus_id]) == ["intel", "i915", "busy", "0000:03:00.0"]' "an Intel GPU by PCI address"
jqok '(.drm.clients[0] | [.client_id, .memory, .regions.local0.device, .regions.system0.device, .verdict.judgement]) == [7, 536870912, true, false, "live"]' \
        "i915: local0 is its VRAM, system0 is not; the client is live"
jqok '.drm.kfd == null and .drm.ghosts == []' "no KFD on Intel"
replay i915 status
has out "^  0000:03:00.0  intel  i915    busy$" "the table names Intel"

# ---- xe ----
replay xe status --json
expect_rc 1 "xe: a leftover client"
jqok '(.drm.gpus[0] | [.vendor, .driver, .state, .leftover_memory]) == ["intel", "xe", "dirty", 24567808]' "an xe GPU, dirty"
jqok '(.drm.clients[0] | [.memory, .memory_shared, (.regions | has("cycles-rcs"))]) == [24567808, 16777216, false]' \
        "xe: vram0 counted, its shared part apart, drm-total-cycles-* not a region"
replay xe reap --dry-run --pid 950 --json --all-users
jqok '[.plan.targets[].pid] == [950]' "xe: the leftover, its client its own, is planned"

# ---- real processes: a file named like a render node that is no DRM client is no holder ----
mkdir -p "$T/dev/dri"
truncate -s 4096 "$T/dev/dri/renderD128"
launch pidfile "$PIDS" fake open dri/renderD128 spawn-holder "$PIDS" fakechild sleep
wait_role fake fakechild
gr status --json
jqok '.drm == null' "no DRM client, no AMD or Intel GPU: the snapshot has no drm view (as on an NVIDIA machine)"
jqok "[.processes[] | select(.pid == $(pid_of fake) or .pid == $(pid_of fakechild))] == []" \
        "processes sharing a file that only looks like a render node are not holders"
done_testing
