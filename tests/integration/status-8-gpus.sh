#!/bin/bash
# An 8-GPU node, as the first screen answers for it: one line per GPU (state, memory, who and
# why), details only of what is not clean, a job across GPUs as one finding that names them,
# every line within the terminal's width, and nothing cut on a pipe. Three nodes with real
# process trees: all clean; one tensor-parallel job of 8 ranks busy on all 8 GPUs; a leftover
# on GPU 3 and a ghost on GPU 5, the rest clean.
. "$TESTLIB"
for i in 4 5 6 7; do truncate -s 4096 "$T/dev/nvidia$i"; done
gpus=()
for i in 0 1 2 3 4 5 6 7; do gpus+=("gpu $i minor=$i"); done
scenario "${gpus[@]}"

widest() { awk '{ n = length($0); if (n > m) m = n } END { print m + 0 }' "$T/out"; }
lines() { wc -l <"$T/out"; }
# every line within COLUMNS=80, for the report named $1
fits_80() {
        [ "$(widest)" -le 80 ] || fail "$1 at COLUMNS=80: a line of $(widest) columns"
        ok "$1 at COLUMNS=80: every line within 80 columns ($(lines) lines)"
}

# ---- all clean: 8 lines under a heading, nothing else ----
gr status --json
expect_rc 0 "8 clean GPUs"
jqok '[.gpus[].state] == ["clean","clean","clean","clean","clean","clean","clean","clean"] and .findings == []' "every GPU clean, no finding"
gr status
expect_rc 0 "the table of a clean node"
[ "$(lines)" -le 12 ] || fail "a clean 8-GPU node takes $(lines) lines"
ok "a clean 8-GPU node fits in 12 lines ($(lines))"
[ "$(grep -Ec '^[0-7] +CLEAN +0 B/140.4 GiB +-$' "$T/out")" -eq 8 ] || fail "not one CLEAN line per GPU"
ok "one line per GPU: CLEAN, memory, nobody"
hasnt out "^GPU [0-7]  |findings:|holders" "no details of clean GPUs"
gr status --why
[ "$(grep -c '^GPU [0-7]  CLEAN  NVIDIA H200' "$T/out")" -eq 8 ] || fail "--why does not detail every GPU"
ok "--why: the details of every GPU, clean ones too"

# ---- one TP=8 job busy on all 8 GPUs: one finding naming GPUs 0-7 ----
ranks=()
for i in 0 1 2 3 4 5 6 7; do ranks+=(worker "$PIDS" "r$i" "$i" "$i" 70000); done
launch pidfile "$PIDS" launcher setpgid "${ranks[@]}" sleep
wait_role launcher r0 r1 r2 r3 r4 r5 r6 r7
l=$(pid_of launcher)
rs=""
for i in 0 1 2 3 4 5 6 7; do rs="$rs${rs:+,}$(pid_of "r$i")"; done

gr status --json
expect_rc 1 "busy is not clean"
jqok '[.gpus[].state] | all(. == "busy")' "all 8 GPUs busy"
jqok '.findings | length == 1' "one finding for the job"
jqok ".findings[0] | .kind == \"busy\" and .gpus == [0,1,2,3,4,5,6,7] and .gpu == null and .job == \"process group $l\" and (.leftover | not)" "busy, naming GPUs 0-7 and the job"
jqok ".findings[0] | .pids == [$rs] and .memory == 8*70000*1048576" "all 8 ranks, their memory summed"
jqok "[.processes[] | select(.verdict) | .verdict | .judgement == \"live\" and .launcher == $l] | length == 8 and all" "each rank: live, under the launcher"
cp "$T/out" "$T/busy.json"

gr status
has out "^  busy  GPUs 0-7: in use by $(pid_of r0) \\(gpuhold\\) and 7 others of process group $l with 546.9 GiB: a live job$" "one busy finding naming GPUs 0-7"
[ "$(grep -c '^  busy  ' "$T/out")" -eq 1 ] || fail "more than one busy finding in the table"
ok "said once, not once per GPU"
[ "$(grep -Ec "^[0-7] +BUSY +68.4/140.4 GiB +process group $l \\(gpuhold\\), live: its parent $l \\(gpuhold\\) is alive$" "$T/out")" -eq 8 ] ||
        fail "not one BUSY line per GPU naming the job"
ok "each GPU's line: BUSY, its memory, the job and why it is live"
has out "^  launcher: process group $l \\(gpuhold, alive\\), on GPUs 0-7$" "the ranks in one table under their launcher"
hasnt out "^GPU [0-7]  " "a GPU busy with a live job alone needs no details"
[ "$(widest)" -gt 200 ] || fail "piped, the widest line has $(widest) columns: cut?"
has out "r7 7 7 70000 sleep$" "piped: the command lines whole"
echo "busy, piped: $(lines) lines"
COLUMNS=80 gr status
fits_80 "busy TP=8"
[ "$(grep -Ec "^[0-7] +BUSY +68.4/140.4 GiB +process group $l \\(gpuhold\\), live" "$T/out")" -eq 8 ] || fail "cut before the job"
ok "COLUMNS=80: each GPU's line still names the job"
has out '^    [0-9]+ .* owner, live sure +/.*\.\.\.$' "COLUMNS=80: the command cut with '...'"
COLUMNS=80 gr status --wide
has out "r7 7 7 70000 sleep$" "--wide: whole command lines whatever COLUMNS says"

# on a terminal, its own width wins over COLUMNS
COLUMNS=60 script -qec "stty cols 100 rows 50; $GPUREAP status" /dev/null | tr -d '\r' |
        sed 's/\x1b\[[0-9;]*m//g' >"$T/out" || true # colours take no room
[ "$(widest)" -le 100 ] && [ "$(widest)" -gt 60 ] || fail "on a terminal of 100 columns the widest line has $(widest)"
ok "a terminal's width (TIOCGWINSZ) before COLUMNS"

# the advice, pasted, stops the whole job on all 8 GPUs
cmd=$(jq -r '.findings[0].advice | sub("^.*to stop it: "; "")' "$T/busy.json")
[ "$cmd" = "gpureap reap --gpu 0,1,2,3,4,5,6,7 --pid $rs" ] || fail "the advice's command: $cmd"
ok "one command stops the job: $cmd"
eval "$cmd --yes" >"$T/reap.out" 2>&1 || { cat "$T/reap.out"; fail "the advice failed"; }
for i in 0 1 2 3 4 5 6 7; do wait_state "$(pid_of "r$i")" "gone Z"; done # zombies of the launcher
gr status --json
expect_rc 0 "clean again"
kill -KILL "$l"; wait "$l" 2>/dev/null || true

# ---- a dirty mix: a leftover on GPU 3, a ghost on GPU 5, the rest clean ----
launch pidfile "$PIDS" l3 setpgid worker "$PIDS" left 3 3 4000 sleep
wait_role l3 left
l3=$(pid_of l3); left=$(pid_of left)
kill -KILL "$l3"; wait "$l3" 2>/dev/null || true
launch pidfile "$PIDS" owner setpgid cuda 5 5 2048 spawn-holder "$PIDS" child exit
wait_role owner child
owner=$(pid_of owner); child=$(pid_of child)
wait "$LAST" || true
wait_state "$owner" gone

gr status --json
expect_rc 1 "dirty"
jqok '[.gpus[].state] == ["clean","clean","clean","dirty","clean","dirty","clean","clean"]' "GPUs 3 and 5 dirty, the rest clean"
jqok "[.findings[] | select(.leftover)] | map([.kind, .gpus, .pids]) == [[\"orphan\", [3], [$left]], [\"ghost\", [5], [$child]]]" "the leftover on GPU 3, the ghost's holder on GPU 5"
cp "$T/out" "$T/dirty.json"
gr status
has out "^3 +DIRTY +3.9/140.4 GiB +leftover $left \\(gpuhold\\) \\[likely\\]: its launcher, the leader of process group $l3, is gone$" "GPU 3's line: the leftover, how sure, why"
has out "^5 +DIRTY +2.0/140.4 GiB +ghost of PID $owner, kept by $child \\(gpuhold\\) \\[sure\\]: it keeps the GPU memory" "GPU 5's line: the ghost and who keeps its memory"
[ "$(grep -Ec '^[0-24-67] +CLEAN +0 B/140.4 GiB +-$' "$T/out")" -eq 6 ] || fail "the clean GPUs are not one plain line each"
ok "the six clean GPUs: one line each"
[ "$(grep -c '^GPU [0-7]  ' "$T/out")" -eq 2 ] || fail "details of other GPUs than 3 and 5"
has out '^GPU 3  DIRTY' "details of GPU 3"
has out '^GPU 5  DIRTY' "and of GPU 5, no other"
has out "^    $owner +compute +2.0 GiB +not found" "GPU 5's details: the driver's dead owner"
has out "^         next: gpureap reap --gpu 5 --pid $child$" "the ghost's next step"
has out "^          next: gpureap reap --gpu 3 --pid $left$" "the leftover's next step"
echo "dirty, piped: $(lines) lines"
COLUMNS=80 gr status
fits_80 "dirty mix"
has out "^3 +DIRTY +3.9/140.4 GiB +leftover $left \\(gpuhold\\) \\[likely\\]" "COLUMNS=80: GPU 3's line keeps who and how sure"
has out "^5 +DIRTY +2.0/140.4 GiB +ghost of PID $owner, kept by $child \\(gpuhold\\) \\[sure\\]" "COLUMNS=80: GPU 5's line too"

# a replay says so: when and where it was recorded
gr status --replay "$T/dirty.json"
host=$(jq -r .host "$T/dirty.json")
when=$(jq -r '.taken_at | sub("T"; " ") | sub("Z$"; " UTC")' "$T/dirty.json")
has out "^replay: recorded on host $host at $when \\($T/dirty.json\\), not this machine now$" "a replay names its host, time and file"
has out "^5 +DIRTY " "the replay's verdicts"
gr status --replay "$T/dirty.json" --json
jqok ".taken_at == \"$(jq -r .taken_at "$T/dirty.json")\" and .view.replayed" "the replay keeps the recording's time"

# the next steps, pasted: the node is clean
for c in $(jq -r '.findings[] | select(.leftover) | .next_step | @base64' "$T/dirty.json"); do
        eval "$(echo "$c" | base64 -d) --yes" >/dev/null
done
wait_state "$left" gone; wait_state "$child" gone
gr status --json
expect_rc 0 "clean after the next steps"

# a dead launcher's workers on GPUs 0, 2 and 5: one finding, "GPUs 0,2,5"
launch pidfile "$PIDS" l4 setpgid worker "$PIDS" a 0 0 100 worker "$PIDS" b 2 2 100 worker "$PIDS" c 5 5 100 sleep
wait_role l4 a b c
l4=$(pid_of l4)
kill -KILL "$l4"; wait "$l4" 2>/dev/null || true
gr status --json
jqok "[.findings[] | select(.kind == \"orphan\")] | length == 1 and .[0].gpus == [0,2,5] and .[0].next_step == \"gpureap reap --gpu 0,2,5 --pid $(pid_of a),$(pid_of b),$(pid_of c)\"" "one orphan finding for the job on GPUs 0, 2 and 5"
gr status
has out "^  orphan  GPUs 0,2,5: 3 processes of process group $l4 holding 300 MiB" "the table names them: GPUs 0,2,5"
done_testing
