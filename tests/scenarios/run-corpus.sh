#!/bin/sh
# The scenario corpus on the fake driver (tests/scenarios/README.md). Needs python3 (standard
# library only; $PYTHON chooses another); meson gives it GPUREAP, GPUHOLD and FAKE_NVML as to
# the integration tests.
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
        echo "not ok 1 - $PY is needed (scripts/install-deps.sh installs python3)"
        exit 1
fi
exec "$PY" "$(dirname "$0")/run-corpus.py" "$@"
