#!/bin/bash
# A process whose environment is longer than the 32 KiB gpureap reads of /proc/PID/environ: the
# read is truncated (-EFBIG) and gr_parse_environ_marks parses the last, cut entry as if whole.
#   1. a live job under 'gpureap run' whose GPUREAP_RUN_PID=NNNNN is cut to NNNN: step 1 of the
#      verdicts then finds no supervisor and calls it a 'sure' leftover; the default plan of
#      'gpureap reap' kills a supervised, live job;
#   2. a live Slurm job 1234's worker whose SLURM_JOB_ID=1234 is cut to 12: the epilog of job 12
#      takes it as job 12's escapee and kills it (with f-epilog-stale-job-env.sh's finding).
# HPC module environments of 30-60 KiB are common; the cut needs the entry to straddle the limit.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
scenario "gpu 0 minor=0" "gpu 1 minor=1"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
CUT=$(dirname "$0")/f-environ-cut.py

# 1. gpureap run -- (env cut so that GPUREAP_RUN_PID keeps all digits but the last) gpuhold
"$GPUREAP" run -- python3 -c '
import os, subprocess, sys
v = os.environ["GPUREAP_RUN_PID"]
os.execv(sys.argv[1], [sys.argv[1], "GPUREAP_RUN_PID", str(len(v) - 1), "--", sys.argv[2],
         "pidfile", sys.argv[3], "supervised", "cuda", "0", "0", "256", "sleep"])' \
        "$CUT" "$GPUHOLD" "$PIDS" >"$T/run.out" 2>&1 &
runpid=$!
LAUNCHED="$LAUNCHED $runpid"
wait_role supervised
sup=$(pid_of supervised)
LAUNCHED="$LAUNCHED $sup"
len=$(wc -c <"/proc/$sup/environ")
grep -qa "GPUREAP_RUN_PID=$runpid" "/proc/$sup/environ" || fail "no GPUREAP_RUN_PID=$runpid in its environment"
ok "the supervised holder $sup (gpureap run $runpid, alive) has a $len-byte environment"
gr status --json
v=$(jq -r ".processes[] | select(.pid == $sup) | \"\(.run_pid) \(.verdict.judgement) \(.verdict.confidence)\"" "$T/out")
echo "# status: run_pid judgement confidence = $v"
gr reap --dry-run
f_show
if grep -Eq "^  kill   $sup " "$T/out"; then
        bad "the default plan kills $sup, a live job supervised by the live 'gpureap run' $runpid: its GPUREAP_RUN_PID was read cut ($v)"
else
        ok "the supervised job is spared"
fi
kill -TERM "$runpid"; wait "$runpid" 2>/dev/null || true

# 2. job 1234's live worker, SLURM_JOB_ID=1234 cut to "12", in job 1234's cgroup; job 12's epilog
cg=$(f_cgroup "f-$$.slice/slurmstepd.scope/job_1234/step_0/user/task_0")
SLURM_JOB_ID=1234 python3 "$CUT" SLURM_JOB_ID 2 -- "$GPUHOLD" pidfile "$PIDS" job1234 cuda 1 1 256 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role job1234
w=$(pid_of job1234)
f_move "$w" "$cg"
gr status --json
echo "# status: SLURM_JOB_ID read as $(jq -r ".processes[] | select(.pid == $w) | .environ.SLURM_JOB_ID" "$T/out")"
SLURM_JOB_ID=12 SLURM_JOB_UID=0 gr slurm-epilog --timeout 3s --grace 200ms
f_show
if alive "$w"; then ok "job 1234's worker survived job 12's epilog"
else bad "job 12's epilog killed $w, a live worker of job 1234 (its cgroup job_1234), whose SLURM_JOB_ID=1234 was read cut to '12'"; fi
f_done
