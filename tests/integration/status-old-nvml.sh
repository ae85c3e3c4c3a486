#!/bin/bash
# An old NVML without the _v2/_v3 symbols: the v1 calls answer.
. "$TESTLIB"
export GPUREAP_NVML_LIBRARY=$FAKE_NVML_OLD

launch pidfile "$PIDS" owner cuda 0 0 300 sleep
wait_role owner
owner=$(pid_of owner)
gr status --json
expect_rc 1 "status with an old NVML"
jqok '.gpus[0].memory.api == "v1"' "v1 memory call"
jqok '.gpus[0].pci_bus_id == null and .gpus[0].name == "NVIDIA H200"' "no PCI call: unknown, the rest read"
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: (300*1048576), process: \"alive\"}]" "v1 process entries (16 bytes)"
jqok '.gpus[0].process_entry_bytes == 16' "stride 16"
done_testing
