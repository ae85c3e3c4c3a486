#!/bin/bash
# A leftover that answers SIGTERM by forking a child that opens an AMD or Intel GPU's render node
# (found by the sixth adversarial round): the plan refuses every DRM or KFD holder
# (GR_REFUSE_DRM: not reaped on AMD/Intel yet), but fork-following added such a newcomer to the
# ladder without asking, and signalled it. It must be spared, in every mode that follows forks;
# and reap must not call the GPU clean while it holds the files. Then (late) a child that gets
# the file after its SIGTERM, before its SIGKILL, and (thread) a planned target whose thread
# holds it in a file table of its own: the ladder looks again just before each signal.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
FORKER=$(cd "$(dirname "$0")" && pwd)/f-forker.py
mkdir -p "$T/dev/dri"
truncate -s 4096 "$T/dev/dri/renderD128"
kill_ours() {
        local p
        for p in $(awk '$1 == "gen" || $1 == "drm" {print $2}' "$PIDS"); do kill -KILL "$p" 2>/dev/null || true; done
}
trap 'kill_ours; f_cleanup' EXIT

for mode in plain tree no-events late thread; do
        : >"$PIDS"
        how=1
        [ "$mode" = late ] || [ "$mode" = thread ] && how=$mode
        F_FORKER_DRM=$how setsid -f python3 "$FORKER" "$PIDS" --multiprocessing-fork </dev/null >/dev/null 2>&1
        wait_role gen
        first=$(pid_of gen)
        i=0; while [ "$(awk '{print $4}' "/proc/$first/stat")" != 1 ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
        case $mode in
        plain | late | thread) gr reap --yes --grace 500ms --timeout 2s ;;
        tree) gr reap --yes --tree --grace 300ms --timeout 2s ;;
        no-events) RC=0
                GPUREAP_TEST_NO_EVENTS=1 "$GPUREAP_TEST_HOOKS" reap --yes --grace 300ms --timeout 2s >"$T/out" 2>"$T/err" || RC=$? ;;
        esac
        grep -Eq "^  kill   $first " "$T/out" || { f_show; fail "($mode) the forker $first was not planned"; }
        i=0; while ! grep -q '^drm ' "$PIDS" && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
        child=$(pid_of drm)
        [ -n "$child" ] || { f_show; fail "($mode) the forker did not fork its DRM child"; }
        if [ "$mode" = late ]; then
                # it got SIGTERM (which it ignores) before it had the file, and must not get
                # the SIGKILL after: the ladder looks again just before each signal
                i=0; while ! grep -q "renderD128" <(ls -l "/proc/$child/fd" 2>/dev/null) && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.01; done
        fi
        if alive "$child"; then
                ok "($mode) the process holding a render node ($child) was spared (exit $RC)"
        else
                f_show
                bad "($mode) the process holding a render node ($child) was signalled (exit $RC)"
        fi
        if [ "$mode" = late ] || [ "$mode" = thread ]; then
                if grep -Eq "^  $child +spared" "$T/out"; then
                        ok "($mode) reap says it spared $child"
                else
                        f_show
                        bad "($mode) reap does not say it spared $child"
                fi
        fi
        if [ "$RC" = 0 ]; then
                f_show
                bad "($mode) reap said the GPU is clean (exit 0) while the spared child still holds it"
        else
                ok "($mode) reap does not call the GPU clean while the child holds it (exit $RC)"
        fi
        kill_ours
done
f_done
