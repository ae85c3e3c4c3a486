#!/bin/bash
# A member's child moved out of 'gpureap run''s leaf cgroup while its parent lives (by root, or by
# the child itself through 'systemd-run --scope'), the parent ignoring SIGTERM: once the end's
# ladder runs, the tree is listed with the cgroup's members asked for their children, so the
# moved child gets its SIGTERM and its grace like every other member, and nothing is left.
# Before, it was found only once its parent had had SIGKILL at the end of the grace (it then
# came to gpureap, the subreaper) and got SIGKILL alone.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP moving a process between cgroups needs root here"; exit 77; }
mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
top=$mnt${own%/}
[ -n "$mnt" ] && [ -w "$top" ] || { echo "1..0 # SKIP no writable cgroup v2 here"; exit 77; }
# a cgroup of this test's own (gpureap makes its leaf beside the test there), and one outside
# the leaf for the moved child
dir=$top/gpureap-test-moved-$$
mkdir "$dir" || { echo "1..0 # SKIP cannot make a cgroup under $top"; exit 77; }
echo $$ >"$dir/cgroup.procs" || { rmdir "$dir"; echo "1..0 # SKIP cannot move into a cgroup of its own"; exit 77; }
mkdir "$dir/outside"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
cg_cleanup() {
        local p d
        for p in $(awk '$2 ~ /^[0-9]+$/ && $2 > 1 {print $2}' "$T/tree.pids" 2>/dev/null) $LAUNCHED; do
                kill -KILL "$p" 2>/dev/null || true
        done
        for p in $LAUNCHED; do wait "$p" 2>/dev/null || true; done
        echo $$ >"$top/cgroup.procs" 2>/dev/null || true
        for d in "$dir"/outside "$dir"/gpureap-run-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        rmdir "$dir" 2>/dev/null || true
}
trap 'cg_cleanup; cleanup' EXIT

# the command ignores SIGTERM (only the ladder's SIGKILL ends it); its child leads a process
# group of its own (the group's SIGTERM does not reach it) and notes a SIGTERM, then exits
python3 -c '
import os, signal, sys
for s in signal.Signals:
    if s not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(s, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execvp(sys.argv[1], sys.argv[1:])' "$GPUREAP" run --grace 1s --quiet -- python3 -c '
import os, signal, sys
d = sys.argv[1]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.setpgid(0, 0)
    def term(sig, frame):
        open(d + "/child.term", "w").close()
        os._exit(0)
    signal.signal(signal.SIGTERM, term)
    os.write(w, b"x")
    while True:
        signal.pause()
os.read(r, 1)
with open(d + "/tree.pids", "a") as f:
    f.write("cmd %d\nchild %d\n" % (os.getpid(), child))
open(d + "/ready", "w").close()
while True:
    signal.pause()
' "$T" >"$T/out" 2>"$T/err" &
GP=$!
LAUNCHED="$LAUNCHED $GP"
i=0
until [ -e "$T/ready" ]; do i=$((i + 1)); [ $i -lt 2000 ] || fail "the tree never got ready: $(cat "$T/err")"; sleep 0.01; done
cat "$T/tree.pids" >>"$PIDS"
child=$(awk '$1 == "child" {print $2}' "$T/tree.pids")
cmd=$(awk '$1 == "cmd" {print $2}' "$T/tree.pids")
# moved once gpureap has made its leaf and moved the tree into it (its first sample)
i=0
until grep -q "/gpureap-run-[^/]*$" "/proc/$child/cgroup" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "the child never joined the run's leaf: $(cat "/proc/$child/cgroup")"; sleep 0.01
done
echo "$child" >"$dir/outside/cgroup.procs"
grep -q "/gpureap-test-moved-$$/outside$" "/proc/$child/cgroup" || fail "the child was not moved: $(cat "/proc/$child/cgroup")"
ok "the command's child moved out of the run's leaf while the command lives"

kill -TERM "$GP"
set +e
wait "$GP"
RC=$?
set -e
[ "$RC" = 143 ] || fail "exit $RC, want 143: $(cat "$T/err")"
[ -e "$T/child.term" ] || fail "the moved child had no SIGTERM (SIGKILL alone): $(cat "$T/err")"
ok "the moved child had its SIGTERM"
for p in "$cmd" "$child"; do
        [ ! -e "/proc/$p" ] || [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] || fail "$p left behind"
done
ok "nothing left: the command (SIGKILL after its grace) and the moved child"
echo "1..$CHECKS"
