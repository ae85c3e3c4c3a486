#!/bin/bash
# serve's Unix socket (issue 26, item 11): a socket path whose directory does not exist is an
# error (exit 2, one line) that creates nothing, only the default directory is ever made; the
# socket has its mode from its creation (0600; 0660 with --group) and gets its group without
# any path being followed after the bind (strace, when installed: no chown or chmod by name).
. "$TESTLIB"
scenario "gpu 0 minor=0"
export GPUREAP_SYSLOG_SOCKET=$T/nolog

# in the background, so that a serve that starts all the same is seen and ended
"$GPUREAP" serve --socket "$T/missing/serve.sock" --listen none >"$T/out" 2>"$T/err" &
bad=$!
LAUNCHED="$LAUNCHED $bad"
i=0
while kill -0 "$bad" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 250 ] || { kill -KILL "$bad"; wait "$bad" 2>/dev/null || true; fail "serve runs on '$T/missing/serve.sock' (it made '$T/missing': $(ls -ld "$T/missing" 2>&1))"; }
        sleep 0.02
done
set +e
wait "$bad"
RC=$?
set -e
expect_rc 2 "a socket in a directory that does not exist"
[ "$(wc -l <"$T/err")" = 1 ] || fail "not one line: $(cat "$T/err")"
has err "^gpureap: no directory '$T/missing' for the socket '$T/missing/serve.sock'" "it says which directory is missing"
[ ! -e "$T/missing" ] || fail "serve made '$T/missing'"
ok "and made no directory"

start_serve() { # ARGS...: serve on $T/s/serve.sock, until it answers
        "$GPUREAP" serve --socket "$T/s/serve.sock" --listen none --interval 100ms "$@" >"$T/serve.out" 2>&1 &
        SERVE=$!
        LAUNCHED="$LAUNCHED $SERVE"
        local i=0
        until GPUREAP_SERVE_SOCKET=$T/s/serve.sock "$GPUREAP" status --json 2>/dev/null | jq -e ".history.served_by == $SERVE" >/dev/null; do
                i=$((i + 1)); [ $i -lt 300 ] || fail "serve did not answer: $(cat "$T/serve.out")"; sleep 0.02
        done
}
stop_serve() {
        kill -TERM "$SERVE"
        wait "$SERVE" 2>/dev/null || true
}
mkdir -m 0755 "$T/s"
start_serve
[ "$(stat -c '%F %a %U' "$T/s/serve.sock")" = "socket 600 $(id -un)" ] || fail "the socket: $(stat -c '%F %a %U' "$T/s/serve.sock")"
ok "the socket is 0600, serve's own"
[ "$(find "$T/s" -mindepth 1 -name '.*' | wc -l)" = 0 ] || fail "left in its directory: $(ls -la "$T/s")"
ok "nothing else is left in its directory"
stop_serve
[ ! -e "$T/s/serve.sock" ] || fail "the socket is left after SIGTERM"
ok "SIGTERM removes it"

group=$(id -gn)
gid=$(id -g)
if [ "$(id -u)" = 0 ]; then # another group than root's own, where root can give one
        group=$(getent group daemon | cut -d: -f1)
        gid=$(getent group daemon | cut -d: -f3)
        [ -n "$group" ] || { group=root; gid=0; }
fi
start_serve --group "$group"
[ "$(stat -c '%F %a %g' "$T/s/serve.sock")" = "socket 660 $gid" ] || fail "--group: $(stat -c '%F %a %g' "$T/s/serve.sock")"
ok "--group $group: the socket is 0660, of group $gid"
stop_serve

if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
        # (LeakSanitizer cannot work under ptrace: off for this run of an ASan build)
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=chown,lchown,fchownat,chmod,fchmodat -o "$T/strace" \
                "$GPUREAP" serve --socket "$T/s/serve.sock" --listen none --interval 100ms --group "$group" >"$T/serve.out" 2>&1 &
        SERVE=$!
        LAUNCHED="$LAUNCHED $SERVE"
        i=0
        until [ -S "$T/s/serve.sock" ] && GPUREAP_SERVE_SOCKET=$T/s/serve.sock "$GPUREAP" status --json >/dev/null 2>&1; do
                i=$((i + 1)); [ $i -lt 500 ] || fail "serve under strace did not answer: $(cat "$T/serve.out")"; sleep 0.02
        done
        # serve itself is strace's child: SIGTERM to it, and strace ends with it
        traced=$(cat /proc/"$SERVE"/task/*/children | tr ' ' '\n' | grep -m1 .)
        LAUNCHED="$LAUNCHED $traced"
        kill -TERM "$traced"
        wait "$SERVE" 2>/dev/null || true
        cp "$T/strace" "$T/out"
        hasnt out "(chown|chmod|fchmodat)\\(\"[^\"]*serve.sock\"|fchownat\\(AT_FDCWD" "no chown or chmod follows the socket's path after the bind"
        has out "fchownat\\([0-9]+, \"s\", -1, $gid, AT_SYMLINK_NOFOLLOW\\) = 0" "the group is given inside serve's private directory, without following links"
else
        echo "# strace cannot trace here: the checks of the system calls are skipped"
fi
done_testing
