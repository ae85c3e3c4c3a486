#!/bin/bash
# The suite does not depend on what its caller's shell left (issue 22): a part of it runs as under
# 'nohup' (SIGHUP ignored), after "trap '' INT" (SIGINT ignored) and from a program that execs
# with signals blocked (TERM, QUIT, USR1, ALRM, CHLD), and passes: each test script starts again
# with every signal at its default (tests/integration/signals.sh, sourced by lib.sh). The probe
# first shows that the hostile setting reaches a script that does not reset it.
. "$TESTLIB"
HOSTILE=("$SIGEXEC" --ignore HUP,INT --block TERM,QUIT,USR1,ALRM,CHLD --)
HERE=$(cd "$(dirname "$0")" && pwd)
sigs() { awk '/^Sig(Ign|Blk):/ { printf "%s=%s ", $1, $2 }' "/proc/$1/status"; }

# the control: a script that does not source signals.sh inherits the setting (SIGHUP is bit 1,
# SIGINT bit 2 of SigIgn; SIGTERM bit 15 of SigBlk)
cat >"$T/probe-raw.sh" <<'P'
awk '/^Sig(Ign|Blk):/ { print $1, $2 }' /proc/$$/status
P
out=$("${HOSTILE[@]}" bash "$T/probe-raw.sh")
ign=$(awk '$1 == "SigIgn:" { print $2 }' <<<"$out") blk=$(awk '$1 == "SigBlk:" { print $2 }' <<<"$out")
[ $((0x$ign & 0x3)) -eq 3 ] && [ $((0x$blk & 0x4000)) -ne 0 ] || fail "the hostile setting did not reach the probe: $out"
ok "the hostile setting reaches a script that keeps it ($(tr '\n' ' ' <<<"$out"))"
# a script that sources signals.sh runs with everything at its default, and so do its children
# (a foreground one: without job control an asynchronous command ignores INT and QUIT, by POSIX)
cat >"$T/probe-reset.sh" <<P
. "$HERE/signals.sh"
awk '/^Sig(Ign|Blk):/ { print \$1, \$2 }' /proc/self/status
P
out=$("${HOSTILE[@]}" bash "$T/probe-reset.sh")
[ "$(grep -c ' 0000000000000000$' <<<"$out")" -eq 2 ] || fail "signals.sh did not reset the signals of a test's child: $out"
ok "after signals.sh a test's child has no signal ignored or blocked"

# a part of the suite, each test as a whole, the way a caller under nohup would run it
for t in integration/diagnose-orphans integration/run-basics integration/reap-leftovers \
         integration/scope-filtering adversarial/tree-spares-own-group; do
        if ! "${HOSTILE[@]}" bash "$HERE/../$t.sh" >"$T/out" 2>&1; then
                tail -20 "$T/out" >&2
                fail "$t fails with SIGHUP and SIGINT ignored and TERM, QUIT, USR1, ALRM and CHLD blocked"
        fi
        ok "$t passes with SIGHUP and SIGINT ignored and five signals blocked ($(grep -c '^ok' "$T/out") checks)"
done
done_testing
