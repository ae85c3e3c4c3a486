#!/bin/bash
# reap on AMD GPUs (docs/drm.md), with real processes and no NVIDIA driver: a leftover DRM
# client shared by a worker and its fork (both must end for it to go), a live job, a leftover
# that shares the live job's client (spared: ending it frees nothing), and the AMD ghost (a KFD
# entry of a killed process kept by its fork). Their DRM files are files of the test's device
# directory named like render nodes and /dev/kfd (GPUREAP_DEV_DIR); their fdinfo, which no
# driver writes here, is a directory of the test's bind-mounted over each holder's
# /proc/PID/fdinfo in a private mount namespace in which gpureap runs; sysfs is a tree of the
# test's (GPUREAP_SYS_ROOT), and a stand-in for the driver removes the ghost's KFD entry once
# its last holder is gone. Then a target that holds a live client by its signal is spared.
. "$TESTLIB"
if [ "$(id -u)" -ne 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
        echo "1..0 # SKIP needs root and mount namespaces (unshare -m) to give processes a DRM fdinfo"
        exit 77
fi
export GPUREAP_NVML_LIBRARY=$T/no-such-libnvidia-ml.so.1
export GPUREAP_SYSLOG_SOCKET=$T/nolog
SYS=$T/sys
export GPUREAP_SYS_ROOT=$SYS
PDEV=0000:03:00.0
rm -f "$T"/dev/nvidia* # an AMD node: no NVIDIA device file (one would be an NVIDIA GPU not read)
mkdir -p "$T/dev/dri" "$T/fi"
truncate -s 4096 "$T/dev/dri/renderD128" "$T/dev/kfd"
DEV=$SYS/devices/pci0000:00/$PDEV
mkdir -p "$DEV"
printf 'DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:0000\nPCI_SLOT_NAME=%s\n' "$PDEV" >"$DEV/uevent"
echo 0x1002 >"$DEV/vendor"
echo 68702699520 >"$DEV/mem_info_vram_total"
echo 17280532480 >"$DEV/mem_info_vram_used" # 16 GiB of the clients below, and 96 MiB of the driver's
for n in card0 renderD128; do
        mkdir -p "$SYS/class/drm/$n"
        ln -s "$DEV" "$SYS/class/drm/$n/device"
done
# the driver's part: BYTES of VRAM back once every PID given is gone (bounded: 60 s)
free_when_gone() {
        local bytes=$1
        shift
        ( for _ in $(seq 1 3000); do
                local alive=0 p
                for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
                [ $alive = 1 ] || break
                sleep 0.02
        done
        echo $(( $(cat "$DEV/mem_info_vram_used") - bytes )) >"$DEV/mem_info_vram_used.tmp"
        mv "$DEV/mem_info_vram_used.tmp" "$DEV/mem_info_vram_used" ) &
        LAUNCHED="$LAUNCHED $!"
}
mkdir -p "$SYS/class/kfd/kfd/topology/nodes/0" "$SYS/class/kfd/kfd/topology/nodes/1" "$SYS/class/kfd/kfd/proc"
printf 'cpu_cores_count 64\nsimd_count 0\nvendor_id 0\n' >"$SYS/class/kfd/kfd/topology/nodes/0/properties"
echo 0 >"$SYS/class/kfd/kfd/topology/nodes/0/gpu_id"
echo 1234 >"$SYS/class/kfd/kfd/topology/nodes/1/gpu_id"
printf 'cpu_cores_count 0\nsimd_count 304\nvendor_id 4098\ndevice_id 29856\nlocation_id 768\ndomain 0\ndrm_render_minor 128\n' \
        >"$SYS/class/kfd/kfd/topology/nodes/1/properties"

# the fd of the render node a process holds
render_fd() {
        local f
        for f in /proc/"$1"/fd/*; do
                [ "$(readlink "$f")" = "$T/dev/dri/renderD128" ] && { echo "${f##*/}"; return; }
        done
        fail "process $1 holds no render node"
}
# fdinfo PID CLIENT-ID VRAM-KIB: its render fd's fdinfo as amdgpu prints it, in its directory
fdinfo() {
        local fd
        fd=$(render_fd "$1")
        mkdir -p "$T/fi/$1"
        printf '%s\n' "pos:	0" "flags:	02100002" "mnt_id:	26" "ino:	$fd" "drm-driver:	amdgpu" "drm-client-id:	$2" \
                "drm-pdev:	$PDEV" "drm-total-gtt:	2 MiB" "drm-total-vram:	$3 KiB" "drm-shared-vram:	0 KiB" \
                "drm-resident-vram:	$3 KiB" >"$T/fi/$1/$fd"
}
# thread_fdinfo PID CLIENT-ID WHAT: PID's main thread has ended alone (leader-exit); its live
# thread's render fd gets an fdinfo of that client, in fi/PID.TID (over task/TID/fdinfo): the
# thread in $tid
thread_fdinfo() {
        local pid=$1 fd="" f
        for _ in $(seq 1 400); do [ "$(awk '{print $3}' "/proc/$pid/stat")" = Z ] && break; sleep 0.02; done
        [ "$(awk '{print $3}' "/proc/$pid/stat")" = Z ] || fail "$3: the main thread of $pid has not ended"
        tid=$(ls "/proc/$pid/task" | grep -vx "$pid" | head -n 1)
        for f in /proc/"$pid"/task/"$tid"/fd/*; do
                [ "$(readlink "$f")" = "$T/dev/dri/renderD128" ] && fd=${f##*/}
        done
        [ -n "$fd" ] || fail "$3: the live thread $tid of $pid holds no render node"
        mkdir -p "$T/fi/$pid.$tid"
        printf '%s\n' "drm-driver:	amdgpu" "drm-client-id:	$2" "drm-pdev:	$PDEV" "drm-total-vram:	1048576 KiB" >"$T/fi/$pid.$tid/$fd"
}
# gpureap (or the build with test seams) in a mount namespace where each holder's fdinfo is ours
# a thread's own file table: its directory is fi/PID.TID, over /proc/PID/task/TID/fdinfo
cat >"$T/bind.sh" <<EOF
#!/bin/sh
for d in "$T"/fi/*; do
        p=\${d##*/}
        t=\${p#*.}
        p=\${p%.*}
        f=/proc/\$p/fdinfo
        [ "\$t" = "\$p" ] || f=/proc/\$p/task/\$t/fdinfo
        [ -d "\$f" ] && mount --bind "\$d" "\$f" 2>/dev/null
done
exec "\$@"
EOF
chmod +x "$T/bind.sh"
# leftover ROLE CLIENT VRAM-KIB: a process holding a render node of that client, forked by a
# launcher that is then killed (a likely leftover)
leftover() {
        launch pidfile "$PIDS" "$1-launcher" setpgid open dri/renderD128 spawn-holder "$PIDS" "$1" sleep
        local l=$LAST
        wait_role "$1-launcher" "$1"
        fdinfo "$(pid_of "$1")" "$2" "$3"
        kill -KILL "$l"
        wait "$l" 2>/dev/null || true
}
grns() {
        set +e
        unshare -m --propagation private "$T/bind.sh" "$GPUREAP" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
}

# two workers forked by a launcher that dies, sharing its client 41 (likely leftovers)
launch pidfile "$PIDS" launcher setpgid open dri/renderD128 spawn-holder "$PIDS" w spawn-holder "$PIDS" wc sleep
wl=$LAST
# a live job (its parent, this test, alive), client 52
launch pidfile "$PIDS" job setpgid open dri/renderD128 sleep
# a leftover whose client is the live job's 52 too (passed over a socket)
launch pidfile "$PIDS" xlauncher setpgid open dri/renderD128 spawn-holder "$PIDS" x sleep
xl=$LAST
# the AMD ghost: g opened /dev/kfd and the render node (client 60), forked gc, and is killed
launch pidfile "$PIDS" g setpgid open kfd open dri/renderD128 spawn-holder "$PIDS" gc sleep
gl=$LAST
wait_role launcher w wc job xlauncher x g gc
w=$(pid_of w); wc=$(pid_of wc); job=$(pid_of job); x=$(pid_of x); g=$(pid_of g); gc=$(pid_of gc)
fdinfo "$w" 41 4194304
fdinfo "$wc" 41 4194304
fdinfo "$job" 52 2097152
fdinfo "$x" 52 2097152
fdinfo "$gc" 60 8388608
mkdir -p "$SYS/class/kfd/kfd/proc/$g"
echo 8589934592 >"$SYS/class/kfd/kfd/proc/$g/vram_1234"
kill -KILL "$wl" "$xl" "$gl"
wait "$wl" "$xl" "$gl" 2>/dev/null || true
wait_state "$g" gone
# the driver's part: the ghost's KFD entry goes when its last holder does (bounded: 60 s), and
# the VRAM of the clients with their holders
( for _ in $(seq 1 3000); do kill -0 "$gc" 2>/dev/null || break; sleep 0.02; done; rm -rf "$SYS/class/kfd/kfd/proc/$g" ) &
LAUNCHED="$LAUNCHED $!"
free_when_gone 8589934592 "$gc"
free_when_gone 4294967296 "$w" "$wc"

export GPUREAP_SCAN=proc
grns status --json
unset GPUREAP_SCAN
expect_rc 1 "status: an AMD GPU with leftovers, no NVIDIA driver"
jqok "[.drm.clients[] | {id: .client_id, holders: [.holders[].pid]}] == [{\"id\": 41, \"holders\": [$w, $wc]}, {\"id\": 52, \"holders\": [$job, $x]}, {\"id\": 60, \"holders\": [$gc]}]" \
        "the clients by their fdinfo: 41 shared by two workers, 52 by the live job and a leftover, 60 the ghost's"
jqok "(.drm.ghosts | map({pid, hidden_holders, confidence})) == [{\"pid\": $g, \"hidden_holders\": [$gc], \"confidence\": \"sure\"}]" "the AMD ghost of the killed process, kept by its fork"

# both holder scans name the same holders (the BPF iterator matched the test's files named like
# render nodes by no inode, and saw none: the test failed on a host crowded enough for it)
cp "$T/out" "$T/status.json"
export GPUREAP_SCAN=bpf
grns status --json
unset GPUREAP_SCAN
if [ "$(jq -r .proc.scan "$T/out")" = bpf ]; then
        d=$(diff <(jq -S '.drm | del(.gpus[].memory_used)' "$T/status.json") <(jq -S '.drm | del(.gpus[].memory_used)' "$T/out")) ||
                fail "the BPF scan's AMD view differs from the /proc scan's: $d"
        ok "the BPF scan's AMD view is the /proc scan's"
else
        ok "# SKIP the BPF scan cannot run here: $(jq -r .proc.scan_fallback "$T/out")"
fi
grns reap --dry-run --json --likely
jqok "([.plan.targets[].pid] | sort) == ([$w, $wc, $gc] | sort)" "reap --likely plans the two workers and the ghost's holder"
jqok "[.plan.spared[] | select(.pid == $x) | .refusal] == [\"drm_shared\"] and [.plan.spared[] | select(.pid == $job)] == []" \
        "the leftover sharing the live job's client is spared (drm_shared); the live job is not even named"

# the default reap: sure leftovers only, so the ghost's holder; the likely ones are named
grns reap --yes --timeout 2s
expect_rc 1 "the ghost's holder reaped; the likely leftovers spared, the GPU not clean"
has out "^  kill   $gc " "the ghost's holder was planned"
has out "^  $gc +ended" "and ended"
has out "^  spare  $w .*likely leftover: add --likely" "a likely worker is spared by default, with the reason"
wait_state "$gc" gone
# the stand-in driver above removes it within 20 ms of the holder's end (more on a loaded
# machine: once it was still there when looked at at once)
for _ in $(seq 1 250); do [ -d "$SYS/class/kfd/kfd/proc/$g" ] || break; sleep 0.02; done
[ ! -d "$SYS/class/kfd/kfd/proc/$g" ] || fail "the ghost's KFD entry is still there"
ok "the ghost's KFD entry went with its holder"
for p in "$w" "$wc" "$job" "$x"; do kill -0 "$p" || fail "$p was killed by a reap of sure leftovers"; done
ok "nothing else was signalled"

grns reap --yes --likely --timeout 5s --json
expect_rc 0 "with --likely: the client's two holders reaped, verified"
jqok "[.outcomes[] | {pid, result}] == [{\"pid\": $w, \"result\": \"ended\"}, {\"pid\": $wc, \"result\": \"ended\"}]" "the two workers ended"
jqok ".verified == true and .drm_gpus == [{\"pci_bus_id\": \"$PDEV\", \"vendor\": \"amd\", \"state\": \"busy\", \"vram_used_before\": 8690597888, \"vram_used_after\": 4395630592, \"clients\": [41]}]" \
        "verified on the AMD GPU: client 41 gone, its 4 GiB of VRAM back, the GPU busy with the live job"
wait_state "$w" gone
wait_state "$wc" gone
kill -0 "$job" || fail "the live job was killed"
kill -0 "$x" || fail "the leftover sharing the live job's client was killed"
ok "the live job and the leftover sharing its client survived"

# a target that holds a live client by the time of its signal (its fd now says client 52: one
# passed to it since the plan) is spared: the ladder reads each fd's client again before it
leftover y 70 1048576
y=$(pid_of y)
yfd=$(render_fd "$y")
set +e
GPUREAP_TEST_BEFORE_SIGNAL="sed -i 's/^drm-client-id:.*/drm-client-id:	52/' '$T/fi/$y/$yfd'" \
        unshare -m --propagation private "$T/bind.sh" "$GPUREAP_TEST_HOOKS" reap --yes --likely --timeout 3s >"$T/out" 2>"$T/err"
RC=$?
set -e
has out "^  kill   $y " "the leftover with its own client was planned"
has out "^  $y +spared" "by its signal it held the live job's client: spared"
[ "$RC" -ne 0 ] || fail "reap said all was well over a target it spared"
ok "and reap does not say all ended (exit $RC)"
kill -0 "$y" || fail "the target holding a live client was signalled"
ok "it was not signalled"

# a leftover whose VRAM the driver does not give back (the stand-in keeps it): its client is
# gone, but the device's count is not back, and reap does not say verified
leftover z 80 1048576
z=$(pid_of z)
grns reap --yes --likely --timeout 1s
expect_rc 1 "the client gone, its VRAM not back: not verified"
has out "^  $z +ended" "the leftover ended"
has err "not clean by the deadline" "said so"
has out "^GPU $PDEV  busy  VRAM 4.1 GiB -> 4.1 GiB  \\(1 leftover client gone\\)" "the VRAM before and after shown, the client gone"

# --gpu by PCI address, as status shows it (with or without the domain); one that names no GPU
# here, or an NVML index where there is no NVIDIA GPU, is a usage error: nothing signalled
leftover q 97 1048576
q=$(pid_of q)
free_when_gone 1073741824 "$q"
grns reap --yes --likely --gpu 0
expect_rc 2 "--gpu 0 with no NVIDIA GPU"
has err "no AMD or Intel GPU matches '0'" "said why"
grns reap --yes --likely --gpu 0000:99:00.0
expect_rc 2 "--gpu of an address no GPU has"
kill -0 "$q" || fail "a --gpu that names no GPU killed"
ok "nothing signalled"
grns reap --yes --likely --gpu 03:00.0 --json
expect_rc 0 "--gpu 03:00.0: its leftover reaped, verified"
jqok "[.outcomes[] | {pid, result}] == [{\"pid\": $q, \"result\": \"ended\"}] and ([.drm_gpus[].clients] == [[97]])" \
        "only the named GPU's leftover, its client gone"

# what an adversary found (2026-12-07), each a wrong kill before:
# (1) a live job that holds the leftover's client only in a thread's own file table (which the
# snapshot's scan does not read for DRM): the look at every process's files before the plan
# finds it, and the leftover is spared; the GPU, dirty as far as the snapshot sees, not clean
launch open dri/renderD128 thread-holds pidfile "$PIDS" tjob sleep
leftover v 90 1048576
wait_role tjob
tjob=$(pid_of tjob); v=$(pid_of v)
tid=$(ls "/proc/$tjob/task" | grep -v "^$tjob\$" | head -n 1)
tfd=""
for f in /proc/"$tjob"/task/"$tid"/fd/*; do [ "$(readlink "$f")" = "$T/dev/dri/renderD128" ] && tfd=${f##*/}; done
[ -n "$tfd" ] || fail "the live job's thread holds no render node"
mkdir -p "$T/fi/$tjob.$tid"
printf '%s\n' "drm-driver:	amdgpu" "drm-client-id:	90" "drm-pdev:	$PDEV" "drm-total-vram:	1048576 KiB" >"$T/fi/$tjob.$tid/$tfd"
# the view reads the threads of a live process KFD has an entry for whose own table holds no
# DRM file (a ROCm process): status sees the client the live job holds there, as reap does
mkdir -p "$SYS/class/kfd/kfd/proc/$tjob"
echo 0 >"$SYS/class/kfd/kfd/proc/$tjob/vram_1234"
export GPUREAP_SCAN=proc
grns status --json
unset GPUREAP_SCAN
jqok "[.drm.clients[] | select(.client_id == 90) | .holders[].pid] | sort == ([$tjob, $v] | sort)" \
        "(1) status sees the client a live KFD process holds only in a thread's own table"
rm -rf "${SYS:?}/class/kfd/kfd/proc/$tjob"
grns reap --yes --likely --timeout 1s
has out "^  spare  $v .*shares an AMD or Intel GPU's open file with a process this reap does not end" \
        "(1) the leftover sharing a client with a live job's thread's table is spared"
[ "$RC" = 1 ] || fail "reap exited $RC, not 1: it called the GPU clean"
ok "(1) and the GPU is not called clean (exit 1)"
kill -0 "$v" || fail "(1) the leftover sharing the live job's client was killed"
ok "(1) nothing signalled"
# (2) a live job with more DRM fds than a process's list holds (64): the 65th, a client shared
# with a leftover, is past the list; not knowing all of its files, every AMD target is spared
fds=""
for _ in $(seq 65); do fds="$fds open dri/renderD128"; done
# shellcheck disable=SC2086
launch pidfile "$PIDS" manyfd $fds sleep
leftover u 91 1048576
wait_role manyfd
manyfd=$(pid_of manyfd); u=$(pid_of u)
mkdir -p "$T/fi/$manyfd"
n=0
for f in $(ls /proc/"$manyfd"/fd | sort -n); do
        [ "$(readlink "/proc/$manyfd/fd/$f")" = "$T/dev/dri/renderD128" ] || continue
        n=$((n + 1))
        id=93; [ $n -lt 65 ] || id=91
        printf '%s\n' "drm-driver:	amdgpu" "drm-client-id:	$id" "drm-pdev:	$PDEV" "drm-total-vram:	1024 KiB" >"$T/fi/$manyfd/$f"
done
export GPUREAP_SCAN=proc
grns status --json
unset GPUREAP_SCAN
jqok "[.drm.clients[] | select(.client_id == 91) | .holders[].pid] | sort == ([$manyfd, $u] | sort)" \
        "(2) status sees the client past a live job's 64 listed fds"
grns reap --yes --likely --timeout 1s
has out "^  spare  $u " "(2) the leftover sharing a client past a live job's 64 listed fds is spared"
kill -0 "$u" || fail "(2) it was killed"
ok "(2) nothing signalled"
kill -KILL "$manyfd" "$u" "$tjob" "$v"
wait_state "$manyfd" "Z gone"
# (2a) a process of 1,100 DRM fds, each its own client: the view reads at most 1,024 of them
# (an adversary's 19,000 made every look take 2.4 s) and says the rest is not known (its holding
# truncated), in linear time (the clients indexed)
if [ "$(ulimit -Hn)" -ge 1200 ]; then
        ulimit -n 1200
        python3 - "$T/dev/dri/renderD128" "$T/fi" "$PDEV" "$PIDS" <<'PY' &
import os, sys, time
node, fi, pdev, pids = sys.argv[1:5]
fds = [os.open(node, os.O_RDWR) for _ in range(1100)]
d = os.path.join(fi, str(os.getpid()))
os.makedirs(d, exist_ok=True)
for i, fd in enumerate(fds):
    with open(os.path.join(d, str(fd)), "w") as f:
        f.write(f"drm-driver:\tamdgpu\ndrm-client-id:\t{5000 + i}\ndrm-pdev:\t{pdev}\ndrm-total-vram:\t4 KiB\n")
with open(pids, "a") as f:
    f.write(f"bigfd {os.getpid()}\n")
time.sleep(600)
PY
        LAUNCHED="$LAUNCHED $!"
        wait_role bigfd
        big=$(pid_of bigfd)
        ulimit -n "$(ulimit -Hn)"
        export GPUREAP_SCAN=proc
        grns status --json
        unset GPUREAP_SCAN
        jqok "[.drm.clients[] | select(.holders[].pid == $big)] | length == 1024" "(2a) 1,024 of the 1,100 clients of one process read, no more"
        kill -KILL "$big"
        wait_state "$big" "Z gone"
        rm -rf "${T:?}/fi/$big"
else
        ok "# SKIP (2a) the hard limit of open files ($(ulimit -Hn)) is below 1,200"
fi
# (2b) a live job of 65 threads, each with a file table of its own, the last holding the
# leftover's client: past the 64 threads read, not all is known, and every AMD target is spared
leftover s 96 1048576
s_=$(pid_of s)
/usr/bin/python3 "$(dirname "$0")/drm-threads.py" 65 "$T/dev/dri/renderD128" "$T/threads" &
LAUNCHED="$LAUNCHED $!"
tj=$!
for _ in $(seq 1 400); do [ -s "$T/threads" ] && break; sleep 0.05; done
[ -s "$T/threads" ] || fail "the 65-thread job did not start"
read -r ttid tfd2 <"$T/threads"
mkdir -p "$T/fi/$tj.$ttid"
printf '%s\n' "drm-driver:	amdgpu" "drm-client-id:	96" "drm-pdev:	$PDEV" "drm-total-vram:	1048576 KiB" >"$T/fi/$tj.$ttid/$tfd2"
grns reap --yes --likely --timeout 1s
has out "^  spare  $s_ " "(2b) the leftover sharing a client with a live job's 65th thread is spared"
kill -0 "$s_" || fail "(2b) it was killed"
ok "(2b) nothing signalled"
kill -KILL "$tj" "$s_"
wait "$tj" 2>/dev/null || true
# (2c) reap as a user: a zombie of that user (its fd directory root's, unreadable) holds no file
# and does not make every target spared; the user's own leftover, its client's only holder, ends.
# A uid of this test's own: a process of the user's whose files cannot be read (another test's
# 'setpriv --ruid 4242' client, run meanwhile) rightly makes the reap spare every AMD target
if command -v setpriv >/dev/null; then
        chmod -R a+rX "$T"
        chmod a+rw "$T/dev/dri/renderD128"
        # a zombie (or reaped: bash waits for its children as they end) once its exit has closed
        # its files, which under ASan takes a while: until then it still shares the leftover's
        # client, and the reap rightly spares the leftover
        gone_or_zombie() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -z "$st" ] || [ "$st" = Z ]; }
        # reap_as UID: 'reap --yes --likely' as that user, with the holders' fdinfo ours
        reap_as() {
                mkdir -p "$T/state$1"
                chown "$1" "$T/state$1"
                set +e
                GPUREAP_STATE_DIR=$T/state$1 unshare -m --propagation private "$T/bind.sh" \
                        setpriv --reuid "$1" --regid "$1" --clear-groups "$GPUREAP" reap --yes --likely --timeout 2s >"$T/out" 2>"$T/err"
                RC=$?
                set -e
        }
        # as_user UID GID ROLE GPUHOLD-ARGS...: gpuhold as that user, started ($started) and its
        # process ROLE there (in $T/pidsUID) : its PID in $up
        as_user() {
                local u=$1 gid=$2 role=$3
                shift 3
                [ -e "$T/pids$u" ] || { : >"$T/pids$u"; chmod a+rw "$T/pids$u"; }
                setpriv --reuid "$u" --regid "$gid" --clear-groups "$GPUHOLD" "$@" &
                started=$!
                LAUNCHED="$LAUNCHED $started"
                for _ in $(seq 1 400); do grep -q "^$role " "$T/pids$u" && break; sleep 0.02; done
                up=$(awk -v r="$role" '$1 == r {print $2}' "$T/pids$u")
                [ -n "$up" ] || fail "uid $u's $role did not start: $(cat "$T/pids$u")"
                LAUNCHED="$LAUNCHED $up"
        }
        # user_leftover UID ROLE CLIENT: that user's leftover holding a render node of that client,
        # its launcher killed (a zombie of the user's, or gone): its PID in $up, the launcher's in $ul
        user_leftover() {
                as_user "$1" "$1" "$2" setpgid open dri/renderD128 spawn-holder "$T/pids$1" "$2" sleep
                ul=$started
                fdinfo "$up" "$3" 1048576
                kill -KILL "$ul"
                for _ in $(seq 1 500); do gone_or_zombie "$ul" && break; sleep 0.01; done
                gone_or_zombie "$ul" || fail "the launcher $ul has not ended after 5 s"
        }
        # spared_as UID PID WHAT: reap as that user, and PID is spared, still running
        spared_as() {
                chmod -R a+rX "$T/fi"
                reap_as "$1"
                has out "^  spare  $2 " "$3 is spared"
                kill -0 "$2" || fail "$3 was killed"
        }
        user_leftover 4257 nr 98
        nr=$up nrl=$ul
        free_when_gone 1073741824 "$nr"
        reap_as 4257
        has out "^  $nr +ended" "(2c) as uid 4257, its leftover ends (a zombie of the user's spares nothing)"
        wait "$nrl" 2>/dev/null || true
        # (2d) as a user again: the leftover's client is shared by a live process of that user
        # whose main thread has ended alone (its fd directory root's, like a zombie's; its live
        # thread holds the file): the leftover is spared (it was ended, the live process taken
        # for a zombie)
        as_user 4258 4258 lz pidfile "$T/pids4258" lz open dri/renderD128 leader-exit
        lz=$up
        user_leftover 4258 nr2 99
        nr2=$up l2=$ul
        thread_fdinfo "$lz" 99 "(2d)"
        spared_as 4258 "$nr2" "(2d) as uid 4258, the leftover sharing a client with the user's live process whose main thread ended"
        kill -KILL "$nr2" "$lz"
        wait "$l2" 2>/dev/null || true
        rm -rf "${T:?}/fi/$lz.$tid"
        # (2e) as a user again: the leftover's client is shared by a live job of that user started
        # with another group (sg, a setgid wrapper): its fd directory lists, but its links are
        # refused (ptrace's access wants the same gid): not known, so the leftover is spared (it
        # was ended, the job taken for holding nothing)
        as_user 4262 4263 sgjob pidfile "$T/pids4262" sgjob setpgid open dri/renderD128 sleep
        sgjob=$up
        fdinfo "$sgjob" 53 1048576
        user_leftover 4262 nr3 53
        nr3=$up l3=$ul
        spared_as 4262 "$nr3" "(2e) as uid 4262, the leftover sharing a client with the user's job of another group"
        has out "^  spare  $nr3 .* another process's files could not all be read just before the plan: .* \(PID $sgjob\)" \
                "(2e) and the reason names the job whose files it could not read"
        kill -KILL "$nr3" "$sgjob"
        wait "$l3" 2>/dev/null || true
else
        ok "# SKIP no setpriv"
fi
# (3) the AMD ghost of a pipeline's first member, killed; the second member opened /dev/kfd itself
# and forked a worker: that worker, in the ghost's process group, holds its live parent's file,
# not the ghost's; only the ghost's own fork is its hidden holder
set -m
"$GPUHOLD" pidfile "$PIDS" pa open kfd spawn-holder "$PIDS" pw sleep | "$GPUHOLD" pidfile "$PIDS" pb open kfd spawn-holder "$PIDS" pc sleep &
set +m
LAUNCHED="$LAUNCHED $!"
wait_role pa pw pb pc
pa=$(pid_of pa); pw=$(pid_of pw); pb=$(pid_of pb); pc=$(pid_of pc)
for p in "$pa" "$pb"; do
        mkdir -p "$SYS/class/kfd/kfd/proc/$p"
        echo 1073741824 >"$SYS/class/kfd/kfd/proc/$p/vram_1234"
done
kill -KILL "$pa"
wait_state "$pa" "Z gone"
grns status --json
jqok "[.drm.ghosts[] | select(.pid == $pa) | .hidden_holders] == [[$pw]]" \
        "(3) the ghost's hidden holder is its own fork, not the live member's worker in its group"
grns reap --dry-run --json
jqok "[.plan.targets[].pid] | index($pc) == null" "(3) the live member's worker is not planned"
kill -KILL "$pw" "$pb" "$pc"
rm -rf "$SYS/class/kfd/kfd/proc/$pa" "$SYS/class/kfd/kfd/proc/$pb"
# (4) a leftover's own fork sharing its client is a leftover through it, as with NVIDIA files
launch pidfile "$PIDS" dlauncher setpgid child pidfile "$PIDS" dw open dri/renderD128 spawn-holder "$PIDS" dc sleep
dl=$LAST
wait_role dlauncher dw dc
dw=$(pid_of dw); dc=$(pid_of dc)
fdinfo "$dw" 95 1048576
fdinfo "$dc" 95 1048576
kill -KILL "$dl"
wait "$dl" 2>/dev/null || true
grns status --json
jqok "(.drm.clients[] | select(.client_id == 95) | .verdict.judgement) == \"leftover\"" \
        "(4) the client of a leftover and its fork is a leftover (not live through the fork's living parent)"
grns reap --dry-run --likely --json
jqok "([.plan.targets[].pid] | index($dw) != null and index($dc) != null)" "(4) both planned with --likely"
kill -KILL "$dw" "$dc"
# (5) a leftover whose main thread has ended alone (pthread_exit): its files are in its live
# thread's table, the leader's fdinfo is empty. The view reads the fdinfo through that thread:
# status names it its client's holder, and reap ends it (the view dropped its fds, and status and
# reap said nothing held the client while it kept its VRAM: an adversary's, 2026-12-07)
launch pidfile "$PIDS" lelauncher setpgid child pidfile "$PIDS" le open dri/renderD128 leader-exit
lel=$LAST
wait_role lelauncher le
le=$(pid_of le)
thread_fdinfo "$le" 96 "(5)"
kill -KILL "$lel"
wait "$lel" 2>/dev/null || true
grns status --json
jqok "[.drm.clients[] | select(.client_id == 96) | .holders[].pid] == [$le]" \
        "(5) the client of a leftover whose main thread ended alone is seen, held by it"
grns reap --yes --likely --timeout 2s
has out "^  $le +ended" "(5) and reap ends it"
rm -rf "${T:?}/fi/$le.$tid"

# run (docs/drm.md): a command with a KFD entry of its own; at its end run waits until KFD has
# let the entry go (the stand-in for the driver removes a dead PID's entry 300 ms after it is
# gone, unless told to keep it) and says so; kept, run waits --drain-timeout and says not back
( for _ in $(seq 1 1500); do
        for e in "$SYS"/class/kfd/kfd/proc/*; do
                p=${e##*/}
                [ -d "$e" ] && [ ! -e "$e/keep" ] && ! kill -0 "$p" 2>/dev/null || continue
                [ -e "$e/gone_at" ] || { date +%s%N >"$e/gone_at"; continue; }
                [ $(( $(date +%s%N) - $(cat "$e/gone_at") )) -ge 300000000 ] && rm -rf "$e"
        done
        sleep 0.02
done ) &
LAUNCHED="$LAUNCHED $!"
kfdjob='d=$0/$$; mkdir -p "$d"; echo 1048576 >"$d/vram_1234"; [ -z "$1" ] || : >"$d/keep"; sleep 0.2'
set +e
"$GPUREAP" run -- sh -c "$kfdjob" "$SYS/class/kfd/kfd/proc" >"$T/out" 2>"$T/err"
RC=$?
set -e
grep -Eq "AMD VRAM \(KFD\) back in ([3-9][0-9]{2}|[0-9]{4,}) ms" "$T/out" "$T/err" || fail "run did not wait for KFD's entry"
ok "run waited until KFD let the command's VRAM go, and said so"
[ -z "$(ls "$SYS/class/kfd/kfd/proc")" ] || fail "run ended before the entry went"
ok "no entry was left when run ended (exit $RC)"
set +e
"$GPUREAP" run --drain-timeout 300ms -- sh -c "$kfdjob" "$SYS/class/kfd/kfd/proc" keep >"$T/out" 2>"$T/err"
RC=$?
set -e
grep -q "AMD VRAM (KFD) NOT back in" "$T/out" "$T/err" || fail "run did not say KFD kept the VRAM"
has err "KFD still keeps the VRAM of 1 process of the tree after 0.3s" "run says KFD still keeps the VRAM (control: the entry kept)"
rm -rf "$SYS"/class/kfd/kfd/proc/*
# run with a DRM client of its own (docs/drm.md): the command opens the render node (client 70,
# 512 MiB of VRAM, its fdinfo bound over its own in run's mount namespace); SIGTERM to gpureap
# ends it, and the stand-in for the driver gives the VRAM back 300 ms after the holder is gone.
# run looks at the tree's clients before the signal and waits until the device's count is back,
# says so and only then returns; kept (the stand-in never gives it back), it waits
# --drain-timeout and says not back
runjob='exec 7<>"$0/dev/dri/renderD128"; mkdir -p "$0/fi/$$"
printf "%s\n" "pos:	0" "flags:	02100002" "drm-driver:	amdgpu" "drm-client-id:	70" "drm-pdev:	$1" "drm-total-vram:	524288 KiB" >"$0/fi/$$/7"
mount --bind "$0/fi/$$" /proc/$$/fdinfo && echo $$ >"$0/runjob.pid"; exec sleep 60'
run_drm() { # KEEP [ARGS...]: RC, out and err of a run of runjob ended by SIGTERM
        local keep=$1 p
        shift
        rm -f "$T/runjob.pid"
        echo $(( $(cat "$DEV/mem_info_vram_used") + 536870912 )) >"$DEV/mem_info_vram_used"
        unshare -m --propagation private "$T/bind.sh" "$GPUREAP" run "$@" -- sh -c "$runjob" "$T" "$PDEV" >"$T/out" 2>"$T/err" &
        local rp=$!
        for _ in $(seq 1 500); do [ -s "$T/runjob.pid" ] && break; sleep 0.01; done
        p=$(cat "$T/runjob.pid") || fail "run's command did not start"
        if [ "$keep" = give ]; then
                ( while kill -0 "$p" 2>/dev/null; do sleep 0.01; done; sleep 0.3
                  echo $(( $(cat "$DEV/mem_info_vram_used") - 536870912 )) >"$DEV/mem_info_vram_used.tmp"
                  mv "$DEV/mem_info_vram_used.tmp" "$DEV/mem_info_vram_used" ) &
                LAUNCHED="$LAUNCHED $!"
        fi
        sleep 0.1
        kill -TERM "$rp"
        set +e
        wait "$rp"
        RC=$?
        set -e
        ! kill -0 "$p" 2>/dev/null || fail "run's command $p is still alive"
}
used0=$(cat "$DEV/mem_info_vram_used")
# another's leftover on the same GPU (client 90, not the tree's): no part of what run waits for
# (an adversary's run waited its whole --drain-timeout for one, and said NOT back)
leftover other 90 1048576
run_drm give --drain-timeout 5s
grep -Eq "AMD/Intel GPU memory back in ([3-9][0-9]{2}|[0-9]{4,}) ms" "$T/err" ||
        fail "run did not wait for the device's VRAM count, or waited for another's leftover: $(cat "$T/err")"
ok "run waited until the device's VRAM count was back, not for another's leftover on the GPU (rc $RC)"
[ "$(cat "$DEV/mem_info_vram_used")" = "$used0" ] || fail "run ended before the VRAM was back"
ok "the 512 MiB were back when run returned"
run_drm keep --drain-timeout 400ms
grep -q "AMD/Intel GPU memory NOT back in" "$T/err" || fail "run did not say the VRAM was not back: $(cat "$T/err")"
has err "the AMD/Intel GPU memory of the tree did not come back within 0.4s" "run says the VRAM is not back (control: the driver keeps it)"
echo "$used0" >"$DEV/mem_info_vram_used"
done_testing
