#!/bin/bash
# Rewrite the examples marked <!-- example: status ARGS --> in README.md and docs/*.md with
# what 'gpureap status ARGS' prints now (tests/integration/doc-examples.sh checks them). The
# block's first line, "$ command", is kept; the rest is replaced. Run from anywhere:
#   scripts/update-doc-examples.sh [path/to/gpureap]    (default: build/src/gpureap)
set -eu
cd "$(dirname "$0")/.."
GPUREAP=${1:-build/src/gpureap}
[ -x "$GPUREAP" ] || { echo "update-doc-examples: no '$GPUREAP' (build first)" >&2; exit 1; }
unset COLUMNS NO_COLOR # written as a pipe gets it: whole lines, no colour
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for doc in README.md docs/*.md; do
        grep -q '^<!-- example: status ' "$doc" || continue
        : >"$tmp/new"
        want="" inb=0 first=0
        while IFS= read -r line || [ -n "$line" ]; do
                if [ "$inb" -eq 1 ]; then
                        if [[ $line == '```'* ]]; then
                                inb=0
                                [ -z "$want" ] || { set +e; "$GPUREAP" status $want >>"$tmp/new"; rc=$?; set -e; want=""
                                        [ "$rc" -le 1 ] || { echo "update-doc-examples: status $want: exit $rc" >&2; exit 1; }; }
                                printf '%s\n' "$line" >>"$tmp/new"
                        elif [ -z "$want" ] || { [ "$first" -eq 1 ] && [[ $line == '$ '* ]]; }; then
                                printf '%s\n' "$line" >>"$tmp/new" # not ours, or the "$ command" line
                        fi
                        first=0
                        continue
                fi
                printf '%s\n' "$line" >>"$tmp/new"
                if [[ $line =~ ^'<!-- example: status '(.*)' -->'$ ]]; then
                        want=${BASH_REMATCH[1]}
                elif [[ $line == '```'* ]]; then
                        inb=1 first=1
                fi
        done <"$doc"
        cmp -s "$doc" "$tmp/new" || { cp "$tmp/new" "$doc"; echo "updated $doc"; }
done
