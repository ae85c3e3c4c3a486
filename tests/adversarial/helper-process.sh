#!/bin/bash
# Issue 9, "one way to signal": the NVML helper is an executed program (never a fork of the
# caller, which in a threaded program may not call dlopen), it holds none of the caller's files
# (a helper stuck in the driver must not keep open a pipe that someone reads gpureap's output
# from), and it never outlives its caller. The fake driver hangs so the helper can be looked at.
. "$TESTLIB"

scenario "gpu 0" "hang nvmlDeviceGetMemoryInfo_v2"
exec 7>"$T/caller-file"
"$GPUREAP" status --nvml-timeout 60s >"$T/out" 2>"$T/err" &
G=$!
LAUNCHED="$LAUNCHED $G"
exec 7>&-

# helper_of PID: its child that has the fake NVML loaded (bounded wait)
helper=""
for _ in $(seq 1000); do
        for c in $(cat /proc/$G/task/*/children 2>/dev/null); do
                grep -qs -- "$FAKE_NVML" "/proc/$c/maps" && helper=$c
        done
        [ -n "$helper" ] && break
        sleep 0.01
done
[ -n "$helper" ] || fail "no helper of gpureap $G has the driver loaded"
ok "gpureap $G has a helper, $helper, inside the driver"

# negative control: the caller itself holds the file the helper must not
[ "$(readlink "/proc/$G/fd/7")" = "$T/caller-file" ] || fail "gpureap does not hold fd 7"
ok "negative control: gpureap holds fd 7 ($T/caller-file)"

tr '\0' ' ' <"/proc/$helper/cmdline" >"$T/cmdline"
grep -qx 'gpureap-nvml-helper --gpureap-nvml-helper ' "$T/cmdline" || fail "the helper was not executed: its command line is '$(cat "$T/cmdline")'"
ok "the helper is an executed program (its own command line)"
[ "$(readlink "/proc/$helper/exe")" = "$(readlink -f "$GPUREAP")" ] || fail "the helper runs $(readlink "/proc/$helper/exe")"
ok "the gpureap command is its own helper"
[ "$(cat "/proc/$helper/comm")" = gpureap-nvml ] || fail "the helper is named '$(cat "/proc/$helper/comm")'"
ok "it is named gpureap-nvml"
fds=$(cd "/proc/$helper/fd" && ls | sort -n | tr '\n' ' ')
[ "$fds" = "0 1 2 4 " ] || fail "the helper holds fds $fds"
for f in 0 1 2; do
        [ "$(readlink "/proc/$helper/fd/$f")" = /dev/null ] || fail "the helper's fd $f is $(readlink "/proc/$helper/fd/$f")"
done
grep -q '^pipe:' <<<"$(readlink "/proc/$helper/fd/4")" || fail "fd 4 is $(readlink "/proc/$helper/fd/4")"
ok "it holds only /dev/null and its pipe: none of the caller's files"
grep -q '/memfd:gpureap-nvml' "/proc/$helper/maps" || fail "the helper has not mapped the shared memory"
ok "it has the shared memory mapped"

# it never outlives its caller
kill -KILL "$G"
wait "$G" 2>/dev/null || true
wait_state "$helper" "gone Z"
ok "the helper ended with its caller"
done_testing
