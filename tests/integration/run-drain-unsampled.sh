#!/bin/bash
# 'gpureap run' and a member it looked at before that member opened a GPU, ended before its next
# due look: the last look at the end (or, past its 2 ms, the driver's context owners) finds the
# GPU, and the run returns only once that GPU's memory is back. A tree that used no GPU waits
# for none. The signal that ends gpureap reaches the command only after the last look.
. "$TESTLIB"
scenario "gpu 0 minor=0" "teardown_ms 400"
export GPUHOLD PIDS

# The member is looked at when first seen (it holds nothing then), again 250 ms later, then
# 500 ms later; it opens the GPU at 1 s (the same process: bash execs gpuhold), and the run is
# ended before its next look at 1.8 s (it records itself once its GPU is open: the SIGTERM comes
# after that).
"$GPUREAP" run --json "$T/run.json" -- bash -c 'sleep 1; exec "$GPUHOLD" cuda 0 0 1000 pidfile "$PIDS" late sleep' \
        >"$T/out" 2>"$T/err" &
g=$!
LAUNCHED="$LAUNCHED $g"
wait_role late
term_and_wait "$g"
expect_rc 143 "gpureap was told to end"
has err "GPU memory back in [0-9]+ ms" "the drain was awaited for a GPU it never saw held"
gr status --json
jqok '.gpus[0].state == "clean" and .gpus[0].memory.used == 0' "clean the moment gpureap run returned"
cp "$T/run.json" "$T/out"
jqok '.gpu_minors == [0] and .drain.memory_back == true' "the result names GPU 0 and the memory back"

# The command opens the GPU after its last look and exits at once, on its own: the tree is gone
# before the end can look at it, and the driver's context owners are asked (the command's PID)
"$GPUREAP" run --json "$T/run.json" -- bash -c 'sleep 1; exec "$GPUHOLD" cuda 0 0 1000 exit' \
        >"$T/out" 2>"$T/err"
RC=$?
expect_rc 0 "the command exited by itself"
has err "GPU memory back in [0-9]+ ms" "the drain was awaited for a command gone before the end looked"
gr status --json
jqok '.gpus[0].state == "clean" and .gpus[0].memory.used == 0' "clean the moment gpureap run returned"

# a tree that never opened a GPU, on a node with a driver: no drain, no GPU named
"$GPUREAP" run --json "$T/run.json" -- bash -c 'sleep 0.4' >"$T/out" 2>"$T/err" &
g=$!
LAUNCHED="$LAUNCHED $g"
sleep 0.2
term_and_wait "$g"
expect_rc 143 "the CPU-only tree was ended"
hasnt err "GPU memory" "no drain for a tree that used no GPU"
cp "$T/run.json" "$T/out"
jqok '.gpu_minors == [] and .drain.memory_back == null' "the result names no GPU and no drain"
done_testing
