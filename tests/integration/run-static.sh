#!/bin/bash
# gpureap-run, 'gpureap run' as a static program of its own (src/main-run.c). The run itself is
# tested by the run tests run again through it (the *-static tests); here, what is its own: its
# version, and the name its supervisor is known by, on which the verdict about its job rests.
. "$TESTLIB"
: "${GPUREAP_RUN:?the static run program (src/gpureap-run)}"
scenario "gpu 0 minor=0"

v=$("$GPUREAP" --version | awk '{ print $2 }')
set +e
out=$("$GPUREAP_RUN" --version)
RC=$?
set -e
expect_rc 0 "gpureap-run --version"
[ "$out" = "gpureap-run $v" ] || fail "gpureap-run --version says '$out', gpureap is $v"
ok "gpureap-run's version is gpureap's ($v)"

# its completion is run's: run's options, never a command
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
complete_words() { # the words completed for the command line "$@" (the last one being typed)
        bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpureap; printf "%s\n" "${COMPREPLY[@]}"' \
                _ "$ROOT/completions/gpureap.bash" "$@"
}
complete_words /usr/bin/gpureap-run --gr >"$T/out"
has out "^--grace$" "bash completion of gpureap-run: run's options"
complete_words gpureap-run "" >"$T/out"
hasnt out "^reap$" "and no command"
complete_words gpureap-run --tty n >"$T/out"
has out "^never$" "bash completion of gpureap-run: --tty's words"
bash -c '. "$1"; complete -p gpureap-run' _ "$ROOT/completions/gpureap.bash" >"$T/out" 2>&1
has out "_gpureap gpureap-run$" "the completion is registered for gpureap-run"

# a live job under gpureap-run: its worker forked twice (reparented at once, to the run, the
# subreaper), holding GPU 0. The run is alive: status must say so, and reap's default plan spare
# it.
"$GPUREAP_RUN" -- "$GPUHOLD" pidfile "$PIDS" launcher daemon-worker "$PIDS" worker 0 0 256 sleep \
        >"$T/run.out" 2>&1 &
runpid=$!
LAUNCHED="$LAUNCHED $runpid"
wait_role launcher worker
w=$(pid_of worker)
LAUNCHED="$LAUNCHED $w"
[ "$(cat "/proc/$runpid/comm")" = gpureap ] || fail "the supervisor $runpid is named '$(cat "/proc/$runpid/comm")'"
ok "the supervisor $runpid is named gpureap"
i=0
until [ "$(awk '{ print $4 }' "/proc/$w/stat" 2>/dev/null)" = "$runpid" ]; do
        i=$((i + 1)); [ $i -lt 500 ] || fail "worker $w was never reparented to the run $runpid"; sleep 0.01
done
# a process started for the run through another (srun, docker exec): its marker, not below it.
# The run's name is what says that PID is a run: renamed, the job is unsure
GPUREAP_RUN_PID=$runpid "$GPUHOLD" pidfile "$PIDS" outside cuda 0 0 128 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role outside
o=$(pid_of outside)
gr status --json
jqok ".processes[] | select(.pid == $w) | .run_pid == $runpid" "the worker $w is of gpureap-run $runpid"
for p in $w $o; do
        jqok ".processes[] | select(.pid == $p) | .verdict.judgement == \"live\"" \
                "$p of a live gpureap-run is a live job ($(jq -c ".processes[] | select(.pid == $p) | .verdict | [.judgement, .confidence]" "$T/out"))"
done
gr reap --dry-run
hasnt out "^  kill +($w|$o) " "reap's default plan spares the live run's worker and the process started for it"
term_and_wait "$runpid"
[ ! -e "/proc/$w" ] || wait_state "$w" gone
ok "the run's end ended its worker"
kill -KILL "$o"

# a worker that dropped the marker (env -i): judged as under 'gpureap run', by the supervisor's
# program (an init's, named gpureap); the verdict and its confidence the same under both (its
# reason is the first of equal evidence: the run's tree, or its launcher alive)
for prog in "$GPUREAP_RUN" "$GPUREAP run"; do
        $prog -- env -i GPUREAP_DEV_DIR="$GPUREAP_DEV_DIR" GPUREAP_FAKE_CTX_DIR="$GPUREAP_FAKE_CTX_DIR" \
                "$GPUHOLD" pidfile "$PIDS" nm-launcher daemon-worker "$PIDS" nm-worker 0 0 64 sleep >/dev/null 2>&1 &
        np=$!
        LAUNCHED="$LAUNCHED $np"
        wait_role nm-worker
        nw=$(pid_of nm-worker)
        LAUNCHED="$LAUNCHED $nw"
        gr status --json
        jq -c ".processes[] | select(.pid == $nw) | [.verdict.judgement, .verdict.confidence]" "$T/out" \
                >>"$T/nomarker"
        term_and_wait "$np"
        sed -i '/^nm-/d' "$PIDS"
done
[ "$(sort -u "$T/nomarker" | wc -l)" -eq 1 ] || fail "the verdicts differ: $(cat "$T/nomarker")"
ok "a marker-less worker is judged alike under gpureap-run and gpureap run: $(head -n 1 "$T/nomarker")"

# without the gpureap beside it, its NVML helper: gpureap-run does not run (125, the command not
# started): one could be put there later (in /tmp, by anyone) and run as the caller
# run_refused DIR WHY WHAT: DIR/gpureap-run exits 125 saying its helper WHY, nothing run
run_refused() {
        set +e
        "$1/gpureap-run" -- sh -c "echo started >>'$T/ran.log'" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        expect_rc 125 "$3"
        has err "^gpureap: gpureap-run does not run: the gpureap beside it, its NVML helper, $2$" "it says why"
        [ ! -e "$T/ran.log" ] || fail "something ran: $(cat "$T/ran.log")"
        ok "nothing ran"
}
mkdir "$T/lone"
cp "$GPUREAP_RUN" "$T/lone/gpureap-run"
run_refused "$T/lone" "is missing: $T/lone/gpureap" "gpureap-run without the gpureap beside it"
# a gpureap beside it that is not this build's helper (another version: it refuses this one's
# layouts and ends at once): the tree's GPU memory is said to be unverified, and why (not "did
# not come back", not "died"); the command's status is the run's all the same
printf '#!/bin/sh\nexit 2\n' >"$T/lone/gpureap"
chmod 755 "$T/lone/gpureap"
"$T/lone/gpureap-run" --json "$T/lone.json" -- "$GPUHOLD" pidfile "$PIDS" lone2 cuda 0 0 128 sleep >"$T/out" 2>"$T/err" &
lone=$!
LAUNCHED="$LAUNCHED $lone"
wait_role lone2
term_and_wait "$lone"
expect_rc 143 "TERMed: the command's status"
has err "the GPU memory of the tree could not be verified: the NVML helper '$T/lone/gpureap' ended before its first call: not this build's helper" \
        "a helper of another build is said to be one"
has err "; GPU memory not verified$" "the summary says the memory was not verified"
hasnt err "did not come back" "and not that it did not come back"
jq -e '.gpu_minors == [0] and .drain.memory_back == null' "$T/lone.json" >/dev/null ||
        fail "the result is not 'GPU 0, memory not verified': $(jq -c '{gpu_minors, drain}' "$T/lone.json")"
ok "the result names GPU 0 and no verdict on its memory"
# a gpureap beside it that never starts as a helper (a wedged one): the wait for the memory ends
# with --drain-timeout and a second for the last look, not at the helper's 10 s start limit; the
# helper is ended, not left
mkdir "$T/wedged"
cp "$GPUREAP_RUN" "$T/wedged/gpureap-run"
printf '#!/bin/sh\necho "helper $$" >>"%s"\nexec sleep 60\n' "$PIDS" >"$T/wedged/gpureap"
chmod 755 "$T/wedged/gpureap"
"$T/wedged/gpureap-run" --drain-timeout 1s -- "$GPUHOLD" pidfile "$PIDS" wedged cuda 0 0 128 sleep >"$T/out" 2>"$T/err" &
wr=$!
LAUNCHED="$LAUNCHED $wr"
wait_role wedged
t0=$(date +%s%N)
term_and_wait "$wr"
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 143 "TERMed, its helper wedged: the command's status"
[ "$ms" -lt 6000 ] || fail "the run took $ms ms to end with --drain-timeout 1s (the helper's start limit is 10 s)"
ok "the run ended within --drain-timeout and the last look's second ($ms ms), not at the helper's 10 s"
has err "the GPU memory of the tree could not be verified: the NVML helper '$T/wedged/gpureap' had not started by the deadline" \
        "it says the helper had not started"
h=$(pid_of helper)
[ -n "$h" ] || fail "the wedged helper never ran"
[ ! -e "/proc/$h" ] || [ "$(awk '{print $3}' "/proc/$h/stat")" = Z ] || fail "the wedged helper $h was left running"
ok "and the wedged helper was ended"
# a run killed, its orphaned launcher forking on after the run's PID was handed out again, to
# another gpureap-run (wrapping commands thousands of times makes that likely): the new worker
# carries the old run's number. Not the new run's live job (it was, 'live, sure', and every
# reap spared it): the run wrote its start time beside its number (GPUREAP_RUN_REF), which the
# new run's is not, so the old run is gone: a sure leftover; so is a worker the launcher
# double-forks (its parent an init, its marked line one process long: before the start time,
# the new run's sure live job too). Without the start time (an older gpureap's marker):
# unsure, as the tree cannot tell it from the new run's job started through an old process
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/kernel/ns_last_pid ]; then
        cat >"$T/agent.sh" <<EOF
trap '"$GPUHOLD" pidfile "$PIDS" worker2 cuda 0 0 64 sleep & ( env -u GPUREAP_RUN_PID -u GPUREAP_RUN_REF "$GPUHOLD" pidfile "$PIDS" worker5 cuda 0 0 64 sleep & )' USR1
trap 'env -u GPUREAP_RUN_REF "$GPUHOLD" pidfile "$PIDS" worker3 cuda 0 0 64 sleep &' USR2
trap '( "$GPUHOLD" pidfile "$PIDS" worker4 cuda 0 0 64 sleep & )' HUP
"$GPUHOLD" pidfile "$PIDS" worker1 cuda 0 0 64 sleep &
echo "agent \$\$" >>"$PIDS"
while :; do sleep 0.05; done
EOF
        "$GPUREAP_RUN" --quiet -- bash "$T/agent.sh" >/dev/null 2>&1 &
        old=$!
        LAUNCHED="$LAUNCHED $old"
        wait_role agent worker1
        agent=$(pid_of agent)
        LAUNCHED="$LAUNCHED $agent $(pid_of worker1)"
        grep -qa "GPUREAP_RUN_REF=$old@$(awk '{print $22}' "/proc/$old/stat")" "/proc/$agent/environ" ||
                fail "the agent does not carry GPUREAP_RUN_REF=$old@START: $(tr '\0' '\n' <"/proc/$agent/environ" | grep GPUREAP)"
        ok "the run's command carries its number and start time (GPUREAP_RUN_REF)"
        leaf=""
        for _ in $(seq 300); do # the run's leaf cgroup, made at its first sample, where it can
                leaf=$(grep -Eo "gpureap-run-$old-[0-9a-f]{16}$" "/proc/$agent/cgroup") && break
                sleep 0.01
        done
        kill -KILL "$old"
        wait "$old" 2>/dev/null || true
        new=0
        for _ in $(seq 1 50); do # the kernel hands the number out again (another may take it first)
                echo $((old - 1)) >/proc/sys/kernel/ns_last_pid
                "$GPUREAP_RUN" --quiet -- sleep 600 >/dev/null 2>&1 &
                new=$!
                LAUNCHED="$LAUNCHED $new"
                [ "$new" -eq "$old" ] && break
                kill -TERM "$new"
                wait "$new" 2>/dev/null || true
        done
        [ "$new" -eq "$old" ] || fail "PID $old was not handed out again in 50 tries"
        [ "$(cat "/proc/$new/comm")" = gpureap ] || sleep 0.1
        kill -USR1 "$agent"
        wait_role worker2
        kill -USR2 "$agent"
        wait_role worker3
        kill -HUP "$agent"
        wait_role worker4
        w2=$(pid_of worker2) w3=$(pid_of worker3) w4=$(pid_of worker4)
        LAUNCHED="$LAUNCHED $w2 $w3 $w4"
        grep -qa "GPUREAP_RUN_PID=$old" "/proc/$w2/environ" || fail "worker2 does not carry GPUREAP_RUN_PID=$old"
        [ "$(awk '{print $4}' "/proc/$w4/stat")" != "$agent" ] || fail "worker4 was not double-forked"
        gr status --json
        v() { jq -c ".processes[] | select(.pid == $1) | .verdict | [.judgement, .confidence, .reason]" "$T/out"; }
        jqok ".processes[] | select(.pid == $w2) | .verdict | .judgement == \"leftover\" and .confidence == \"sure\"" \
                "the orphaned launcher's new worker is a leftover of the killed run, not the new run $new's live job ($(v "$w2"))"
        jqok ".processes[] | select(.pid == $w4) | .verdict | .judgement == \"leftover\" and .confidence == \"sure\"" \
                "and so is the worker it double-forked ($(v "$w4"))"
        jqok ".processes[] | select(.pid == $w3) | .verdict.judgement == \"unsure\"" \
                "without the start time (an older gpureap's marker): unsure ($(v "$w3"))"
        # a worker without the markers (another user's environment is not readable, as not
        # root) in the killed run's leaf cgroup, double-forked (its own root: no marked parent
        # judges it) after the new run took the number: the leaf's lock is free, so its run is
        # gone (before: N a live gpureap that started before it, "live, likely")
        w5=$(pid_of worker5)
        LAUNCHED="$LAUNCHED $w5"
        if [ -n "$leaf" ]; then
                grep -q "$leaf$" "/proc/$w5/cgroup" || fail "worker5 is not in the old run's leaf $leaf: $(cat "/proc/$w5/cgroup")"
                jqok ".processes[] | select(.pid == $w5) | .run_leaf_lock == \"free\" and .verdict.judgement == \"leftover\" and .verdict.confidence == \"sure\"" \
                        "a marker-less worker in the killed run's leaf, younger than the new run: a leftover by the leaf's free lock ($(v "$w5"))"
                jqok ".processes[] | select(.pid == $(pid_of worker1)) | .run_leaf_lock == \"free\"" "the leaf's lock is free for every member"
        else
                echo "# the run made no leaf cgroup here: its lock not checked"
        fi
        kill -KILL "$agent" "$w2" "$w3" "$w4" "$w5" "$(pid_of worker1)"
        term_and_wait "$new"
else
        ok "# SKIP not root: /proc/sys/kernel/ns_last_pid"
fi

# a copy of gpureap-run (as a hard link or a bind mount of it would be named) in a directory
# where the gpureap beside it is another user's: that gpureap would run as the caller, root.
# gpureap-run does not run (125, the command not started), nor does gpureap-status run it; with
# the file root's, it runs (the control)
if [ "$(id -u)" -eq 0 ]; then
        mkdir -m 755 "$T/evil"
        cp "$GPUREAP_RUN" "$T/evil/gpureap-run"
        cp "$GPUREAP_STATUS" "$T/evil/gpureap-status"
        printf '#!/bin/sh\necho "ran as $(id -u): $*" >>"%s/ran.log"\n' "$T" >"$T/evil/gpureap"
        chmod 755 "$T/evil/gpureap"
        chown 4242 "$T/evil/gpureap"
        run_refused "$T/evil" "is not to be trusted: '$T/evil/gpureap' belongs to user 4242" \
                "gpureap-run beside another user's gpureap"
        set +e
        "$T/evil/gpureap-status" --no-such-option >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        expect_rc 3 "gpureap-status beside another user's gpureap, for what serve does not render"
        has err "^gpureap: gpureap-status does not run '$T/evil/gpureap' for 'gpureap status': not to be trusted: '$T/evil/gpureap' belongs to user 4242$" \
                "gpureap-status says so"
        [ ! -e "$T/ran.log" ] || fail "gpureap-status ran it: $(cat "$T/ran.log")"
        ok "and does not run it"
        chown 0 "$T/evil/gpureap"
        "$T/evil/gpureap-status" --no-such-option >"$T/out" 2>"$T/err" || true
        grep -q "^ran as 0: status --no-such-option" "$T/ran.log" || fail "the control: root's gpureap beside it did not run"
        ok "the control: root's gpureap beside it runs"
else
        ok "# SKIP not root: a file of another user's cannot be made"
fi
done_testing
