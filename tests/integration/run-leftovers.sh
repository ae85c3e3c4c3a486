#!/bin/bash
# Whatever the command leaves, gpureap run ends and reaps: a hundred orphans (negative control:
# the same command without gpureap leaves them all), a double-forked daemon, a setsid escapee,
# a SIGTERM-ignorer, a stopped child, a process that keeps forking during the kill.
. "$TESTLIB"

alive_of() { # FILE: how many of the PIDs listed in FILE are alive (zombies do not count)
        local n=0 p st
        for p in $(cat "$1"); do
                st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
                [ -n "$st" ] && [ "$st" != Z ] && n=$((n + 1))
        done
        echo $n
}

cat >"$T/hundred.sh" <<'SH'
for i in $(seq 100); do (sleep 1000 & echo $! >>"$1") ; done
SH
sh "$T/hundred.sh" "$T/neg"
[ "$(wc -l <"$T/neg")" -eq 100 ] || fail "the negative control did not start 100 orphans"
[ "$(alive_of "$T/neg")" -eq 100 ] || fail "negative control: expected 100 orphans alive"
ok "negative control: without gpureap, 100 orphans are left behind"
for p in $(cat "$T/neg"); do kill -KILL "$p"; done

gr run -- sh "$T/hundred.sh" "$T/pos"
expect_rc 0 "the command's status"
[ "$(wc -l <"$T/pos")" -eq 100 ] || fail "the command did not start 100 orphans"
[ "$(alive_of "$T/pos")" -eq 0 ] || fail "$(alive_of "$T/pos") orphans left"
ok "under gpureap run, none of the 100 is left"
has err "100 leftover processes ended \\(0 needed SIGKILL\\)" "the summary counts them"
# with no grace they get SIGKILL at once after the group's SIGTERM: those that needed SIGKILL
# are counted among those ended (it said "0 ended (3 needed SIGKILL)"), and so are those the
# group's SIGTERM ended before the listing (it said 0 when all were zombies by then)
gr run --grace 0 --json "$T/grace0.json" -- sh "$T/hundred.sh" "$T/grace0"
[ "$(alive_of "$T/grace0")" -eq 0 ] || fail "--grace 0: $(alive_of "$T/grace0") left"
cp "$T/grace0.json" "$T/out"
jqok '.leftovers.ended == 100 and .leftovers.needed_sigkill <= .leftovers.ended' "--grace 0: all 100 ended, those that needed SIGKILL among them"

# a command that takes its time over SIGTERM while its 20 children, which the group's SIGTERM
# ended at once, wait as its zombies (not in the cgroup's list, not the subreaper's to reap yet):
# all 21 counted as ended (it said 1)
"$GPUREAP" run --grace 2s --json "$T/slow.json" -- python3 -c '
import os, signal, subprocess, sys, time
kids = [subprocess.Popen(["sleep", "1000"]) for _ in range(20)]
with open(sys.argv[1], "w") as f:
    f.write("".join("%d\n" % k.pid for k in kids))
signal.signal(signal.SIGTERM, lambda *a: (time.sleep(0.3), os._exit(0)))
open(sys.argv[1] + ".ready", "w").close()
time.sleep(1000)' "$T/slow" >"$T/out" 2>"$T/err" &
g=$!
LAUNCHED="$LAUNCHED $g"
for _ in $(seq 1 1000); do [ -e "$T/slow.ready" ] && break; sleep 0.01; done
[ -e "$T/slow.ready" ] || fail "the slow command never got ready"
awk '{print "slowkid", $1}' "$T/slow" >>"$PIDS"
sleep 0.2
kill -TERM "$g"
set +e
wait "$g"
set -e
[ "$(alive_of "$T/slow")" -eq 0 ] || fail "the slow command's children: $(alive_of "$T/slow") left"
cp "$T/slow.json" "$T/out"
jqok '.leftovers.ended == 21' "a command slow to end on SIGTERM: it and its 20 children counted as ended"

cat >"$T/escape.sh" <<'SH'
# a double-forked daemon, a setsid escapee, a TERM-ignorer, a stopped child (when this script
# ends, its process group is orphaned with a stopped member: the kernel sends it HUP and CONT,
# so the TERM-ignorer ignores HUP too)
(sh -c 'sleep 1000 & echo $! >>"$1"' x "$1" &)
setsid sh -c 'sleep 1000 & echo $! >>"$1"; wait' x "$1" &
sh -c 'trap "" TERM HUP; echo $$ >>"$1"; while :; do sleep 0.05; done' x "$1" &
sleep 1000 & echo $! >>"$1"; kill -STOP $!
sleep 0.3
SH
gr run --grace 500ms -- sh "$T/escape.sh" "$T/esc"
expect_rc 0 "the command's status"
[ "$(wc -l <"$T/esc")" -eq 4 ] || fail "not all four started: $(cat "$T/esc")"
[ "$(alive_of "$T/esc")" -eq 0 ] || fail "left: $(alive_of "$T/esc")"
ok "daemon, setsid escapee, TERM-ignorer and stopped child all gone"
has err "\([1-9][0-9]* needed SIGKILL\)" "the TERM-ignorer needed SIGKILL"

cat >"$T/forker.sh" <<'SH'
echo $$ >>"$1"
trap '' TERM HUP
while :; do sleep 1000 & echo $! >>"$1"; sleep 0.01; done &
sleep 0.3
SH
gr run --grace 200ms -- sh "$T/forker.sh" "$T/fork"
[ "$(alive_of "$T/fork")" -eq 0 ] || fail "$(alive_of "$T/fork") of $(wc -l <"$T/fork") left"
ok "a process that keeps forking during the kill: nothing left"

gr run --no-cgroup -- sh "$T/hundred.sh" "$T/nocg"
[ "$(alive_of "$T/nocg")" -eq 0 ] || fail "without a cgroup: $(alive_of "$T/nocg") left"
ok "without a cgroup, the subreaper alone finds them"
has err "no cgroup \\(subreaper only\\)" "and says so"
done_testing
