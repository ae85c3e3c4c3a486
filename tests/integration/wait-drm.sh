#!/bin/bash
# wait on AMD and Intel GPUs (docs/drm.md), on copies of the recorded trees of
# tests/fixtures/drm-{amdgpu,i915}, which the test changes while wait looks: without an NVIDIA
# driver wait counts them (no DRM client or KFD ghost left; --free from amdgpu's
# mem_info_vram_used); beside one it does not (a workstation's desktop keeps its integrated GPU
# busy), and status counts only a dirty one there.
. "$TESTLIB"
FIX=$(dirname "$FIXTURES_PROC")
NONVML=$T/no-such-libnvidia-ml.so.1
cp -r "$FIX/drm-amdgpu" "$T/amd"
cp -r "$FIX/drm-i915" "$T/intel"
on() { # TREE COMMAND ARGS...: COMMAND in the environment of a look at a copied tree, without NVML
        local tree=$1
        shift
        GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$T/$tree/proc GPUREAP_SYS_ROOT=$T/$tree/sys GPUREAP_NVML_LIBRARY=$NONVML "$@"
}
with_nvml() { # TREE COMMAND ARGS...: the same beside the fake NVML (its GPU idle)
        local tree=$1
        shift
        GPUREAP_DEV_DIR=/dev GPUREAP_PROC_ROOT=$T/$tree/proc GPUREAP_SYS_ROOT=$T/$tree/sys "$@"
}

on amd gr wait --timeout 300ms --direct
expect_rc 1 "amdgpu, a leftover client and the KFD ghost: not clean in 300 ms"
has err "^gpureap: timeout after 0.3s: not clean$" "the timeout said"
has err "^  0000:03:00.0  amd    amdgpu  dirty" "the AMD GPU shown, dirty"
on amd gr wait --timeout 0 --direct --json
expect_rc 1 "one look"
jqok '.met == false and .condition.kind == "clean" and ([.status.drm.gpus[].state] == ["dirty", "dirty"])' \
        "the JSON: not met, the two AMD GPUs dirty"

# the leftovers and the live job go while wait looks: it ends then, not before
on amd "$GPUREAP" wait --timeout 20s --direct --json >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
sleep 0.5
kill -0 "$BG" 2>/dev/null || fail "wait ended before anything changed: $(cat "$T/bg.err")"
ok "wait still waits after 0.5 s"
mkdir -p "$T/gone"
for p in 710 790 800 810 811; do mv "$T/amd/proc/$p" "$T/gone/$p"; done
mv "$T/amd/sys/class/kfd/kfd/proc/700" "$T/gone/kfd-700"
mv "$T/amd/sys/class/kfd/kfd/proc/800" "$T/gone/kfd-800"
set +e
wait "$BG"
RC=$?
set -e
cp "$T/bg.out" "$T/out"
expect_rc 0 "wait ends once no client and no KFD entry is left"
jqok '.met == true and .waited_ms >= 400 and ([.status.drm.gpus[].state] == ["clean", "clean"])' \
        "met, after the change (not before), both clean"

# --free: amdgpu's used VRAM, as the driver counts it
on amd gr wait --timeout 0 --direct --free 90%
expect_rc 1 "8.1 GiB of 64 used: not 90% free"
has err "not enough memory free" "said"
for g in renderD128 renderD129; do echo 1073741824 >"$T/amd/sys/class/drm/$g/device/mem_info_vram_used"; done
on amd gr wait --timeout 0 --direct --free 90%
expect_rc 0 "1 GiB used: 90% free"
on amd gr wait --timeout 0 --direct --free 64GiB
expect_rc 1 "64 GiB free is more than there is"

# --gpu by PCI address (with or without the domain): GPU 03 made clean (its leftover and the KFD
# ghost it kept gone), GPU 83 still has its live job
cp -r "$FIX/drm-amdgpu" "$T/amd3"
mkdir -p "$T/gone3"
mv "$T/amd3/proc/710" "$T/gone3/710"
mv "$T/amd3/sys/class/kfd/kfd/proc/700" "$T/gone3/kfd-700"
on amd3 gr wait --timeout 0 --direct
expect_rc 1 "without --gpu: GPU 83 is busy with a live job, not clean (control)"
on amd3 gr wait --timeout 0 --direct --gpu 0000:03:00.0
expect_rc 0 "--gpu 0000:03:00.0: that GPU is clean"
on amd3 gr wait --timeout 0 --direct --gpu 03:00.0
expect_rc 0 "--gpu 03:00.0 (no domain): the same"
on amd3 gr wait --timeout 0 --direct --gpu 83:00.0
expect_rc 1 "--gpu 83:00.0: busy, not clean"
on amd3 gr wait --timeout 0 --direct --gpu 03:00.0,0000:83:00.0
expect_rc 1 "both: not clean"
on amd3 gr wait --timeout 0 --direct --gpu 0000:99:00.0
expect_rc 2 "an address no GPU has: a usage error"
has err "^gpureap: no AMD or Intel GPU matches '0000:99:00.0'" "said which"

# Intel: a live client keeps it busy, and wait is for clean
on intel gr wait --timeout 0 --direct
expect_rc 1 "i915 with a live client: busy, not clean"
on intel gr wait --timeout 0 --direct --free 1MiB
expect_rc 1 "i915 says no used VRAM: --free cannot be met (unknown is not free)"

# beside an NVIDIA driver (the fake NVML, its GPU idle): the AMD and Intel GPUs do not hold
# wait, and status counts only a dirty one
cp -r "$FIX/drm-amdgpu" "$T/amd2"
with_nvml amd2 gr status --json --direct
jqok '.driver.status == "ok" and ([.gpus[].state] == ["clean"]) and ([.drm.gpus[].state] == ["dirty", "dirty"])' \
        "NVML's GPU clean, the AMD GPUs dirty (control)"
with_nvml amd2 gr wait --timeout 0 --direct
expect_rc 0 "wait is for the NVIDIA GPU: met"
with_nvml amd2 gr status --direct
expect_rc 1 "status: a dirty AMD GPU beside NVIDIA's counts"
with_nvml intel gr status --json --direct
jqok '([.gpus[].state] == ["clean"]) and ([.drm.gpus[].state] == ["busy"])' "NVML's GPU clean, the Intel GPU busy (control)"
with_nvml intel gr status --direct
expect_rc 0 "status: a busy Intel GPU beside NVIDIA's (a desktop on it) does not count"
done_testing
