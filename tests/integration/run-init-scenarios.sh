#!/bin/bash
# 'gpureap run' held against the scenarios of tini's (0.19.0) and dumb-init's (1.2.5) test suites,
# ported (issue 21): exit statuses passed on (and tini -e), every catchable signal passed on
# (dumb-init's proxies_signals test; -r, tini -g), job control without a terminal, the caller's
# ignored signals kept (tini), zombies reaped, and the escapees both leave (a process group of its
# own, a session of its own, a double fork, a TERM-ignorer) ended after the command exits and after
# gpureap gets TERM, as PID 1 of a private PID namespace and not: each process gets SIGTERM once
# (its handler runs to its end), the ignorer SIGKILL after the grace, and nothing is left.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
SIGTREE=$(cd "$(dirname "$0")/../helper" && pwd)/sigtree.py
export GPUREAP_SYSLOG_SOCKET=$T/nolog

# dfl CMD...: exec CMD with every signal at its default action and none blocked, whatever the
# caller (meson, a shell, nohup) left: what each scenario relies on. It replaces the shell it runs
# in: in the background (its PID is CMD's), in a pipeline, or in ( )
dfl() {
        exec python3 -c '
import os, signal, sys
for s in signal.Signals:
    if s not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(s, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# tree NAME ACTION KIND... [-- GPUREAP-RUN-OPTIONS...]: start 'gpureap run' over sigtree.py in the
# background (PID in $GP), its records in $D=$T/NAME; returns once every process is set up
tree() {
        local name=$1 action=$2 kinds=() opts=()
        shift 2
        while [ $# -gt 0 ] && [ "$1" != -- ]; do kinds+=("$1"); shift; done
        [ $# -eq 0 ] || { shift; opts=("$@"); }
        D=$T/$name
        mkdir -p "$D"
        : >"$D/pids"
        dfl "$GPUREAP" run --grace 1s --quiet --json "$D/result.json" "${opts[@]}" -- \
                python3 "$SIGTREE" "$D" "$D/pids" "$action" "${kinds[@]}" >"$D/out" 2>"$D/err" &
        GP=$!
        LAUNCHED="$LAUNCHED $GP"
        wait_file "$D/ready"
        cat "$D/pids" >>"$PIDS" # killed by PID at the end, whatever happens
}

wait_file() {
        local i=0
        until [ -e "$1" ]; do
                i=$((i + 1))
                [ $i -lt 2000 ] || fail "'$1' never appeared"
                sleep 0.01
        done
}

# wait_line FILE LINE: until FILE has LINE
wait_line() {
        local i=0
        until grep -qx -- "$2" "$1" 2>/dev/null; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "no '$2' in $1 ($(tr '\n' ' ' <"$1" 2>/dev/null))"
                sleep 0.01
        done
}

finish() { # the run's exit status in RC
        set +e
        wait "$GP"
        RC=$?
        set -e
}

count() { grep -cx -- "$2" "$D/$1.sig" 2>/dev/null || true; }

# one_term ROLE...: each got SIGTERM exactly once
one_term() {
        local role
        for role in "$@"; do
                [ "$(count "$role" SIGTERM)" = 1 ] ||
                        fail "$role got SIGTERM $(count "$role" SIGTERM) times: $(tr '\n' ' ' <"$D/$role.sig" 2>/dev/null)
$(cd "$D" && head -50 ./*.sig pids err result.json 2>/dev/null)"
        done
        ok "$*: one SIGTERM each"
}

# ran_handler ROLE...: its TERM handler ran to its end (it exited by itself)
ran_handler() {
        local role
        for role in "$@"; do
                grep -qx exit "$D/$role.sig" || fail "$role did not finish its TERM handler: $(tr '\n' ' ' <"$D/$role.sig")"
        done
        ok "$*: the TERM handler ran to its end"
}

# nothing_left: no process of the scenario is alive once gpureap has exited (checked at once: the
# run returns only when its tree is gone)
nothing_left() {
        local role pid
        while read -r role pid; do
                if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q sigtree; then
                        fail "$1: $role ($pid) left behind"
                fi
        done <"$D/pids"
        ok "$1: nothing left"
}

# ---- the escapees, after the command exits and after gpureap gets TERM ----
KINDS="grp sid dbl ign"
tree exit-escapees exit:3 $KINDS
finish
expect_rc 3 "the command's exit status, with four kinds of escapees behind it"
one_term grp sid dbl ign
ran_handler grp sid dbl
[ "$(jq .leftovers.needed_sigkill "$D/result.json")" = 1 ] || fail "needed_sigkill: $(jq -c .leftovers "$D/result.json")"
ok "only the TERM-ignorer needed SIGKILL"
nothing_left "after the command exited"

tree term-escapees stay $KINDS
kill -TERM "$GP"
finish
expect_rc 143 "gpureap got TERM"
one_term cmd grp sid dbl ign
ran_handler cmd grp sid dbl
nothing_left "after gpureap got TERM"

# the same in a private PID namespace: gpureap as its PID 1, and as PID 2 below a shell
if unshare --pid --fork --mount-proc true 2>/dev/null; then
        for as in pid1 pid2; do
                D=$T/ns-$as
                mkdir -p "$D"
                : >"$D/pids"
                if [ $as = pid1 ]; then
                        pre=(unshare --pid --fork --mount-proc)
                else
                        pre=(unshare --pid --fork --mount-proc sh -c '"$@"; exit $?' sh)
                fi
                dfl "${pre[@]}" "$GPUREAP" run --grace 1s --quiet --json "$D/result.json" -- \
                        python3 "$SIGTREE" "$D" "$D/pids" stay $KINDS >"$D/out" 2>"$D/err" &
                GP=$!
                LAUNCHED="$LAUNCHED $GP"
                wait_file "$D/ready"
                # gpureap's PID here: unshare's child (pid1), or that child's child (pid2)
                g=$(cat "/proc/$GP/task/$GP/children")
                g=${g% }
                LAUNCHED="$LAUNCHED $g" # the namespace's init: its end ends the namespace
                [ $as = pid1 ] || { g=$(cat "/proc/$g/task/$g/children"); g=${g% }; }
                [ "$(awk '/^NSpid:/ { print $NF }' "/proc/$g/status")" = "${as#pid}" ] || fail "gpureap is not ${as#pid} there"
                grep -q "^Name:.*gpureap" "/proc/$g/status" || fail "not gpureap: $(head -1 "/proc/$g/status")"
                kill -TERM "$g"
                finish
                expect_rc 143 "gpureap as $as of a PID namespace got TERM"
                one_term cmd grp sid dbl ign
                ran_handler cmd grp sid dbl
                jq -e '.cgroup == null or (.cgroup | test("/gpureap-run-'"${as#pid}"'-[0-9a-f]{16}$"))' "$D/result.json" >/dev/null ||
                        fail "cgroup $(jq .cgroup "$D/result.json")"
                ok "$as: its cgroup's name is its number and 64 random bits"
        done
else
        echo "# no private PID namespace here: the namespace scenarios are left out"
fi

# ---- exit statuses (tini's test_exit_codes; tini -e) ----
for n in 0 1 42; do
        tree "exit-$n" "exit:$n"
        finish
        expect_rc "$n" "exit $n passed on"
done
tree kill-usr1 kill:USR1
finish
expect_rc 138 "killed by SIGUSR1: 128+10"
set +e
(dfl "$GPUREAP" run --quiet -- "$T/no-such-command" 2>/dev/null); RC=$?
set -e
expect_rc 127 "not found"
: >"$T/not-executable"
set +e
(dfl "$GPUREAP" run --quiet -- "$T/not-executable" 2>/dev/null); RC=$?
set -e
expect_rc 126 "not executable"
tree remap-42 exit:42 -- --remap-exit 42 --remap-exit 7
finish
expect_rc 0 "--remap-exit 42 (tini -e 42): exit 42 is 0"
tree remap-43 exit:43 -- --remap-exit 42
finish
expect_rc 43 "--remap-exit 42: exit 43 stays"
tree remap-143 stay -- --remap-exit 143
kill -TERM "$GP"
finish
expect_rc 0 "--remap-exit 143 (tini -e 143): a TERM passed on is 0"

# ---- every signal passed on (dumb-init's proxies_signals test); INT, HUP, QUIT end the run
# after reaching the command alone ----
for sig in USR1 USR2 ALRM VTALRM PROF XCPU XFSZ PWR SYS TRAP IO WINCH PIPE URG ABRT SEGV BUS ILL FPE STKFLT RTMIN+3 INT HUP QUIT; do
        tree "pass-$sig" stay
        kill -s "$sig" "$GP"
        wait_line "$D/cmd.sig" "SIG$sig"
        case $sig in
        INT | HUP | QUIT) want=$((128 + $(kill -l "$sig"))) ;;
        *) kill -TERM "$GP"; want=143 ;;
        esac
        finish
        expect_rc "$want" "SIG$sig reached the command"
        one_term cmd
done

# a fatal signal sent to gpureap, over a command that dies of it (dumb-init: passed on)
D=$T/abrt
mkdir -p "$D"
dfl "$GPUREAP" run --quiet -- sleep 100 &
GP=$!
LAUNCHED="$LAUNCHED $GP"
wait_state "$GP" S
i=0; until c=$(cat "/proc/$GP/task/$GP/children" 2>/dev/null) && c=${c% } && [ -n "$c" ] && grep -q '^Name:.*sleep' "/proc/$c/status" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "no sleep under gpureap"; sleep 0.01
done
c=${c% }
LAUNCHED="$LAUNCHED $c"
kill -ABRT "$GP"
finish
expect_rc 134 "SIGABRT to gpureap reached sleep, which died of it"
! kill -0 "$c" 2>/dev/null || { kill -KILL "$c"; fail "sleep ($c) left running"; }
ok "and nothing is left"

# a real fault in gpureap itself (the test build's seam: SIGUSR2 makes it write to address 8):
# the tree is ended before gpureap dies (cgroup.kill of its leaf), nothing is left
: "${GPUREAP_TEST_HOOKS:?the test build of gpureap (src/gpureap-test-hooks)}"
cgmnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
cgown=$(sed -n 's/^0:://p' /proc/self/cgroup)
if [ -n "$cgmnt" ] && [ -w "$cgmnt${cgown%/}" ]; then
        D=$T/fault
        mkdir -p "$D"
        : >"$D/pids"
        GPUREAP_TEST_FAULT_ADDR=8 dfl "$GPUREAP_TEST_HOOKS" run --quiet -- python3 "$SIGTREE" "$D" "$D/pids" stay $KINDS \
                >"$D/out" 2>"$D/err" &
        GP=$!
        LAUNCHED="$LAUNCHED $GP"
        wait_file "$D/ready"
        cat "$D/pids" >>"$PIDS"
        # every process in the run's leaf (moved at the first sample, 50 ms after the start)
        while read -r role pid; do
                i=0
                until grep -q "/gpureap-run-$GP-" "/proc/$pid/cgroup"; do
                        i=$((i + 1)); [ $i -lt 1000 ] || fail "$role never in the run's cgroup"; sleep 0.01
                done
        done <"$D/pids"
        kill -USR2 "$GP"
        finish
        expect_rc 139 "gpureap died of a SIGSEGV of its own"
        nothing_left "after gpureap crashed"
        for d in "$cgmnt${cgown%/}"/gpureap-run-"$GP"-*; do rmdir "$d" 2>/dev/null || true; done
else
        echo "# no writable cgroup v2: the crash scenario is left out"
fi

# ---- dumb-init -r and tini -g ----
tree rewrite-term stay -- --rewrite-signal TERM:INT
kill -TERM "$GP"
finish
expect_rc 130 "--rewrite-signal TERM:INT (dumb-init -r 15:2): a TERM is taken for INT"
[ "$(head -1 "$D/cmd.sig")" = SIGINT ] || fail "the command got first: $(head -1 "$D/cmd.sig")"
ok "the command got SIGINT first"
tree rewrite-drop stay -- --rewrite-signal USR1:0
kill -USR1 "$GP"
kill -USR2 "$GP"
wait_line "$D/cmd.sig" SIGUSR2
kill -TERM "$GP"
finish
[ "$(count cmd SIGUSR1)" = 0 ] || fail "USR1 was passed on"
ok "--rewrite-signal USR1:0 (dumb-init -r 10:0): USR1 dropped"
for g in no yes; do
        if [ $g = yes ]; then tree group-$g stay child -- --signal-group; else tree group-$g stay child; fi
        kill -USR1 "$GP"
        wait_line "$D/cmd.sig" SIGUSR1
        kill -USR2 "$GP" # USR2 after USR1: by then the child has had its USR1 if it gets one
        wait_line "$D/cmd.sig" SIGUSR2
        [ $g = no ] || wait_line "$D/child.sig" SIGUSR2
        kill -TERM "$GP"
        finish
        if [ $g = yes ]; then
                [ "$(count child SIGUSR1)" = 1 ] || fail "--signal-group: the child got USR1 $(count child SIGUSR1) times"
                ok "--signal-group (tini -g): the command's group gets what is passed on"
        else
                [ "$(count child SIGUSR1)" = 0 ] || fail "without --signal-group the child got USR1"
                ok "without --signal-group: the command alone"
        fi
        one_term cmd child
done

# ---- job control without a terminal (dumb-init: TSTP, TTIN, TTOU passed on, CONT too) ----
for sig in TSTP TTIN TTOU; do
        dfl "$GPUREAP" run --quiet --tty never -- sleep 100 </dev/null &
        GP=$!
        LAUNCHED="$LAUNCHED $GP"
        i=0; until c=$(cat "/proc/$GP/task/$GP/children" 2>/dev/null) && c=${c% } && [ -n "$c" ] && grep -q '^Name:.*sleep' "/proc/$c/status" 2>/dev/null; do
                i=$((i + 1)); [ $i -lt 1000 ] || fail "no sleep under gpureap"; sleep 0.01
        done
        c=${c% }
        LAUNCHED="$LAUNCHED $c"
        kill -s "$sig" "$GP"
        wait_state "$c" T
        wait_state "$GP" S R
        kill -CONT "$GP"
        wait_state "$c" S R
        ok "SIG$sig without a terminal stopped the command, not gpureap; SIGCONT continued it"
        kill -TERM "$GP"
        finish
        expect_rc 143 "then TERM"
done

# ---- the caller's ignored signals stay ignored (tini), for gpureap and for the command ----
out=$(sh -c "trap '' INT; exec \"$GPUREAP\" run --quiet -- grep SigIgn /proc/self/status")
mask=$(echo "$out" | awk '{ print $2 }')
(( (16#$mask >> 1) & 1 )) || fail "trap '' INT: the command's SigIgn is $mask"
ok "an INT ignored by the caller is ignored by the command"
out=$(sh -c "trap '' PIPE; exec \"$GPUREAP\" run --quiet -- grep SigIgn /proc/self/status")
mask=$(echo "$out" | awk '{ print $2 }')
(( (16#$mask >> 12) & 1 )) || fail "trap '' PIPE: the command's SigIgn is $mask"
out=$("$GPUREAP" run --quiet -- grep -E 'SigIgn|SigCgt' /proc/self/status)
(( ! ((16#$(awk '$1 == "SigIgn:" { print $2 }' <<<"$out") >> 12) & 1) )) || fail "PIPE ignored without the caller's asking: $out"
ok "a PIPE ignored by the caller is ignored by the command (gpureap's own handler is not what it sees); one not ignored is not"
D=$T/nohup
mkdir -p "$D"
: >"$D/pids"
python3 -c '
import os, signal, sys
for s in signal.Signals:
    if s not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(s, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup does
os.execvp(sys.argv[1], sys.argv[1:])' "$GPUREAP" run --quiet -- python3 "$SIGTREE" "$D" "$D/pids" stay >"$D/out" 2>&1 &
GP=$!
LAUNCHED="$LAUNCHED $GP"
wait_file "$D/ready"
cat "$D/pids" >>"$PIDS"
kill -HUP "$GP"
wait_line "$D/cmd.sig" SIGHUP # passed on, as tini does (the command set a handler of its own)
kill -USR1 "$GP" # after the HUP: gpureap still supervises
wait_line "$D/cmd.sig" SIGUSR1
kill -TERM "$GP"
finish
expect_rc 143 "under nohup a SIGHUP does not end the run: it is passed on"
out=$(python3 -c '
import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])' "$GPUREAP" run --quiet -- grep SigIgn /proc/self/status)
mask=$(echo "$out" | awk '{ print $2 }')
(( 16#$mask & 1 )) || fail "nohup: the command's SigIgn is $mask"
ok "and the command inherits the ignored HUP"

# an ignored SIGCHLD (the kernel would reap gpureap's children for it): the command's status all
# the same, and the command gets the caller's ignored CHLD (timeout: the old build never returned)
set +e
timeout 60 python3 -c '
import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])' "$GPUREAP" run --quiet -- python3 -c '
import signal, sys
sys.exit(7 if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN else 8)'
RC=$?
set -e
expect_rc 7 "with SIGCHLD ignored by the caller: the command's status, and its CHLD still ignored"

# ---- INT, HUP, QUIT: the command has the grace for itself, the rest of the tree a grace of its
# own after its SIGTERM (its handlers run) ----
tree int-grace stay grp
kill -INT "$GP" # the command records it and goes on: the whole grace is its
finish
expect_rc 130 "gpureap got INT"
one_term cmd grp
ran_handler grp cmd
nothing_left "after INT"

# ---- gpureap leaves the caller's directory; the command keeps it ----
mkdir -p "$T/wd"
D=$T/cwd
mkdir -p "$D"
: >"$D/pids"
(cd "$T/wd" && dfl "$GPUREAP" run --quiet -- python3 "$SIGTREE" "$D" "$D/pids" stay >"$D/out" 2>&1) &
GP=$!
LAUNCHED="$LAUNCHED $GP"
wait_file "$D/ready"
cat "$D/pids" >>"$PIDS"
g=$GP
[ "$(readlink "/proc/$g/cwd")" = / ] || fail "gpureap's directory: $(readlink "/proc/$g/cwd")"
ok "gpureap's working directory is /"
c=$(awk '$1 == "cmd" { print $2 }' "$D/pids")
[ "$(readlink "/proc/$c/cwd")" = "$T/wd" ] || fail "the command's directory: $(readlink "/proc/$c/cwd")"
ok "the command's is the caller's"
kill -TERM "$GP"
finish

# ---- a reader that went away is the command's to see (yes | head), also with a watchdog ----
# (timeout: the old build never returned; 60 s is a bound, not a measure)
set +e
out=$(dfl timeout 60 "$GPUREAP" run --quiet --stall-timeout 1m -- yes | head -1; echo "rc ${PIPESTATUS[0]}")
set -e
[ "$out" = "y
rc 141" ] || fail "yes | head: '$out'"
ok "yes | head -1 returns with --stall-timeout: the command got its SIGPIPE (exit 141)"
done_testing
