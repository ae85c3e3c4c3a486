#!/bin/bash
# 'gpureap run' results that must not be mistaken: a --json result that could not be written (a
# full disk) is exit 125, not the command's 0; --ready-port counts only a listener of the
# command's own tree, not another process's on that port.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }

# --json - to a full device
set +e
"$GPUREAP" run --quiet --json - -- true >/dev/full 2>"$T/err"
RC=$?
set -e
expect_rc 125 "--json - on a full device"
has err "result was not written; the command's exit status was 0" "the command's own status is told"

# --json - with stdout closed: the write fails as on a closed fd (no file of gpureap's, the
# audit trail's socket, took fd 1 and the result), and the command finds its stdout closed too
set +e
"$GPUREAP" run --quiet --json - -- sh -c 'if echo probe 2>/dev/null; then echo "cmd: stdout open" >&2; else echo "cmd: stdout closed" >&2; fi' \
        >&- 2>"$T/err"
RC=$?
set -e
expect_rc 125 "--json - with stdout closed"
has err "^gpureap: cannot write the result to stdout: Bad file descriptor$" "the result fails as on a closed stdout"
has err "^cmd: stdout closed$" "and the command's stdout is closed, as its caller left it"
# run --help to a closed or full stdout: gpureap's own failure (125, as for --json -), not 0
for out in closed full; do
        set +e
        if [ $out = closed ]; then "$GPUREAP" run --help >&- 2>"$T/err"; else "$GPUREAP" run --help >/dev/full 2>"$T/err"; fi
        RC=$?
        set -e
        expect_rc 125 "run --help to a $out stdout"
        has err "^gpureap: cannot write the output: " "it says the help was not written ($out)"
done
# ... and where its output passes through gpureap (a watchdog), its pipe is closed at its first
# write, so that it ends as it would have (yes: SIGPIPE), and does not write on forever
set +e
timeout 20 "$GPUREAP" run --stall-timeout 30s -- yes >&- 2>"$T/err"
RC=$?
set -e
expect_rc 141 "a writer through gpureap to a closed stdout ends of SIGPIPE"

# --json FILE on a full file system (a tmpfs of our own, in a mount namespace of our own)
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
        mkdir -p "$T/full"
        set +e
        unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1" || exit 77
                dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null
                "$2" run --quiet --json "$1/result.json" -- true' sh "$T/full" "$GPUREAP" 2>"$T/err"
        RC=$?
        set -e
        [ "$RC" != 77 ] || fail "cannot mount a tmpfs"
        expect_rc 125 "--json FILE on a full file system"
        has err "cannot write '.*result.json'" "the failed write is named"
else
        echo "# not root: the full file system case is left out"
fi

# --json FILE, relative, still lands in the caller's directory (gpureap itself moves to /)
(cd "$T" && "$GPUREAP" run --quiet --json rel.json -- sh -c 'pwd >"$0"' "$T/cmd-pwd")
[ -s "$T/rel.json" ] || fail "no rel.json in the caller's directory"
[ "$(cat "$T/cmd-pwd")" = "$T" ] || fail "the command ran in $(cat "$T/cmd-pwd")"
ok "a relative --json FILE is the caller's directory's; the command runs there"

# gpureap's own relative paths from the environment (the NVML library; a relative device
# directory is refused as root) still work once it has left the caller's directory: the drain is
# awaited, the memory seen back
scenario "gpu 0" "teardown_ms 100"
(cd "$(dirname "$FAKE_NVML")" && GPUREAP_NVML_LIBRARY=./$(basename "$FAKE_NVML") \
        "$GPUREAP" run --quiet --json "$T/drain.json" -- "$GPUHOLD" cuda 0 0 100 spawn-holder "$T/pids2" child exit) ||
        fail "the run with relative paths failed"
jq -e '.gpu_minors == [0] and .drain.memory_back == true' "$T/drain.json" >/dev/null ||
        fail "a relative GPUREAP_NVML_LIBRARY: $(jq -c '{gpu_minors, drain}' "$T/drain.json")"
ok "a relative GPUREAP_NVML_LIBRARY: the GPU seen, the drain awaited"

# foreign_listener BACKLOG: a process of the test's, outside the run's tree, that listens on a
# free port ($port) with that queue and never accepts; its PID in $other
foreign_listener() {
        port=$(free_port)
        rm -f "$T/listens"
        python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(int(sys.argv[3]))
open(sys.argv[2], "w").close()
time.sleep(120)' "$port" "$T/listens" "$1" &
        other=$!
        LAUNCHED="$LAUNCHED $other"
        local i=0
        until [ -e "$T/listens" ]; do i=$((i + 1)); [ $i -lt 1000 ] || fail "no listener"; sleep 0.01; done
}

# --ready-port: a listener of someone else's on the port is not the command ready
foreign_listener 16
gr run --quiet --ready-port "$port" --ready-timeout 1s --max-time 20s --ready-file "$T/ready" -- sleep 30
expect_rc 121 "a port another process listens on: never ready"
[ ! -e "$T/ready" ] || fail "the ready file was written"
has err "not ready in time" "the run says it was not ready"
kill -KILL "$other"
wait "$other" 2>/dev/null || true

# ... nor one whose queue is full (it never accepts): gpureap's look at the port never blocks
# (a blocking connect waited two minutes for the dropped SYN, past the ready timeout)
foreign_listener 0
set +e
timeout -k 5 30 "$GPUREAP" run --quiet --ready-port "$port" --ready-timeout 2s -- sleep 60 >"$T/out" 2>"$T/err"
RC=$?
set -e
expect_rc 121 "a listener whose queue is full: not ready in time, and gpureap did not hang"
kill -KILL "$other"
wait "$other" 2>/dev/null || true

# ... and a listener of the command's own tree is (the positive control)
port=$(free_port)
gr run --quiet --ready-port "$port" --ready-timeout 20s --json - -- python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
c, _ = s.accept()  # gpureap connects once: ready
sys.exit(7)' "$port"
expect_rc 7 "a listener of the command's own: ready, and its status passed on"
jqok '.ended == "exit"' "it ended by itself, not as not ready"
# ... also where its main thread has ended alone (pthread_exit), its listener in the live
# thread's hands and its fd directory empty: it was taken for not ready and ended (exit 121)
port=$(free_port)
gr run --quiet --ready-port "$port" --ready-timeout 5s --ready-file "$T/ready-le" --json - -- python3 -c '
import ctypes, os, socket, sys, threading, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
def serve():
    while not os.path.exists(sys.argv[2]):  # until gpureap says the command is ready
        time.sleep(0.01)
    os._exit(7)
threading.Thread(target=serve).start()
ctypes.CDLL(None).pthread_exit(None)' "$port" "$T/ready-le"
expect_rc 7 "a listener whose main thread has ended: ready, and its status passed on"
jqok '.ended == "exit"' "it ended by itself, not as not ready"
# ... and where the listener is in a thread's file table of its own (unshare(CLONE_FILES) in
# that thread: the leader's table does not have it): it was taken for not ready and ended
port=$(free_port)
gr run --quiet --ready-port "$port" --ready-timeout 5s --ready-file "$T/ready-own" --json - -- python3 -c '
import ctypes, os, socket, sys, threading, time
def serve():
    if ctypes.CDLL(None, use_errno=True).unshare(0x400) != 0:  # CLONE_FILES: a table of its own
        os._exit(3)
    s = socket.socket()
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen(16)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    os._exit(7)
threading.Thread(target=serve).start()
while True:
    time.sleep(1)' "$port" "$T/ready-own"
expect_rc 7 "a listener in a thread's own file table: ready, and its status passed on"
done_testing
