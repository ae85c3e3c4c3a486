#!/bin/bash
# Bad input: a clear one-line error and exit 2, never a crash.
. "$TESTLIB"

gr --help
expect_rc 0 "--help"
has out "exit codes" "help lists exit codes"
gr status --help
expect_rc 0 "status --help"
has out "--nvml-timeout" "status help lists options"
has out "--wide" "status help lists --wide" && has out "--color=WHEN" "and --color"
# every command's help: each option's description starts at the column of the first one, and no
# line is wider than 100 columns
for c in status reap wait run check metrics serve reset slurm-epilog slurm-prolog; do
        gr $c --help
        [ "$RC" -eq 0 ] || fail "$c --help: exit $RC"
        awk -v c="$c" '
                /^  --[a-z]/ { col = match(substr($0, 3), /  +[^ ]/); if (col == 0) next
                               col += 2 + RLENGTH - 1; if (!want) want = col
                               else if (col != want) { printf "%s --help: \"%s\" starts its text at column %d, not %d\n", c, $0, col, want; bad = 1 } }
                length($0) > 100 { printf "%s --help: a line of %d columns\n", c, length($0); bad = 1 }
                END { exit bad }' "$T/out" >"$T/align" || fail "$(cat "$T/align")"
done
ok "every command's help aligns its options' descriptions"

# the bash completion offers the options of status, and the values of --color
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
complete_words() { # the words completed for the command line "$@" (the last one being typed)
        bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpureap; printf "%s\n" "${COMPREPLY[@]}"' \
                _ "$ROOT/completions/gpureap.bash" "$@"
}
complete_words gpureap status --w >"$T/out"
has out "^--wide$" "bash completion: --wide"
complete_words gpureap status --wat >"$T/out"
has out "^--watch$" "bash completion: --watch"
complete_words gpureap check --t >"$T/out"
has out "^--timeout$" "bash completion: check --timeout"
complete_words gpureap reap - >"$T/out"
has out "^-i$" "bash completion: reap -i"
complete_words gpureap status --color = a >"$T/out"
has out "^auto$" "bash completion: --color=auto" && has out "^always$" "and --color=always"
# gpureap-status is 'gpureap status': its words are status's, never a command's
complete_words /usr/bin/gpureap-status --json "" >"$T/out"
has out "^--why$" "bash completion of gpureap-status: status's options" && hasnt out "^reap$" "and no command"
complete_words gpureap-status --color "" >"$T/out"
has out "^never$" "bash completion of gpureap-status: --color's words"
bash -c '. "$1"; complete -p gpureap-status' _ "$ROOT/completions/gpureap.bash" >"$T/out" 2>&1
has out "_gpureap gpureap-status$" "the completion is registered for gpureap-status"
gr --version
has out "^gpureap [0-9]+\\.[0-9]+\\.[0-9]+$" "--version"

gr frobnicate
expect_rc 2 "unknown command"
has err "^gpureap: 'frobnicate' is not a gpureap command" "names the command"
gr status --bogus
expect_rc 2 "unknown option"
has err "^gpureap status: unknown option '--bogus'; see 'gpureap status --help'$" "one line, with the program's name"
gr status --jsno
expect_rc 2 "a mistyped option"
has err "did you mean '--json'\\?" "did you mean the nearest option"
gr sttaus
expect_rc 2 "a mistyped command"
has err "^gpureap: 'sttaus' is not a gpureap command; did you mean 'status'\\?" "did you mean the nearest command"
gr reap --pid
expect_rc 2 "an option without its value"
has err "^gpureap reap: option '--pid' needs a value" "says which"
hasnt err "/" "no build path in the messages"
gr status --nvml-timeout soon
expect_rc 2 "bad duration"
has err "^gpureap: invalid duration 'soon'" "names the duration"
gr status --nvml-timeout 0
expect_rc 2 "zero duration"
GPUREAP_NVML_TIMEOUT=x gr status
expect_rc 2 "bad duration in the environment"
gr status extra
expect_rc 2 "stray argument"
GPUREAP_PROC_ROOT=$T/nonexistent gr status --json
has err "cannot read '.*nonexistent'" "an unreadable /proc root is reported"
jqok '.proc.error != null' "JSON carries the /proc error"
gr status --json=x
expect_rc 2 "a value given to a flag"
has err "^gpureap status: option '--json' takes no value" "says it takes none, not that it needs one"
gr help reap
expect_rc 0 "gpureap help reap"
has out "^usage: gpureap reap " "prints reap's own help"
done_testing
