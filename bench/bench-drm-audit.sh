#!/bin/bash
# What reap's look at every process's DRM files costs (drm_audit, docs/drm.md): 'reap --dry-run'
# on a fake AMD node (as tests/integration/reap-drm.sh makes one: files named like render nodes,
# a fake sysfs, fdinfo bind-mounted in a private mount namespace; root) with two likely
# leftovers, without --likely (nothing planned: no audit) and with it (two clients: the audit),
# interleaved, 40 runs a round, 4 rounds. With the variables the tests get (TESTLIB, GPUREAP,
# GPUHOLD, FAKE_NVML: the 'command:' line of build/meson-logs/testlog.txt shows them), as root:
#   env TESTLIB=... GPUREAP=... GPUHOLD=... FAKE_NVML=... bash bench/bench-drm-audit.sh
. "$TESTLIB"
export GPUREAP_NVML_LIBRARY=$T/none.so GPUREAP_SYSLOG_SOCKET=$T/nolog SYS=$T/sys GPUREAP_SYS_ROOT=$T/sys
PDEV=0000:03:00.0; rm -f "$T"/dev/nvidia*; mkdir -p "$T/dev/dri" "$T/fi"; truncate -s 4096 "$T/dev/dri/renderD128"
d=$SYS/class/drm/renderD128/device; mkdir -p $d; printf 'DRIVER=amdgpu\nPCI_SLOT_NAME=%s\n' $PDEV >$d/uevent; echo 0x1002 >$d/vendor
mk() { launch pidfile "$PIDS" $1l setpgid open dri/renderD128 spawn-holder "$PIDS" $1 sleep; local ll=$LAST; wait_role $1l $1; local w=$(pid_of $1)
  local fd=$(for f in /proc/$w/fd/*; do [ "$(readlink $f)" = "$T/dev/dri/renderD128" ] && echo ${f##*/}; done)
  mkdir -p $T/fi/$w; printf 'drm-driver:\tamdgpu\ndrm-client-id:\t%s\ndrm-pdev:\t%s\ndrm-total-vram:\t1024 KiB\n' $2 $PDEV > $T/fi/$w/$fd
  kill -KILL $ll; wait $ll 2>/dev/null || true; }
mk w 41; mk j 42
# j: planned unless --likely is off: without --likely nothing is planned (no audit); with it, one client (audit)
cat > $T/b.sh <<EOS
#!/bin/bash
for d in $T/fi/*; do mount --bind \$d /proc/\${d##*/}/fdinfo; done
t() { local s=\$(date +%s%N); for i in \$(seq 40); do "\$@" >/dev/null 2>&1; done; echo \$(( (\$(date +%s%N) - s) / 40000 )); }
for round in 1 2 3 4; do
  echo "reap --dry-run (plans nothing: no audit) \$(t $GPUREAP reap --dry-run) us; reap --dry-run --likely (2 clients: audit) \$(t $GPUREAP reap --dry-run --likely) us"
done
EOS
chmod +x $T/b.sh; echo "processes: $(ls /proc | grep -c '^[0-9]'), fds: $(ls /proc/*/fd 2>/dev/null | wc -l)"
unshare -m --propagation private $T/b.sh
