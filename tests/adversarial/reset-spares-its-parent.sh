#!/bin/bash
# Issue 9, item 4: 'reset --stop-monitors' killed its own parent, an NVML client that ran the
# reset (a monitoring agent, a health check). The ancestors rule holds for every command that
# signals.
. "$TESTLIB"
export GPUREAP_NVIDIA_SMI=$FAKE_SMI FAKE_SMI_LOG=$T/smi.log FAKE_SMI_MODE=ok
scenario "gpu 0" "stale 0 1024"
# an agent that holds the GPU's files as an NVML client does, and runs the reset itself
cat >"$T/agent.sh" <<'A'
exec 3<"$GPUREAP_DEV_DIR/nvidiactl" 4<"$GPUREAP_DEV_DIR/nvidia0" 5<"$GPUREAP_DEV_DIR/nvidia0"
echo "agent $$" >>"$PIDS"
"$GPUREAP" reset --gpu 0 --yes --stop-monitors >"$T/out" 2>"$T/err"
echo "$?" >"$T/rc" # never into $PIDS: its cleanup kills every number there
exec sleep 1000
A
export GPUREAP PIDS T
launch pidfile "$PIDS" other monitor 0 sleep
wait_role other
other=$(pid_of other)
bash "$T/agent.sh" &
agent=$!
LAUNCHED="$LAUNCHED $agent"
i=0
until [ -s "$T/rc" ]; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "the agent's reset never returned"
        kill -0 "$agent" 2>/dev/null || fail "the agent that ran the reset was killed"
        sleep 0.01
done
kill -0 "$agent" || fail "the agent that ran the reset was killed"
ok "the agent (gpureap's parent, a monitor of GPU 0) lives"
has out "^  spare   $agent .*gpureap itself or one of its ancestors" "it is named and spared"
has out "^  monitor $other +ended" "the other monitor was stopped"
[ "$(cat "$T/rc")" = 1 ] || fail "expected the reset refused (exit 1) while a monitor is left: $(cat "$T/rc")"
ok "a monitor left: no reset attempted, exit 1"
[ ! -s "$T/smi.log" ] || fail "the fake nvidia-smi was asked for a reset while a monitor held the GPU"
ok "nvidia-smi was not run"
done_testing
