#!/bin/bash
# A leftover that forks when it gets SIGTERM (its child keeps the GPU files, the parent exits):
# the ladder pins the planned PIDs only (no refresh without --tree), so the child is never
# signalled. 1. plain 'reap' (default plan); 1b. 'reap --only PID@START' (serve's --reap-after:
# found by the second adversarial review, once newcomers were held to the plan's selection);
# 2. 'reap --tree' (control: the group is re-read); 3. 'slurm-epilog' of the leftover's job: the ended job's scope is not re-read either, so a
# job's leftover can outlive the epilog and have the node drained instead of cleaned.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
FORKER=$(cd "$(dirname "$0")" && pwd)/f-forker.py
start_forker() { # extra env...
        : >"$PIDS"
        env "$@" setsid -f python3 "$FORKER" "$PIDS" --multiprocessing-fork </dev/null >/dev/null 2>&1
        wait_role gen
        first=$(pid_of gen)
        i=0; while [ "$(awk '{print $4}' "/proc/$first/stat")" != 1 ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
}
kill_gens() {
        local p
        for p in $(awk '$1 == "gen" {print $2}' "$PIDS"); do kill -KILL "$p" 2>/dev/null || true; done
}
trap 'kill_gens; f_cleanup' EXIT
last_alive() {
        local p
        for p in $(awk '$1 == "gen" {print $2}' "$PIDS"); do alive "$p" && { echo "$p"; return 0; }; done
        return 1
}

for mode in plain only tree epilog no-events; do
        case $mode in
        plain) start_forker; gr reap --yes --grace 300ms --timeout 3s ;;
        no-events) start_forker # without the kernel's process events (not root): by parentage and group
                RC=0
                GPUREAP_TEST_NO_EVENTS=1 "$GPUREAP_TEST_HOOKS" reap --yes --grace 300ms --timeout 3s >"$T/out" 2>"$T/err" || RC=$? ;;
        only) start_forker # serve's --reap-after: exactly the leftover it saw, by PID and start
                gr reap --yes --only "$first@$(awk '{print $22}' "/proc/$first/stat")" --grace 300ms --timeout 3s ;;
        tree) start_forker; gr reap --yes --tree --grace 300ms --timeout 3s ;;
        epilog) start_forker SLURM_JOB_ID=91
                SLURM_JOB_ID=91 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0 gr slurm-epilog --timeout 3s --grace 300ms ;;
        esac
        grep -Eq "^  kill   $first " "$T/out" || { f_show; fail "($mode) the forker $first was not planned"; }
        echo "# ($mode) exit $RC; generations: $(awk '$1 == "gen" {printf "%s ", $2}' "$PIDS")"
        if p=$(last_alive); then
                f_show
                bad "($mode) the leftover's child $p (forked on SIGTERM, holding the GPU) outlived '$mode' (exit $RC)"
        else
                ok "($mode) every generation ended (exit $RC)"
        fi
        kill_gens
done
f_done
