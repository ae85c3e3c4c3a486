#!/bin/bash
# Issue 25 on a machine without a GPU: 'gpureap status' through a running 'gpureap serve' (the
# fake driver, a live launcher with eight workers on GPU 0) against the start of /bin/true,
# interleaved by bench/runbench: the rendered report (status-out), the structs
# (GPUREAP_SERVE_WIRE=structs), the static client gpureap-status, and, given, another build with a serve of its own; then the
# instructions of each client (callgrind, when valgrind is installed).
#   bench/bench-serve-client.sh BUILD_DIR [RUNS] [OTHER_GPUREAP]
set -u
B=$(realpath "${1:?build dir}") N=${2:-300} OTHER=${3:-}
T=$(mktemp -d /tmp/gpureap-bench-client.XXXXXX)
mkdir -p "$T/dev" "$T/ctx"
for f in nvidiactl nvidia-uvm nvidia0 nvidia1; do truncate -s 4096 "$T/dev/$f"; done
printf 'contexts %s\ngpu 0 minor=0\ngpu 1 minor=1\n' "$T/ctx" >"$T/scenario"
export GPUREAP_DEV_DIR=$T/dev GPUREAP_FAKE_CTX_DIR=$T/ctx GPUREAP_NVML_LIBRARY=$B/tests/libnvidia-ml.so.1
export GPUREAP_FAKE_NVML_SCENARIO=$T/scenario GPUREAP_SYSLOG_SOCKET=$T/nolog
a=()
for i in 1 2 3 4 5 6 7 8; do a+=(worker "$T/roles" "w$i" 0 0 1024); done
setsid "$B/tests/gpuhold" name launcher "${a[@]}" sleep </dev/null >/dev/null 2>&1 &
LP=$!
SV=()
trap 'kill -TERM "${SV[@]}" 2>/dev/null; kill -KILL -- -$LP 2>/dev/null; wait; rm -rf "$T"' EXIT
cp "$B/src/gpureap" "$T/new"
mkdir "$T/bin" && cp "$B/src/gpureap" "$B/src/gpureap-status" "$T/bin/" # the static client beside its gpureap
GPUREAP_SERVE_SOCKET=$T/new.sock "$T/new" serve --listen none --interval 1s >"$T/new.log" 2>&1 &
SV+=($!)
cmds=("/bin/true" -- /bin/true
      ::: "status, rendered by serve" -- "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/new" status
      ::: "status, from the structs" -- "GPUREAP_SERVE_SOCKET=$T/new.sock" GPUREAP_SERVE_WIRE=structs "$T/new" status
      ::: "status --json, rendered" -- "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/new" status --json
      ::: "gpureap-status (static)" -- "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/bin/gpureap-status"
      ::: "gpureap-status --json" -- "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/bin/gpureap-status" --json)
if [ -n "$OTHER" ]; then
        cp "$OTHER" "$T/other"
        GPUREAP_SERVE_SOCKET=$T/other.sock "$T/other" serve --listen none --interval 1s >"$T/other.log" 2>&1 &
        SV+=($!)
        cmds+=(::: "status, other build ($OTHER)" -- "GPUREAP_SERVE_SOCKET=$T/other.sock" "$T/other" status)
fi
sleep 3
echo "## $(date -u +%FT%TZ) $(uname -r) $(nproc) cores, $(ls /proc | grep -c '^[0-9]') processes, $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null)"
GPUREAP_SERVE_SOCKET=$T/new.sock "$T/new" status | sed -n 2p
"$B/bench/runbench" -n "$N" -w 10 "${cmds[@]}"
if command -v valgrind >/dev/null; then
        ir() { local e=(); while [[ "$1" == *=* ]]; do e+=("$1"); shift; done
               env "${e[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ {print $4}'; }
        echo "instructions (callgrind): /bin/true $(ir /bin/true);" \
             "rendered $(ir "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/new" status);" \
             "structs $(ir "GPUREAP_SERVE_SOCKET=$T/new.sock" GPUREAP_SERVE_WIRE=structs "$T/new" status);" \
             "--json rendered $(ir "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/new" status --json);" \
             "gpureap-status $(ir "GPUREAP_SERVE_SOCKET=$T/new.sock" "$T/bin/gpureap-status")" \
             ${OTHER:+"; other build $(ir "GPUREAP_SERVE_SOCKET=$T/other.sock" "$T/other" status)"}
fi
