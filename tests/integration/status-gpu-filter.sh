#!/bin/bash
# --gpu selects GPUs by index, UUID prefix or PCI bus id; an unknown one is a usage error.
. "$TESTLIB"
scenario "gpu 0" "gpu 1 uuid=GPU-11111111-2222-3333-4444-555555555555" "gpu 2 minor=3 pci=00000000:9A:00.0"

launch pidfile "$PIDS" on1 cuda 1 1 128 sleep
wait_role on1
gr status --json
expect_rc 1 "GPU 1 in use"
jqok '.gpus | length == 3' "three GPUs"
jqok '.gpus[2] | .minor == 3 and .device_file == env.GPUREAP_DEV_DIR + "/nvidia3"' "minor number from the driver"

gr status --json --gpu 0
expect_rc 0 "GPU 0 alone is clean"
jqok '.gpus | map(.index) == [0]' "only GPU 0"

gr status --json --gpu GPU-11111111
expect_rc 1 "GPU 1 by UUID prefix is in use"
jqok '.gpus | map(.index) == [1]' "UUID prefix selects GPU 1"

gr status --json --gpu 00000000:9a:00.0,0
jqok '.gpus | map(.index) == [0, 2]' "PCI bus id and index, comma separated"

gr status --json --gpu 0 --gpu 2
jqok '.gpus | map(.index) == [0, 2]' "repeated --gpu"

gr status --gpu 7
expect_rc 2 "an unknown GPU"
has err "^gpureap: no GPU matches '7' \\(this machine has 3\\)$" "one-line error"
done_testing
