#!/bin/bash
# 'gpureap run -- CMD' typed at a terminal, without a watchdog: the command is the terminal's
# foreground job, so that Ctrl-Z stops it (and gpureap with it: the shell shows the job
# stopped), fg and bg continue both, Ctrl-C reaches the command from the terminal itself and its
# own status is what run reports; the terminal is the shell's again, in its modes, at the end.
. "$TESTLIB"
. "$(dirname "$0")/tty-lib.sh"

# the command on the terminal: in gpureap's session, a group of its own in the foreground
NOECHO=1 term fg --size 33 101 -- "$GPUREAP" run -- bash "$T/waitgo.sh"
c=$(jpid cmd) m=$(jpid member)
wait_foreground "$c"
wait_screen "listening on 8000" # after its stty -echo
grep -aq "size 33 101" "$J/screen" && grep -aq "stdout is a terminal" "$J/screen" && grep -aq "stdin is a terminal" "$J/screen" ||
        fail "the command did not see the terminal: $(cat -v "$J/screen")"
ok "the command sees the terminal (stdin, stdout) and its size"
[ "$(stat_field "$c" 4)" = "$(stat_field "$G" 4)" ] || fail "the command is not in gpureap's session"
[ "$(stat_field "$c" 3)" = "$c" ] && [ "$(stat_field "$G" 3)" = "$G" ] ||
        fail "the command's group $(stat_field "$c" 3), gpureap's $(stat_field "$G" 3)"
ok "the command runs in gpureap's session, as a group of its own, the terminal's foreground"

# Ctrl-Z: the terminal stops the command's group; gpureap follows, the shell sees the job stop
ctl keys 1a
wait_stops 1
is_stopped "$c" "$m" "$G"
ok "Ctrl-Z stopped the command, its group and gpureap; the shell saw the job stop"
modes stopped
modes_restored stopped "stopped: the terminal is in the shell's modes, not the command's (-echo)"
ctl fg
running "$c" "$m" "$G"
wait_foreground "$c"
ok "fg continued gpureap and the command, which has the terminal again"
modes now
! cmp -s "$J/modes.before" "$J/now" || fail "fg: the command's own modes (-echo) were not given back"
ok "fg: the terminal is in the command's modes again"

# the resize reaches the command from the terminal itself
ctl size 40 120
i=0; until [ -s "$J/winch" ]; do i=$((i + 1)); [ $i -lt 1000 ] || fail "no SIGWINCH seen"; sleep 0.01; done
[ "$(cat "$J/winch")" = "40 120" ] || fail "the command saw the size '$(cat "$J/winch")'"
ok "a resized terminal: the command sees the new size"

term_done
[ "$JOB_RC" = 7 ] || fail "the run exited $JOB_RC, the command 7"
ok "after a stop and fg, the run ends with the command's own status (7)"
wait_state "$m" gone
ok "its leftover ended"
grep -q "^foreground job" "$J/events" || fail "the terminal was left to: $(grep foreground "$J/events")"
ok "the terminal is back with gpureap's job when it exits"
modes_restored modes.after "the terminal's modes after the run are those before it (the command's -echo undone)"

# Ctrl-C from the terminal: to the command's group, not to gpureap; the command's status counts
term int -- "$GPUREAP" run --json "$T/int.json" -- bash "$T/interrupt.sh"
c=$(jpid cmd) m=$(jpid member)
wait_foreground "$c"
wait_state "$c" S
ctl keys 03
term_done
[ "$JOB_RC" = 130 ] || fail "Ctrl-C: the run exited $JOB_RC"
ok "Ctrl-C: the command died of SIGINT, run exits 130"
jq -e '.ended == "signal" and .command_signal == 2 and .gpureap_signal == null and .pid == '"$c" "$T/int.json" >/dev/null ||
        fail "the result: $(cat "$T/int.json")"
ok "the terminal's SIGINT went to the command, not to gpureap (--json: ended signal 2, no gpureap_signal)"
wait_state "$m" gone
grep -aq "1 leftover process ended" "$J/screen" || fail "summary: $(cat -v "$J/screen")"
ok "its member that ignores SIGINT was ended by gpureap: nothing left"

# a watchdog, stdout a file: still the terminal's job (Ctrl-C reaches it), its output piped
term wd -- sh -c 'exec "$0" run --ready-log listening -- sh "$1" >"$2"' "$GPUREAP" "$T/waitgo.sh" "$T/wd.out"
c=$(jpid cmd)
wait_foreground "$c"
i=0; until grep -q listening "$T/wd.out"; do i=$((i + 1)); [ $i -lt 1000 ] || fail "no output in the file"; sleep 0.01; done
grep -q "stdout is not a terminal" "$T/wd.out" && grep -q "stdin is a terminal" "$T/wd.out" || fail "the command saw: $(cat "$T/wd.out")"
ok "--ready-log with stdout a file: the command is the terminal's job, its stdout a pipe"
ctl keys 03
term_done
[ "$JOB_RC" = 130 ] || fail "Ctrl-C: the run exited $JOB_RC"
ok "and Ctrl-C from the terminal ends it (130)"

# a command that cannot start: the terminal is the shell's job's again, as it was
term notfound -- "$GPUREAP" run -- "$T/no-such-command"
term_done
[ "$JOB_RC" = 127 ] || fail "not found: the run exited $JOB_RC"
grep -aq "cannot run '.*no-such-command'" "$J/screen" || fail "no message: $(cat -v "$J/screen")"
grep -q "^foreground job" "$J/events" || fail "terminal: $(grep foreground "$J/events")"
modes_restored modes.after "not found (127): the terminal back, in its modes"

# Ctrl-Z, then bg: both run on in the background, the shell keeps the terminal; a read from
# the terminal there stops the job (SIGTTIN), and fg brings it back with the terminal
term bg -- "$GPUREAP" run -- bash "$T/readline.sh"
c=$(jpid cmd)
wait_foreground "$c"
ctl keys 1a
wait_stops 1
is_stopped "$c" "$G"
ctl bg
running "$c" "$G"
ok "bg: gpureap and the command run on in the background"
touch "$J/go" # now it reads
wait_stops 2
is_stopped "$c" "$G"
ok "a read from the background stopped the command (SIGTTIN) and gpureap with it"
ctl fg
wait_foreground "$c"
ctl keys 68690a # "hi\n"
term_done
grep -aq "read 'hi'" "$J/screen" || fail "the command did not get the line: $(cat -v "$J/screen")"
[ "$JOB_RC" = 5 ] || fail "the run exited $JOB_RC"
ok "fg: the command read what was typed, and its status is the run's"
grep -q "^foreground job" "$J/events" || fail "terminal: $(grep foreground "$J/events")"
modes_restored modes.after "modes restored after the job came back from the background"

# bg to the end: the run ends in the background, the shell keeps its terminal
term bg-end -- "$GPUREAP" run -- bash "$T/waitgo.sh"
c=$(jpid cmd)
wait_foreground "$c"
ctl keys 1a
wait_stops 1
ctl bg
running "$c" "$G"
term_done
[ "$JOB_RC" = 7 ] || fail "the run exited $JOB_RC"
grep -q "^foreground shell" "$J/events" || fail "gpureap took the terminal from the shell: $(grep foreground "$J/events")"
ok "a run that ends in the background leaves the terminal to the shell"
done_testing
