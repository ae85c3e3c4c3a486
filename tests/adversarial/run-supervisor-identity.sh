#!/bin/bash
# A holder started by a live 'gpureap run' is a live job, whatever the run's binary is called
# and whichever PID namespace the run is in. Before (found by the adversarial review), the run
# was recognised by its name alone, and GPUREAP_RUN_PID read as a PID of gpureap's own
# namespace: (a) a run through a symlink named 'grun' and (b) a run that is PID 1 of a PID
# namespace of its own (a container's entrypoint) made its live holder a SURE leftover, which
# the default plan would kill. Shown with reap --dry-run --only (it never adds targets).
. "$TESTLIB"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
verdict() { jq -r ".processes[] | select(.pid == $1) | .verdict | \"\\(.judgement) \\(.confidence)\"" "$T/out"; }
planned() { # PID: reap's default plan, limited to it, would kill it?
        gr reap --dry-run --gpu 0 --only "$1@$(awk '{print $22}' "/proc/$1/stat")"
        grep -Eq "^  kill +$1 " "$T/out"
}

# (a) through a symlink: the run's comm is 'grun'
ln -s "$GPUREAP" "$T/grun"
"$T/grun" run --quiet --no-cgroup -- "$GPUHOLD" pidfile "$PIDS" a cuda 0 0 100 sleep >/dev/null 2>&1 &
R=$!
LAUNCHED="$LAUNCHED $R"
wait_role a
H=$(pid_of a)
[ "$(cat "/proc/$(awk '{print $4}' "/proc/$H/stat")/comm")" = grun ] || fail "the run is not named grun"
gr status --json
[ "$(verdict "$H")" = "live sure" ] || fail "(a) the holder of a live run named grun: $(verdict "$H")"
ok "(a) a live run through a symlink named grun: its holder is a live job ($(verdict "$H"))"
! planned "$H" || fail "(a) the default plan would kill it: $(cat "$T/out")"
ok "(a) and the default plan spares it"
term_and_wait "$R"

# (c) the live run named grun starts its job's worker through another process (srun's
# slurmstepd, an MPI daemon, docker exec -e): the worker carries GPUREAP_RUN_PID but is not the
# run's descendant. A live process of that PID, older than the worker, not named gpureap: a
# renamed run, or not the run at all: unsure, never a sure leftover (the second review)
"$T/grun" run --quiet --no-cgroup -- bash -c 'echo "crun $GPUREAP_RUN_PID" >>"$1"; exec sleep 60' x "$PIDS" >/dev/null 2>&1 &
R=$!
LAUNCHED="$LAUNCHED $R"
wait_role crun
N=$(pid_of crun)
GPUREAP_RUN_PID=$N setsid "$GPUHOLD" pidfile "$PIDS" cdaemon worker "$PIDS" c-worker 0 0 100 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role c-worker
H=$(pid_of c-worker)
gr status --json
[ "$(verdict "$H")" = "unsure unsure" ] || fail "(c) a worker of the live run grun, started outside its tree: $(verdict "$H")"
ok "(c) a worker of a live run named grun, started outside its tree: unsure"
! planned "$H" || fail "(c) the default plan would kill it: $(cat "$T/out")"
ok "(c) and the default plan spares it"
term_and_wait "$R"

# (d) a batch job submitted from a supervised shell (sbatch and srun pass the environment on):
# its script carries the run's GPUREAP_RUN_PID and GPUREAP_RUN_REF, the run (the shell's) has
# long ended, and the job runs below slurmstepd, a live process that is no init. The marker was
# carried, not left by a run killed over it: not a sure leftover (it was, and reap's default
# plan killed a live job), the rest of its lineage judges it (here: its parent is alive)
"$GPUREAP" run --quiet --no-cgroup -- bash -c 'echo "drun $GPUREAP_RUN_PID $GPUREAP_RUN_REF" >>"$1"' x "$PIDS" >/dev/null 2>&1
read -r _ dpid dref < <(grep '^drun ' "$PIDS")
[ -n "$dref" ] || fail "(d) the run gave no GPUREAP_RUN_REF"
sed -i '/^drun /d' "$PIDS"
bash -c 'GPUREAP_RUN_PID=$1 GPUREAP_RUN_REF=$2 "$3" pidfile "$4" d-job cuda 0 0 100 sleep & wait' stepd "$dpid" "$dref" "$GPUHOLD" "$PIDS" &
S=$!
LAUNCHED="$LAUNCHED $S"
wait_role d-job
H=$(pid_of d-job)
gr status --json
jq -e ".processes[] | select(.pid == $H) | .verdict.evidence[] | select(.value | test(\"marker came through PID $S\"))" "$T/out" >/dev/null ||
        fail "(d) no evidence that the marker was carried: $(jq -c ".processes[] | select(.pid == $H) | .verdict" "$T/out")"
[ "$(verdict "$H")" != "leftover sure" ] || fail "(d) a job that carries a gone run's marker below a live launcher: leftover sure"
ok "(d) a job that carries an ended run's marker below a live launcher: not a sure leftover ($(verdict "$H"))"
! planned "$H" || fail "(d) the default plan would kill it: $(cat "$T/out")"
ok "(d) and the default plan spares it"
kill -KILL "$H" "$S"
wait "$S" 2>/dev/null || true

# (e) a run's leaf cgroup names its run by the lock the run holds on it for as long as it lives
# (/proc/locks), not by whatever has its number: held while it runs, free once it is killed
"$GPUREAP" run --quiet -- env -u GPUREAP_RUN_PID -u GPUREAP_RUN_REF "$GPUHOLD" pidfile "$PIDS" e cuda 0 0 100 sleep >/dev/null 2>&1 &
R=$!
LAUNCHED="$LAUNCHED $R"
wait_role e
H=$(pid_of e)
for _ in $(seq 300); do grep -Eq "gpureap-run-$R-[0-9a-f]{16}$" "/proc/$H/cgroup" && break; sleep 0.01; done # at 50 ms
if grep -Eq "gpureap-run-$R-[0-9a-f]{16}$" "/proc/$H/cgroup"; then
        gr status --json
        jqok ".processes[] | select(.pid == $H) | .run_leaf_lock == \"held\" and .verdict.judgement == \"live\"" \
                "(e) a marker-less member of a live run's leaf: its lock held, a live job ($(verdict "$H"))"
        kill -KILL "$R"
        wait "$R" 2>/dev/null || true
        gr status --json
        jqok ".processes[] | select(.pid == $H) | .run_leaf_lock == \"free\" and .verdict.judgement == \"leftover\" and .verdict.confidence == \"sure\"" \
                "(e) the run killed: the lock free, a sure leftover ($(verdict "$H"))"
else
        echo "# (e) skipped: the run made no cgroup here ($(cat "/proc/$H/cgroup"))"
        term_and_wait "$R"
fi
kill -KILL "$H" 2>/dev/null || true
wait_state "$H" gone

# (f) gpureap inside a PID namespace below a live run (a job's 'unshare -pf', apptainer --pid):
# the run's number is the host's and names nothing there; not found is not gone: its live job
# is never a sure leftover, and reap's default plan spares it (the third review: "leftover,
# sure" through the leaf cgroup's route, and the plan killed it)
if [ "$(id -u)" -eq 0 ] && unshare -p -f --mount-proc true 2>/dev/null; then
        "$GPUREAP" run --quiet -- unshare -pf --mount-proc --kill-child bash -c \
                '"$1" cuda 0 0 100 sleep & sleep 1; "$2" status --json >"$3"; "$2" reap --dry-run >"$4" 2>&1; kill $!' \
                x "$GPUHOLD" "$GPUREAP" "$T/f.json" "$T/f.plan" >/dev/null 2>&1 &
        R=$!
        LAUNCHED="$LAUNCHED $R"
        set +e
        wait "$R"
        set -e
        v=$(jq -c '[.processes[] | select(.comm == "gpuhold") | .verdict | [.judgement, .confidence]]' "$T/f.json")
        [ "$v" != "[]" ] && [ -n "$v" ] || fail "(f) no holder seen from inside: $(cat "$T/f.json")"
        case $v in *'"leftover","sure"'*) fail "(f) a live run's job seen from a PID namespace below it: $v" ;; esac
        ok "(f) a live run's job, seen from a PID namespace below the run: not a sure leftover ($v)"
        ! grep -Eq '^  kill +[0-9]+ ' "$T/f.plan" || fail "(f) the default plan would kill it: $(cat "$T/f.plan")"
        ok "(f) and the default plan spares it"
else
        echo "# (f) skipped: needs root and PID namespaces"
fi

# (g) a systemd service that got an ended run's markers from its manager's environment
# ('systemctl --user import-environment', which a desktop session's startup runs, in a shell
# under 'gpureap run'): it runs in the service's cgroup, where a killed run's member would not
# stay (systemd empties a stopped service's cgroup). Not a sure leftover (it was, and reap's
# default plan killed it); the same process outside a service is one (the control)
mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
svc=$mnt/gpureap-test-$$.service
if [ "$(id -u)" -eq 0 ] && [ -n "$mnt" ] && mkdir "$svc" 2>/dev/null; then
        CGROUPS_MADE="$CGROUPS_MADE $svc"
        "$GPUREAP" run --quiet --no-cgroup -- bash -c 'echo "grun $GPUREAP_RUN_PID $GPUREAP_RUN_REF" >>"$1"' x "$PIDS" >/dev/null 2>&1
        read -r _ gpid gref < <(grep '^grun ' "$PIDS")
        sed -i '/^grun /d' "$PIDS"
        for role in g-svc g-left; do
                GPUREAP_RUN_PID=$gpid GPUREAP_RUN_REF=$gref setsid -f "$GPUHOLD" pidfile "$PIDS" $role cuda 0 0 100 sleep </dev/null >/dev/null 2>&1
        done
        wait_role g-svc g-left
        S=$(pid_of g-svc) L=$(pid_of g-left)
        LAUNCHED="$LAUNCHED $S $L"
        echo "$S" >"$svc/cgroup.procs"
        gr status --json
        [ "$(verdict "$S")" != "leftover sure" ] || fail "(g) a service with an ended run's imported markers: leftover sure"
        ok "(g) a systemd service with an ended run's imported markers: not a sure leftover ($(verdict "$S"))"
        ! planned "$S" || fail "(g) the default plan would kill it: $(cat "$T/out")"
        ok "(g) and the default plan spares it"
        gr status --json
        [ "$(verdict "$L")" = "leftover sure" ] || fail "(g) the control, outside a service: $(verdict "$L")"
        ok "(g) the control: the same process outside a service is a sure leftover"
        kill -KILL "$S" "$L"
        wait_state "$S" gone
        wait_state "$L" gone
else
        echo "# (g) skipped: needs root and a writable cgroup v2"
fi

# (b) the run is PID 1 of a PID namespace of its own; the holder records its host PID (it sees
# the host's /proc through a bind mount), as the fake driver lists host PIDs like the real one
if [ "$(id -u)" -eq 0 ] && unshare -p -f -m --mount-proc true 2>/dev/null; then
        mkdir "$T/hp"
        # in_ns ROLE [RUN OPTION] [COMMAND PREFIX...]: gpuhold as ROLE under that run; H, S
        in_ns() {
                local role=$1 opt=${2:-}
                shift 2
                unshare -m --propagation private bash -c "mount --bind /proc '$T/hp' && exec unshare -fp --mount-proc \
                        '$GPUREAP' run --quiet $opt -- unshare -m bash -c \"mount --bind '$T/hp' /proc && exec $* '$GPUHOLD' pidfile '$PIDS' $role cuda 0 0 100 sleep\"" \
                        >/dev/null 2>&1 &
                LAUNCHED="$LAUNCHED $!"
                wait_role "$role"
                H=$(pid_of "$role")
                S=$(awk '{print $4}' "/proc/$H/stat")
        }
        in_ns b --no-cgroup
        grep -q "NSpid:.*[[:space:]]1$" "/proc/$S/status" || fail "(b) the run is not PID 1 of its namespace: $(grep NSpid "/proc/$S/status")"
        gr status --json
        [ "$(verdict "$H")" = "live sure" ] || fail "(b) the holder of a live run that is its namespace's PID 1: $(verdict "$H")"
        ok "(b) a live run that is PID 1 of its own PID namespace: its holder is a live job"
        ! planned "$H" || fail "(b) the default plan would kill it: $(cat "$T/out")"
        ok "(b) and the default plan spares it"
        kill -KILL "$S" 2>/dev/null || true # the namespace's init: the namespace ends with it
        wait_state "$H" gone
        # (b2) the same with the run's cgroup (gpureap-run-1-RANDOM: its number there) and a holder
        # without GPUREAP_RUN_PID in its environment: the cgroup is what ties it to the run
        in_ns b2 "" env -u GPUREAP_RUN_PID
        for _ in $(seq 300); do grep -Eq "gpureap-run-1-[0-9a-f]{16}$" "/proc/$H/cgroup" && break; sleep 0.01; done # moved at 50 ms
        if grep -Eq "gpureap-run-1-[0-9a-f]{16}$" "/proc/$H/cgroup"; then
                gr status --json
                [ "$(verdict "$H")" = "live likely" ] || fail "(b2) the holder in the cgroup gpureap-run-1-RANDOM of a live run: $(verdict "$H")"
                ok "(b2) in the cgroup of a live run that is its namespace's PID 1: a live job ($(verdict "$H"))"
                ! planned "$H" || fail "(b2) the default plan would kill it: $(cat "$T/out")"
                ok "(b2) and the default plan spares it"
        else
                echo "# (b2) skipped: the run made no cgroup there ($(cat "/proc/$H/cgroup"))"
        fi
        term_and_wait "$S" 2>/dev/null || kill -KILL "$S" 2>/dev/null || true
        wait_state "$H" gone
else
        echo "# (b) skipped: needs root and PID namespaces"
fi

# control: the run is gone (SIGKILL): its holder is a sure leftover, as before
"$GPUREAP" run --quiet --no-cgroup -- "$GPUHOLD" pidfile "$PIDS" c cuda 0 0 100 sleep >/dev/null 2>&1 &
R=$!
LAUNCHED="$LAUNCHED $R"
wait_role c
H=$(pid_of c)
kill -KILL "$R"
wait "$R" 2>/dev/null || true
gr status --json
[ "$(verdict "$H")" = "leftover sure" ] || fail "(control) the holder of a killed run: $(verdict "$H")"
ok "(control) the run killed: its holder is a sure leftover"
done_testing
