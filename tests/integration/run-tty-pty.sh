#!/bin/bash
# 'gpureap run' with a watchdog at a terminal: gpureap reads the command's output, and the command
# still sees a terminal (progress bars, colours, line buffering): a pseudo-terminal of its own,
# relayed both ways while gpureap's terminal is raw. Ctrl-Z and Ctrl-C are bytes that the pty
# turns into the command's signals; the user's terminal is never left raw, whatever the end.
. "$TESTLIB"
. "$(dirname "$0")/tty-lib.sh"

term pty --size 33 101 -- "$GPUREAP" run --ready-log 'listening on [0-9]+' --ready-file "$T/ready" -- bash "$T/waitgo.sh"
c=$(jpid cmd) m=$(jpid member)
wait_screen "listening on 8000"
grep -aq "size 33 101" "$J/screen" && grep -aq "stdout is a terminal" "$J/screen" && grep -aq "stdin is a terminal" "$J/screen" ||
        fail "the command did not see a terminal: $(cat -v "$J/screen")"
ok "with --ready-log the command sees a terminal (stdin, stdout) of the terminal's size"
i=0; until [ -s "$T/ready" ]; do i=$((i + 1)); [ $i -lt 1000 ] || fail "--ready-log never fired"; sleep 0.01; done
[ "$(cut -d' ' -f2 "$T/ready")" = "$c" ] || fail "ready file: $(cat "$T/ready"), the command is $c"
ok "--ready-log fired from a line the command printed on its terminal (--ready-file names the command)"
[ "$(stat_field "$c" 5)" != 0 ] && [ "$(stat_field "$c" 5)" != "$(stat_field "$G" 5)" ] ||
        fail "the command's terminal $(stat_field "$c" 5), gpureap's $(stat_field "$G" 5)"
wait_foreground "$c"
ok "its terminal is a pty of its own, and its group that pty's foreground"
wait_raw
ok "gpureap's terminal is raw while it relays (the control for the checks of its modes below)"

ctl keys 1a
wait_stops 1
is_stopped "$c" "$m" "$G"
ok "Ctrl-Z through the pty stopped the command, its group and gpureap; the shell saw the job stop"
modes stopped
modes_restored stopped "stopped: the terminal is out of raw mode"
ctl fg
running "$c" "$m" "$G"
wait_raw
ok "fg: both continued, the terminal raw again"
ctl size 40 120
i=0; until [ -s "$J/winch" ]; do i=$((i + 1)); [ $i -lt 1000 ] || fail "no SIGWINCH seen"; sleep 0.01; done
[ "$(cat "$J/winch")" = "40 120" ] || fail "the command saw the size '$(cat "$J/winch")'"
ok "a resized terminal: the new size reaches the command's pty (SIGWINCH)"
term_done
[ "$JOB_RC" = 7 ] || fail "the run exited $JOB_RC, the command 7"
ok "after Ctrl-Z and fg the run completes with the command's status (7)"
wait_state "$m" gone
ok "nothing of the tree left"
modes_restored modes.after "the terminal's modes after the run are those before it"
[ ! -e "$T/ready" ] || fail "the ready file outlived the run"

# keys reach the command; Ctrl-C ends it; exit 130, gpureap itself not signalled
term keys -- "$GPUREAP" run --ready-log listening -- bash "$T/readline.sh"
wait_screen listening
wait_raw
touch "$J/go"
ctl keys 68690d # "hi" and Return, as a terminal in raw mode sends it
term_done
grep -aq "read 'hi'" "$J/screen" || fail "the command did not get the line: $(cat -v "$J/screen")"
[ "$JOB_RC" = 5 ] || fail "the run exited $JOB_RC"
ok "keys typed at the terminal reach the command through the pty"

term int -- "$GPUREAP" run --ready-log listening --json "$T/int.json" -- bash "$T/interrupt.sh"
c=$(jpid cmd) m=$(jpid member)
wait_screen listening
wait_raw
ctl keys 03
term_done
[ "$JOB_RC" = 130 ] || fail "Ctrl-C: the run exited $JOB_RC"
jq -e '.ended == "signal" and .command_signal == 2 and .gpureap_signal == null and .pid == '"$c" "$T/int.json" >/dev/null ||
        fail "the result: $(cat "$T/int.json")"
ok "Ctrl-C through the pty: the command died of SIGINT, run exits 130, gpureap was not signalled"
wait_state "$m" gone
wait_state "$c" gone
ok "nothing left after Ctrl-C"
modes_restored modes.after "modes restored after Ctrl-C"

# the other ends: gpureap signalled, a missed readiness, a stall; the modes always put back
term term -- "$GPUREAP" run --ready-log listening -- bash "$T/waitgo.sh"
m=$(jpid member)
wait_screen listening
wait_raw
kill -TERM "$G"
term_done
[ "$JOB_RC" = 143 ] || fail "TERM: the run exited $JOB_RC"
wait_state "$m" gone
modes_restored modes.after "gpureap got TERM (exit 143): the tree ended, the modes put back"

term late -- "$GPUREAP" run --ready-log 'never printed' --ready-timeout 500ms --grace 200ms -- \
        sh -c 'echo "cmd $$" >>"$PIDS"; echo listening on 8000; exec sleep 1000'
term_done
[ "$JOB_RC" = 121 ] || fail "not ready: the run exited $JOB_RC"
grep -aq "not ready in time; the tree of 'sh'" "$J/screen" || fail "no diagnosis: $(cat -v "$J/screen")"
grep -aq "last output line: listening on 8000" "$J/screen" || fail "no last line: $(cat -v "$J/screen")"
modes_restored modes.after "not ready (exit 121, the tree and its last line printed): the modes put back"

# gpureap crashes (a real SIGSEGV, through the test build's seam: a SIGSEGV sent to gpureap is
# passed on to the command now; its handler puts the modes back and ends the tree, then gpureap
# dies of it); the pty hangs up, and the command with it
: "${GPUREAP_TEST_HOOKS:?the test build of gpureap (src/gpureap-test-hooks)}"
term crash -- env GPUREAP_TEST_FAULT_ADDR=8 "$GPUREAP_TEST_HOOKS" run --ready-log listening -- sh -c 'echo "cmd $$" >>"$PIDS"; echo "cmd $$" >>"$J/pids"; echo listening; exec sleep 1000'
c=$(jpid cmd)
wait_screen listening
wait_raw
kill -USR2 "$G"
term_done
grep -q "^signal" "$J/events" || fail "gpureap did not die of a signal: $(tr '\n' ' ' <"$J/events")"
modes_restored modes.after "gpureap crashed: the terminal's modes put back all the same"
wait_state "$c" "gone Z"
ok "and the command was hung up with the pty (SIGHUP), not left running"
# the crashed gpureap could not remove its leaf cgroup (empty now): ours to remove
mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
for d in $( [ -n "$mnt" ] && find "$mnt" -maxdepth 6 -type d -name "gpureap-run-$G-*" 2>/dev/null); do
        rmdir "$d" 2>/dev/null || true
done

term notfound -- "$GPUREAP" run --ready-log listening -- "$T/no-such-command"
term_done
[ "$JOB_RC" = 127 ] || fail "not found: the run exited $JOB_RC"
grep -aq "cannot run '.*no-such-command'" "$J/screen" || fail "no message: $(cat -v "$J/screen")"
modes_restored modes.after "not found (127) with a pty: the terminal in its modes"

# a progress bar redrawn with \r and a coloured line: the regex sees the text on its own
cat >"$T/progress.sh" <<'SH'
echo "cmd $$" >>"$PIDS"; echo "cmd $$" >>"$J/pids"
printf 'loading  10%%\rloading  50%%\rloading 100%%\r\n'
printf '\033[1;32mready\033[0m\n'
while [ ! -e "$J/go" ]; do sleep 0.02; done
SH
term bar -- "$GPUREAP" run --ready-log '^ready$' --ready-file "$T/ready2" --stall-timeout 1h -- bash "$T/progress.sh"
i=0; until [ -s "$T/ready2" ]; do i=$((i + 1)); [ $i -lt 1000 ] || fail "'^ready\$' did not match a coloured line: $(cat -v "$J/screen")"; sleep 0.01; done
ok "a line from the pty is matched without its escape sequences and carriage returns"
term_done
[ "$JOB_RC" = 0 ] || fail "the run exited $JOB_RC"
done_testing
