#!/bin/bash
# Issue 14 item 1: the NVML helper reads the GPUs in threads, at most 16 at once, so attaching 8
# or 64 GPUs (6.6 ms each on an H200) does not add up. The fake driver delays every handle call
# and logs each call as it begins with the number of calls in the library at that moment: the
# checks are on that structure (several handle calls at once, never more than 16 calls) and on
# the report (every GPU, in index order, errors with their GPU), never on a time.
. "$TESTLIB"

LOG=$T/calls
# gpus N [LINE...]: a scenario of N GPUs (logged), plus the lines given
gpus() {
        local n=$1 i
        shift
        : >"$LOG"
        { for ((i = 0; i < n; i++)); do echo "gpu $i"; done; echo "log $LOG"; printf '%s\n' "$@"; } >"$T/lines"
        mapfile -t lines <"$T/lines"
        scenario "${lines[@]}"
}
# most FIELD [FUNCTION]: the largest ALL (4) or SAME (5) count the log shows (for FUNCTION)
most() {
        awk -v f="$1" -v fn="${2:-}" 'fn == "" || $2 == fn { if ($f > m) m = $f } END { print m + 0 }' "$LOG"
}
H=nvmlDeviceGetHandleByIndex_v2

# negative control: the measure sees no overlap where there can be none (one GPU)
gpus 1 "delay $H 30"
"$GPUREAP" status --json >"$T/out" 2>"$T/err" || fail "status on one GPU"
[ "$(most 5 $H)" -eq 1 ] || fail "one GPU, yet $(most 5 $H) handle calls at once: the measure is wrong"
[ "$(most 4)" -eq 1 ] || fail "one GPU, yet $(most 4) calls at once"
ok "negative control: one GPU makes one call at a time"

for n in 8 64; do
        gpus "$n" "delay $H 20"
        set +e
        timeout -s KILL 60 "$GPUREAP" status --json >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        expect_rc 0 "$n GPUs, clean"
        jqok "[.gpus[].index] == [range($n)]" "$n GPUs: all of them, in index order"
        jqok "[.gpus[] | (.uuid | ltrimstr(\"GPU-fa4e0000-0000-4000-8000-\") | tonumber) == .index and .minor == .index] | all" \
                "$n GPUs: each GPU's own UUID and minor at its index"
        # each GPU's handle taken exactly once, by one helper process
        [ "$(awk -v fn=$H '$2 == fn { print $3 }' "$LOG" | sort -n | uniq -c | awk '$1 == 1' | wc -l)" -eq "$n" ] ||
                fail "$n GPUs: not one handle call each: $(awk -v fn=$H '$2 == fn' "$LOG" | head)"
        [ "$(awk '{ print $1 }' "$LOG" | sort -u | wc -l)" -eq 1 ] || fail "$n GPUs: more than one helper"
        same=$(most 5 $H) all=$(most 4)
        [ "$same" -gt 1 ] || fail "$n GPUs: the handle calls ran one after another"
        [ "$all" -le 16 ] || fail "$n GPUs: $all calls at once, more than the 16 threads allowed"
        ok "$n GPUs: up to $same handle calls at once, never more than 16 calls ($all)"
done

# errors stay with their GPU, the others are read in full
gpus 8 "delay $H 20" "fail $H 15 gpu=5" "fail nvmlDeviceGetUUID 999 gpu=2"
set +e
"$GPUREAP" status --json >"$T/out" 2>"$T/err"
RC=$?
set -e
expect_rc 3 "a GPU that cannot be read"
jqok "[.gpus[].index] == [range(8)]" "every GPU listed, in order, with one lost"
jqok '.gpus[5].state == "unknown" and (.gpus[5].error | test("nvmlDeviceGetHandleByIndex_v2: GPU is lost"))' \
        "GPU 5's failed handle is GPU 5's error"
jqok '.gpus[2].uuid == null and .gpus[2].state == "clean" and .gpus[2].error == null' \
        "GPU 2's failed UUID leaves GPU 2 without a UUID, nothing more"
jqok '[.gpus[] | select(.index != 5 and .index != 2) | .error == null and .uuid != null] | all' \
        "the other GPUs are read in full"
done_testing
