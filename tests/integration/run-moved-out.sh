#!/bin/bash
# Processes that cross 'gpureap run''s leaf cgroup (root can write to any cgroup.procs):
# - a member's child moved out of the leaf while its parent lives (by root, or by the child
#   itself through 'systemd-run --scope'), the parent ignoring SIGTERM: once the end's ladder
#   runs, the tree is listed with the cgroup's members asked for their children, so the moved
#   child gets its SIGTERM and its grace like every other member, and nothing is left. Before,
#   it was found only once its parent had had SIGKILL at the end of the grace and got SIGKILL
#   alone;
# - gpureap's own parent moved into the leaf: moved back out and never signalled (before, it
#   had SIGTERM, then SIGKILL);
# - a stranger moved into the leaf: its child is never listed (a member is asked for its
#   children only where its parent chain leads to gpureap). The stranger itself is taken as
#   the tree's, as before (not checked here).
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

# ---- gpureap's parent moved into the leaf by the command: before the end, or in the command's
# SIGTERM handler while the end runs (the ladder's listings leave it out, cgroup.kill is
# written once it is out) ----
ancestor_moved() { # WHEN: before | during
A=$T/anc-$1
mkdir "$A"
python3 -c '
import os, signal, sys
g, d, mnt, when = sys.argv[1:5]
def note(sig, frame):
    with open(d + "/anc.sig", "a") as f:
        f.write(signal.Signals(sig).name + "\n")
for s in (signal.SIGTERM, signal.SIGCONT, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, note)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
leaf = "\"%s$(sed -n \"s/^0:://p\" /proc/self/cgroup)/cgroup.procs\"" % mnt
wait_leaf = "until grep -q \"/gpureap-run-[^/]*$\" /proc/self/cgroup; do sleep 0.02; done; "
if when == "before":
    cmd = wait_leaf + "echo %d > %s && touch %s/moved; exec sleep 1000" % (os.getpid(), leaf, d)
else:  # the trap runs between two short sleeps; the loop ignores TERM: SIGKILL after the grace
    cmd = (wait_leaf + "trap \"echo %d > %s; touch %s/moved-now\" TERM; touch %s/moved; "
           "while :; do sleep 0.05; done" % (os.getpid(), leaf, d, d))
child = os.fork()
if child == 0:
    for s in (signal.SIGTERM, signal.SIGCONT, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)
    os.execv(g, [g, "run", "--grace", "1s", "--quiet", "--", "sh", "-c", cmd])
with open(d + "/gp", "w") as f:
    f.write(str(child))
_, st = os.waitpid(child, 0)
with open(d + "/gp.status", "w") as f:
    f.write(str(os.waitstatus_to_exitcode(st)))
while True:
    signal.pause()
'  "$GPUREAP" "$A" "$mnt" "$1" </dev/null >"$A/out" 2>"$A/err" &
anc=$!
echo "anc $anc" >>"$T/tree.pids"
echo "anc $anc" >>"$PIDS"
i=0
until [ -e "$A/moved" ]; do i=$((i + 1)); [ $i -lt 2000 ] || fail "gpureap's parent was never moved: $(cat "$A/err")"; sleep 0.01; done
gp=$(cat "$A/gp")
echo "gpureap $gp" >>"$T/tree.pids"
[ "$1" = during ] || grep -q "/gpureap-run-[^/]*$" "/proc/$anc/cgroup" ||
        fail "gpureap's parent is not in the leaf: $(cat "/proc/$anc/cgroup")"
[ "$1" = during ] || ok "gpureap's parent moved into the run's leaf by the command"
kill -TERM "$gp"
i=0
until [ -s "$A/gp.status" ]; do
        [ -e "/proc/$anc" ] && [ "$(awk '{print $3}' "/proc/$anc/stat")" != Z ] ||
                fail "gpureap's parent was killed: $(tr '\n' ' ' <"$A/anc.sig" 2>/dev/null)"
        i=$((i + 1)); [ $i -lt 2000 ] || fail "gpureap never ended"; sleep 0.01
done
[ "$(cat "$A/gp.status")" = 143 ] || fail "gpureap exit $(cat "$A/gp.status"), want 143"
[ "$1" = before ] || [ -e "$A/moved-now" ] || fail "the command's handler never moved gpureap's parent"
[ ! -e "$A/anc.sig" ] || fail "gpureap's parent was signalled: $(tr '\n' ' ' <"$A/anc.sig")"
[ -e "/proc/$anc" ] && [ "$(awk '{print $3}' "/proc/$anc/stat")" != Z ] || fail "gpureap's parent is gone"
ok "gpureap's parent ($1 the end) had no signal and lives"
! grep -q "/gpureap-run-" "/proc/$anc/cgroup" || fail "gpureap's parent is still in a leaf: $(cat "/proc/$anc/cgroup")"
ok "and it was moved back out of the leaf, which gpureap removed"
kill -KILL "$anc"
wait "$anc" 2>/dev/null || true
}
ancestor_moved before
ancestor_moved during

# ---- a stranger with a child, moved into a run's leaf: the child is never signalled ----
S=$T/stranger
mkdir "$S"
setsid python3 -c '
import os, signal, sys
d = sys.argv[1]
def note(name):
    def h(sig, frame):
        with open("%s/%s.sig" % (d, name), "a") as f:
            f.write(signal.Signals(sig).name + "\n")
    for s in (signal.SIGTERM, signal.SIGCONT, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, h)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
c = os.fork()
if c == 0:
    note("s1")
    while True:
        signal.pause()
note("s")
with open(d + "/pids.tmp", "w") as f:
    f.write("stranger %d\nstranger-child %d\n" % (os.getpid(), c))
os.rename(d + "/pids.tmp", d + "/pids")
while True:
    signal.pause()
' "$S" </dev/null >/dev/null 2>"$S/err" &
i=0
until [ -e "$S/pids" ]; do i=$((i + 1)); [ $i -lt 2000 ] || fail "the stranger never started: $(cat "$S/err")"; sleep 0.01; done
cat "$S/pids" >>"$T/tree.pids"
cat "$S/pids" >>"$PIDS"
stranger=$(awk '$1 == "stranger" {print $2}' "$S/pids")
s1=$(awk '$1 == "stranger-child" {print $2}' "$S/pids")
"$GPUREAP" run --grace 1s --quiet -- sleep 1000 >"$S/out" 2>"$S/run.err" &
gp=$!
LAUNCHED="$LAUNCHED $gp"
i=0
until leaf=$(ls -d "$dir"/gpureap-run-"$gp"-* 2>/dev/null) && grep -q . "$leaf/cgroup.procs"; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "the run never made its leaf"; sleep 0.01
done
echo "$stranger" >"$leaf/cgroup.procs"
ok "a stranger with a child moved into the run's leaf"
kill -TERM "$gp"
set +e
wait "$gp"
RC=$?
set -e
[ "$RC" = 143 ] || fail "exit $RC, want 143: $(cat "$S/run.err")"
[ ! -e "$S/s1.sig" ] || fail "the stranger's child was signalled: $(tr '\n' ' ' <"$S/s1.sig")"
[ -e "/proc/$s1" ] && [ "$(awk '{print $3}' "/proc/$s1/stat")" != Z ] || fail "the stranger's child is gone"
ok "the stranger's child had no signal and lives"
echo "1..$CHECKS"
