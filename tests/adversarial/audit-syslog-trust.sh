#!/bin/bash
# Issue 26, item 10: $GPUREAP_SYSLOG_SOCKET is trusted only as a path that root (or the caller)
# controls all the way: root's audit lines carry other users' command lines, and they went to a
# socket in a directory of uid 4242's, none to syslog. Such a socket now receives nothing and
# gpureap says once why it ignored the variable; a socket in a root-owned 0700 directory gets
# the audit line of a reap (the control).
. "$TESTLIB"
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (another user's directory)"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3 for the log listener"; exit 77; }

ghost() { # ROLE: a ghost on GPU 0 whose hidden holder (ROLE-c) a reap ends
        launch pidfile "$PIDS" "$1-o" cuda 0 0 256 spawn-holder "$PIDS" "$1-c" exit
        wait_role "$1-o" "$1-c"
        wait "$LAST" || true
}

# another user's directory: its socket must not get root's trail
mkdir -m 0755 "$T/u4242"
dgram_listener "$T/u4242/log" "$T/u4242.log"
chown 4242:4242 "$T/u4242" "$T/u4242/log"
ghost a
GPUREAP_SYSLOG_SOCKET=$T/u4242/log gr reap --yes
expect_rc 0 "reaped, with the log socket in uid 4242's directory"
sleep 0.2 # give a stray datagram the time to arrive before looking for its absence
[ ! -s "$T/u4242.log" ] || fail "uid 4242's socket got root's audit trail: $(cat "$T/u4242.log")"
ok "uid 4242's socket received nothing"
has err "^gpureap: ignoring GPUREAP_SYSLOG_SOCKET '$T/u4242/log': the directory '$T/u4242' belongs to user 4242; the audit trail goes to /dev/log$" "gpureap says why it ignored the variable"
[ "$(grep -c GPUREAP_SYSLOG_SOCKET "$T/err")" = 1 ] || fail "said more than once: $(cat "$T/err")"
ok "once"

# a link in root's own directory to that socket: refused the same way
ln -s "$T/u4242/log" "$T/link"
ghost b
GPUREAP_SYSLOG_SOCKET=$T/link gr reap --yes
expect_rc 0 "reaped, with the log socket a link into uid 4242's directory"
sleep 0.2
[ ! -s "$T/u4242.log" ] || fail "uid 4242's socket got root's audit trail through a link: $(cat "$T/u4242.log")"
ok "through a link: uid 4242's socket received nothing"

# the control: root's own 0700 directory
mkdir -m 0700 "$T/root"
dgram_listener "$T/root/log" "$T/root.log"
ghost c
child=$(pid_of c-c)
GPUREAP_SYSLOG_SOCKET=$T/root/log gr reap --yes
expect_rc 0 "reaped, with the log socket in root's 0700 directory"
i=0; until grep -q "pid $child .*: ended" "$T/root.log" 2>/dev/null; do i=$((i + 1)); [ $i -lt 500 ] || fail "no audit line in root's socket: $(cat "$T/root.log" 2>&1)"; sleep 0.01; done
ok "root's own socket got the audit line of the reap"
hasnt err "GPUREAP_SYSLOG_SOCKET" "and nothing was said of the variable"
done_testing
