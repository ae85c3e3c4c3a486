#!/bin/bash
# A ghost (a context owner that is gone, or a zombie, while the driver still lists its memory)
# is attributed to the one hidden holder of its GPU: 'sure' even without lineage when that
# holder has no live parent but init (a ghost's forked child is reparented when the ghost dies).
# Before (found by the adversarial review), that made another user's daemon (its own session,
# parent init, a CUDA footprint but no context) the sure keeper of the memory of a root job
# that had just ended (its context still being torn down), and root's 'reap --all-users' took
# it. Now a holder that leads a session of its own is at most likely, and one that started
# before the ghost or runs as another user (where the ghost is still in the table) unsure.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (setpriv)"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
scenario "gpu 0 minor=0" "gpu 1 minor=1" "teardown_ms 60000"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
chmod 755 "$T"; chmod 666 "$PIDS" "$T"/dev/*
cat >"$T/holder.py" <<'PY'
import mmap, os, sys, time
d = os.environ["GPUREAP_DEV_DIR"]
fds = [os.open(f"{d}/{n}", os.O_RDWR) for n in ("nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm")]
maps = [mmap.mmap(fds[1], 4096, mmap.MAP_SHARED, mmap.PROT_READ) for _ in range(24)]
with open(sys.argv[1], "a") as f:
    f.write(f"{sys.argv[2]} {os.getpid()}\n")
while True:
    time.sleep(100)
PY
verdict() { jq -r ".processes[] | select(.pid == $1) | .verdict | \"\\(.judgement) \\(.confidence)\"" "$T/out"; }

# another user's daemon: its own session, parent init, started before the ghost
setsid -f setpriv --reuid 4242 --regid 4242 --clear-groups /usr/bin/python3 "$T/holder.py" "$PIDS" daemon </dev/null >/dev/null 2>&1
wait_role daemon
Y=$(pid_of daemon)
"$GPUHOLD" pidfile "$PIDS" short cuda 0 0 100 exit # ends; the driver lists it while tearing down
X=$(pid_of short)
gr status --json
jqok "[.findings[] | select(.kind == \"ghost\")] | length == 1" "the ended job's memory is a ghost's"
v=$(verdict "$Y")
[ "$v" != "leftover sure" ] || fail "another user's daemon of its own session is the sure keeper of $X's memory"
ok "a daemon of its own session is not the sure keeper of an ended job's memory ($v)"
gr reap --dry-run --all-users --gpu 0
! grep -Eq "^  kill +$Y " "$T/out" || fail "root's default plan takes the daemon: $(cat "$T/out")"
ok "and root's default plan (--all-users) spares it"
kill -KILL "$Y"; wait_state "$Y" gone

# the ghost still in the table (a zombie its parent does not reap), and a holder of another
# user, reparented to init but in our session, that started before it
(setpriv --reuid 4242 --regid 4242 --clear-groups /usr/bin/python3 "$T/holder.py" "$PIDS" older </dev/null >/dev/null 2>&1 &)
wait_role older
Y=$(pid_of older)
python3 -c '
import os, sys, time
p = os.fork()
if p == 0:
    os.execv(sys.argv[1], [sys.argv[1], "pidfile", sys.argv[2], "zghost", "cuda", "0", "0", "100", "exit"])
with open(sys.argv[2], "a") as f:
    f.write(f"zparent {os.getpid()}\n")
time.sleep(1000)' "$GPUHOLD" "$PIDS" &
LAUNCHED="$LAUNCHED $!"
wait_role zghost zparent
X=$(pid_of zghost)
wait_state "$X" Z
gr status --json
v=$(verdict "$Y")
[ "${v#* }" = unsure ] || fail "a holder of another user, older than the zombie ghost $X: $v"
ok "a holder that started before the ghost, as another user: unsure ($v)"
gr reap --dry-run --all-users --likely --gpu 0
! grep -Eq "^  kill +$Y " "$T/out" || fail "root's plan with --likely takes it: $(cat "$T/out")"
ok "and root's plan spares it, even with --likely"

# control, on the other GPU (the ghosts above are still listed there while torn down): the
# ghost's own forked child, reparented to init, is still its sure keeper
"$GPUHOLD" pidfile "$PIDS" owner cuda 1 1 512 spawn-holder "$PIDS" child exit
wait_role owner child
C=$(pid_of child)
kill -KILL "$Y"; wait_state "$Y" gone
gr status --json
[ "$(verdict "$C")" = "leftover sure" ] || fail "(control) the ghost's forked child: $(verdict "$C")"
ok "(control) the ghost's own forked child is its sure keeper"
done_testing
