#!/bin/bash
# The overhead of supervision: 'gpureap run -- true' against 'tini -s -- true' (Debian's tini,
# as a subreaper) and plain 'true', interleaved (bench/runbench).
#   bench/bench-run.sh BUILD_DIR [RUNS]
set -u
B=${1:?build dir} N=${2:-300}
command -v tini >/dev/null || { echo "tini is not installed (apt-get install tini)"; exit 1; }
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, cgroup2 at $(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)"
"$B/bench/runbench" -n "$N" -w 10 \
        "true" -- true ::: \
        "tini -s -- true" -- tini -s -- true ::: \
        "gpureap run -- true" -- "$B/src/gpureap" run --quiet -- true ::: \
        "gpureap run --no-cgroup -- true" -- "$B/src/gpureap" run --quiet --no-cgroup -- true
