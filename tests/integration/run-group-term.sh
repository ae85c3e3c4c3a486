#!/bin/bash
# The end's SIGTERM goes to the command's process group at once (one signal, as 'tini -g'
# sends it), then the ladder over the rest of the tree: each process still gets SIGTERM exactly
# once, whether it had the group's (children in the group, a member whose own child is
# born after the group's TERM) or not (a process group of its own, a session of its own), and
# nothing is left; after gpureap gets TERM and after the command exits leaving them.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
SIGTREE=$(cd "$(dirname "$0")/../helper" && pwd)/sigtree.py
export GPUREAP_SYSLOG_SOCKET=$T/nolog

# tree NAME ACTION KIND...: 'gpureap run -v' over sigtree.py in the background (PID in $GP),
# every signal at its default action; returns once every process is set up
tree() {
        local name=$1 action=$2
        shift 2
        D=$T/$name
        mkdir -p "$D"
        : >"$D/pids"
        python3 -c '
import os, signal, sys
for s in signal.Signals:
    if s not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(s, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execvp(sys.argv[1], sys.argv[1:])' "$GPUREAP" run -v --grace 2s --quiet --json "$D/result.json" -- \
                python3 "$SIGTREE" "$D" "$D/pids" "$action" "$@" >"$D/out" 2>"$D/err" &
        launched "$D/ready" "$name"
}

# launched READY NAME: gpureap run just started in the background: its PID in $GP, and once
# READY exists (bounded: 20 s) the tree's "ROLE PID" lines recorded for the cleanup
launched() {
        GP=$!
        LAUNCHED="$LAUNCHED $GP"
        local i=0
        until [ -e "$1" ]; do
                i=$((i + 1))
                [ $i -lt 2000 ] || fail "the tree of $2 never got ready"
                sleep 0.01
        done
        cat "$D/pids" >>"$PIDS"
}

finish() {
        set +e
        wait "$GP"
        RC=$?
        set -e
        cat "$D/pids" >>"$PIDS" # the spawned one too, killed by PID at the end whatever happens
}

count() { grep -cx -- "$2" "$D/$1.sig" 2>/dev/null || true; }

one_term() {
        local role
        for role in "$@"; do
                [ "$(count "$role" SIGTERM)" = 1 ] ||
                        fail "$role got SIGTERM $(count "$role" SIGTERM) times
$(cd "$D" && head -50 ./*.sig pids err 2>/dev/null)"
        done
        ok "$*: one SIGTERM each"
}

nothing_left() {
        local role pid
        while read -r role pid; do
                if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q sigtree; then
                        fail "$1: $role ($pid) left behind"
                fi
        done <"$D/pids"
        ok "$1: nothing left"
}

# ---- gpureap gets TERM ----
tree term stay child spawn grp sid
kill -TERM "$GP"
finish
[ "$RC" = 143 ] || fail "gpureap got TERM: exit $RC, want 143"
grep -q "SIGTERM and SIGCONT to its process group" "$D/err" || fail "no group SIGTERM: $(cat "$D/err")"
ok "gpureap got TERM: the command's group had one SIGTERM first"
grep -qx "spawned [0-9]*" "$D/pids" || fail "the spawn's child was never born"
one_term cmd child spawn spawned grp sid
nothing_left "after gpureap got TERM"
python3 - "$D/result.json" <<'PY' || fail "the result's count: $(cat "$D/result.json")"
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["leftovers"]["ended"] >= 6 else 1)
PY
ok "the result counts the group's members among those ended"

# ---- the command exits and leaves them (its pidfd still names the group) ----
tree exit exit:0 child spawn grp sid
finish
[ "$RC" = 0 ] || fail "the command's status: exit $RC, want 0"
if grep -q "SIGTERM and SIGCONT to its process group" "$D/err"; then
        ok "the command exited: its group had one SIGTERM first"
else
        case $(uname -r) in
        [1-5].* | 6.[0-8].*) ok "# SKIP before Linux 6.9 a reaped command's group is not signalled as one" ;;
        *) fail "no group SIGTERM after the command exited: $(cat "$D/err")" ;;
        esac
fi
one_term child spawn spawned grp sid
nothing_left "after the command exited"

# ---- members that change their process group while the tree is left to end by itself: one
# that leaves the group in its SIGTERM handler had the group's TERM (no second one); one that
# joins the group after the group's TERM did not have it (its own TERM, not a SIGKILL alone) ----
tree moved stay child leave join
kill -TERM "$GP"
finish
[ "$RC" = 143 ] || fail "moved: exit $RC, want 143"
one_term cmd child leave join
nothing_left "members that changed their group"

# ---- a tree that the group's SIGTERM ends by itself is not listed or pinned at all (the end's
# settle, GPUREAP_RUN_TRACE=1 shows its steps); one with a member outside the group goes on to
# the listing, and that member still gets its SIGTERM and ends ----
settle_tree() { # NAME SCRIPT: 'gpureap run' over bash -c SCRIPT, which records "ROLE PID" lines in $1
        D=$T/$1
        mkdir -p "$D"
        GPUREAP_RUN_TRACE=1 "$GPUREAP" run --grace 2s --quiet -- bash -c "$2" _ "$D/pids" >"$D/out" 2>"$D/err" &
        launched "$D/pids.ready" "$1"
        kill -TERM "$GP"
        finish
        [ "$RC" = 143 ] || fail "$1: exit $RC, want 143: $(cat "$D/err")"
        grep -q "gpureap: trace: .* the tree is gone" "$D/err" || fail "$1: no trace of the end: $(cat "$D/err")"
        local role pid
        while read -r role pid; do
                [ ! -e "/proc/$pid" ] || [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] ||
                        fail "$1: $role ($pid) left behind"
        done <"$D/pids"
}
settle_tree settle 'echo "cmd $$" >>"$1"; touch "$1.ready"; exec sleep 1000'
! grep -q "the tree listed, pinned" "$D/err" || fail "a tree the group's SIGTERM ended was listed and pinned: $(cat "$D/err")"
ok "a tree that the group's SIGTERM ended alone: nothing listed or pinned, nothing left"
# (ready once the member is in a session of its own: a SIGTERM before its setsid() ended it
# with the group on a loaded machine)
settle_tree settle-sid 'setsid sleep 1000 & s=$!; echo "sid $s" >>"$1"; echo "cmd $$" >>"$1"
        until [ "$(cut -d " " -f 6 /proc/$s/stat)" = "$s" ]; do sleep 0.01; done; touch "$1.ready"; exec sleep 1000'
grep -q "the tree listed, pinned" "$D/err" || fail "a member outside the group was never listed: $(cat "$D/err")"
ok "a member in a session of its own: the tree listed after the wait, that member ended too"
echo "1..$CHECKS"
