#!/bin/bash
# The recordings of 2026-12-03 on the H200 (tests/fixtures/h200-2026-12-03/, made by
# tests/gpu/all.sh with real CUDA processes and the real driver) replayed: the diagnosis of a
# recording is the one gpureap gave live, holder by holder and finding by finding, and the
# verdicts that matter on a real machine hold.
. "$TESTLIB"
R=$(dirname "$TESTLIB")/../fixtures/h200-2026-12-03
[ -f "$R/ghost.json" ] || fail "no recordings in $R"

# every recording: the same judgement, confidence and role for each holder, the same findings
n=0
B=$(dirname "$TESTLIB")/../fixtures/h200-2026-12-03-b # the afternoon's, with the threaded NVML helper
C=$(dirname "$TESTLIB")/../fixtures/h200-2026-12-03-c # the evening's: the BPF scan, eight workers through serve
for f in "$R"/*.json "$R"/scenarios/*.status.json "$B"/*.json "$B"/scenarios/*.status.json "$C"/*.json; do
        gr status --replay "$f" --json
        [ "$RC" -le 1 ] || fail "replay of $f: exit $RC"
        cp "$T/out" "$T/replayed.json"
        pick='[.processes[] | select(.verdict) | [.pid, .verdict.judgement, .verdict.confidence, .verdict.role]],
              [.findings[] | [.kind, .pids, .confidence, .leftover]], [.gpus[] | .state]'
        want=$(jq -c "$pick" "$f") || fail "$f is no JSON"
        got=$(jq -c "$pick" "$T/replayed.json")
        [ "$want" = "$got" ] || fail "$(basename "$f"): live said $want, the replay says $got"
        n=$((n + 1))
done
[ $n -ge 36 ] || fail "only $n recordings"
ok "$n recordings: the replay gives the verdicts gpureap gave live"

# the BPF scan and the /proc scan on the real device files: the same holders and verdicts
pick='[.processes[] | [.pid, .devices, .verdict.judgement, .verdict.confidence]], [.findings[] | [.kind, .pids]], [.gpus[] | .state]'
[ "$(jq -r .proc.scan "$C/scan-bpf.json") $(jq -r .proc.scan "$C/scan-proc.json")" = "bpf proc" ] || fail "the recordings do not say which scan ran"
[ "$(jq -c "$pick" "$C/scan-bpf.json")" = "$(jq -c "$pick" "$C/scan-proc.json")" ] || fail "the BPF and /proc scans differ on the H200"
ok "on the H200 the BPF scan and the /proc scan found the same holders, device files and verdicts"
# through serve and --direct, eight CUDA workers: the same verdicts
pick='[.processes[] | select(.verdict) | [.pid, .verdict.judgement, .verdict.confidence]], [.findings[] | [.kind, .pids]], [.gpus[] | .state]'
[ "$(jq -c "$pick" "$C/served-eight.json")" = "$(jq -c "$pick" "$C/direct-eight.json")" ] || fail "serve and --direct differ"
jq -e '.history.served_by > 0' "$C/served-eight.json" >/dev/null || fail "served-eight.json is not serve's"
ok "eight CUDA workers: through serve the verdicts and findings of --direct"

pid_of_rec() { awk -v r="$2" '$1 == r {print $2}' "$R/scenarios/$1.pids"; }

# the ghost: a forked child keeps the memory of the dead owner; sure, next step reaps the child
gr status --replay "$R/ghost.json" --json
expect_rc 1 "ghost: dirty"
jqok '[.findings[] | select(.kind == "ghost")] | length == 1 and .[0].confidence == "sure" and .[0].leftover' "ghost: one sure ghost finding"
jqok '.findings[] | select(.kind == "ghost") | .next_step | test("^gpureap reap --gpu 0 --pid [0-9]+$")' "ghost: next step reaps the hidden holder"
gr status --replay "$R/monitor.json" --json
jqok '[.processes[] | select(.verdict.role == "monitor")] | length == 1' "nvidia-smi -l beside the ghost: a monitor"
jqok '[.findings[] | select(.leftover) | .pids[]] as $l | [.processes[] | select(.verdict.role == "monitor") | .pid] | all(. as $m | $l | index($m) | not)' "the monitor is in no leftover finding"
gr status --replay "$R/running.json" --json
expect_rc 1 "four CUDA workers of a live launcher: not clean"
jqok '.gpus[0].state == "busy"' "four CUDA workers of a live launcher: busy, not dirty"
jqok '[.findings[] | select(.leftover)] == []' "a live launcher's workers: no leftover"

# the launcher (its own session) SIGKILLed: its four workers are likely leftovers, named
gr status --replay "$R/orphans.json" --json
jqok '[.findings[] | select(.kind == "orphan")] | length == 1 and (.[0].pids | length) == 4 and .[0].confidence == "likely"' "orphans: four likely leftovers in one finding"
gr status --replay "$R/orphans.json"
has out 'likely, not sure: a plain .gpureap reap. spares them' "orphans: the table says the plain reap spares them"

# real launchers: torchrun's workers of a dead agent are sure; SGLang and torchrun alive are not
# leftovers at all; a dead 'gpureap run' leaves sure leftovers
for s in torchrun-agent-killed:rank0:rank1 run-supervisor-killed:rank0:rank1 ghost:loader0; do
        IFS=: read -r name r0 r1 <<<"$s"
        gr status --replay "$R/scenarios/$name.status.json" --json
        for r in $r0 $r1; do
                p=$(pid_of_rec "$name" "$r")
                jqok ".processes[] | select(.pid == $p) | .verdict | .judgement == \"leftover\" and .confidence == \"sure\"" "$name: $r ($p) is a sure leftover"
        done
done
for name in sglang-live torchrun-live ghost-live double-fork-live; do
        gr status --replay "$R/scenarios/$name.status.json" --json
        jqok '[.processes[] | select(.verdict.judgement == "leftover")] == [] and [.findings[] | select(.leftover)] == []' "$name: nothing is a leftover"
done
gr status --replay "$R/scenarios/new-session-launcher-killed.status.json" --json
w=$(pid_of_rec new-session-launcher-killed worker)
jqok ".processes[] | select(.pid == $w) | .verdict.judgement == \"unsure\"" "a setsid'd worker without markers, its launcher gone: unsure, spared"
# gpureap serve on the H200: eight workers, each started in a session of its own by one launcher
# (tests/fixtures/h200-2026-12-03-serve/, .dev's servebench of that day); the launcher SIGKILLed
S=$(dirname "$TESTLIB")/../fixtures/h200-2026-12-03-serve
gr status --replay "$S/after-served.json" --json
jqok '[.findings[] | select(.kind == "orphan")] | length == 1 and (.[0].pids | length) == 8 and .[0].confidence == "sure"' "through serve: the eight workers are one sure finding, tied by the launcher serve saw"
jqok '[.processes[] | select(.verdict) | .verdict.evidence[] | select(.key == "seen" and .lean == "leftover")] | length == 8' "each with serve's evidence: its launcher was killed"
gr status --replay "$S/after-direct.json" --json
jqok '[.processes[] | select(.verdict) | .verdict.judgement] | unique == ["unsure"]' "the one-shot view of the same eight: unsure"
gr status --replay "$S/served.json" --json
jqok '[.findings[] | select(.leftover)] == [] and .history.served_by > 0' "while the launcher lived: no leftover, served"
done_testing
