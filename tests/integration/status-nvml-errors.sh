#!/bin/bash
# NVML returning errors: a clear message and exit 3 where nothing can be known; fallbacks where
# an older call still answers.
. "$TESTLIB"

scenario "gpu 0" "fail nvmlInit_v2 9"
gr status --json
expect_rc 3 "init fails"
has err "nvmlInit_v2 failed: Driver Not Loaded \(error 9\)" "names the error"
jqok '.driver.status == "init_failed"' "JSON: init_failed"

scenario "gpu 0" "fail nvmlDeviceGetCount_v2 999"
gr status --json
expect_rc 3 "device count fails"
jqok '.driver.status == "failed"' "JSON: failed"

launch pidfile "$PIDS" owner cuda 0 0 100 sleep
wait_role owner
owner=$(pid_of owner)

scenario "gpu 0" "fail nvmlDeviceGetComputeRunningProcesses_v3 15"
gr status --json
expect_rc 3 "the process list fails: the GPU cannot be judged"
jqok '.gpus[0].context_owners == null' "owners unknown, not empty"
jqok '.gpus[0].error | test("GPU is lost")' "per-GPU error"
jqok ".gpus[0].holders == [{pid: $owner, fds: 3}]" "holders still listed"

scenario "gpu 0" "fail nvmlDeviceGetComputeRunningProcesses_v3 13"
gr status --json
expect_rc 1 "_v3 missing in the driver: falls back to _v2"
jqok ".gpus[0].context_owners | map(.pid) == [$owner]" "owner read through _v2"
jqok '.gpus[0].process_entry_bytes == 24' "24-byte entries from _v2"

scenario "gpu 0" "fail nvmlDeviceGetMemoryInfo_v2 25"
gr status --json
expect_rc 1 "memory _v2 refused: falls back to v1"
jqok '.gpus[0].memory | .api == "v1" and .reserved == null and .used == (615+100)*1048576' "v1 memory: reserve included in used"

scenario "gpu 0" "fail nvmlDeviceGetMemoryInfo_v2 999" "fail nvmlDeviceGetMemoryInfo 999"
gr status --json
expect_rc 3 "memory unknown: the GPU cannot be judged"
jqok '.gpus[0].memory | .api == null and .used == null and .total == null' "memory null when unknown"
jqok '.gpus[0].error | test("memory")' "the error says memory"
jqok '.gpus[0].state == "unknown"' "state unknown"

scenario "gpu 0" "fail nvmlDeviceGetUUID 999" "fail nvmlDeviceGetName 3" "not_available 0"
gr status --json
jqok '.gpus[0] | .uuid == null and .name == null' "optional identity missing"
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: null, process: \"alive\"}]" "NVML_VALUE_NOT_AVAILABLE becomes null"
done_testing
