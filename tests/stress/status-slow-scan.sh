#!/bin/bash
# The "done when" check of issue 9 item 7, run by hand (not in CI: about two minutes):
# 100 'gpureap status' calls on a host with 10,000 more processes and one process holding
# 19,000 fds, the fake driver answering at once and --nvml-timeout shorter than the scan:
# 0 may exit 3. tests/adversarial/status-slow-scan.sh is the same check with 2 calls, in CI.
#   tests/stress/status-slow-scan.sh BUILD_DIR [ROUNDS]
set -u
B=$(cd "${1:?build dir}" && pwd) R=${2:-100}
S=$(cd "$(dirname "$0")/.." && pwd)
GPUREAP=$B/src/gpureap GPUREAP_TEST_HOOKS=$B/src/gpureap-test-hooks GPUHOLD=$B/tests/gpuhold \
FAKE_NVML=$B/tests/libnvidia-ml.so.1 FAKE_NVML_OLD=$B/tests/libnvidia-ml-old.so MKTREE=$B/bench/mktree \
TESTLIB=$S/integration/lib.sh ROUNDS=$R exec bash "$S/adversarial/status-slow-scan.sh"
