# A real single-node Slurm cluster for the tests: munged, slurmctld and slurmd on this host, with
# every file (keys, sockets, config, state, spool, logs, pid files) under $T/slurm. Sourced after
# tests/integration/lib.sh, which makes $T and the fake device files $T/dev/nvidia0..3.
#
#   slurm_start_or_skip [PROLOG] [EPILOG]   start, or exit 77 with the reason (see below)
#   slurm_start [PROLOG] [EPILOG]           start; non-zero (and the logs' last lines) on failure
#   slurm_stop                              stop everything it started, by PID; idempotent
#   slurm_wait_job_done JOBID [SECONDS]     until the job has left the queue and its epilog ran
#   slurm_node_state                        sinfo's %T: idle, drained, draining, mixed, ...
#   slurm_wait_node_state STATE [SECONDS]   until slurm_node_state says STATE
#   slurm_node_reason                       the reason sinfo -R shows, empty when none
#   slurm_cluster_pids                      PIDs of the daemons and slurmstepds still running
#
# After slurm_start: SLURM_CONF (exported, so srun/sbatch/scontrol/sinfo talk to this cluster),
# SLURM_NODE (the node's name), SLURM_DIR ($T/slurm), SLURM_GPU_DEV ($T/slurm/dev: the character
# devices that gres.conf names; nobody opens them), SLURM_START_MS (how long the start took).
#
# The GPUs are character devices made with mknod (c 195 N, as the NVIDIA driver numbers them):
# Slurm takes only character devices for gres File=. The job's processes hold the regular fake
# files in $T/dev that the fake NVML reports; CUDA_VISIBLE_DEVICES/SLURM_JOB_GPUS index both.
#
# Processes are stopped only by PID: the daemons' pid files, and the job steps' slurmstepd
# processes, which are found by a marker in their environment (SLURM_HARNESS=$T/slurm, given to
# the daemons at start and inherited by what they fork). Nothing is killed by name.
#
# ProctrackType is proctrack/linuxproc: it needs no cgroup and writes nothing outside $T, and
# a job's setsid'd leftover survives the job (what the epilog must reap). GPUREAP_SLURM_PROCTRACK=
# proctrack/cgroup (cgroup v1 freezer here) gives what production clusters run: slurmstepd then
# kills such a leftover itself; the node is named HOST-XXXX after $T so that parallel clusters'
# cgroups differ, and slurm_stop removes the empty cgroup directories of that name.
#
# Skips: slurm_start_or_skip exits 77 when this host cannot run the cluster (not root, packages
# missing, daemons that do not come up). Set GPUREAP_SLURM_REQUIRED=1 (CI where Slurm must work)
# to make a daemon that does not come up a failure instead.

: "${T:?source tests/integration/lib.sh first}"

SLURM_DIR=$T/slurm
SLURM_GPU_DEV=$SLURM_DIR/dev
SLURM_STARTED=""
SLURM_PORTS=""
SLURM_PROCTRACK=${GPUREAP_SLURM_PROCTRACK:-proctrack/linuxproc}
SLURM_HOST=$(hostname -s)
SLURM_NODE=$SLURM_HOST
if [ "$SLURM_PROCTRACK" = proctrack/cgroup ]; then
        # the cgroup plugin makes /sys/fs/cgroup/freezer/slurm_NODE/uid_U/job_J: a node name of
        # this cluster's own keeps two clusters on one host (parallel tests) apart
        SLURM_NODE=$SLURM_NODE-$(echo "${T##*.}" | tr -dc 'A-Za-z0-9' | tr '[:upper:]' '[:lower:]')
fi

# Stop the cluster before lib.sh's cleanup removes $T; a TERM or INT (meson's timeout) goes
# through the same exit path. In a subshell, so that an error in slurm_stop (set -u) cannot keep
# cleanup from running. A test that sets its own EXIT trap must call both.
trap '( slurm_stop ) || true; cleanup' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT HUP

_slurm_now_ms() { date +%s%3N; }

# Every Slurm client a test or this file calls is bounded: a controller that does not answer
# makes the command fail (status 124) with its name on stderr, never a silent hang. srun and
# sbatch get SLURM_CMD_TIMEOUT (60 s), the queries SLURM_QUERY_TIMEOUT (20 s).
_slurm_bounded() {
        local secs=$1 rc=0
        shift
        timeout -k 2 "$secs" "$@" || rc=$?
        [ $rc -ne 124 ] && [ $rc -ne 137 ] || echo "slurm: '$*' did not finish in ${secs}s" >&2
        return $rc
}
srun() { _slurm_bounded "${SLURM_CMD_TIMEOUT:-60}" srun "$@"; }
sbatch() { _slurm_bounded "${SLURM_CMD_TIMEOUT:-60}" sbatch "$@"; }
scontrol() { _slurm_bounded "${SLURM_QUERY_TIMEOUT:-20}" scontrol "$@"; }
sinfo() { _slurm_bounded "${SLURM_QUERY_TIMEOUT:-20}" sinfo "$@"; }
squeue() { _slurm_bounded "${SLURM_QUERY_TIMEOUT:-20}" squeue "$@"; }
scancel() { _slurm_bounded "${SLURM_QUERY_TIMEOUT:-20}" scancel "$@"; }
munge() { _slurm_bounded 10 munge "$@"; }
unmunge() { _slurm_bounded 10 unmunge "$@"; }

# GPUREAP_SLURM_TRACE=FILE: a timestamped trace (set -x) of the test script into FILE, to find
# where time goes
if [ -n "${GPUREAP_SLURM_TRACE:-}" ]; then
        exec 9>>"$GPUREAP_SLURM_TRACE"
        BASH_XTRACEFD=9
        PS4='+ ${EPOCHREALTIME} ${FUNCNAME[0]:-main}: '
        set -x
fi

# _slurm_free_port: sets SLURM_PORT to a TCP port nobody listens on (/proc/net/tcp{,6}) and
# that this cluster has not taken yet
_slurm_free_port() {
        local used port i
        used=$(awk 'NR > 1 { split($2, a, ":"); print strtonum("0x" a[2]) }' \
                /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u)
        for i in $(seq 1 100); do
                port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
                case " $SLURM_PORTS " in *" $port "*) continue ;; esac
                if ! grep -qx "$port" <<<"$used"; then
                        SLURM_PORTS="$SLURM_PORTS $port"
                        SLURM_PORT=$port
                        return 0
                fi
        done
        return 1
}

# _slurm_has_marker PID: the process carries this cluster's marker (see slurm_cluster_pids)
_slurm_has_marker() {
        grep -qzxF "SLURM_HARNESS=$SLURM_DIR" "/proc/$1/environ" 2>/dev/null
}

# _slurm_pid FILE: the PID in a pid file, if it names a live process of this cluster (a PID
# that was reused by another process since is not ours)
_slurm_pid() {
        local pid
        pid=$(cat "$1" 2>/dev/null) || return 1
        case $pid in '' | 0 | 1 | *[!0-9]*) return 1 ;; esac
        kill -0 "$pid" 2>/dev/null && _slurm_has_marker "$pid" || return 1
        echo "$pid"
}

# _slurm_tail: the last lines of every log, to stderr
_slurm_tail() {
        local f
        for f in "$SLURM_DIR"/munged.log "$SLURM_DIR"/slurmctld.log "$SLURM_DIR"/slurmd.log \
                "$SLURM_DIR"/slurmctld.out "$SLURM_DIR"/slurmd.out "$SLURM_DIR"/munged.out; do
                [ -s "$f" ] || continue
                echo "--- ${f#"$SLURM_DIR"/} (last lines)" >&2
                tail -n 25 "$f" >&2
        done
}

_slurm_fail() {
        echo "slurm: $*" >&2
        _slurm_tail
        return 1
}

# _slurm_poll TENTHS COMMAND...: until COMMAND succeeds, at most TENTHS tenths of a second
_slurm_poll() {
        local n=$1 i=0
        shift
        until "$@" >/dev/null 2>&1; do
                i=$((i + 1))
                [ $i -le "$n" ] || return 1
                sleep 0.1
        done
}

# slurm_missing: why this host cannot run the cluster, empty when it can
slurm_missing() {
        local p
        [ "$(id -u)" -eq 0 ] || { echo "not root (slurmd must run as root)"; return; }
        for p in munged mungekey munge unmunge slurmctld slurmd srun sbatch scontrol sinfo squeue scancel mknod; do
                command -v "$p" >/dev/null 2>&1 || { echo "'$p' not found (scripts/install-deps.sh installs slurmctld slurmd slurm-client munge)"; return; }
        done
}

_slurm_munge_ok() {
        munge -n -S "$SLURM_DIR/munge/munge.socket" | unmunge -S "$SLURM_DIR/munge/munge.socket"
}

_slurm_ctld_up() {
        scontrol ping | grep -q 'is UP'
}


slurm_start() {
        local prolog=${1:-} epilog=${2:-} t0 ctld_port slurmd_port cpus i s pid
        t0=$(_slurm_now_ms)
        s=$(slurm_missing)
        [ -z "$s" ] || { echo "slurm: $s" >&2; return 1; }
        for s in "$prolog" "$epilog"; do
                [ -z "$s" ] || case $s in /*) [ -x "$s" ] || { echo "slurm: '$s' is not executable" >&2; return 1; } ;;
                *) echo "slurm: '$s' is not an absolute path" >&2; return 1 ;; esac
        done
        # a test that runs inside a Slurm job must not talk to that job's cluster
        for s in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do
                unset "$s"
        done
        unset SQUEUE_FORMAT SQUEUE_FORMAT2 SINFO_FORMAT SBATCH_PARTITION SRUN_PARTITION

        mkdir -p "$SLURM_DIR"/munge "$SLURM_DIR"/state "$SLURM_DIR"/spool "$SLURM_GPU_DEV"
        chmod 0700 "$SLURM_DIR" "$SLURM_DIR"/munge
        for i in 0 1 2 3; do
                mknod "$SLURM_GPU_DEV/nvidia$i" c 195 "$i" || { echo "slurm: mknod failed" >&2; return 1; }
        done

        # munged: its own key, socket, pid, log and seed files
        dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
        chmod 0400 "$SLURM_DIR/munge/munge.key"
        SLURM_HARNESS=$SLURM_DIR munged -f \
                --socket="$SLURM_DIR/munge/munge.socket" \
                --key-file="$SLURM_DIR/munge/munge.key" \
                --pid-file="$SLURM_DIR/munge/munged.pid" \
                --log-file="$SLURM_DIR/munged.log" \
                --seed-file="$SLURM_DIR/munge/munged.seed" \
                </dev/null >"$SLURM_DIR/munged.out" 2>&1 || { _slurm_fail "munged did not start"; return 1; }
        SLURM_STARTED=1
        _slurm_poll 50 _slurm_munge_ok || { _slurm_fail "munged does not answer on its socket"; return 1; }

        _slurm_free_port && ctld_port=$SLURM_PORT && _slurm_free_port && slurmd_port=$SLURM_PORT ||
                { echo "slurm: no free TCP port" >&2; return 1; }
        # the node as slurmd finds it (sockets, cores, threads), else nproc's count
        cpus=$(slurmd -C 2>/dev/null | sed -n 's/^NodeName=[^ ]* \(CPUs=.*\) RealMemory=.*/\1/p')
        [ -n "$cpus" ] || cpus="CPUs=$(nproc)"

        cat >"$SLURM_DIR/slurm.conf" <<EOF
# written by tests/slurm/cluster.sh
ClusterName=gpureap-test
SlurmctldHost=$SLURM_HOST(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$SLURM_DIR/plugstack.conf
ProctrackType=$SLURM_PROCTRACK
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SchedulerType=sched/builtin
# the main scheduling loop every second, not every 60 s: a job queued behind another job's epilog
# (node completing) can miss the event that schedules it at once when this host is loaded
SchedulerParameters=sched_interval=1
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MailProg=/bin/true
KillWait=2
MinJobAge=600
PrologEpilogTimeout=60
PrologFlags=Alloc
${prolog:+Prolog=$prolog}
${epilog:+Epilog=$epilog}
NodeName=$SLURM_NODE NodeHostname=$SLURM_HOST NodeAddr=127.0.0.1 $cpus Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP
EOF
        : >"$SLURM_DIR/plugstack.conf"
        cat >"$SLURM_DIR/gres.conf" <<EOF
AutoDetect=off
Name=gpu File=$SLURM_GPU_DEV/nvidia[0-3]
EOF
        if [ "$SLURM_PROCTRACK" = proctrack/cgroup ]; then
                printf 'CgroupPlugin=autodetect\nCgroupMountpoint=/sys/fs/cgroup\n' >"$SLURM_DIR/cgroup.conf"
        fi
        export SLURM_CONF=$SLURM_DIR/slurm.conf

        # -c: no state from an earlier run; -f: this config; both daemonize and write pid files
        SLURM_HARNESS=$SLURM_DIR slurmctld -c -f "$SLURM_CONF" </dev/null >"$SLURM_DIR/slurmctld.out" 2>&1 ||
                { _slurm_fail "slurmctld did not start"; return 1; }
        _slurm_poll 100 _slurm_ctld_up || { _slurm_fail "slurmctld does not answer 'scontrol ping'"; return 1; }
        SLURM_HARNESS=$SLURM_DIR slurmd -f "$SLURM_CONF" -N "$SLURM_NODE" </dev/null >"$SLURM_DIR/slurmd.out" 2>&1 ||
                { _slurm_fail "slurmd did not start"; return 1; }
        if ! _slurm_poll 150 _slurm_node_is idle; then
                _slurm_fail "node '$SLURM_NODE' is not idle: '$(slurm_node_state)' $(slurm_node_reason)"
                return 1
        fi
        for pid in "$SLURM_DIR"/slurmctld.pid "$SLURM_DIR"/slurmd.pid; do
                _slurm_pid "$pid" >/dev/null || { _slurm_fail "no live process in $pid"; return 1; }
        done
        # shellcheck disable=SC2034 # for the tests
        SLURM_START_MS=$(($(_slurm_now_ms) - t0))
}

slurm_start_or_skip() {
        local why
        why=$(slurm_missing)
        if [ -n "$why" ]; then
                echo "SKIP: slurm: $why"
                exit 77
        fi
        if ! slurm_start "$@"; then
                slurm_stop
                if [ "${GPUREAP_SLURM_REQUIRED:-0}" = 1 ]; then
                        echo "FAIL: the Slurm cluster did not come up (GPUREAP_SLURM_REQUIRED=1)" >&2
                        exit 1
                fi
                echo "SKIP: slurm: the cluster did not come up here (logs above)"
                exit 77
        fi
}

# slurm_cluster_pids: PIDs whose environment carries this cluster's marker (the daemons and the
# slurmstepd processes they forked); never this shell or PID 1. One grep over all of /proc, not
# a process per PID: a loaded host with thousands of processes (zombies that PID 1 reaps late
# count too) made a per-PID loop take minutes.
slurm_cluster_pids() {
        grep -lzxF "SLURM_HARNESS=$SLURM_DIR" /proc/[0-9]*/environ 2>/dev/null |
                sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | awk -v self=$$ '$1 > 1 && $1 != self'
}

# _slurm_kill_wait SIGNAL TENTHS PID...: signal each PID, wait until all are gone
_slurm_kill_wait() {
        local sig=$1 n=$2 pid i=0 alive
        shift 2
        [ $# -gt 0 ] || return 0
        for pid in "$@"; do kill "-$sig" "$pid" 2>/dev/null || true; done
        while :; do
                alive=""
                for pid in "$@"; do
                        # a zombie that is not ours to reap counts as gone
                        if kill -0 "$pid" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)" != Z ]; then
                                alive="$alive $pid"
                        fi
                done
                [ -n "$alive" ] || return 0
                i=$((i + 1))
                [ $i -le "$n" ] || { echo "slurm: still alive after SIG$sig:$alive" >&2; return 1; }
                sleep 0.1
        done
}

slurm_stop() {
        local pids p
        [ -n "$SLURM_STARTED" ] || return 0
        SLURM_STARTED=""
        # end the jobs first, so that slurmd ends their steps and runs the epilogs
        if _slurm_pid "$SLURM_DIR/slurmctld.pid" >/dev/null && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
                # shellcheck disable=SC2046
                scancel --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
                _slurm_poll 50 _slurm_queue_empty || true
        fi
        pids=""
        for p in slurmd slurmctld; do
                p=$(_slurm_pid "$SLURM_DIR/$p.pid") && pids="$pids $p"
        done
        # shellcheck disable=SC2086
        _slurm_kill_wait TERM 100 $pids || _slurm_kill_wait KILL 20 $pids || true
        # slurmstepd outlives slurmd by design; and whatever else still carries the marker
        # shellcheck disable=SC2046
        _slurm_kill_wait KILL 20 $(slurm_cluster_pids | grep -vxF "$(cat "$SLURM_DIR/munge/munged.pid" 2>/dev/null)") || true
        p=$(_slurm_pid "$SLURM_DIR/munge/munged.pid") && { _slurm_kill_wait TERM 50 "$p" || _slurm_kill_wait KILL 20 "$p" || true; }
        if [ "$SLURM_PROCTRACK" = proctrack/cgroup ]; then
                # only directories named after this cluster's node, and rmdir fails on a busy one
                find /sys/fs/cgroup/*/"slurm_$SLURM_NODE" -depth -type d -exec rmdir {} + 2>/dev/null || true
        fi
        return 0
}

_slurm_queue_empty() {
        [ -z "$(squeue -h -o %i 2>/dev/null)" ]
}

_slurm_job_gone() {
        local st
        st=$(scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
        case $st in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED) ;;
        *) return 1 ;;
        esac
        # the node has finished the job's epilog once it no longer shows COMPLETING
        ! scontrol -o show job "$1" 2>/dev/null | grep -q 'JobState=COMPLETING' &&
                ! sinfo -h -N -n "$SLURM_NODE" -o %T 2>/dev/null | grep -q 'completing'
}

# slurm_wait_job_done JOBID [SECONDS]: until the job has ended and its epilog has run (20 s)
slurm_wait_job_done() {
        local job=$1 secs=${2:-20}
        _slurm_poll $((secs * 10)) _slurm_job_gone "$job" ||
                { echo "slurm: job $job not done after ${secs}s: $(scontrol -o show job "$job" 2>&1 | grep -o 'JobState=[^ ]*')" >&2; return 1; }
}

# slurm_node_state: idle, drain, draining, mixed, allocated, down, ... (sinfo's long form)
slurm_node_state() {
        sinfo -h -N -n "$SLURM_NODE" -o %T 2>/dev/null | head -n 1 | sed 's/[*~#!%$@^-]*$//'
}

# slurm_wait_node_state STATE [SECONDS]: until slurm_node_state is STATE (10 s); the state
# changes after an epilog or a prolog fails, or after an scontrol update, are not immediate
slurm_wait_node_state() {
        local want=$1 secs=${2:-10}
        _slurm_poll $((secs * 10)) _slurm_node_is "$want" ||
                { echo "slurm: node $SLURM_NODE is '$(slurm_node_state)', not '$want', after ${secs}s" >&2; return 1; }
}

_slurm_node_is() {
        [ "$(slurm_node_state)" = "$1" ]
}

# slurm_node_reason: the reason sinfo -R shows for the node, empty when none
slurm_node_reason() {
        sinfo -h -R -n "$SLURM_NODE" -o %E 2>/dev/null | head -n 1
}
