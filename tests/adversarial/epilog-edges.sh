#!/bin/bash
# slurm-epilog where the third adversarial round found a job's leftover left while the epilog
# reported clean, or a filter dropped without a word:
# - the epilog's first look answers and reap's own look times out (a slow driver): reap ended
#   nothing; now the job's holders are ended by PID from /proc, as when no look answers;
# - a leftover of the job on a GPU outside SLURM_JOB_GPUS was out of scope without a word;
# - an invalid SLURM_JOB_UID dropped the user filter silently;
# - in a PID namespace of its own, memory of PIDs it cannot see on the job's GPU read as busy,
#   and the epilog exited 0.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
job() { # ROLE JOB MINOR: a process of job JOB on GPU MINOR, in a session of its own
        env SLURM_JOB_ID="$2" setsid -f "$GPUHOLD" cuda "$3" "$3" 64 pidfile "$PIDS" "$1" sleep </dev/null >/dev/null 2>&1 &
        LAUNCHED="$LAUNCHED $!"
        wait_role "$1"
        LAUNCHED="$LAUNCHED $(pid_of "$1")"
}

# a driver that answers each memory query in 2 s: the epilog's first look (a third of 7 s) gets
# its answer, reap's (a third of what is left) does not
scenario "gpu 0 minor=0" "delay nvmlDeviceGetMemoryInfo_v2 2000"
job slow 57 0
SLURM_JOB_ID=57 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0 gr slurm-epilog --timeout 7s --grace 200ms
echo "# slow driver: exit $RC: $(tr '\n' ' ' <"$T/err" | cut -c1-300)"
wait_state "$(pid_of slow)" "Z gone"
ok "a slow driver that answered the first look only: the job's leftover was still ended (exit $RC)"
[ "$RC" -ne 0 ] || fail "the epilog says clean with a driver it could not read in time"
ok "and the epilog did not say clean"

# a process of the job on GPU 1, which SLURM_JOB_GPUS does not name
scenario "gpu 0 minor=0" "gpu 1 minor=1"
job other 58 1
echo "$(pid_of other)" >"$(f_cgroup "gr-epi-$$.slice/job_58/step_0")/cgroup.procs" # in the job's cgroup
SLURM_JOB_ID=58 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0 gr slurm-epilog --timeout 10s --grace 200ms
has err "holds GPU 1, which is not in SLURM_JOB_GPUS" "the epilog says the job holds a GPU it was not given"
wait_state "$(pid_of other)" "Z gone"
ok "and reaps it there (exit $RC)"
expect_rc 0 "its GPUs, GPU 1 included, are clean after it"

# an invalid SLURM_JOB_UID: refused, nothing reaped
job uidless 59 0
SLURM_JOB_ID=59 SLURM_JOB_UID=nobody SLURM_JOB_GPUS=0 gr slurm-epilog --timeout 5s
expect_rc 2 "an invalid SLURM_JOB_UID is a usage error"
has err "invalid SLURM_JOB_UID 'nobody'" "it says so"
alive "$(pid_of uidless)" || fail "the epilog with an invalid SLURM_JOB_UID killed the job's process"
ok "and nothing was reaped"
kill -KILL "$(pid_of uidless)"

# a live process of the job's user in a login session that only carries the job's SLURM_JOB_ID
# (the shell salloc gave): judged live, it is spared on a GPU the job was given and widens
# nothing beyond them (found by the fourth adversarial review: killed, exit 0); control: an
# escapee of the job that is not judged live (its own session, its launcher gone) is reaped
sess=$(f_cgroup "gr-epi-$$.slice/user-4243.slice/session-9.scope")
chmod 0755 "$T"; chmod 0666 "$T"/dev/* "$PIDS"; chmod 1777 "$T/ctx"
for given in 0 1; do
        setpriv --reuid=4243 --regid=4243 --clear-groups env SLURM_JOB_ID=77 \
                "$GPUHOLD" cuda 1 1 64 listen "$PIDS" pidfile "$PIDS" "srv$given" sleep &
        LAUNCHED="$LAUNCHED $!"
        wait_role "srv$given"
        srv=$(pid_of "srv$given")
        echo "$srv" >"$sess/cgroup.procs"
        SLURM_JOB_ID=77 SLURM_JOB_UID=4243 SLURM_JOB_GPUS=$given gr slurm-epilog --timeout 5s --grace 200ms
        alive "$srv" || fail "the epilog (SLURM_JOB_GPUS=$given) killed a live server that only carries the job's id"
        ok "a live process that only carries the job's id is spared (SLURM_JOB_GPUS=$given, exit $RC)"
        kill -KILL "$srv"; wait_state "$srv" "Z gone"
done
setpriv --reuid=4243 --regid=4243 --clear-groups env SLURM_JOB_ID=78 \
        "$GPUHOLD" child-exit-on-usr1 0 setsid cuda 1 1 64 pidfile "$PIDS" esc sleep &
LAUNCHED="$LAUNCHED $!"
wait_role esc
esc=$(pid_of esc)
echo "$esc" >"$sess/cgroup.procs"
kill -USR1 "$(awk '$1 == "esc" {print $2}' "$PIDS" | head -n 1)" 2>/dev/null || true
SLURM_JOB_ID=78 SLURM_JOB_UID=4243 SLURM_JOB_GPUS=1 gr slurm-epilog --timeout 5s --grace 200ms
wait_state "$esc" "Z gone"
ok "(control) the job's escapee that is not judged live is reaped (exit $RC)"

# in a PID namespace of its own, the driver lists a PID it cannot see on the job's GPU
if [ "$(id -u)" -eq 0 ] && unshare -p -f --mount-proc true 2>/dev/null; then
        job hidden 60 0
        set +e
        SLURM_JOB_ID=60 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0 unshare -p -f --kill-child --mount-proc \
                "$GPUREAP" slurm-epilog --timeout 3s >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        expect_rc 1 "inside a PID namespace, memory of PIDs it cannot see on the job's GPU: not clean"
        has err "cannot see \\(another PID namespace\\): the job's end cannot be verified" "it says why"
else
        echo "# cannot make a PID namespace with its own /proc here: that case not checked"
fi
f_done
