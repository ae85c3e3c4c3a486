#!/bin/bash
# A child holding a fake GPU: gpureap run returns only once the driver has the memory back.
. "$TESTLIB"
scenario "gpu 0" "teardown_ms 400"

gr run -- "$GPUHOLD" cuda 0 0 3000 spawn-holder "$T/pids2" child exit
expect_rc 0 "the command's status"
has err "GPU memory back in [0-9]+ ms" "the drain was awaited"
gr status --json
jqok '.gpus[0].memory.used == 0 and .gpus[0].state == "clean"' "clean the moment gpureap run returned"

# the same left alone: the forked child keeps the memory (negative control)
"$GPUHOLD" pidfile "$PIDS" owner cuda 0 0 3000 spawn-holder "$PIDS" child exit
wait_role child
gr status --json
jqok '.gpus[0].state == "dirty"' "negative control: without gpureap run the GPU is left dirty"
kill -KILL "$(pid_of child)"; wait_state "$(pid_of child)" gone
"$GPUREAP" wait --timeout 10s || fail "the negative control's memory never came back"

# gpureap run itself killed with SIGKILL cannot act: the next status names what it left. The
# environment is longer than the 32 KiB the scan reads of it (an HPC job's often is): the
# supervisor's PID is still read, since run puts it first
BIG_ENV=$(printf '%*s' 40000 '' | tr ' ' x) "$GPUREAP" run --quiet -- "$GPUHOLD" pidfile "$PIDS" server cuda 0 0 1500 sleep &
g=$!
LAUNCHED="$LAUNCHED $g"
wait_role server
srv=$(pid_of server)
gr status --json
jqok '.gpus[0].state == "busy"' "while gpureap run lives: busy"
jqok ".processes[] | select(.pid == $srv) | .run_pid == $g" "the server carries its supervisor's PID"
kill -KILL "$g"; wait "$g" 2>/dev/null || true
gr status --json
jqok '.gpus[0].state == "dirty"' "after gpureap run was SIGKILLed: dirty, though the server is its own session leader"
jqok ".findings[] | select(.kind == \"orphan\") | .pids == [$srv] and (.explanation | test(\"left by 'gpureap run' \\\\(PID $g\\\\), which was killed\"))" "the finding names the killed gpureap run"
kill -KILL "$srv"; wait_state "$srv" gone
# the killed supervisor's leaf cgroup stays behind: remove it (it is ours and empty now)
for d in $(find /sys/fs/cgroup -maxdepth 4 -type d -name "gpureap-run-$g-*" 2>/dev/null); do
        rmdir "$d" || fail "cannot remove $d"
done
done_testing
