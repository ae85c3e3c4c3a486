# Shared by the run-tty-* tests: 'gpureap run' in a real pseudo-terminal, started as a job by a
# shell with job control (tests/helper/ptyjob.py), driven by keys and fg/bg as a user would.
# Sourced after $TESTLIB. Every process is recorded by PID in $PIDS and killed by PID at exit.
PTYJOB=$(dirname "${BASH_SOURCE[0]}")/../helper/ptyjob.py
export GPUREAP_SYSLOG_SOCKET=$T/nolog
export PIDS

# The scripts below run under bash, never sh: dash vforks its external commands (the loops'
# sleep), and a Ctrl-Z that lands between the vfork and the exec stops the child while its parent
# waits for that exec in the kernel, where no stop reaches it: the job never stops. That is
# dash's, with or without gpureap (seen 1 in 60 with a job-control shell running 'sh SCRIPT'
# directly, 2 in 40 under 'gpureap run'); bash forks, and its parent stops with the child.
#
# the commands run under gpureap: $J is the terminal's directory, $J/go lets them finish; the
# PIDs they record go to $PIDS (killed at the end) and $J/pids (this terminal's)
cat >"$T/report.sh" <<'SH'
rec() { echo "$1 $2" >>"$PIDS"; echo "$1 $2" >>"$J/pids"; }
rec cmd $$
if [ -t 0 ]; then echo "stdin is a terminal"; else echo "stdin is not a terminal"; fi
if [ -t 1 ]; then echo "stdout is a terminal"; else echo "stdout is not a terminal"; fi
echo "size $(stty size 2>/dev/null)"
SH
cat >"$T/waitgo.sh" <<'SH'
. "$(dirname "$0")/report.sh"
sleep 1000 &
rec member $!
trap 'stty size >"$J/winch.tmp" && mv "$J/winch.tmp" "$J/winch"' WINCH
[ -z "${NOECHO:-}" ] || stty -echo # a mode of its own, never put back by itself
echo "listening on 8000"
while [ ! -e "$J/go" ]; do sleep 0.02; done
exit 7
SH
# reads a line from the terminal (from the background: stopped by SIGTTIN until fg)
cat >"$T/readline.sh" <<'SH'
echo "cmd $$" >>"$PIDS"; echo "cmd $$" >>"$J/pids"
echo "listening on 8000"
while [ ! -e "$J/go" ]; do sleep 0.02; done
read -r line
echo "read '$line'"
exit 5
SH
# ends on Ctrl-C (the sleep dies of SIGINT); its background member ignores SIGINT, as an async
# command of a shell without job control does: a leftover for gpureap to end
cat >"$T/interrupt.sh" <<'SH'
sleep 1000 &
echo "member $!" >>"$PIDS"; echo "member $!" >>"$J/pids"
echo "cmd $$" >>"$PIDS"; echo "cmd $$" >>"$J/pids"
echo "listening on 8000"
exec sleep 1000
SH

# term NAME [ptyjob options] -- COMMAND...: a terminal ($J) with COMMAND as its job ($G)
term() {
        local name=$1 i=0
        shift
        J=$T/$name
        export J
        python3 "$PTYJOB" "$J" "$@" &
        HELPER=$!
        LAUNCHED="$LAUNCHED $HELPER"
        until [ -s "$J/events" ]; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "$name: the terminal never started its job"
                sleep 0.01
        done
        G=$(awk '$1 == "job" { print $2 }' "$J/events")
        echo "gpureap $G" >>"$PIDS"
}

ctl() { echo "$*" >"$J/ctl"; }

# jpid ROLE: the PID the command of this terminal recorded (waits for it: bounded, 10 s)
jpid() {
        local i=0
        until grep -q "^$1 " "$J/pids" 2>/dev/null; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "the command never recorded '$1'"
                sleep 0.01
        done
        awk -v r="$1" '$1 == r { print $2 }' "$J/pids" | tail -n 1
}

# wait_event REGEX: until the shell has told it (bounded: 10 s)
wait_event() {
        local i=0
        until grep -Eq -- "$1" "$J/events"; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "no event /$1/: $(tr '\n' ' ' <"$J/events")"
                sleep 0.01
        done
}

# wait_stops N: until the shell has seen the job stop N times
wait_stops() {
        local i=0
        until [ "$(grep -c '^stopped' "$J/events")" -ge "$1" ]; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "the job did not stop (${1}x): $(tr '\n' ' ' <"$J/events")"
                sleep 0.01
        done
}

wait_screen() {
        local i=0
        until grep -aEq -- "$1" "$J/screen" 2>/dev/null; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "/$1/ never on the terminal: $(cat -v "$J/screen" 2>/dev/null)"
                sleep 0.01
        done
}

# the helper is done (it has its own 60 s deadline): exit status of the job in $JOB_RC
term_done() {
        local rc=0
        touch "$J/go"
        wait "$HELPER" || rc=$?
        [ $rc -eq 0 ] || fail "the terminal helper failed ($rc): $(tr '\n' ' ' <"$J/events")"
        JOB_RC=$(awk '$1 == "exit" { print $2 } $1 == "signal" { print 128 + $2 }' "$J/events")
}

# modes NAME: the terminal's modes now, as its shell sees them, in $J/NAME
modes() {
        local i=0
        rm -f "$J/$1"
        ctl modes "$1"
        until [ -s "$J/$1" ]; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "the shell never wrote the terminal's modes"
                sleep 0.01
        done
}

# wait_raw: until gpureap has put the terminal in raw mode (its relay runs)
wait_raw() {
        local i=0
        while modes now && cmp -s "$J/modes.before" "$J/now"; do
                i=$((i + 1))
                [ $i -lt 500 ] || fail "the terminal never went raw"
                sleep 0.01
        done
}

modes_restored() {
        cmp -s "$J/modes.before" "$J/$1" || fail "$2: the terminal's modes were $(cat "$J/$1"), before $(cat "$J/modes.before")"
        ok "$2"
}

# stat_field PID N: field N of /proc/PID/stat after the command name (1 state, 3 pgrp,
# 4 session, 5 tty_nr, 6 tpgid); builtins only: the loops below call it often
stat_field() {
        local line f
        read -r line <"/proc/$1/stat" || return 1
        read -ra f <<<"${line##*) }"
        echo "${f[$2 - 1]}"
}

# wait_foreground PID: until PID's group is its terminal's foreground (bounded: 10 s)
wait_foreground() {
        local i=0
        until [ "$(stat_field "$1" 3)" = "$(stat_field "$1" 6)" ]; do
                i=$((i + 1))
                [ $i -lt 1000 ] || fail "process $1 never got its terminal's foreground"
                sleep 0.01
        done
}

is_stopped() {
        local p
        for p in "$@"; do
                wait_state "$p" T
        done
}

# running PID...: none of them stopped (continued: S or R, bounded)
running() {
        local p
        for p in "$@"; do
                wait_state "$p" "S R D"
        done
}
