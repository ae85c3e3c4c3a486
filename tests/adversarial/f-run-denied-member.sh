#!/bin/bash
# A member run may not end (seventh adversarial round): 'gpureap run' as an unprivileged user
# over a tree with a setuid-root member that ignores SIGTERM (every signal of run's is denied).
# run said "0 leftover processes ended", exited 0 with nothing in its result, and logged the
# denial a thousand times; now it says the member is still running (stderr, the summary line,
# leftovers.not_ended) and still keeps the command's exit status.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (a setuid-root helper)"; exit 77; }
command -v gcc >/dev/null && command -v setpriv >/dev/null || { echo "1..0 # SKIP needs gcc and setpriv"; exit 77; }
chmod 755 "$T"
cat >"$T/rs.c" <<'C'
#include <signal.h>
#include <unistd.h>
int main(void)
{
        if (setresuid(0, 0, 0) < 0)
                return 3;
        signal(SIGTERM, SIG_IGN);
        sleep(20);
        return 0;
}
C
gcc -o "$T/rs" "$T/rs.c" || fail "cannot build the helper"
chmod 4755 "$T/rs"
mkdir -m 777 "$T/w"
cp "$GPUREAP" "$T/w/gpureap"
chmod 755 "$T/w/gpureap"
set +e
setpriv --reuid=65534 --regid=65534 --clear-groups env GPUREAP_STATE_DIR="$T/w/state" "$T/w/gpureap" run \
        --no-cgroup --grace 300ms --json "$T/w/result.json" -- \
        sh -c "$T/rs >/dev/null 2>&1 & echo \$! >$T/w/pid; sleep 0.3; exit 7" >"$T/out" 2>"$T/err"
RC=$?
set -e
p=$(cat "$T/w/pid")
echo "member $p" >>"$PIDS"
[ "$(stat -c %u "/proc/$p" 2>/dev/null)" = 0 ] || fail "the setuid member did not run as root (nosuid mount?): $(cat "$T/err")"
expect_rc 7 "the command's exit status is kept"
has err "^gpureap: 1 process of the tree could not be ended \\(PID $p\\): still running$" "said, with its PID"
has err "0 leftover processes ended \\(0 needed SIGKILL\\), 1 NOT ended" "the summary line counts it"
cp "$T/w/result.json" "$T/out"
jqok '.leftovers.not_ended == 1 and .leftovers.ended == 0' "the result counts it"
kill -KILL "$p"
done_testing
