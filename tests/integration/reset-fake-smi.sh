#!/bin/bash
# reset, against a fake nvidia-smi only (FAKE_SMI): success, "not supported", "in use", a hang;
# refused while anything holds the GPU; monitors named, stopped only when asked.
. "$TESTLIB"
export GPUREAP_NVIDIA_SMI=$FAKE_SMI FAKE_SMI_LOG=$T/smi.log
scenario "gpu 0" "stale 0 4096"

FAKE_SMI_MODE=ok gr reset --gpu 0 </dev/null
expect_rc 2 "no consent without a terminal"
[ ! -s "$T/smi.log" ] || fail "the fake nvidia-smi was run without consent"
ok "nothing run"

FAKE_SMI_MODE=ok gr reset --gpu 0 --yes
expect_rc 0 "reset, then clean"
grep -qx -- "--gpu-reset -i 0" "$T/smi.log" || fail "fake nvidia-smi got: $(cat "$T/smi.log")"
ok "ran the fake: --gpu-reset -i 0"
has out "GPU 0 reset: GPU 00000000:19:00.0 was successfully reset" "says it was reset"
has out "^GPU 0  clean  memory 0 B used" "verified: memory back"

scenario "gpu 0" "stale 0 4096"
FAKE_SMI_MODE=unsupported gr reset --gpu 0 --yes
expect_rc 3 "not supported"
has err "^gpureap: GPU 0: reset is not supported here" "said plainly"
FAKE_SMI_MODE=inuse gr reset --gpu 0 --yes
expect_rc 1 "in use"
has err "refused the reset, the GPU is in use" "said plainly"
FAKE_SMI_MODE=hang gr reset --gpu 0 --yes --timeout 300ms
expect_rc 3 "a hanging reset ends at its deadline"
has err "did not finish within 0.3s" "said plainly"

: >"$T/smi.log"
launch pidfile "$PIDS" holder cuda 0 0 100 sleep
wait_role holder
FAKE_SMI_MODE=ok gr reset --gpu 0 --yes
expect_rc 1 "refused while a process holds the GPU"
has err "GPU 0 is in use .*gpureap reap --gpu 0" "points to reap"
[ ! -s "$T/smi.log" ] || fail "the fake nvidia-smi was run while the GPU was held"
ok "nothing run"
kill -KILL "$(pid_of holder)"; wait_state "$(pid_of holder)" gone

launch pidfile "$PIDS" mon monitor 0 sleep
wait_role mon
mon=$(pid_of mon)
FAKE_SMI_MODE=ok gr reset --gpu 0 --yes
expect_rc 1 "refused while a monitor holds it"
has err "held by monitors $mon \\(gpuhold\\)" "the monitor is named"
kill -0 "$mon" || fail "the monitor was stopped without --stop-monitors"
FAKE_SMI_MODE=ok gr reset --gpu 0 --yes --stop-monitors
expect_rc 0 "with --stop-monitors"
has out "monitor $mon +ended" "the monitor was stopped first"
gr reset --gpu 0,1 --yes
expect_rc 2 "exactly one GPU"
gr reset --yes
expect_rc 2 "--gpu is required"
done_testing
