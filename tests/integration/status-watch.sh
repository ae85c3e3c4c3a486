#!/bin/bash
# status -l SEC / --watch SEC (nvidia-smi -l): a fresh report every SEC. To a pipe the reports
# follow one another, a blank line between them, and each one is a new look (a job started
# between two shows up); at a terminal each one clears the screen and redraws. Ctrl-C or TERM
# ends it with exit 0, never in the middle of a report. The status table names the users of the
# holders; the JSON keeps the numbers.
. "$TESTLIB"
. "$(dirname "$TESTLIB")/tty-lib.sh"

# reports FILE: how many reports FILE holds (each starts with the program's line)
reports() { grep -c "^gpureap [0-9]" "$1" || true; }
# until_reports N FILE: until FILE holds N reports (bounded: 10 s)
until_reports() {
        local i=0
        until [ "$(reports "$2")" -ge "$1" ]; do
                i=$((i + 1)); [ $i -lt 1000 ] || fail "fewer than $1 reports: $(cat "$2")"; sleep 0.01
        done
}

# piped: the reports one after another; a job that starts meanwhile is in a later one. INT and
# TERM are given their default action first: a background job of a script has INT ignored
for sig in INT TERM; do
        env --default-signal=INT,TERM "$GPUREAP" status --watch 100ms >"$T/watch" 2>"$T/err" &
        w=$!
        LAUNCHED="$LAUNCHED $w"
        until_reports 2 "$T/watch"
        launch pidfile "$PIDS" job cuda 0 0 256 sleep
        wait_role job
        n=$(reports "$T/watch")
        until_reports $((n + 2)) "$T/watch"
        kill -$sig "$w"
        set +e
        wait "$w"
        RC=$?
        set -e
        expect_rc 0 "SIG$sig ends the watch cleanly"
        cp "$T/watch" "$T/out"
        grep -q "^0    BUSY " "$T/watch" || fail "the job never showed in a later report"
        grep -q "^0    CLEAN " "$T/watch" || fail "no report before the job"
        ok "each report a new look: CLEAN, then BUSY"
        # before every report but the first, a blank line; the file ends with a whole report
        awk '/^gpureap [0-9]/ && NR > 1 && prev != "" { bad = 1 } { prev = $0 } END { exit bad }' "$T/watch" ||
                fail "a report not separated by a blank line"
        ok "a blank line between the reports"
        [ "$(tail -n 1 "$T/watch" | cut -c1-4)" != "" ] || fail "the last report is cut"
        ! grep -q $'\033' "$T/watch" || fail "escape sequences in a pipe"
        ok "no escape sequence in a pipe"
        [ ! -s "$T/err" ] || fail "stderr: $(cat "$T/err")"
        kill -KILL "$(pid_of job)"
        wait_state "$(pid_of job)" gone
done

# negative control: without --watch one report, and the exit code of the diagnosis
gr status
expect_rc 0 "one report"
[ "$(reports "$T/out")" -eq 1 ] || fail "more than one report without --watch"
gr status -l 1 --replay "$T/none.json"
expect_rc 2 "--watch with --replay: a recording does not change"
gr status -l 0
expect_rc 2 "-l 0: a bad interval"

# at a terminal: each report clears the screen (ESC [H ESC [2J) and is drawn again; Ctrl-C
# (the terminal signals the whole foreground group, the NVML helper too) ends it with 0
term tty -- "$GPUREAP" status -l 100ms
wait_screen "$(printf '\033\\[H\033\\[2J').*gpureap [0-9]"
i=0
until [ "$(grep -ao $'\033\\[H\033\\[2J' "$J/screen" | wc -l)" -ge 3 ]; do
        i=$((i + 1)); [ $i -lt 1000 ] || fail "the screen was not redrawn: $(cat -v "$J/screen")"; sleep 0.01
done
ok "the screen is cleared and redrawn"
ctl keys 03
wait_event "^(exit|signal) "
term_done
[ "$JOB_RC" = 0 ] || fail "Ctrl-C: exit $JOB_RC, not 0"
ok "Ctrl-C at the terminal: exit 0"

# the users of the holders by name in the table, by number in the JSON
launch pidfile "$PIDS" job cuda 0 0 256 sleep
wait_role job
gr status
has out "^    $(pid_of job) +$$ +$(id -un) +S " "the table names the holder's user"
gr status --json
jqok ".processes[] | select(.pid == $(pid_of job)) | .uid == $(id -u)" "the JSON keeps the uid"
done_testing
