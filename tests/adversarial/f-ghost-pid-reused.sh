#!/bin/bash
# The ghost lives on for as long as its hidden holder (hours, days); meanwhile its PID is handed
# to an unrelated process (pid_max wraps on a busy node). The driver then lists a PID that /proc
# shows alive but that holds no NVIDIA device file at all: it cannot own a CUDA context, so it is
# not the process the driver means. gpureap takes it for a live owner:
#   - 'reap --all --gpu 0' (every holder of the GPU, "live jobs too") kills that unrelated process;
#   - the real holder keeps the memory, attributed to nobody (no ghost finding).
# Modelled with the fake driver's context token: written for the unrelated PID, held by H.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
# the unrelated newcomer that got the ghost's PID: a shell's sleep, no device file
"$GPUHOLD" pidfile "$PIDS" newcomer sleep &
LAUNCHED="$LAUNCHED $!"
wait_role newcomer
nc=$(pid_of newcomer)
# the ghost's hidden holder: a forked child with the context's files (setsid'd, parent gone)
cat >"$T/holder.py" <<'P'
import fcntl, os, struct, sys, time
dev, ctx, pid, pidfile = os.environ["GPUREAP_DEV_DIR"], os.environ["GPUREAP_FAKE_CTX_DIR"], sys.argv[1], sys.argv[2]
fds = [os.open(dev + "/nvidia0", os.O_RDWR) for _ in range(12)] + [os.open(dev + "/nvidiactl", os.O_RDWR)]
fd = os.open("%s/ctx-%s-0-0" % (ctx, pid), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 1, 0))
os.write(fd, b"pid=%s gpu=0 mib=2048\n" % pid.encode())
with open(pidfile, "a") as f:
    f.write("holder %d\n" % os.getpid())
time.sleep(10000)
P
setsid -f python3 "$T/holder.py" "$nc" "$PIDS" </dev/null >/dev/null 2>&1
wait_role holder
h=$(pid_of holder)
LAUNCHED="$LAUNCHED $h"
gr status --json
echo "# driver lists $nc: $(jq -c ".gpus[0].context_owners" "$T/out")"
echo "# newcomer $nc: devices $(jq -c ".processes[] | select(.pid == $nc) | .devices" "$T/out"); holder $h: $(jq -c ".processes[] | select(.pid == $h) | .verdict | [.role, .judgement, .confidence, .reason]" "$T/out")"
echo "# findings: $(jq -c '[.findings[] | [.kind, .pids, .confidence]]' "$T/out")"
if jq -e '[.findings[] | select(.kind == "ghost")] | length > 0' "$T/out" >/dev/null; then ok "the reused PID is seen as a ghost"
else bad "the listed PID $nc, alive but holding no device file (a reused PID), is taken for the live owner: no ghost finding for the memory its real holder $h keeps"; fi
gr reap --all --gpu 0 --yes --grace 200ms --timeout 2s
f_show
if alive "$nc"; then ok "'reap --all --gpu 0' spared the unrelated process"
else bad "'reap --all --gpu 0' killed $nc, an unrelated process holding no device file, because the driver listed its (reused) PID"; fi
f_done
