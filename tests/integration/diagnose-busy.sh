#!/bin/bash
# Clean, then busy: a live CUDA worker whose launcher is alive is in use, not a leftover.
. "$TESTLIB"

gr status --json
expect_rc 0 "clean"
jqok '.gpus[0].state == "clean" and .findings == []' "clean, no finding"

launch pidfile "$PIDS" launcher setpgid worker "$PIDS" w1 0 0 1024 sleep
wait_role launcher w1
l=$(pid_of launcher); w=$(pid_of w1)
gr status --json
expect_rc 1 "busy is not clean"
jqok '.gpus[0].state == "busy"' "state busy"
jqok ".findings == [.findings[] | select(.kind == \"busy\")] and (.findings[0].pids == [$w]) and (.findings[0].leftover | not)" "one busy finding, not a leftover"
jqok ".findings[0].next_step == null and .findings[0].advice == \"none if this is expected; to stop it: gpureap reap --gpu 0 --pid $w\"" "no command to paste; the advice says how to stop it"
jqok ".processes[] | select(.pid == $w) | .verdict | .role == \"owner\" and .conditions == [] and .launcher == $l and .launcher_alive" "worker: owner under its live launcher"
jqok ".processes[] | select(.pid == $w) | .verdict | .judgement == \"live\" and .confidence == \"sure\" and (.evidence | map(.key) | index(\"parent\"))" "worker: live, sure, because its parent lives"
jqok ".processes | map(.pid) | index($l) != null" "the launcher is recorded for replay"

gr status
has out "^0 +BUSY +1.0/140.4 GiB +process group $l \\(gpuhold\\), live: its parent $l \\(gpuhold\\) is alive$" "one line: badge BUSY, memory, the job and why it is live"
has out "launcher: process group $l \\(gpuhold, alive\\)" "holders grouped under the launcher"
has out "^  busy  GPU 0: in use by $w \\(gpuhold\\)" "finding in the report"

# colour on a terminal only, and never with NO_COLOR
script -qec "$GPUREAP status" /dev/null >"$T/out" 2>&1 || true
has out $'\033\\[1;33mBUSY' "badge coloured on a terminal"
NO_COLOR=1 script -qec "$GPUREAP status" /dev/null >"$T/out" 2>&1 || true
hasnt out $'\033' "NO_COLOR turns colour off"
script -qec "$GPUREAP status --color=never" /dev/null >"$T/out" 2>&1 || true
hasnt out $'\033' "--color=never: none on a terminal"
gr status --color=always
has out $'\033\\[1;33mBUSY' "--color=always: coloured on a pipe"
NO_COLOR=1 gr status --color=always
has out $'\033\\[1;33mBUSY' "--color=always wins over NO_COLOR"
gr status --color=sometimes
expect_rc 2 "--color with another word"
has err "invalid --color 'sometimes'" "names it"

# a recorded snapshot gives the same verdict when replayed
gr status --json
cp "$T/out" "$T/rec.json"
gr status --replay "$T/rec.json" --json
jqok '.gpus[0].state == "busy"' "replayed: busy"
done_testing
