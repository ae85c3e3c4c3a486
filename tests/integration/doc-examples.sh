#!/bin/bash
# The examples in README.md and docs/*.md are real output: each block marked
#   <!-- example: status --replay FILE -->   is what 'gpureap status --replay FILE' prints now
#   <!-- example: file FILE -->              is FILE, a recording of a real run
# (the block's first line, "$ command", is what was typed there). A change to the output that
# leaves an example stale fails here.
. "$TESTLIB"
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
cd "$ROOT" # the examples name their files from the top of the tree
n=0
for doc in "$ROOT/README.md" "$ROOT"/docs/*.md; do
        # each marked block: its marker and its body, one file per block
        rm -f "$T"/ex.*
        awk -v out="$T/ex" '
                /^<!-- example: .* -->$/ { k++; sub(/^<!-- example: /, ""); sub(/ -->$/, ""); print > (out "." k ".what"); want = 1; next }
                want && /^```/ { inb = 1; want = 0; first = 1; next }
                inb && /^```/ { inb = 0; close(out "." k ".body"); next }
                inb { if (first && /^\$ /) { first = 0; next } first = 0; print > (out "." k ".body") }
        ' "$doc"
        for what in "$T"/ex.*.what; do
                [ -e "$what" ] || continue
                body=${what%.what}.body
                read -r kind arg rest <"$what"
                case $kind in
                status) gr status "$arg" $rest; [ "$RC" -le 1 ] || fail "$(basename "$doc"): status $arg $rest: exit $RC" ;;
                file) cp "$ROOT/$arg" "$T/out" ;;
                *) fail "$(basename "$doc"): unknown example kind '$kind'" ;;
                esac
                diff -u "$body" "$T/out" >"$T/diff" || { cat "$T/diff" >&2; fail "$(basename "$doc"): the example '$(cat "$what")' is stale"; }
                n=$((n + 1))
                ok "$(basename "$doc"): example '$(cat "$what")' is what gpureap prints"
        done
done
[ $n -ge 2 ] || fail "only $n marked examples found"
done_testing
