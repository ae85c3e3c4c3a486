#!/bin/bash
# When 'gpureap run' is not in the foreground of a terminal (stdin a file or a pipe as under
# systemd, Slurm and CI; a job started in the background; --tty=never) the command runs as it
# always has: a session of its own without a controlling terminal, its output through pipes
# with a watchdog. --tty=always gives it a pseudo-terminal even without one around.
. "$TESTLIB"
. "$(dirname "$0")/tty-lib.sh"

# own_session NAME: the command of this terminal leads a session of its own, without a terminal
own_session() {
        local c
        c=$(jpid cmd)
        [ "$(stat_field "$c" 4)" = "$c" ] && [ "$(stat_field "$c" 5)" = 0 ] ||
                fail "$1: the command's session $(stat_field "$c" 4), its terminal $(stat_field "$c" 5)"
        ok "$1: the command leads a session of its own, without a controlling terminal"
}

term never -- "$GPUREAP" run --tty=never -- sh "$T/waitgo.sh"
wait_screen "listening on 8000"
own_session "--tty=never at a terminal"
term_done
[ "$JOB_RC" = 7 ] || fail "the run exited $JOB_RC"

term never-log -- "$GPUREAP" run --tty=never --ready-log listening -- sh "$T/waitgo.sh"
wait_screen "listening on 8000"
grep -aq "stdout is not a terminal" "$J/screen" || fail "the command's stdout: $(cat -v "$J/screen")"
ok "--tty=never --ready-log: the command's output goes through a pipe, as before"
modes now
modes_restored now "--tty=never: gpureap leaves the terminal's modes alone"
term_done

term devnull -- sh -c 'exec "$0" run --ready-log listening -- sh "$1" </dev/null' "$GPUREAP" "$T/waitgo.sh"
wait_screen "listening on 8000"
own_session "stdin not a terminal"
grep -aq "stdout is not a terminal" "$J/screen" || fail "the command's stdout: $(cat -v "$J/screen")"
ok "stdin not a terminal, --ready-log: output through a pipe, as before"
term_done
[ "$JOB_RC" = 7 ] || fail "the run exited $JOB_RC"

term background --bg -- "$GPUREAP" run -- sh "$T/waitgo.sh"
wait_screen "listening on 8000"
own_session "started in the background (cmd &)"
term_done
grep -q "^foreground shell" "$J/events" || fail "the background run took the terminal: $(grep foreground "$J/events")"
ok "a run in the background never takes the terminal"

# --tty=always without any terminal around (as here: stdin, stdout and stderr are files)
cat >"$T/always.sh" <<'SH'
if [ -t 1 ]; then echo "stdout is a terminal"; else echo "stdout is not a terminal"; fi
echo "to stderr" >&2
echo "listening on 8000"
exit 3
SH
gr run --quiet --tty=always --ready-log listening -- sh "$T/always.sh" </dev/null
expect_rc 3 "--tty=always: the command's status"
has out "^stdout is a terminal$" "--tty=always: the command's stdout is a terminal, its own newlines kept in a file"
has err "^to stderr$" "stderr, not a terminal here, stays gpureap's stderr"
hasnt out "to stderr" "and does not go to stdout"
gr run --quiet -- sh "$T/always.sh" </dev/null
has out "^stdout is not a terminal$" "auto without a terminal: the command's stdout is gpureap's (a file)"

gr run --help
has out "--tty WHEN" "run --help lists --tty"
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
complete_words() { # the words completed for the command line "$@" (the last one being typed)
        bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpureap; printf "%s\n" "${COMPREPLY[@]}"' \
                _ "$ROOT/completions/gpureap.bash" "$@"
}
complete_words gpureap run --tt >"$T/out"
has out "^--tty$" "bash completion: --tty"
complete_words gpureap run --tty = al >"$T/out"
has out "^always$" "bash completion: --tty=always"
complete_words gpureap run --tty n >"$T/out"
has out "^never$" "bash completion: --tty never"

gr run --tty=sometimes -- true
expect_rc 2 "--tty=sometimes: usage"
has err "invalid --tty 'sometimes' \(auto, always or never\)" "says which values there are"
done_testing
