#!/bin/bash
# --gpu (or -i, as nvidia-smi spells it) selects GPUs by index, UUID prefix or PCI bus id in
# NVML's, lspci's or the short spelling; an unknown or ambiguous one is a usage error.
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

# lspci writes a 4-digit domain in lower case; without the domain it is any domain's
for sel in 0000:9a:00.0 0000:9A:00.0 9a:00.0 00000000:9A:00.0; do
        gr status --json -i "$sel"
        expect_rc 0 "-i $sel"
        jqok '.gpus | map(.index) == [2]' "-i $sel selects GPU 2 by its PCI bus id"
done
gr status --json -i 9b:00.0
expect_rc 2 "another bus: no GPU"
for cmd in reap wait reset check; do
        gr $cmd -i 7 --help
        expect_rc 0 "$cmd takes -i"
done
gr wait -i 7 --timeout 1s
expect_rc 2 "wait: -i 7 matches no GPU"
gr check -i 1
expect_rc 0 "check -i 1: busy is fine"
has out "^GPUREAP OK - 1 GPU, 1 busy" "check -i 1 looks at GPU 1 alone"

gr status --gpu 7
expect_rc 2 "an unknown GPU"
has err "^gpureap: no GPU matches '7' \\(this machine has 3\\)$" "one-line error"
# the same short bus id in two PCI domains is ambiguous: an error, never both
scenario "gpu 0 pci=00000000:1A:00.0" "gpu 1 pci=00000001:1A:00.0"
gr status -i 1a:00.0
expect_rc 2 "an ambiguous short bus id"
has err "^gpureap: '1a:00.0' matches 2 GPUs \\(in different PCI domains\\): give the domain too, or the index$" "says why, in one line"
gr status --json -i 0001:1a:00.0
jqok '.gpus | map(.index) == [1]' "with the domain: GPU 1"

done_testing
