#!/bin/bash
# 'reap --tree' extends the plan to each target's whole process group with only the safety
# refusals (PID 1, self, other users...), not the judgement. Without job control (a batch
# script, a Slurm batch step, 'bash run.sh' from cron) every process the script starts shares its
# group: a ghost's hidden holder left by trainer A takes trainer B -- a live job on another GPU,
# which status itself calls 'live, sure' -- and the script down with it.
# Expected: --tree spares group members that are holders judged live (or says so and needs --all);
# at least never a holder of another GPU than --gpu. The control: the ghost's holder is killed.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
cat >"$T/batch.sh" <<'B'
"$GPUHOLD" pidfile "$PIDS" trainer-a cuda 0 0 512 spawn-holder "$PIDS" loader sleep &
"$GPUHOLD" pidfile "$PIDS" trainer-b cuda 1 1 512 sleep &
wait
B
export GPUHOLD PIDS
setsid bash "$T/batch.sh" &
LAUNCHED="$LAUNCHED $!"
wait_role trainer-a loader trainer-b
a=$(pid_of trainer-a) l=$(pid_of loader) b=$(pid_of trainer-b)
sh_pid=$(awk '{print $5}' "/proc/$a/stat") # the group: the script's
LAUNCHED="$LAUNCHED $a $l $b"
kill -KILL "$a"; wait_state "$a" "gone Z"
gr status --json
echo "# loader: $(jq -r ".processes[] | select(.pid == $l) | .verdict | \"\(.judgement) \(.confidence)\"" "$T/out"), trainer B: $(jq -r ".processes[] | select(.pid == $b) | .verdict | \"\(.judgement) \(.confidence)\"" "$T/out")"
gr reap --tree --gpu 0 --yes --grace 200ms --timeout 2s
f_show
alive "$l" && fail "the ghost's holder $l was not reaped (control)"
ok "the ghost's holder was reaped (control)"
if alive "$b"; then ok "trainer B (live, GPU 1) survived 'reap --tree --gpu 0'"
else bad "'reap --tree --gpu 0' killed trainer B ($b), a live job on GPU 1 judged 'live, sure', because it shares the batch script's process group"; fi
if alive "$sh_pid"; then ok "the batch script survived"
else bad "'reap --tree' killed the batch script $sh_pid itself (no GPU)"; fi
f_done
