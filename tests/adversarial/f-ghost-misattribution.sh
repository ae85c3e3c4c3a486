#!/bin/bash
# A ghost's memory is attributed to the GPU's hidden holders; with one ghost and one candidate the
# attribution is 'sure' without any lineage tying them (ghost_holders: n == 1). The candidate can
# be a live job's forked worker (a DataLoader worker of a trainer that is alive and listed), and
# the "ghost" an unrelated process that just exited on the same GPU and that the driver still
# lists while it tears its memory down (teardown: ~120 ms for 8 GiB, tens of seconds with pinned
# host memory). Step 2 of the verdicts (ghost) comes before step 3 (a live parent): the live
# worker becomes a 'sure' leftover and the default 'gpureap reap --yes' kills it.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
scenario "gpu 0 minor=0" "gpu 1 minor=1" "teardown_ms 60000"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
# a live trainer and its forked DataLoader worker (inherits its device files, as PyTorch's do)
launch pidfile "$PIDS" trainer cuda 0 0 2048 spawn-holder "$PIDS" loader sleep
wait_role trainer loader
tr=$(pid_of trainer) ld=$(pid_of loader)
LAUNCHED="$LAUNCHED $ld"
# an unrelated short job on the same GPU ends: the driver lists it for a while longer
"$GPUHOLD" pidfile "$PIDS" short cuda 0 0 256 exit
sh_pid=$(pid_of short)
gr status --json
echo "# loader $ld: $(jq -c ".processes[] | select(.pid == $ld) | .verdict | [.judgement, .confidence, .reason]" "$T/out")"
echo "# findings: $(jq -c '[.findings[] | [.kind, .pids, .confidence]]' "$T/out")"
gr reap --yes --grace 200ms --timeout 2s
f_show
if alive "$ld"; then ok "the live trainer's worker survived the default reap"
else bad "the default 'reap --yes' killed $ld, the forked worker of the live, listed trainer $tr, as the 'sure' hidden holder of PID $sh_pid, an unrelated process in teardown"; fi
alive "$tr" || bad "the trainer itself was killed"

# the usual case: num_workers=2, and 'reap --likely'
launch pidfile "$PIDS" trainer2 cuda 1 1 2048 spawn-holder "$PIDS" loader2a spawn-holder "$PIDS" loader2b sleep
wait_role trainer2 loader2a loader2b
t2=$(pid_of trainer2) la=$(pid_of loader2a) lb=$(pid_of loader2b)
LAUNCHED="$LAUNCHED $la $lb"
"$GPUHOLD" pidfile "$PIDS" short2 cuda 1 1 256 exit
gr reap --likely --yes --grace 200ms --timeout 2s
f_show
if alive "$la" && alive "$lb"; then ok "the live trainer's two workers survived 'reap --likely'"
else bad "'reap --likely' killed the DataLoader workers ($la $lb) of the live, listed trainer $t2 as 'likely' holders of an unrelated ghost in teardown"; fi
f_done
