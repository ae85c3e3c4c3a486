#!/bin/bash
# Results for scripts: 'run --json FILE', 'wait --json' and 'reap --json' say what happened, and
# what they say is checked against what really happened (the processes, the exit status).
. "$TESTLIB"
scenario "gpu 0" "teardown_ms 300"
alive() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1); [ -n "$st" ] && [ "$st" != Z ]; }

# run: a command that takes the GPU, leaves a setsid'd holder and a sleeper, and exits 3
cat >"$T/leave.sh" <<'SH'
setsid "$GPUHOLD" pidfile "$1" kept cuda 0 0 1024 sleep &
sleep 1000 & echo "sleeper $!" >>"$1"
while ! grep -q '^kept ' "$1"; do sleep 0.01; done
exit 3
SH
GPUHOLD=$GPUHOLD gr run --json "$T/run.json" -- sh "$T/leave.sh" "$T/run.pids"
expect_rc 3 "run passes the command's status on"
kept=$(awk '$1 == "kept" {print $2}' "$T/run.pids"); sleeper=$(awk '$1 == "sleeper" {print $2}' "$T/run.pids")
[ -n "$kept" ] && [ -n "$sleeper" ] || fail "the command did not start both: $(cat "$T/run.pids")"
! alive "$kept" && ! alive "$sleeper" || fail "a leftover is still alive"
cp "$T/run.json" "$T/out"
jqok '.schema_version == 4 and .command == "run" and .argv[0] == "sh"' "run --json: the command"
jqok '.ended == "exit" and .command_exit_status == 3 and .command_signal == null and .exit_code == 3' "how it ended, and the exit code it gave"
jqok '.leftovers.ended == 2' "the two leftovers it ended (both gone: checked in /proc)"
jqok '.gpu_minors == [0] and .drain.memory_back == true and (.drain.elapsed_ms | type) == "number"' "the GPU it used, and the drain"
jqok '.gpureap_error == null and .gpureap_signal == null' "no failure of gpureap's own"
[ "$(ls "$T" | grep -c 'run.json.*tmp')" = 0 ] || fail "a temporary file was left"
gr status --json
jqok '.gpus[0].state == "clean"' "clean when run returned, as the result says"

# run: the command killed by a signal; the result on stdout after the command's output
gr run --json - -- sh -c 'echo out; kill -KILL $$'
expect_rc 137 "128+9"
[ "$(head -n 1 "$T/out")" = out ] || fail "the command's output is not first"
sed -i 1d "$T/out"
jqok '.ended == "signal" and .command_signal == 9 and .command_exit_status == null and .exit_code == 137 and .drain == null' "killed by SIGKILL: the signal, no drain"

# run: gpureap itself TERMed
"$GPUREAP" run --json "$T/term.json" -- sleep 1000 >/dev/null 2>&1 &
g=$!
LAUNCHED="$LAUNCHED $g"
for _ in $(seq 500); do c=$(pgrep -P "$g" || true); [ -n "$c" ] && break; sleep 0.01; done
[ -n "$c" ] || fail "run's child never started"
kill -TERM "$g"
set +e; wait "$g"; RC=$?; set -e
expect_rc 143 "gpureap TERMed"
! alive "$c" || fail "the command outlived its supervisor"
cp "$T/term.json" "$T/out"
jqok '.ended == "gpureap_signalled" and .gpureap_signal == 15 and .exit_code == 143 and .pid == '"$c" "the signal gpureap got, the command's PID"

# run: --max-time
gr run --max-time 200ms --json - -- sleep 1000
expect_rc 124 "max time"
jqok '.ended == "max_time" and .exit_code == 124' "ended by --max-time"
# a result that cannot be written: gpureap's failure (125: a script that reads the result must not
# take the command's status for it), the command's status told on the line after why
gr run --json "$T/no/such/dir/r.json" -- sh -c 'exit 5'
expect_rc 125 "the result could not be written"
has err "^gpureap: cannot write '.*/no/such/dir/r.json'" "why it was not written"
has err "^gpureap: the result was not written; the command's exit status was 5$" "and the command's status"
gr run --json "" -- true
expect_rc 2 "--json needs a file"

# wait: clean at once
gr wait --json --timeout 2s
expect_rc 0 "wait: clean"
jqok '.command == "wait" and .condition.kind == "clean" and .met == true and .exit_code == 0 and .status.gpus[0].state == "clean"' "wait --json: met, with the last look"
# wait: a live holder, not clean by the deadline; the result names it
launch pidfile "$PIDS" holder cuda 0 0 512 sleep
wait_role holder
h=$(pid_of holder)
gr wait --json --timeout 300ms
expect_rc 1 "wait: timeout"
jqok '.met == false and .exit_code == 1 and .timeout_ms == 300 and .waited_ms >= 300' "not met, after the deadline"
jqok "[.status.processes[] | select(.verdict) | .pid] | index($h) != null" "the last look names the holder"
jqok '.status.gpus[0].state != "clean"' "and says the GPU is not clean"
hasnt err "^GPU +STATE" "with --json no table on stderr, only the one-line error"
gr wait --json --free 50% --timeout 1s
expect_rc 0 "wait --free 50%: half of the memory is free beside a 512 MiB holder"
jqok '.condition == {"kind": "free", "free_bytes": null, "free_percent": 50} and .met' "the condition as given"
kill -KILL "$h"; wait_state "$h" gone
"$GPUREAP" wait --timeout 10s >/dev/null 2>&1 || fail "the holder's memory never came back"

# reap: a ghost's hidden holder; what was signalled, what became of it, the verification
launch pidfile "$PIDS" owner cuda 0 0 1024 spawn-holder "$PIDS" child exit
wait_role child
wait "$LAST" || true
child=$(pid_of child)
gr reap --yes --json
expect_rc 0 "reap"
! alive "$child" || fail "the hidden holder is alive"
jqok '.command == "reap" and .dry_run == false and .exit_code == 0 and .verified == true' "reap --json: verified"
jqok "[.plan.targets[].pid] == [$child] and [.outcomes[] | select(.pid == $child) | .result] == [\"ended\"]" "the target and its outcome"
jqok '.gpus[0].memory_before > 0 and .gpus[0].memory_after == 0 and (.elapsed_ms | type) == "number" and (.drain_ms | type) == "number"' "memory before and after, and the time it took"
done_testing
