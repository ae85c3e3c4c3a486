#!/bin/bash
# serve's memory survives serve (docs/serve.md, "Its memory on disk"): a worker whose launcher
# serve saw killed is a sure leftover; serve SIGKILLed and started again says it recovered its
# history, and the verdict is still sure. SIGHUP leaves serve running and answering. A corrupt,
# cut-short or foreign history file is ignored with a message, never a crash.
. "$TESTLIB"
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
HIST=$T/serve.history

start_serve() { serve_start --interval 100ms --listen none; } # (lib.sh)
verdict() { # PID -> "judgement confidence", through serve
        "$GPUREAP" status --json | jq -r ".processes[] | select(.pid == $1) | .verdict | \"\(.judgement) \(.confidence)\""
}

start_serve
"$GPUHOLD" pidfile "$PIDS" k-l child setsid pidfile "$PIDS" k-w cuda 1 1 512 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role k-l k-w
l=$(pid_of k-l) w=$(pid_of k-w)
until_served ".processes[] | select(.pid == $w) | .seen.launcher.pid == $l"
kill -KILL "$l"
until_served ".processes[] | select(.pid == $w) | .seen.launcher.end == \"signal\""
[ "$(verdict "$w")" = "leftover sure" ] || fail "before the restart: $(verdict "$w")"
ok "serve saw launcher $l killed: its worker $w is a sure leftover"
# until the history on disk has the worker with its launcher killed by a signal: serve answers
# first and writes after, so a served answer can be ahead of the file (bounded; what is there
# is checked below). The fields: holder PID START SINCE STATE STATE_SINCE LAUNCHER
# LAUNCHER_START SAME_EXE END (1 = a signal) ...
i=0
until [ -f "$HIST" ] && awk -v w="$w" -v l="$l" '$1 == "holder" && $2 == w && $7 == l && $10 == 1 { f = 1 } END { exit !f }' "$HIST"; do
        i=$((i + 1)); [ $i -lt 500 ] || break; sleep 0.02
done

kill -KILL "$SERVE"
wait "$SERVE" 2>/dev/null || true
start_serve
gr status --json
[ "$(verdict "$w")" = "leftover sure" ] || fail "after the restart: $(verdict "$w"), seen $(jq -c ".processes[] | select(.pid == $w) | .seen" "$T/out")"
ok "SIGKILLed and started again: the verdict is the same, sure"
grep -Eq "^gpureap: history of 1 launcher \\(1 holder\\) recovered from '$HIST', written [0-9.]+ s ago$" "$T/serve.out" ||
        fail "no recovery message: $(cat "$T/serve.out")"
ok "and serve said it recovered its history"
[ "$(stat -c '%a %u' "$HIST")" = "600 $(id -u)" ] || fail "the history file is $(stat -c '%a %u' "$HIST")"
ok "the history is on disk beside the socket, mode 0600"

kill -HUP "$SERVE"
sleep 0.3 # a signal that would stop serve has stopped it by now
kill -0 "$SERVE" 2>/dev/null || fail "SIGHUP stopped serve: $(cat "$T/serve.out")"
gr status --json
jq -e ".history.served_by == $SERVE" "$T/out" >/dev/null || fail "serve does not answer after SIGHUP"
ok "SIGHUP: serve runs on and answers"

# a launcher alive when serve dies and gone when it is back ended while nobody watched: the
# memory says so (how not seen), never 'signal'
"$GPUHOLD" pidfile "$PIDS" a-l child setsid pidfile "$PIDS" a-w cuda 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role a-l a-w
until_served ".processes[] | select(.pid == $(pid_of a-w)) | .seen.launcher.end == \"alive\""
i=0
until awk -v w="$(pid_of a-w)" -v l="$(pid_of a-l)" '$1 == "holder" && $2 == w && $7 == l { f = 1 } END { exit !f }' "$HIST"; do
        i=$((i + 1)); [ $i -lt 500 ] || fail "a-w and its launcher not on disk"; sleep 0.02
done
kill -KILL "$SERVE"
wait "$SERVE" 2>/dev/null || true
kill -KILL "$(pid_of a-l)"
wait_state "$(pid_of a-l)" "Z gone"
start_serve
until_served ".processes[] | select(.pid == $(pid_of a-w)) | .seen.launcher.end == \"unknown\""
[ "$(verdict "$(pid_of a-w)")" = "leftover likely" ] || fail "a launcher that ended unseen: $(verdict "$(pid_of a-w)")"
ok "a launcher that ended while serve was down: 'how not seen', a likely leftover, not sure"
kill -KILL "$(pid_of a-w)"
kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true

# files that are not serve's history: each ignored with a message, serve starts empty
check_ignored() { # DESCRIPTION PATTERN
        start_serve
        grep -Eq "^gpureap: ignoring the history '$HIST': $2" "$T/serve.out" || fail "$1: $(cat "$T/serve.out")"
        gr status --json
        jq -e ".processes[] | select(.pid == $w) | .seen.launcher == null" "$T/out" >/dev/null ||
                fail "$1: a launcher from the ignored file: $(jq -c ".processes[] | select(.pid == $w) | .seen" "$T/out")"
        kill -TERM "$SERVE"
        wait "$SERVE" 2>/dev/null || true
        ok "$1: ignored, said why, serve runs"
}
good=$(cat "$HIST")
printf 'gpureap-serve-history 1\nboot %s\n\001\377 holder x\n' "$(head -c 3000 /dev/urandom | base64 -w0)" >"$HIST"
check_ignored "a corrupt file" "corrupt \\(line 2\\)"
printf '%s\n' "$good" | head -n 3 >"$HIST"
check_ignored "a file cut short" "corrupt \\(cut short"
printf '%s\n' "$good" | sed 's/^boot [^ ]*/boot 00000000-0000-0000-0000-000000000000/' >"$HIST"
check_ignored "a file of another boot" "written before the machine last booted"
printf '%s\n' "$good" >"$HIST"
chmod 0666 "$HIST"
check_ignored "a file others may write" "not serve's own"
printf '%s\n' "$good" >"$HIST"
chmod 0600 "$HIST"
if [ "$(id -u)" = 0 ]; then
        chown 4242 "$HIST"
        check_ignored "a file of another user" "not serve's own"
        printf '%s\n' "$good" >"$HIST"
fi
head -c 100000 /dev/urandom >"$HIST"
check_ignored "random bytes" "not a history of gpureap serve"
rm -f "$HIST"
ln -s "$T/target" "$HIST"
good_sum=$(printf '%s\n' "$good" | tee "$T/target" | md5sum)
check_ignored "a symbolic link" "cannot be read"
[ "$(md5sum <"$T/target")" = "$good_sum" ] || fail "serve wrote through the link"
ok "what the link named is untouched"
done_testing
