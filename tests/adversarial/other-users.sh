#!/bin/bash
# Issue 9, item 3: other users' processes were killed without --all-users when named by --pid or
# pulled in by --tree (their uid was read only for holders; the plan printed "uid 0"). Every
# target's owner is read at plan time and checked again through the pidfd before the signal.
. "$TESTLIB"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
        echo "1..0 # SKIP needs root and setpriv"
        exit 77
fi
chmod 0755 "$T"; chmod 0666 "$T"/dev/* "$PIDS"; chmod 1777 "$T/ctx"
# another user's plain process (no GPU) and one holding a GPU
setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" plain sleep &
LAUNCHED="$LAUNCHED $!"
setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" holder cuda 0 0 64 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role plain holder
plain=$(pid_of plain); holder=$(pid_of holder)
gr reap --yes --pid "$plain,$holder" --timeout 1s
has out "^  spare  $plain .*another user's process" "a non-holder named by --pid: spared"
has out "^  spare  $holder .*another user's process" "a holder named by --pid: spared"
hasnt out "uid 0 .*$plain|kill   $plain" "never planned as uid 0"
kill -0 "$plain" && kill -0 "$holder" || fail "another user's process was killed"
ok "both live"

# --tree: our own target shares a process group with another user's process
cat >"$T/group.sh" <<'G'
"$GPUHOLD" pidfile "$PIDS" mine sleep &
setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" theirs sleep &
wait
G
export GPUHOLD PIDS
setsid bash "$T/group.sh" &
LAUNCHED="$LAUNCHED $!"
wait_role mine theirs
mine=$(pid_of mine); theirs=$(pid_of theirs)
LAUNCHED="$LAUNCHED $mine $theirs"
gr reap --yes --tree --pid "$mine" --grace 200ms --timeout 2s
has out "^  kill   $mine " "our process is a target"
has out "^  spare  $theirs .*another user's process" "its group member of another user is spared"
kill -0 "$theirs" || fail "--tree killed another user's process"
ok "another user's group member lives"
wait_state "$mine" "gone Z"

# the owner is checked again just before the signal: a target that becomes another user's
# between the plan and the signal is skipped
"$GPUHOLD" pidfile "$PIDS" turncoat setuid-on-usr1 4242 &
LAUNCHED="$LAUNCHED $!"
wait_role turncoat
tc=$(pid_of turncoat)
GPUREAP_TEST_BEFORE_SIGNAL="kill -USR1 $tc; while ! grep -q '^Uid:.4242' /proc/$tc/status; do sleep 0.01; done" \
        "$GPUREAP_TEST_HOOKS" reap --yes --pid "$tc" --grace 200ms --timeout 1s >"$T/out" 2>"$T/err" || true
has out "^  kill   $tc +gpuhold +uid 0 " "planned while it was ours"
has out "^  $tc +changed" "the owner changed after the plan: skipped"
kill -0 "$tc" || fail "a process that became another user's was killed"
ok "it lives"
done_testing
