#!/bin/bash
# Huge fd counts: a leftover holding 19,000 descriptors on nvidia0 (dup of one open file; this VM
# caps RLIMIT_NOFILE at 20,000 even for root) and 20 bystanders holding 19,000 each on /dev/null
# (380,000 fds to read in the scan). gpureap must neither crash nor blow its deadline:
# status returns, the counts are right or bounded, and reap ends the leftover within --timeout.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
[ "$(id -u)" -eq 0 ] && command -v python3 >/dev/null || { echo "1..0 # SKIP needs root (RLIMIT_NOFILE) and python3"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
N=${F_FDS:-19000} K=${F_BYSTANDERS:-20}
cat >"$T/many.py" <<'P'
import os, resource, sys, time
path, n, role, pidfile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, n + 100))
fd = os.open(path, os.O_RDWR)
for _ in range(n - 1):
    os.dup(fd)
with open(pidfile, "a") as f:
    f.write("%s %d\n" % (role, os.getpid()))
time.sleep(10000)
P
# the leftover: an orphaned multiprocessing worker by its command line (a sure leftover)
setsid -f python3 "$T/many.py" "$GPUREAP_DEV_DIR/nvidia0" "$N" leftover "$PIDS" --multiprocessing-fork </dev/null >/dev/null 2>&1
for k in $(seq "$K"); do
        python3 "$T/many.py" /dev/null "$N" bystander "$PIDS" &
        LAUNCHED="$LAUNCHED $!"
done
i=0; until grep -q '^leftover ' "$PIDS" && [ "$(grep -c '^bystander ' "$PIDS")" -eq "$K" ]; do i=$((i + 1)); [ $i -lt 6000 ] || fail "never started"; sleep 0.01; done
lo=$(pid_of leftover) by=$(pid_of bystander)
LAUNCHED="$LAUNCHED $lo"
t0=$(date +%s%N)
gr status --json
t1=$(date +%s%N)
echo "# status: exit $RC in $(( (t1 - t0) / 1000000 )) ms; slow=$(jq .proc.slow "$T/out"); leftover fds on nvidia0: $(jq ".processes[] | select(.pid == $lo) | .devices.gpus" -c "$T/out"); verdict $(jq -c ".processes[] | select(.pid == $lo) | .verdict | [.role, .judgement, .confidence]" "$T/out")"
[ "$RC" -le 1 ] && ok "status returned (exit $RC)" || bad "status exit $RC: $(head -c 300 "$T/err")"
t0=$(date +%s%N)
gr reap --yes --grace 200ms --timeout 5s
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
f_show | head -20
echo "# reap: exit $RC in $ms ms"
i=0; while alive "$lo" && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
if alive "$lo"; then bad "the leftover with $N fds survived reap (exit $RC)"; else ok "the leftover with $N fds was reaped (exit $RC, $ms ms)"; fi
echo "# reap took $ms ms with --timeout 5s (the scan before the signals is never cut short)"
alive "$by" && ok "a bystander lives" || bad "a bystander was killed"
# the deadline when one scan alone takes longer than --timeout (nothing to kill now)
t0=$(date +%s%N)
gr reap --yes --timeout 300ms
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
echo "# reap --timeout 300ms with nothing to kill: exit $RC in $ms ms"
echo "# reap --timeout 300ms returned in $ms ms: its /proc scan is not bounded by it (documented in reap --help)"
f_done
