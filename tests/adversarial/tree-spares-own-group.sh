#!/bin/bash
# Issue 9, item 5: '--tree' reached gpureap's own process group (the tee reading its output, its
# drain helper) and gpureap died of SIGPIPE in the middle of a reap.
. "$TESTLIB"
# a script without job control: its children, gpureap and tee share its process group
cat >"$T/script.sh" <<'S'
"$GPUHOLD" pidfile "$PIDS" target cuda 0 0 256 sleep &
while ! grep -q '^target ' "$PIDS"; do sleep 0.01; done
t=$(awk '$1 == "target" {print $2}' "$PIDS")
"$GPUREAP" reap --yes --tree --pid "$t" --grace 200ms --timeout 3s 2>&1 | tee "$T/tee.out" >/dev/null
echo "status ${PIPESTATUS[0]} ${PIPESTATUS[1]}" >"$T/status" # not in $PIDS: its cleanup kills every number there
S
export GPUHOLD GPUREAP PIDS T
setsid bash "$T/script.sh" &
LAUNCHED="$LAUNCHED $!"
i=0
until [ -s "$T/status" ]; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "the script never finished"
        sleep 0.01
done
LAUNCHED="$LAUNCHED $(pid_of target)"
cp "$T/tee.out" "$T/out"
grep -q "^status 0 0$" "$T/status" || fail "gpureap or tee did not exit 0: $(cat "$T/status")"
ok "gpureap and the tee reading it both exited 0"
has out "^  $(pid_of target) +ended" "the named target was reaped"
hasnt out "forked during the kill" "nothing of gpureap's own group was added"

# negative control: a target in a group of its own takes its whole group (its leader holds no
# GPU: a group with a live holder in it is never extended into, tests/adversarial/f-tree-live-group.sh)
launch pidfile "$PIDS" leader setpgid child pidfile "$PIDS" member cuda 0 0 128 sleep
wait_role leader member
gr reap --yes --tree --pid "$(pid_of member)" --grace 200ms --timeout 3s
has out "^  kill   $(pid_of leader) .*its process group" "control: --tree takes the group's other members"
wait_state "$(pid_of leader)" "gone Z"
done_testing
