#!/bin/bash
# A fake GPU node for a first look without a GPU: the test suite's fake NVIDIA driver (a
# libnvidia-ml.so.1 of our own, loaded through GPUREAP_NVML_LIBRARY) with two GPUs and private
# device files in a temporary directory (GPUREAP_DEV_DIR), a ghost (a process the driver lists
# with its memory although it is gone, whose forked child still holds the device file) and a
# live job. Then gpureap status, reap --dry-run, reap --yes of the ghost's child, and check, with
# their real output. Nothing outside the temporary directory is read or touched: gpureap sees
# only the fake device files, so it can plan only the demo's own processes, and reap is limited
# to them by PID besides. At the end, and on Ctrl-C, the demo kills what it started, by PID, and
# removes its directory.
#
# usage: scripts/demo.sh [--step]     (--step: wait for Enter before each command)
#        BUILD=DIR scripts/demo.sh    (a build directory other than build/)
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
STEP=
case ${1:-} in
--step) STEP=1 ;;
"") ;;
*) echo "usage: scripts/demo.sh [--step]" >&2; exit 2 ;;
esac

# build what the demo runs, if it is not built yet (scripts/setup.sh installs the packages)
if [ ! -x "$BUILD/src/gpureap" ] || [ ! -x "$BUILD/tests/gpuhold" ] || [ ! -e "$BUILD/tests/libnvidia-ml.so.1" ]; then
        command -v meson >/dev/null && command -v ninja >/dev/null ||
                { echo "demo: meson and ninja are needed to build: run scripts/setup.sh first" >&2; exit 1; }
        echo "demo: building in $BUILD/ ..." >&2
        [ -d "$BUILD" ] || meson setup "$BUILD" >/dev/null
        ninja -C "$BUILD" src/gpureap tests/gpuhold tests/libnvidia-ml.so.1 >/dev/null
fi
GPUREAP=$PWD/$BUILD/src/gpureap
GPUHOLD=$PWD/$BUILD/tests/gpuhold
FAKE_NVML=$PWD/$BUILD/tests/libnvidia-ml.so.1
case $BUILD in /*) GPUREAP=$BUILD/src/gpureap GPUHOLD=$BUILD/tests/gpuhold FAKE_NVML=$BUILD/tests/libnvidia-ml.so.1 ;; esac

D=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-demo.XXXXXX")
STARTED=""
cleanup() {
        local pid
        trap - EXIT INT TERM
        # only what the demo started: the PIDs gpuhold recorded, and the ones it launched
        for pid in $(awk '$2 ~ /^[0-9]+$/ && $2 > 1 { print $2 }' "$D/pids" 2>/dev/null) $STARTED; do
                kill -KILL "$pid" 2>/dev/null || true
        done
        for pid in $STARTED; do
                wait "$pid" 2>/dev/null || true
        done
        rm -rf "$D"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted; cleaning up" >&2; cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# the fake driver and the private device files: gpureap, and gpuhold, read these
mkdir -p "$D/dev" "$D/ctx" "$D/bin"
for f in nvidiactl nvidia-uvm nvidia0 nvidia1; do
        truncate -s 4096 "$D/dev/$f"
done
printf '%s\n' "contexts $D/ctx" "gpu 0 minor=0" "gpu 1 minor=1" >"$D/scenario"
export GPUREAP_NVML_LIBRARY=$FAKE_NVML GPUREAP_FAKE_NVML_SCENARIO=$D/scenario GPUREAP_FAKE_CTX_DIR=$D/ctx
export GPUREAP_DEV_DIR=$D/dev
export GPUREAP_STATE_DIR=$D/state GPUREAP_SERVE_SOCKET=$D/serve.sock GPUREAP_SYSLOG_SOCKET=$D/no-syslog
unset GPUREAP_PROC_ROOT GPUREAP_NVML_TIMEOUT
: >"$D/pids"
# the next steps gpureap prints say 'gpureap ...': this one, while the demo runs
ln -s "$GPUREAP" "$D/bin/gpureap"
export PATH="$D/bin:$PATH"

# until_role ROLE...: until gpuhold has recorded each (bounded: 10 s)
until_role() {
        local r i
        for r in "$@"; do
                i=0
                until grep -q "^$r " "$D/pids"; do
                        i=$((i + 1))
                        [ $i -lt 1000 ] || { echo "demo: '$r' never started" >&2; exit 1; }
                        sleep 0.01
                done
        done
}
pid_of() { awk -v r="$1" '$1 == r { print $2 }' "$D/pids" | tail -n 1; }

# a live job on GPU 1: a launcher and its worker with 1 GiB
"$GPUHOLD" pidfile "$D/pids" launcher setpgid worker "$D/pids" worker 1 1 1024 sleep &
STARTED="$STARTED $!"
# the ghost on GPU 0: a process makes a 2 GiB context, forks a child that inherits its device
# files, and exits; the driver goes on listing the dead PID with the memory the child keeps
"$GPUHOLD" pidfile "$D/pids" owner cuda 0 0 2048 spawn-holder "$D/pids" child exit &
owner_shell=$!
STARTED="$STARTED $owner_shell"
until_role launcher worker owner child
wait "$owner_shell" 2>/dev/null || true
child=$(pid_of child)
echo "demo: a fake node with 2 GPUs (in $D): a live job on GPU 1 (PIDs $(pid_of launcher), $(pid_of worker)); on GPU 0"
echo "demo: process $(pid_of owner) made 2 GiB, forked $child and exited; the driver still lists $(pid_of owner)"

# run ARGS...: show the command, then what it prints and its exit status
run() {
        echo
        if [ -n "$STEP" ]; then
                printf 'demo: press Enter to run: gpureap %s ' "$*"
                read -r _ || true
        fi
        echo "\$ gpureap $*"
        local rc=0
        "$GPUREAP" "$@" || rc=$?
        echo "(exit $rc)"
}

run status
run reap --dry-run
run reap --yes --pid "$child"
run check
echo
echo "demo: done; every process the demo started is ended and $D removed"
