#!/bin/bash
# While reap's ladder runs it looks for what its targets fork (a leftover that forks on
# SIGTERM). Before, a process of a target's group whose leader had gone, born up to a second
# before the snapshot, counted as "forked by a member" whoever its parent was, and got only the
# safety rules: a live job sharing the leftover's group was killed (found by the adversarial
# review), with --pid, with --only (serve's --reap-after), when its live launcher forked a new
# worker during the grace, and outside --user. Now the snapshot's processes keep the plan's
# verdict, a group shared with anyone alive but the targets tells nothing of who forked what,
# and newcomers get the plan's selection. Also: --tree never extends into the group of one of
# gpureap's callers (timeout(1) makes a group of its own; the shell's, with the pipe reading
# gpureap's output, is then not gpureap's).
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
SG=$(cd "$(dirname "$0")" && pwd)/shared-group.py
alive() { [ -d "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
end_all() {
        local p
        for p in $(awk '$2 ~ /^[0-9]+$/ && $2 > 1 {print $2}' "$PIDS"); do kill -KILL "$p" 2>/dev/null || true; done
        for p in $(awk '$2 ~ /^[0-9]+$/ && $2 > 1 {print $2}' "$PIDS"); do wait_state "$p" gone; done
        : >"$PIDS"
}
start() { # DELAY [L_UID]
        python3 "$SG" "$PIDS" "$@"
        wait_role L Q J
        L=$(pid_of L) J=$(pid_of J) Q=$(pid_of Q)
}
check_spared() { # WHAT PIDS...
        local what=$1 p
        shift
        alive "$L" && fail "$what: the leftover $L was not ended: $(cat "$T/out")"
        for p in "$@"; do
                alive "$p" || fail "$what: the live job's $p was killed: $(cat "$T/out")"
        done
        ok "$what: the leftover ended, the live job ($*) spared"
}

start -1
gr status --json
jqok ".processes[] | select(.pid == $J) | .verdict.judgement == \"live\"" "J, the live launcher's child, is a live job"
jqok ".processes[] | select(.pid == $L) | .verdict.judgement == \"leftover\" and .verdict.confidence == \"sure\"" "L is a sure leftover"
gr reap --gpu 0 --pid "$L" --yes --grace 300ms --timeout 5s
check_spared "reap --pid L" "$J" "$Q"
end_all

start -1
st=$(awk '{print $22}' "/proc/$L/stat")
gr reap --gpu 0 --only "$L@$st" --yes --grace 300ms --timeout 5s
check_spared "reap --only L@START (serve's --reap-after)" "$J" "$Q"
end_all

start 1.2
sleep 0.9
gr reap --gpu 0 --pid "$L" --yes --grace 1500ms --timeout 6s
wait_role J2
check_spared "a new worker of the live launcher forked during the grace" "$J" "$Q" "$(pid_of J2)"
end_all

if [ "$(id -u)" -eq 0 ]; then
        chmod 755 "$T"
        chmod 666 "$PIDS" "$T"/dev/* 2>/dev/null || true
        chmod 777 "$T/ctx" 2>/dev/null || true
        start -1 4242
        gr reap --gpu 0 --all-users --user 4242 --pid "$L" --yes --grace 300ms --timeout 5s
        check_spared "--user 4242: root's live job" "$J" "$Q"
        end_all
fi

# --tree under timeout(1), in a script without job control: the leftover shares the script's
# group, which holds the pipe reading gpureap's output
cat >"$T/tree.sh" <<SH
"$GPUHOLD" pidfile "$PIDS" L cuda 0 0 100 sleep &
while ! grep -q '^L ' "$PIDS"; do sleep 0.01; done
timeout 20 "$GPUREAP" reap --tree --pid \$! --yes --grace 300ms 2>&1 | { while read -r l; do echo "reader: \$l"; done; echo "reader: reached EOF"; }
echo "pipeline \${PIPESTATUS[*]}"
SH
timeout 40 bash "$T/tree.sh" >"$T/tree.out" 2>&1 || true
sed 's/^/# /' "$T/tree.out"
grep -q "reader: reached EOF" "$T/tree.out" || fail "the pipe's reader was killed: $(cat "$T/tree.out")"
grep -q "^pipeline 0 0" "$T/tree.out" || fail "gpureap or the reader did not exit 0: $(grep pipeline "$T/tree.out")"
L=$(pid_of L)
alive "$L" && fail "--tree under timeout: the leftover $L was not ended"
ok "--tree under timeout(1): the leftover ended, the script's group (the pipe's reader) was not extended into"
done_testing
