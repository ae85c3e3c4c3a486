#!/bin/bash
# A parent is judged by what it is, not by its name: a process an init shim started as its
# command is that shim's job, a live launcher that calls itself 'init' is alive, and only what
# was handed to an init or a subreaper is an orphan.
# - 'dumb-init -- env TORCHELASTIC_RUN_ID=j LOCAL_RANK=0 WORKER' (and tini's): the live worker
#   was "a worker whose launcher is gone, leftover sure", and 'reap --yes' killed it;
# - a live python-style launcher named 'init' (prctl) had its spawn worker killed the same way.
# Control: a worker handed to tini -s after its launcher died is still a sure leftover, reaped.
. "$TESTLIB"
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2"
SPAWN="python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork"
verdict() { jq -r ".processes[] | select(.pid == $1) | .verdict | \"\(.judgement) \(.confidence)\"" "$T/out"; }

shims=(tini)
command -v dumb-init >/dev/null && shims+=(dumb-init) || echo "# dumb-init is not installed: only tini's command checked"
for shim in "${shims[@]}"; do
        : >"$T/shim.pids"
        if [ "$shim" = tini ]; then
                tini -s -- env TORCHELASTIC_RUN_ID=j LOCAL_RANK=0 "$GPUHOLD" cuda 0 0 128 pidfile "$PIDS" "cmd-$shim" sleep &
        else
                dumb-init -- env TORCHELASTIC_RUN_ID=j LOCAL_RANK=0 "$GPUHOLD" cuda 0 0 128 pidfile "$PIDS" "cmd-$shim" sleep &
        fi
        LAUNCHED="$LAUNCHED $!"
        wait_role "cmd-$shim"
        w=$(pid_of "cmd-$shim")
        gr status --json
        [ "$(verdict "$w")" = "live sure" ] || fail "$shim's own command, a torchrun-marked worker: $(verdict "$w")"
        ok "the command $shim started is its job: live sure"
        gr reap --yes --gpu 0
        [ -d "/proc/$w" ] || fail "reap --yes killed the live command of $shim"
        ok "and 'reap --yes' spares it"
        kill -KILL "$w"; wait_state "$w" gone
done

# a live launcher that named itself 'init', with a spawn worker
bash -c 'exec -a "$1" "$2" pidfile "$3" fakeinit name init worker "$3" spawned 1 1 128 sleep' _ "$SPAWN" "$GPUHOLD" "$PIDS" &
LAUNCHED="$LAUNCHED $!"
wait_role fakeinit spawned
w=$(pid_of spawned)
gr status --json
jqok ".processes[] | select(.pid == $(pid_of fakeinit)) | .comm == \"init\"" "the launcher is named init"
[ "$(verdict "$w")" = "live sure" ] || fail "the spawn worker of a live launcher named init: $(verdict "$w")"
ok "the worker of a live launcher named 'init' is live sure"
gr reap --yes --gpu 1
[ -d "/proc/$w" ] || fail "reap --yes killed the worker of a live launcher named init"
ok "and 'reap --yes' spares it"

# control: a spawn worker handed to a subreaper tini after its launcher died is an orphan
# (tini's command, a shell, lives on: tini ends with it)
tini -s -- bash -c 'echo "shimcmd $$" >>"$3"; (exec -a "$1" "$2" pidfile "$3" launcher daemon-worker "$3" orphan 2 2 128 sleep) & exec sleep 1000' \
        _ "$SPAWN" "$GPUHOLD" "$PIDS" &
LAUNCHED="$LAUNCHED $!"
wait_role launcher orphan
o=$(pid_of orphan)
kill -KILL "$(pid_of launcher)"; wait_state "$(pid_of launcher)" "Z gone" # (a zombie of the shell that does not wait)
gr status --json
[ "$(jq -r ".processes[] | select(.pid == $o) | .ppid" "$T/out")" != 1 ] || fail "the orphan went to PID 1, not to tini"
[ "$(verdict "$o")" = "leftover sure" ] || fail "(control) a spawn worker handed to tini: $(verdict "$o")"
ok "(control) a worker handed to tini -s once its launcher died: leftover sure"
gr reap --yes --gpu 2
wait_state "$o" gone
ok "(control) and reaped"
done_testing
