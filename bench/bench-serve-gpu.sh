#!/bin/bash
# Issue 25's first figure on an NVIDIA machine (needs root, python3 with torch and a GPU): 'gpureap
# status' answered by a running 'gpureap serve', with eight CUDA workers on the GPU (a launcher
# starts them, 1 GiB each, tests/gpu/cuda_procs.py), against nvidia-smi and the start of a static
# program (/bin/true, and bench/nop beside RUNBENCH, a static one: the floor of any client), all
# interleaved by bench/runbench; gpureap-status beside a gpureap given is timed too. Each
# gpureap given is its own serve and client, in turn (one serve at a time, each with its own
# socket), twice round, each runbench run with its own anchors, so that builds are compared in
# one call.
#   bench/bench-serve-gpu.sh RUNBENCH RUNS GPUREAP [OTHER_GPUREAP...]
# Only processes this script started are signalled: the launcher's group, and each serve.
set -u
RB=$(realpath "${1:?runbench}") N=${2:-100}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/gpureap-serve-gpu.XXXXXX)
LP=""
SV=""
cleanup() {
        [ -n "$SV" ] && kill -TERM "$SV" 2>/dev/null
        [ -n "$LP" ] && kill -KILL -- "-$LP" 2>/dev/null
        wait 2>/dev/null
        rm -rf "$T"
}
trap cleanup EXIT
setsid python3 "$HERE/../tests/gpu/cuda_procs.py" launcher "$T/pids" 8 1 >"$T/launcher.log" 2>&1 &
LP=$!
for _ in $(seq 1 600); do [ "$(cat "$T/pids" 2>/dev/null | grep -c worker)" -ge 8 ] && break; sleep 0.1; done
echo "## $(date -u +%FT%TZ) $(nproc) cores, $(ls /proc | grep -c '^[0-9]') processes; $(grep -c worker "$T/pids" 2>/dev/null) CUDA workers"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
args=("/bin/true" -- /bin/true ::: "nvidia-smi" -- nvidia-smi)
[ -x "$(dirname "$RB")/nop" ] && args+=(::: "nop (static)" -- "$(dirname "$RB")/nop")
i=0
for g in "$@" "$@"; do
        g=$(realpath "$g")
        fast=$(dirname "$g")/gpureap-status
        [ -x "$fast" ] || fast=""
        sock=$T/serve$i.sock
        GPUREAP_SERVE_SOCKET=$sock "$g" serve --listen none --interval 1s >"$T/serve$i.log" 2>&1 &
        SV=$!
        for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.05; done
        sleep 1.5
        # the answer is the served one, and the same table as a direct look's verdicts
        GPUREAP_SERVE_SOCKET=$sock "$g" status --json | jq -c '{served_by: .history.served_by, states: [.gpus[].state], findings: [.findings[].kind]}' 2>/dev/null ||
                GPUREAP_SERVE_SOCKET=$sock "$g" status | head -3
        [ -z "$fast" ] || echo "gpureap-status: $(GPUREAP_SERVE_SOCKET=$sock "$fast" | grep -m1 '^as seen by'), exit ${PIPESTATUS[0]}"
        echo "-- $g (serve $SV), interleaved:"
        GPUREAP_SERVE_SOCKET=$sock "$RB" -n "$N" -w 5 "${args[@]}" \
                ::: "status via serve ($i)" -- "$g" status \
                ::: "status --json via serve ($i)" -- "$g" status --json \
                ${fast:+::: "gpureap-status ($i)" -- "$fast"} ${fast:+::: "gpureap-status --json ($i)" -- "$fast" --json}
        kill -TERM "$SV"
        wait "$SV" 2>/dev/null
        SV=""
        i=$((i + 1))
done
