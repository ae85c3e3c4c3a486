#!/bin/bash
# The kernel-side holder scan (BPF task-file iterator) against the /proc scan on the same
# process trees: an owner and its forked holder, a monitor, a control-files-only holder, one
# that holds a device file deleted since, one in another PID namespace. Both must list the same
# processes with the same device files, GPUs, verdicts and findings, and the bpf run must
# really have used the iterator (skipped only where it cannot run: not root, no BTF, no load).
# A recorded /proc root, and GPUREAP_SCAN=proc, always get the /proc scan.
. "$TESTLIB"
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2"

# a recorded tree: the iterator sees the running kernel, not it
GPUREAP_PROC_ROOT=$FIXTURES_PROC GPUREAP_SCAN=bpf gr status --json
jqok '.proc.scan == "proc" and (.proc.scan_fallback | test("not /proc"))' "a recorded /proc root gets the /proc scan, and says why"
GPUREAP_SCAN=proc gr status --json
jqok '.proc.scan == "proc" and .proc.scan_fallback == null' "GPUREAP_SCAN=proc: the /proc scan, by choice"
GPUREAP_SCAN=nonsense gr status --json
jqok '.proc.scan == "proc" and (.proc.scan_fallback | test("GPUREAP_SCAN=nonsense"))' "an unknown GPUREAP_SCAN is named"

GPUREAP_SCAN=bpf gr status --json
if [ "$(jq -r .proc.scan "$T/out")" != bpf ]; then
        why=$(jq -r .proc.scan_fallback "$T/out")
        case $why in
        *"not root"* | *"no BTF"* | *"did not load"* | *"did not open"* | *"without BPF"* | *"initial PID namespace"*)
                echo "1..$CHECKS # SKIP the BPF scan cannot run here: $why"
                exit 77 ;;
        esac
        fail "GPUREAP_SCAN=bpf fell back for another reason: $why"
fi
ok "GPUREAP_SCAN=bpf used the iterator"

launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child sleep
launch pidfile "$PIDS" monitor monitor 1 sleep
launch pidfile "$PIDS" ctlonly open nvidiactl open nvidia-uvm sleep
launch pidfile "$PIDS" deleted open nvidia3 sleep
# a live launcher that holds nothing and whose main thread ended alone (pthread_exit: its
# leader reads Z), with a worker that carries torchrun's markers: the worker's parent is alive
# in both scans (the bpf scan read only the launcher's stat: "a worker whose launcher is gone,
# leftover sure", which the default reap killed)
env TORCHELASTIC_RUN_ID=j LOCAL_RANK=0 "$GPUHOLD" pidfile "$PIDS" zlauncher worker "$PIDS" zworker 2 2 128 leader-exit &
LAUNCHED="$LAUNCHED $!"
wait_role owner child monitor ctlonly deleted zlauncher zworker
rm "$T/dev/nvidia3" # its fd now reads ".../nvidia3 (deleted)": still an NVIDIA file by its path
if [ "$(id -u)" -eq 0 ] && unshare -p -f true 2>/dev/null; then
        unshare -p -f "$GPUHOLD" pidfile "$PIDS" nsinit child pidfile "$PIDS" nsowner cuda 1 1 256 sleep &
        LAUNCHED="$LAUNCHED $!"
        wait_role nsinit nsowner
fi

# what is compared: everything a scan decides (timings and the scan's own fields left out)
# a process caught running by one look and asleep by the other is the same process: R and S
# read alike (D, T, Z and the rest must match); a CI run failed on one such holder
view='{processes: [.processes[] | .state |= (if . == "R" then "S" else . end)], gpus: [.gpus[] | del(.elapsed_ms)], findings, view}'
GPUREAP_SCAN=bpf gr status --json
cp "$T/out" "$T/bpf.json"
jqok '.proc.scan == "bpf" and .proc.scan_fallback == null' "the bpf run used the iterator"
GPUREAP_SCAN=proc gr status --json
cp "$T/out" "$T/proc.json"
jqok '.proc.scan == "proc"' "the proc run read every fd directory"
holders='[.processes[] | select(.devices != null) | {pid, devices}]'
n=$(jq "$holders | length" "$T/bpf.json")
want=$(awk '$1 != "port" && $1 != "nsinit" && $1 != "zlauncher"' "$PIDS" | wc -l)
[ "$n" -ge "$want" ] || fail "the bpf scan found $n holders, $want were started: $(jq -c "$holders" "$T/bpf.json")"
ok "the bpf scan found every holder started ($n)"
[ "$(jq -c "$holders" "$T/bpf.json")" = "$(jq -c "$holders" "$T/proc.json")" ] ||
        fail "holders differ: bpf $(jq -c "$holders" "$T/bpf.json") proc $(jq -c "$holders" "$T/proc.json")"
ok "the same holders with the same files, fds per GPU and maps"
deleted=$(pid_of deleted)
jqok ".processes[] | select(.pid == $deleted) | .devices.other == 1" "a deleted device file is still found" 
d=$(diff <(jq -S "$view" "$T/bpf.json") <(jq -S "$view" "$T/proc.json")) || fail "the snapshots differ: $d"
ok "the same processes, GPUs, verdicts and findings"
[ "$(jq '.proc.processes_scanned' "$T/bpf.json")" -gt 0 ] && ok "every process's stat read by both"

# negative control: the holders end, both scans see none of them
cp "$T/bpf.json" "$T/out"
zworker=$(pid_of zworker)
jqok ".processes[] | select(.pid == $(pid_of zlauncher)) | .state != \"Z\"" "a launcher whose leader ended alone is alive in the bpf scan"
jqok ".processes[] | select(.pid == $zworker) | .verdict.judgement == \"live\"" "its worker is live in the bpf scan"
for r in owner child monitor ctlonly deleted nsowner nsinit zworker zlauncher; do
        p=$(pid_of "$r" 2>/dev/null) || continue
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
done
for r in owner child monitor ctlonly deleted; do wait_state "$(pid_of "$r")" gone; done
GPUREAP_SCAN=bpf gr status --json
jqok "[.processes[] | select(.devices != null)] == [] and .proc.scan == \"bpf\"" "bpf: no holder once they ended"

# gpureap serve keeps the program it loaded for its next looks, as long as the device files are
# the same ones: one program, the same one, across its refreshes; a new device file, a new load
if command -v bpftool >/dev/null; then
        progs() { bpftool prog show -j 2>/dev/null | jq -c '[.[] | select(.name == "gr_holders") | .id]'; }
        served_scan() { "$GPUREAP" status --json 2>/dev/null | jq -r '.proc.scan // empty'; }
        GPUREAP_SCAN=bpf GPUREAP_SYSLOG_SOCKET=$T/nolog "$GPUREAP" serve --interval 100ms --listen none >"$T/serve.out" 2>&1 &
        SERVE=$!
        LAUNCHED="$LAUNCHED $SERVE"
        i=0; until [ "$(served_scan)" = bpf ]; do i=$((i + 1)); [ $i -lt 500 ] || fail "serve never used the iterator: $(cat "$T/serve.out")"; sleep 0.02; done
        first=$(progs)
        [ "$(jq length <<<"$first")" = 1 ] || fail "serve has $first loaded"
        launch pidfile "$PIDS" late open nvidia0 sleep
        wait_role late
        late=$(pid_of late)
        i=0; until "$GPUREAP" status --json 2>/dev/null | jq -e ".processes[] | select(.pid == $late) | .devices != null" >/dev/null; do
                i=$((i + 1)); [ $i -lt 500 ] || fail "serve never saw the holder started after its first look"; sleep 0.02
        done
        [ "$(progs)" = "$first" ] || fail "serve's program was not kept: $first, then $(progs)"
        ok "serve keeps its program across looks ($first), and it finds a holder started since"
        truncate -s 4096 "$T/dev/nvidia5"
        i=0; until [ "$(progs)" != "$first" ] && [ "$(jq length <<<"$(progs)")" = 1 ]; do
                i=$((i + 1)); [ $i -lt 500 ] || fail "a new device file, and serve still has $(progs)"; sleep 0.02
        done
        ok "a new device file: the program loaded again for it, the old one gone ($first, now $(progs))"
        kill -TERM "$SERVE"
        wait "$SERVE" 2>/dev/null || true
        [ "$(progs)" = "[]" ] || fail "serve ended and left $(progs) loaded"
        ok "serve ended: no program of it is left"
else
        echo "# bpftool is not installed: serve's kept program not checked"
fi
done_testing
