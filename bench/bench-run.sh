#!/bin/bash
# The overhead of supervision: 'gpureap run -- true' and 'gpureap-run -- true' (the static
# program) against 'tini -s -- true' (Debian's tini, as a subreaper; tini-static too where it is
# installed or given) and a static program that does nothing (bench/nop), interleaved
# (bench/runbench); then the instructions of each supervisor (callgrind, where valgrind is).
#   bench/bench-run.sh BUILD_DIR [RUNS] [TINI_STATIC]
# On a GPU machine without Debian's packages: copy the build's src/gpureap, src/gpureap-run,
# bench/runbench and bench/nop, and /usr/bin/tini-static, and give its path as TINI_STATIC.
set -u
B=${1:?build dir} N=${2:-300} TS=${3:-$(command -v tini-static || true)}
args=()
command -v tini >/dev/null && args+=(::: "tini -s -- true" -- tini -s -- true)
[ -n "$TS" ] && args+=(::: "tini-static -s -- true" -- "$TS" -s -- true)
[ ${#args[@]} -gt 0 ] || { echo "neither tini nor tini-static (apt-get install tini)"; exit 1; }
echo "## $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, cgroup2 at $(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)"
"$B/bench/runbench" -n "$N" -w 10 \
        "bench/nop" -- "$B/bench/nop" ::: \
        "true" -- true "${args[@]}" ::: \
        "gpureap run -- true" -- "$B/src/gpureap" run --quiet -- true ::: \
        "gpureap-run -- true" -- "$B/src/gpureap-run" --quiet -- true ::: \
        "gpureap run --no-cgroup -- true" -- "$B/src/gpureap" run --quiet --no-cgroup -- true
if command -v valgrind >/dev/null; then
        ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ {print $4}'; }
        echo "instructions (callgrind): gpureap run $(ir "$B/src/gpureap" run --quiet -- true)," \
             "gpureap-run $(ir "$B/src/gpureap-run" --quiet -- true)${TS:+, tini-static $(ir "$TS" -s -- true)}"
fi
