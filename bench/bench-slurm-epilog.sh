#!/bin/bash
# What 'gpureap slurm-epilog' adds to the end of a job, on the real single-node cluster of the
# tests (tests/slurm/cluster.sh: slurmctld, slurmd, munge; the fake driver). Jobs of three kinds,
# interleaved, RUNS of each:
#   clean      the job's task exits, nothing is left
#   leftover   the task leaves one setsid'd process holding its GPU (1 GiB)
#   leftover8  the task leaves eight such processes (an inference server's workers)
# For each job: Slurm's own teardown (from the task's last instruction until slurmd starts the
# epilog) and the epilog's run (gpureap slurm-epilog, start to exit, as the wrapper times it).
#   bench/bench-slurm-epilog.sh BUILD_DIR [RUNS]
# Needs root and the Debian packages slurmctld slurmd slurm-client munge.
set -u
B=$(realpath "${1:?build dir}") N=${2:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
export GPUREAP=$B/src/gpureap GPUHOLD=$B/tests/gpuhold FAKE_NVML=$B/tests/libnvidia-ml.so.1
export TESTLIB=$HERE/../tests/integration/lib.sh
. "$TESTLIB"
. "$HERE/../tests/slurm/cluster.sh"
set +e
export PIDS
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2" "gpu 3 minor=3"
{
        echo '#!/bin/sh'
        env | grep -E '^GPUREAP_[A-Z_]*=' | sed "s/'/'\\\\''/g; s/^\([A-Z_]*\)=\(.*\)$/export \1='\2'/"
        echo "s=\$(date +%s%N)"
        echo "'$GPUREAP' slurm-epilog --timeout 20s --grace 1s >>'$T/epilog.log' 2>&1; r=\$?"
        echo "echo \"\$SLURM_JOB_ID \$s \$(date +%s%N) \$r\" >>'$T/epilog.times'"
        echo "exit \$r"
} >"$T/epilog"
chmod 0755 "$T/epilog"
slurm_start "" "$T/epilog" || { echo "the cluster did not start"; exit 1; }
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, $(srun --version), $SLURM_PROCTRACK, cluster up in $SLURM_START_MS ms"

job() { # KIND: run one job, print "KIND JOBID TASK_END_NS"
        local k=$1 n=0
        case $k in leftover) n=1 ;; leftover8) n=8 ;; esac
        srun -n1 --gres=gpu:1 bash -c 'g=${CUDA_VISIBLE_DEVICES%%,*}
                for i in $(seq '"$n"'); do
                        setsid "$GPUHOLD" pidfile "$PIDS" left-$SLURM_JOB_ID-$i cuda $g $g 1024 sleep </dev/null >/dev/null 2>&1 &
                done
                while [ "$(grep -c "^left-$SLURM_JOB_ID-" "$PIDS")" -lt '"$n"' ]; do sleep 0.01; done
                echo "'"$k"' $SLURM_JOB_ID $(date +%s%N)"'
}
: >"$T/jobs"
for i in $(seq "$N"); do
        for k in clean leftover leftover8; do
                job $k >>"$T/jobs" || echo "job $k failed" >&2
        done
done
# every epilog has run
for _ in $(seq 600); do [ "$(wc -l <"$T/epilog.times" 2>/dev/null || echo 0)" -ge $((N * 3)) ] && break; sleep 0.1; done
left=0
for p in $(awk '$1 ~ /^left-/ {print $2}' "$PIDS"); do # alive: not gone, not a zombie
        [ -d "/proc/$p" ] && [ "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)" != Z ] && left=$((left + 1))
done
echo "leftover processes still alive after the epilogs: $left of $(grep -c '^left-' "$PIDS")"
[ $left -eq 0 ] || { echo "--- the epilogs said:"; tail -n 40 "$T/epilog.log"; }
printf "%-10s %5s %22s %22s %8s\n" job runs "slurm teardown ms" "gpureap epilog ms" failed
awk 'NR == FNR { s[$1] = $2; e[$1] = $3; r[$1] = $4; next }
     { k = $1; j = $2; if (!(j in s)) next
       n[k]++; td[k, n[k]] = (s[j] - $3) / 1e6; ep[k, n[k]] = (e[j] - s[j]) / 1e6; if (r[j] != 0) bad[k]++ }
     function med(a, k, m,    i, j, t, v) { for (i = 1; i <= m; i++) v[i] = a[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
     END { for (k in n) printf "%-10s %5d %22.1f %22.1f %8d\n", k, n[k], med(td, k, n[k]), med(ep, k, n[k]), bad[k] }' \
        "$T/epilog.times" "$T/jobs" | sort -r
