# Shared setup of the integration tests: a private directory of fake NVIDIA device files, a fake
# NVML scenario, process trees started by gpuhold and recorded by PID, and assertions on what
# gpureap prints. Every process a test starts is recorded and killed by PID at exit.
. "$(dirname "${BASH_SOURCE[0]}")/signals.sh" # every signal at its default, none blocked
set -eu

: "${GPUREAP:?}" "${GPUHOLD:?}" "${FAKE_NVML:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-test.XXXXXX")
PIDS=$T/pids
: >"$PIDS"
mkdir -p "$T/dev" "$T/ctx"
for f in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia0 nvidia1 nvidia2 nvidia3; do
        truncate -s 4096 "$T/dev/$f"
done
# a pasted next step says 'gpureap ...': find the one under test first on PATH
mkdir -p "$T/bin"
ln -s "$GPUREAP" "$T/bin/gpureap"
export PATH="$T/bin:$PATH"
export GPUREAP_DEV_DIR=$T/dev
export GPUREAP_FAKE_CTX_DIR=$T/ctx
export GPUREAP_NVML_LIBRARY=$FAKE_NVML
export GPUREAP_FAKE_NVML_SCENARIO=$T/scenario
export GPUREAP_STATE_DIR=$T/state # the last reap's result: never in the machine's /run
export GPUREAP_SERVE_SOCKET=$T/serve.sock # a test's own serve, if it starts one: never the machine's
unset GPUREAP_PROC_ROOT GPUREAP_NVML_TIMEOUT COLUMNS # a width only where a test sets one
CHECKS=0
LAUNCHED=""
CGROUPS_MADE="" # cgroup directories a test made: removed at its end (once their members are killed)

# PID...: the descendants of each PID that is this shell's own child, not yet waited for (so
# its number is still its own), from the kernel's children lists
descendants() {
        local pid frontier next
        frontier=$(for pid in "$@"; do
                [ "$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)" = "$$" ] && echo "$pid"
        done)
        while [ -n "$frontier" ]; do
                next=$(for pid in $frontier; do cat /proc/"$pid"/task/*/children 2>/dev/null; done)
                echo $next
                frontier=$next
        done
}

cleanup() {
        local pid
        # "ROLE PID" lines; a "port N" line records a port, not a PID; never 0, 1 or a group;
        # and what a launched supervisor started (a failed check leaves a run's command
        # running, which the run's SIGKILL would leave behind)
        for pid in $(awk '$1 != "port" && $2 ~ /^[0-9]+$/ && $2 > 1 {print $2}' "$PIDS") $(descendants $LAUNCHED) $LAUNCHED; do
                case $pid in '' | 0 | 1 | -* | *[!0-9]*) continue ;; esac
                kill -KILL "$pid" 2>/dev/null || true
        done
        for pid in $LAUNCHED; do
                wait "$pid" 2>/dev/null || true
        done
        # a 'gpureap run' killed by a test leaves its (empty) leaf cgroup: ours to remove
        local mnt d
        mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo 2>/dev/null)
        # (and one a terminal test started as its job: recorded as "gpureap PID")
        for pid in $LAUNCHED $(awk '$1 == "gpureap" && $2 ~ /^[0-9]+$/ {print $2}' "$PIDS"); do
                [ -n "$mnt" ] || break
                for d in $(find "$mnt" -maxdepth 6 -type d \( -name "gpureap-run-$pid" -o -name "gpureap-run-$pid-*" \) 2>/dev/null); do
                        rmdir "$d" 2>/dev/null || true
                done
        done
        for d in $CGROUPS_MADE; do
                for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$d" 2>/dev/null && break; sleep 0.05; done
        done
        rm -rf "$T"
}
trap cleanup EXIT

# scenario LINE...: write the fake driver's scenario (a "contexts" line is added)
scenario() {
        { echo "contexts $T/ctx"; printf '%s\n' "$@"; } >"$T/scenario"
}
scenario "gpu 0 minor=0"

fail() {
        echo "FAIL: $*" >&2
        echo "--- gpureap stdout" >&2; cat "$T/out" >&2 2>/dev/null || true
        echo "--- gpureap stderr" >&2; cat "$T/err" >&2 2>/dev/null || true
        exit 1
}

ok() {
        CHECKS=$((CHECKS + 1))
        echo "ok $CHECKS - $*"
}

# launch ARGS...: start gpuhold in the background (its PID in $LAST)
launch() {
        "$GPUHOLD" "$@" &
        LAST=$!
        LAUNCHED="$LAUNCHED $LAST"
}

# wait_role ROLE...: until gpuhold has recorded each role (bounded: 10 s)
wait_role() {
        local r i
        for r in "$@"; do
                i=0
                until grep -q "^$r " "$PIDS"; do
                        i=$((i + 1))
                        [ $i -lt 1000 ] || fail "role '$r' never started"
                        sleep 0.01
                done
        done
}

pid_of() {
        awk -v r="$1" '$1 == r { print $2 }' "$PIDS" | tail -n 1
}

# wait_state PID STATES: until /proc/PID/stat shows one of STATES ("gone" for no process)
wait_state() {
        local pid=$1 want=$2 i=0 st
        while :; do
                if [ -r "/proc/$pid/stat" ]; then
                        st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
                        [ -n "$st" ] || st=gone
                else
                        st=gone
                fi
                case " $want " in *" $st "*) return 0 ;; esac
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "process $pid never reached '$want' (is '$st')"
                sleep 0.01
        done
}

# gr ARGS...: run gpureap; output in $T/out, $T/err, exit status in $RC
gr() {
        set +e
        "$GPUREAP" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
}

# gr_served ARGS...: gr, again until the answer came through serve ($SERVE). A client gives
# serve 500 ms and then reads the driver itself, so on a loaded machine one call may answer
# directly: the test then asked serve nothing (bounded: 10 s)
gr_served() {
        local i=0
        until gr "$@" && jq -e ".history.served_by == ${SERVE:-0}" "$T/out" >/dev/null 2>&1; do
                i=$((i + 1)); [ $i -lt 100 ] || fail "no answer through serve $SERVE: $(jq -c .history "$T/out" 2>/dev/null)"; sleep 0.1
        done
}

# term_and_wait PID: SIGTERM to a supervisor the test started in the background; its exit
# status in RC
term_and_wait() {
        kill -TERM "$1"
        set +e
        wait "$1"
        RC=$?
        set -e
}

expect_rc() {
        [ "$RC" -eq "$1" ] || fail "expected exit $1, got $RC ($2)"
        ok "exit $1: $2"
}

# jqok FILTER DESCRIPTION [jq args...]: the JSON output satisfies FILTER
jqok() {
        local filter=$1 desc=$2
        shift 2
        jq -e "$@" "$filter" "$T/out" >/dev/null || fail "$desc: jq '$filter' is false"
        ok "$desc"
}

# has FILE PATTERN DESCRIPTION: grep -E in $T/out or $T/err
has() {
        grep -Eq -- "$2" "$T/$1" || fail "$3: no /$2/ in $1"
        ok "$3"
}

hasnt() {
        ! grep -Eq -- "$2" "$T/$1" || fail "$3: /$2/ found in $1"
        ok "$3"
}

done_testing() {
        echo "1..$CHECKS"
}

# free_port: a TCP port of 127.0.0.1 that nobody listens on now (the kernel's choice)
free_port() {
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# promtool_check FILE: 'promtool check metrics' accepts the text of FILE (its words in
# $T/promtool), but for the one lint it must raise: dcgm-exporter's label modelName, which
# gpureap spells as dcgm-exporter does so that the two join (promtool wants snake_case). Only
# that label is renamed for it: any other camelCase label, any other lint, fails.
promtool_check() {
        sed 's/,modelName="/,model_name="/g' "$1" | promtool check metrics >"$T/promtool" 2>&1
}

# doc_example NAME FILE: FILE is an example the docs show (tests/fixtures/docs-examples/README.md);
# with DOC_EXAMPLES_DIR set, it is kept there as NAME, to be committed
doc_example() {
        [ -z "${DOC_EXAMPLES_DIR:-}" ] || cp "$2" "$DOC_EXAMPLES_DIR/$1"
}

# syslog_listener: gpureap's audit lines (GPUREAP_SYSLOG_SOCKET, set here to $T/log) appended to
# $T/syslog, one datagram a line, by a listener of the test's own; skips (77) without python3
syslog_listener() {
        command -v python3 >/dev/null || { echo "1..0 # SKIP no python3 for the log listener"; exit 77; }
        export GPUREAP_SYSLOG_SOCKET=$T/log
        dgram_listener "$GPUREAP_SYSLOG_SOCKET" "$T/syslog"
}
# dgram_listener SOCKET FILE: datagrams to the Unix socket SOCKET appended to FILE, one a line
dgram_listener() {
        python3 - "$1" "$2" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536) + b"\n")
PY
        LAUNCHED="$LAUNCHED $!"
        local i=0
        until [ -S "$1" ]; do i=$((i + 1)); [ $i -lt 500 ] || fail "no listener on $1"; sleep 0.01; done
}

# serve_start ARGS...: the test's own 'gpureap serve' on $GPUREAP_SERVE_SOCKET (its PID in
# $SERVE), once it answers; until_served FILTER: until its answer satisfies a jq filter (10 s)
serve_start() {
        "$GPUREAP" serve "$@" >"$T/serve.out" 2>&1 &
        SERVE=$!
        LAUNCHED="$LAUNCHED $SERVE"
        local i=0
        until "$GPUREAP" status --json 2>/dev/null | jq -e ".history.served_by == $SERVE" >/dev/null; do
                i=$((i + 1)); [ $i -lt 300 ] || fail "serve did not answer: $(cat "$T/serve.out")"; sleep 0.02
        done
}
until_served() {
        local i=0
        until "$GPUREAP" status --json 2>/dev/null | jq -e "$1" >/dev/null; do
                i=$((i + 1)); [ $i -lt 500 ] || fail "serve never said: $1"; sleep 0.02
        done
}
