#!/bin/bash
# A GPU with nothing on it: no owner, no holder, memory at baseline, exit 0.
. "$TESTLIB"

gr status --json
expect_rc 0 "a clean GPU"
jqok '.schema_version == 4' "schema version 4"
jqok '.driver.status == "ok" and .driver.driver_version == "580.95.05"' "driver read"
jqok '.gpus | length == 1' "one GPU"
jqok '.gpus[0] | .index == 0 and .minor == 0 and .name == "NVIDIA H200"' "GPU identity"
jqok '.gpus[0].uuid | startswith("GPU-")' "GPU uuid"
jqok '.gpus[0].pci_bus_id == "00000000:19:00.0"' "PCI bus id"
jqok '.gpus[0].memory | .api == "v2" and .used == 0 and .reserved == 615*1048576 and .total == 143771*1048576' "memory v2 at baseline"
jqok '.gpus[0].memory | .free == .total - .reserved - .used' "free memory adds up"
jqok '.gpus[0].context_owners == [] and .gpus[0].holders == []' "no owner, no holder"
jqok '.processes == []' "no process listed"

# a holder of another directory's files is not ours: negative control for the holder scan
mkdir "$T/elsewhere"; truncate -s 4096 "$T/elsewhere/nvidia0"
launch pidfile "$PIDS" other open ../elsewhere/nvidia0 sleep
wait_role other
gr status --json
expect_rc 0 "a file named nvidia0 outside the device directory holds nothing"

gr status
expect_rc 0 "table on a clean GPU"
has out '^gpureap .*  1 GPU \(NVIDIA H200\)$' "the title names the model"
has out '^0 +CLEAN +0 B/140.4 GiB +-$' "one line for the GPU: badge CLEAN, memory, nobody on it"
[ "$(wc -l <"$T/out")" -eq 4 ] || fail "a clean GPU takes more than its line: $(cat "$T/out")"
ok "nothing but that line for a clean GPU"
gr status --why
has out '^GPU 0  CLEAN  NVIDIA H200  00000000:19:00.0' "--why: the GPU's details, badge CLEAN"
has out 'context owners \(NVML\): none' "--why: no owners"
has out 'holders \(open .*/nvidia0\): none' "--why: no holders"
done_testing
