#!/bin/bash
# A live torchrun job: the agent (alive) and its worker, in a session of its own as torchrun
# starts them (TORCHELASTIC_RUN_ID, LOCAL_RANK, RANK in its environment). The worker starts a
# helper that detaches (os.system("server ... &"), a double fork): the helper inherits the
# worker's environment, its parent is gone (PID 1), its group and session leader is the live
# worker, and it does not listen yet (still loading). Rule 4.2 of the verdicts calls any
# reparented process with a worker's environment that does not listen a 'sure' leftover, whatever
# its live group and session leader: the default 'gpureap reap' kills a helper of a live job.
# (Once it listens it is 'unsure': the rule knows the case, but only by the port.)
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
cat >"$T/agent.sh" <<'A'
# the agent: starts its worker in a session of its own and waits
TORCHELASTIC_RUN_ID=job-7 LOCAL_RANK=0 RANK=0 GROUP_RANK=0 \
        setsid "$GPUHOLD" pidfile "$PIDS" worker cuda 0 0 1024 daemon-worker "$PIDS" helper 0 0 512 sleep &
wait
A
export GPUHOLD PIDS
bash "$T/agent.sh" &
LAUNCHED="$LAUNCHED $!"
wait_role worker helper
w=$(pid_of worker) h=$(pid_of helper)
LAUNCHED="$LAUNCHED $w $h"
gr status --json
echo "# worker: $(jq -c ".processes[] | select(.pid == $w) | .verdict | [.judgement, .confidence, .reason]" "$T/out")"
echo "# helper: $(jq -c ".processes[] | select(.pid == $h) | [.ppid, .pgid, .sid, .verdict.judgement, .verdict.confidence, .verdict.reason]" "$T/out")"
gr reap --yes --grace 200ms --timeout 2s
f_show
alive "$w" || bad "the live worker $w was killed"
if alive "$h"; then ok "the live worker's detached helper survived the default reap"
else bad "the default reap killed $h, the detached helper of the live torchrun worker $w (its group and session leader, alive), as a 'sure' leftover"; fi
f_done
