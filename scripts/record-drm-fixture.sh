#!/bin/bash
# Records an AMD or Intel node's DRM and KFD state as a fixture tree that gpureap replays
# (docs/drm.md): OUT/proc and OUT/sys in the shape of tests/fixtures/drm-* (make-drm-fixtures.sh),
# replayed with GPUREAP_PROC_ROOT=OUT/proc GPUREAP_SYS_ROOT=OUT/sys GPUREAP_DEV_DIR=/dev.
#
#   sudo scripts/record-drm-fixture.sh OUT      (root: other users' fdinfo needs ptrace access)
#
# It only reads. The DRM and KFD device files are never opened: an fd is told by a stat through
# its /proc/PID/fd link (stat -L: the inode's device number; nothing is opened), /dev/kfd and
# /dev/dri/* are never read or written (opening /dev/kfd would create a KFD process entry for
# this script). Of each process it keeps stat, status, cmdline, cgroup, the fd links of its
# DRM/KFD fds and their fdinfo, and of its environment only the variables gpureap reads
# (TORCHELASTIC_RUN_ID, LOCAL_RANK, RANK, GROUP_RANK, SLURM_JOB_ID, GPUREAP_RUN_PID); for its
# ancestors, process group and session leaders the same without fds. Look the tree over before
# sharing it: command lines and cgroup paths are kept as they are.
set -eu
shopt -s nullglob
out=${1:?usage: record-drm-fixture.sh OUT}
[ ! -e "$out" ] || { echo "record-drm-fixture: '$out' exists" >&2; exit 2; }
mkdir -p "$out/proc" "$out/sys"
P=$out/proc
S=$out/sys

kfd_major=$(awk '/^Character devices:/ {c = 1; next} /^Block devices:/ {c = 0} c && $2 == "kfd" {print $1}' /proc/devices)

# copy SRC DST: a regular file's text, if it can be read (a process may end meanwhile)
copy() {
        if [ -f "$1" ] && cat -- "$1" > "$2" 2>/dev/null; then return 0; fi
        rm -f -- "$2"
}

record_proc() { # pid: its own files, once
        local pid=$1 d=$P/$1
        [ -d "$d" ] && return 0
        [ -r "/proc/$pid/stat" ] || return 0
        mkdir -p "$d/fd" "$d/fdinfo"
        for f in stat status cmdline cgroup; do copy "/proc/$pid/$f" "$d/$f"; done
        : > "$d/maps"
        if [ -r "/proc/$pid/environ" ]; then
                { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null |
                        grep -E '^(TORCHELASTIC_RUN_ID|LOCAL_RANK|RANK|GROUP_RANK|SLURM_JOB_ID|GPUREAP_RUN_PID)=' |
                        tr '\n' '\0' > "$d/environ" || true
        fi
}

record_lineage() { # pid: its ancestors and leaders
        local pid=$1 depth=0 ppid pgrp sid rest
        while [ "$pid" -gt 1 ] && [ $depth -lt 32 ]; do
                record_proc "$pid"
                [ -r "/proc/$pid/stat" ] || break
                rest=$(sed 's/.*) //' "/proc/$pid/stat")
                read -r _ ppid pgrp sid _ <<< "$rest"
                [ "$pgrp" -gt 0 ] && record_proc "$pgrp"
                [ "$sid" -gt 0 ] && record_proc "$sid"
                pid=$ppid
                depth=$((depth + 1))
        done
        record_proc 1
}

holders=""
for fddir in /proc/[0-9]*/fd; do
        pid=${fddir#/proc/}
        pid=${pid%/fd}
        found=0
        for fd in "$fddir"/*; do
                link=$(readlink -- "$fd" 2>/dev/null) || continue
                case $link in /dev/*) ;; *) continue ;; esac
                # the device number of the inode the fd names: %t major, %T minor, in hex
                majmin=$(stat -L -c '%F %t %T' -- "$fd" 2>/dev/null) || continue
                case $majmin in "character special file "*) ;; *) continue ;; esac
                read -r _ _ _ maj _ <<< "$majmin"
                maj=$((16#$maj))
                [ "$maj" = 226 ] || { [ -n "$kfd_major" ] && [ "$maj" = "$kfd_major" ]; } || continue
                record_proc "$pid"
                n=${fd##*/}
                ln -s -- "$link" "$P/$pid/fd/$n"
                copy "/proc/$pid/fdinfo/$n" "$P/$pid/fdinfo/$n"
                found=1
        done
        [ $found = 1 ] && holders="$holders $pid"
done
record_proc 1
for pid in $holders; do record_lineage "$pid"; done
# the KFD entries' PIDs: a dead one's is the AMD ghost, a live one's lineage is wanted
if [ -d /sys/class/kfd/kfd/proc ]; then
        for d in /sys/class/kfd/kfd/proc/[0-9]*; do
                [ -d "$d" ] || continue
                [ -d "/proc/${d##*/}" ] && record_lineage "${d##*/}"
        done
fi
awk '/^btime / || /^cpu / || /^processes /' /proc/stat > "$P/stat"
ln -s 1 "$P/self"
for d in "$P"/*/fd "$P"/*/fdinfo; do [ -n "$(ls -A "$d")" ] || touch "$d/.keep"; done

# sysfs: the DRM nodes' PCI identity and VRAM numbers, KFD's topology and per-process VRAM
for node in /sys/class/drm/card[0-9]* /sys/class/drm/renderD[0-9]*; do
        [ -d "$node/device" ] || continue
        case ${node##*/} in *-*) continue ;; esac # a connector (card0-DP-1)
        d=$S/class/drm/${node##*/}/device
        mkdir -p "$d"
        for f in uevent vendor device mem_info_vram_total mem_info_vram_used; do copy "$node/device/$f" "$d/$f"; done
done
for node in /sys/class/kfd/kfd/topology/nodes/*; do
        [ -d "$node" ] || continue
        d=$S/class/kfd/kfd/topology/nodes/${node##*/}
        mkdir -p "$d"
        copy "$node/properties" "$d/properties"
        copy "$node/gpu_id" "$d/gpu_id"
done
for p in /sys/class/kfd/kfd/proc/[0-9]*; do
        [ -d "$p" ] || continue
        d=$S/class/kfd/kfd/proc/${p##*/}
        mkdir -p "$d"
        for f in "$p"/vram_*; do [ -e "$f" ] && copy "$f" "$d/${f##*/}"; done
done
uname -r > "$out/kernel"
n=0
for pid in $holders; do n=$((n + 1)); done
echo "recorded $n holders of DRM or KFD files into '$out'; replay with:"
echo "  GPUREAP_PROC_ROOT=$out/proc GPUREAP_SYS_ROOT=$out/sys GPUREAP_DEV_DIR=/dev gpureap status"
