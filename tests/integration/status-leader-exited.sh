#!/bin/bash
# A holder whose main thread ended alone (pthread_exit) while another thread runs on: the
# leader's stat says Z and its /proc/PID/fd is empty, but the process, its device files and its
# context live on in the other thread. It is a live holder (found through the live thread's fd
# directory), never a zombie that released everything, and reap --pid ends it for good. And a
# live process whose device files are in a thread's own file table is their holder too.
. "$TESTLIB"

launch cuda 0 0 512 pidfile "$PIDS" holder leader-exit
wait_role holder
holder=$(pid_of holder)
wait_state "$holder" Z
[ -n "$(ls "/proc/$holder/task" | grep -vx "$holder")" ] || fail "the other thread is not there"

gr status --json
expect_rc 1 "the GPU is not clean"
jqok ".gpus[0].holders == [{pid: $holder, fds: 3}]" "the holder is found through its live thread"
jqok ".processes[] | select(.pid == $holder) | .state != \"Z\" and .state != \"X\"" "its state is its live thread's, not the leader's Z"
jqok ".gpus[0].context_owners[0].pid == $holder and .gpus[0].context_owners[0].process != \"zombie\"" "the context owner is not called a zombie"
jqok "[.findings[] | select(.kind == \"ghost\")] == []" "no ghost: the owner is alive"

# the kernel-side scan names it too, where it can run (the same process through the same thread)
GPUREAP_SCAN=bpf gr status --json
if [ "$(jq -r .proc.scan "$T/out")" = bpf ]; then
        jqok ".gpus[0].holders == [{pid: $holder, fds: 3}]" "the BPF scan finds the same holder"
        jqok ".processes[] | select(.pid == $holder) | .state != \"Z\"" "the BPF scan: its live thread's state"
else
        echo "# the BPF scan cannot run here: $(jq -r .proc.scan_fallback "$T/out")"
fi

gr reap --pid "$holder" --yes
expect_rc 0 "reap --pid ended it"
for _ in $(seq 300); do [ -d "/proc/$holder" ] || break; sleep 0.01; done
[ ! -d "/proc/$holder/task" ] || [ -z "$(ls "/proc/$holder/task" 2>/dev/null)" ] || fail "a thread of $holder is still there"
ok "no thread of it is left"

# its first live thread has a file table of its own without the GPU: the other thread's is read
launch cuda 0 0 512 pidfile "$PIDS" split leader-exit-unshared
wait_role split
split=$(pid_of split)
wait_state "$split" Z
for s in proc bpf; do
        GPUREAP_SCAN=$s gr status --json
        [ "$s" = proc ] || [ "$(jq -r .proc.scan "$T/out")" = bpf ] || continue
        jqok ".gpus[0].holders == [{pid: $split, fds: 3}]" "$s scan: found through the thread that has the process's files"
done
kill -KILL "$split"

# a live leader whose own table holds nothing, while a thread's own table (unshare(CLONE_FILES))
# holds the GPU: the process holds it, as the driver says, through that thread's fd directory
launch cuda 0 0 512 pidfile "$PIDS" thread thread-holds sleep
wait_role thread
th=$(pid_of thread)
for _ in $(seq 500); do ls -l "/proc/$th/fd" | grep -q nvidia0 || break; sleep 0.01; done
! ls -l "/proc/$th/fd" | grep -q nvidia || fail "the leader's table still has the device files"
ls -l /proc/"$th"/task/*/fd | grep -q nvidia0 || fail "no thread of $th holds the device files"
for s in proc bpf; do
        GPUREAP_SCAN=$s gr status --json
        [ "$s" = proc ] || [ "$(jq -r .proc.scan "$T/out")" = bpf ] || continue
        jqok ".gpus[0].holders == [{pid: $th, fds: 3}]" "$s scan: a thread's own table holds the GPU of a live process"
        jqok ".processes[] | select(.pid == $th) | .state == \"S\"" "$s scan: its state is its leader's"
done
kill -KILL "$th"

# run_leader_exited WHO ROLE JSON [PREFIX...]: under gpureap run (PREFIX before it: setpriv), a
# holder whose leader ends alone, looked at while its leader is a zombie, ended, and its memory
# awaited
run_leader_exited() {
        local who=$1 role=$2 json=$3
        shift 3
        "$@" "$GPUREAP" run --json "$json" -- "$GPUHOLD" cuda 0 0 1000 pidfile "$PIDS" "$role" leader-exit \
                >"$T/out" 2>"$T/err" &
        g=$!
        LAUNCHED="$LAUNCHED $g"
        wait_role "$role"
        wait_state "$(pid_of "$role")" Z
        sleep 0.4 # past run's first looks
        term_and_wait "$g"
        expect_rc 143 "$who: gpureap was told to end"
        has err "GPU memory back in [0-9]+ ms" "$who: run saw the GPU of a process whose leader had ended"
        cp "$json" "$T/out"
        jqok '.gpu_minors == [0] and .drain.memory_back == true' "$who: the result names GPU 0 and the memory back"
}
run_leader_exited root run-holder "$T/run.json"

# the same as a user: the ended leader's fd directory is root's then, refused to the user, and its
# live thread holds the GPU (run named no GPU and waited for no memory)
if command -v setpriv >/dev/null; then
        chmod 0755 "$T"; chmod 0666 "$T"/dev/*; chmod 1777 "$T/ctx"; chmod 0666 "$PIDS"
        mkdir -p "$T/u" && chmod 1777 "$T/u"
        run_leader_exited "as a user" user-holder "$T/u/run.json" setpriv --reuid=4261 --regid=4261 --clear-groups
else
        ok "# SKIP no setpriv"
fi
done_testing
