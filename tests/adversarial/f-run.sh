#!/bin/bash
# Runs helper F's attack scripts (tests/adversarial/f-*.sh) against a build directory, as meson
# would: f-run.sh [BUILD_DIR] [SCRIPT...]. Each script is a TAP test in the style of the suite
# (lib.sh); a FAIL line is a finding. All but f-huge-fds (400,000 fds: too heavy for every run)
# are in the suite (tests/meson.build, suite adversarial) since their findings were fixed.
#   f-ghost-misattribution   default reap kills a live trainer's forked worker (one ghost, one candidate)
#   f-environ-cut            a cut environ entry read as whole (fixed in lib/proc/proc-parse.c)
#   f-pasted-next-step       'reap --gpu N --pid P' kills P holding no GPU (a reused PID)
#   f-epilog-deadline        epilog: a hung/failed driver without SLURM_JOB_GPUS exits 0, nothing reaped; deadline x3
#   f-epilog-stale-job-env   epilog kills another job's / a service's process by SLURM_JOB_ID in its environment
#   f-fork-during-kill       a leftover that forks on SIGTERM outlives reap, reap --tree and the epilog
#   f-tree-live-group        --tree kills a live job of another GPU sharing a batch script's group
#   f-tree-pgid-reuse        --tree signals a newcomer that reused a dead group's number
#   f-ghost-pid-reused       a ghost's reused PID is taken for a live owner; reap --all kills it
#   f-proc-root-fixture      GPUREAP_PROC_ROOT: a recorded tree has real PIDs signalled
#   f-proc-root-host-proc    GPUREAP_PROC_ROOT=/host/proc from a container kills the container's process
#   f-root-env-programs      root's reset runs GPUREAP_NVIDIA_SMI owned by another user
#   f-run-signals            ALRM/VTALRM/PROF/XCPU/PWR/RT from the tree kill 'gpureap run', tree orphaned
#   f-container-prefix       --container matches 12 digits of 64: another container's process killed
#   f-torchrun-live-helper   a live torchrun worker's detached helper is a 'sure' leftover
#   f-huge-fds               19k fds per process, 400k in all: fine; --timeout is no bound on one long scan
#   f-run-escape             (held) setsid + double fork + own cgroup + rename: caught by the subreaper
set -u
cd "$(dirname "$0")/../.."
b=${1:-build}
shift || true
export GPUREAP=$PWD/$b/src/gpureap GPUREAP_TEST_HOOKS=$PWD/$b/src/gpureap-test-hooks \
        GPUHOLD=$PWD/$b/tests/gpuhold FAKE_NVML=$PWD/$b/tests/libnvidia-ml.so.1 \
        FAKE_NVML_OLD=$PWD/$b/tests/libnvidia-ml-old.so FAKE_SMI=$PWD/tests/fake-nvml/fake-nvidia-smi \
        TESTLIB=$PWD/tests/integration/lib.sh FIXTURES_PROC=$PWD/tests/fixtures/proc-ghost \
        MKTREE=$PWD/$b/bench/mktree
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(tests/adversarial/f-*.sh)
pass=0 failed=0
for s in "${scripts[@]}"; do
        case $s in */f-run.sh | */f-lib.sh) continue ;; esac
        echo "=== $s"
        timeout 120 bash "$s"
        rc=$?
        if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then pass=$((pass + 1)); else failed=$((failed + 1)); echo "=== $s: exit $rc"; fi
done
echo "$pass held, $failed broke"
