#!/bin/bash
# Every fenced block of README.md and docs/*.md has a marker on the line just before it, and every
# example of gpureap's output there is real output, checked here against the block:
#   <!-- example: status ARGS -->       what 'gpureap status ARGS' prints now (exit 0 or 1)
#   <!-- example: status-json ARGS -->  what 'gpureap status --json ARGS' prints now (exit 0 or 1)
#   <!-- example: metrics ARGS -->      what 'gpureap metrics ARGS' prints now (exit 0)
#   <!-- example: check ARGS -->        what 'gpureap check ARGS' prints now (exit 0, 1 or 2)
#   <!-- example: file FILE -->         FILE, a recording a test made of a real run (for what
#                                       changes from run to run: PIDs, times; how each is made
#                                       again: tests/fixtures/docs-examples/README.md)
#   <!-- example: same-as FILE -->      FILE exactly: a configuration file the tree ships
#   <!-- not output: WHY -->            no output of gpureap: what a user types or writes (WHY
#                                       says which), a schema, a diagram; not checked
# ARGS replay a recording (--replay FILE), never this machine. An example may be an excerpt:
# "KIND ARGS | FILTER", FILTER a pipeline of jq, grep, head, tail and sed run on the output.
# For the gpureap kinds the block's first line is the command, "$ gpureap status ARGS" (with
# " | FILTER" when there is one), and must be the one checked; "; echo $?" at the end of both
# the marker and the command (no filter then) adds the exit status as the block's last line.
# A file's "$ " line says what was typed when it was recorded.
# The checker is shown to fail too: one character changed in a block of each kind, a marker
# removed, an unknown kind, a command line that is not the one checked. With
# DOC_EXAMPLES_UPDATE=1 (scripts/update-doc-examples.sh) it rewrites the stale examples instead.
# The annotated status schema of json-schema.md must name every field the recordings' JSON has.
. "$TESTLIB"
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
cd "$ROOT" # the examples name their files from the top of the tree
E=$T/ex

# blocks DOC: DOC's fenced blocks into $E: per marked example N.what (the marker's text), N.cmd
# (its "$ " line, without the "$ "), N.body, N.line; N.none per block marked 'not output'; what
# is wrong with the markers into $E/errors
blocks() {
        rm -rf "$E"
        mkdir -p "$E"
        : >"$E/errors"
        awk -v out="$E" '
                function err(msg) { print FILENAME ":" FNR ": " msg > (out "/errors") }
                inb && /^ *```/ { inb = 0; if (k) close(out "/" k ".body"); prev = ""; next }
                inb {
                        if (k && first && /^\$ /) { print substr($0, 3) > (out "/" k ".cmd"); close(out "/" k ".cmd") }
                        else if (k) print > (out "/" k ".body")
                        first = 0
                        next
                }
                /^ *```/ {
                        inb = 1; first = 1; k = 0
                        if (prev ~ /^<!-- example: .+ -->$/) {
                                k = ++n
                                w = prev; sub(/^<!-- example: /, "", w); sub(/ -->$/, "", w)
                                print w > (out "/" k ".what"); close(out "/" k ".what")
                                print FNR > (out "/" k ".line"); close(out "/" k ".line")
                                printf "" > (out "/" k ".body")
                        } else if (prev ~ /^<!-- not output: .+ -->$/) {
                                print FNR > (out "/" (++m) ".none"); close(out "/" m ".none")
                        } else
                                err("a fenced block with no marker before it (<!-- example: ... --> or <!-- not output: WHY -->)")
                        next
                }
                prev ~ /^<!-- (example|not output):/ { err("a marker not followed by a fenced block") }
                { prev = $0 }
                END { if (inb) err("a fenced block never closed") }
        ' "$1"
}

# check N: is example N what gpureap prints or the file it names? 1 and the reason in $T/why if not
check() {
        local what cmd kind arg filter="" want="" stage echo_rc=""
        what=$(cat "$E/$1.what")
        cmd=$(cat "$E/$1.cmd" 2>/dev/null || true)
        case $what in *'; echo $?') echo_rc=1 what=${what%'; echo $?'} ;; esac
        case $what in *" | "*) filter=${what#* | } what=${what%% | *} ;; esac
        [ -z "$echo_rc" ] || [ -z "$filter" ] || { echo "'; echo \$?' after a filter shows the filter's status" >"$T/why"; return 1; }
        read -r kind arg <<<"$what"
        if [ -n "$filter" ]; then
                # an excerpt, never a program: each stage is one of these filters
                while read -r stage; do
                        case ${stage%% *} in jq | grep | head | tail | sed) ;; *) echo "filter '$stage' is not jq, grep, head, tail or sed" >"$T/why"; return 1 ;; esac
                done < <(sed 's/ | /\n/g' <<<"$filter")
        fi
        case $kind in
        status | metrics | check) want="gpureap $kind $arg" ;;
        status-json) want="gpureap status --json $arg" ;;
        file | same-as) [ -z "$echo_rc" ] || { echo "a file has no exit status" >"$T/why"; return 1; } ;;
        *) echo "unknown example kind '$kind'" >"$T/why"; return 1 ;;
        esac
        if [ -n "$want" ]; then
                case " $arg " in *" --replay "*) ;; *) echo "'$kind $arg' replays no recording: its output would be this machine's" >"$T/why"; return 1 ;; esac
                [ -z "$filter" ] || want="$want | $filter"
                [ -z "$echo_rc" ] || want="$want; echo \$?"
                [ "$cmd" = "$want" ] || { echo "the block's command is '\$ $cmd', not the one checked, '\$ $want'" >"$T/why"; return 1; }
        fi
        # shellcheck disable=SC2086 # ARGS are words (paths from the top of the tree, options)
        case $kind in
        status) gr status $arg; [ "$RC" -le 1 ] || { echo "exit $RC" >"$T/why"; return 1; } ;;
        status-json) gr status --json $arg; [ "$RC" -le 1 ] || { echo "exit $RC" >"$T/why"; return 1; } ;;
        metrics) gr metrics $arg; [ "$RC" -eq 0 ] || { echo "exit $RC" >"$T/why"; return 1; } ;;
        check) gr check $arg; [ "$RC" -le 2 ] || { echo "exit $RC" >"$T/why"; return 1; } ;;
        file) cp "$arg" "$T/out" || { echo "no recording '$arg'" >"$T/why"; return 1; } ;;
        same-as)
                [ -z "$cmd" ] || { echo "a shipped file's block starts with a '\$ ' line" >"$T/why"; return 1; }
                cp "$arg" "$T/out" || { echo "no file '$arg'" >"$T/why"; return 1; } ;;
        esac
        if [ -n "$filter" ]; then
                bash -c "set -o pipefail; $filter" <"$T/out" >"$T/filtered" || { echo "the filter '$filter' failed" >"$T/why"; return 1; }
                mv "$T/filtered" "$T/out"
        fi
        [ -z "$echo_rc" ] || echo "$RC" >>"$T/out"
        diff -u "$E/$1.body" "$T/out" >"$T/why" && return 0
        [ -n "${DOC_EXAMPLES_UPDATE:-}" ] || return 1
        cp "$T/out" "$E/$1.new" # check_doc rewrites the block
}

# update DOC N: the body of example N becomes N.new
update() {
        local from n
        from=$(($(cat "$E/$2.line") + 1))
        [ ! -s "$E/$2.cmd" ] || from=$((from + 1))
        n=$(wc -l <"$E/$2.body")
        awk -v from="$from" -v to=$((from + n - 1)) -v new="$E/$2.new" '
                NR == from { while ((getline l < new) > 0) print l }
                NR >= from && NR <= to { next }
                { print }' "$1" >"$T/updated"
        cat "$T/updated" >"$1"
}

# check_doc DOC: every block of DOC marked and every example right; counts in $N_EX, $N_NONE
check_doc() {
        local what i
        N_EX=0 N_NONE=0
        blocks "$1"
        [ ! -s "$E/errors" ] || { cp "$E/errors" "$T/why"; return 1; }
        for what in "$E"/*.what; do
                [ -e "$what" ] || continue
                i=$(basename "$what" .what)
                check "$i" || {
                        { echo "${1##*/}:$(cat "$E/$i.line"): the example '$(cat "$what")' is not what gpureap prints"; cat "$T/why"; } >"$T/why.all"
                        mv "$T/why.all" "$T/why"
                        return 1
                }
                N_EX=$((N_EX + 1))
        done
        N_NONE=$(find "$E" -name '*.none' | wc -l)
        # DOC_EXAMPLES_UPDATE=1 (scripts/update-doc-examples.sh): stale examples rewritten, the
        # last first so that the line numbers of the others hold
        for i in $(find "$E" -name '*.new' | sed 's|.*/||; s|\.new$||' | sort -rn); do
                update "$1" "$i"
                echo "# updated ${1##*/}:$(cat "$E/$i.line"): $(cat "$E/$i.what")"
        done
}

total=0
for doc in "$ROOT/README.md" "$ROOT"/docs/*.md; do
        check_doc "$doc" || { cat "$T/why" >&2; fail "$(basename "$doc"): stale or unmarked"; }
        total=$((total + N_EX))
        ok "$(basename "$doc"): $N_EX examples checked, $N_NONE blocks marked as no output"
done
[ $total -ge 10 ] || fail "only $total marked examples found"
[ -z "${DOC_EXAMPLES_UPDATE:-}" ] || { done_testing; exit 0; }

# the annotated schema is no example, but it names every field: each key 'status --json' writes
# for the H200 recordings (one-shot and served) is in the block that describes it
awk '/^```jsonc/ { b = ""; inb = 1; next } inb && /^```/ { inb = 0; if (b ~ /"gpureap_version"/) print b; next } inb { b = b $0 "\n" }' \
        docs/json-schema.md | grep -o '"[A-Za-z_]*":' | tr -d '":' | sort -u >"$T/schema-keys"
[ -s "$T/schema-keys" ] || fail "no annotated status schema in json-schema.md"
for f in tests/fixtures/h200-2026-12-03/*.json tests/fixtures/h200-2026-12-03-serve/*.json; do
        gr status --json --replay "$f"
        jq -r '[paths | map(select(type == "string")) | last] | .[]' "$T/out"
done | sort -u >"$T/keys"
comm -13 "$T/schema-keys" "$T/keys" >"$T/missing"
[ ! -s "$T/missing" ] || fail "json-schema.md does not describe: $(tr '\n' ' ' <"$T/missing")"
ok "json-schema.md names all $(wc -l <"$T/keys") fields that status --json writes for the recordings"

# the checker fails: a copy of a doc with one block changed must not pass
broken() { # DESCRIPTION: $T/broken.md must fail
        if check_doc "$T/broken.md"; then fail "a doc passed with $1"; fi
        # where (the first line), and what: the doc's line that differs, else the reason
        local what
        what=$(grep -m 1 -E '^-([^-]|$)' "$T/why" || sed -n 2p "$T/why")
        ok "fails with $1: $(head -n 1 "$T/why" | sed 's/^[^ ]* //')${what:+ ($what)}"
}
declare -A seen
for doc in "$ROOT/README.md" "$ROOT"/docs/*.md; do
        blocks "$doc"
        rm -rf "$T/orig"
        mv "$E" "$T/orig" # check_doc makes $E anew
        for what in "$T/orig"/*.what; do
                [ -e "$what" ] || continue
                read -r kind _ <"$what"
                [ -z "${seen[$kind]:-}" ] || continue
                seen[$kind]=1
                # one character changed: a digit (else a letter) of the block's middle line or the
                # first one after it that has one
                line=$(cat "${what%.what}.line") n=$(wc -l <"${what%.what}.body")
                [ -s "${what%.what}.cmd" ] && line=$((line + 1))
                target=$((line + 1 + n / 2))
                changed=$(awk -v t="$target" -v out="$T/broken.md" '
                        NR >= t && !done && /[0-9A-Za-z]/ { if (!sub(/[0-9]/, "#")) sub(/[A-Za-z]/, "#"); done = NR }
                        { print > out }
                        END { print done }' "$doc")
                broken "one character changed in a '$kind' example (${doc##*/}:$changed)"
        done
done
blocks "$ROOT/README.md"
line=$(cat "$E/1.line")
awk -v t=$((line - 1)) 'NR != t' "$ROOT/README.md" >"$T/broken.md"
broken "a block whose marker was removed"
sed "$((line - 1))s/example: status /example: stats /" "$ROOT/README.md" >"$T/broken.md"
broken "an unknown kind"
sed "$((line + 1))s/--replay /--replay  /" "$ROOT/README.md" >"$T/broken.md"
broken "a command line that is not the one checked"
done_testing
