#!/bin/bash
# Edges of run's teardown found by an adversarial review (2026-12-03), each a script of
# tests/adversarial/run-edges/: a member whose main thread exited while another runs (stat says
# Z) must still be ended; a nested run's leaf cgroup must not stay behind; GPU files handed over
# SCM_RIGHTS by a short-lived member to one looked at earlier must still be awaited at the end.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (cgroups)"; exit 77; }
command -v gcc >/dev/null || { echo "1..0 # SKIP no gcc for the scripts' helpers"; exit 77; }
D=$(dirname "$0")/run-edges
for s in run-zombie-leader run-nested-cgroup-leak run-drain-scm-rights; do
        set +e
        timeout 60 bash "$D/$s.sh" >"$T/$s.out" 2>&1
        rc=$?
        set -e
        sed 's/^/# /' "$T/$s.out"
        [ $rc -eq 0 ] || fail "$s: exit $rc: $(grep BUG "$T/$s.out")"
        ok "$s held"
done
done_testing
