#!/bin/bash
# Container ids are 64 hex digits (the cgroup path has all of them), but the scope keeps only the
# first 12 (gr_cgroup_container_id) and '--container ID' matches on those 12 even when given all
# 64. Two containers whose ids share 12 digits are one scope: 'reap --container A --ended' (A's
# clean-up after it ended) kills container B's live job too. A runtime that takes the id from
# its caller (runc run ID, podman --cgroup-parent, crun) lets a user pick such an id.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null || { echo "1..0 # SKIP needs root and setpriv"; exit 77; }
chmod 0755 "$T"; chmod 0666 "$T"/dev/* "$PIDS"; chmod 1777 "$T/ctx"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
pre=0123456789ab
A=${pre}$(printf 'a%.0s' $(seq 52)) B=${pre}$(printf 'b%.0s' $(seq 52))
ca=$(f_cgroup "f-$$.slice/system.slice/docker-$A.scope")
cb=$(f_cgroup "f-$$.slice/system.slice/docker-$B.scope")
"$GPUHOLD" pidfile "$PIDS" in-a cuda 0 0 64 sleep &
LAUNCHED="$LAUNCHED $!"
setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" in-b cuda 0 0 64 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role in-a in-b
a=$(pid_of in-a) b=$(pid_of in-b)
f_move "$a" "$ca"; f_move "$b" "$cb"
gr status --json
echo "# container of $a: $(jq -r ".processes[] | select(.pid == $a) | .placement.container" "$T/out"); of $b: $(jq -r ".processes[] | select(.pid == $b) | .placement.container" "$T/out")"
gr reap --container "$A" --ended --all-users --yes --grace 200ms --timeout 2s
f_show
alive "$a" && fail "container A's process $a was not reaped (control)"
ok "container A's process was reaped (control)"
if alive "$b"; then ok "container B's process survived 'reap --container A --ended'"
else bad "'reap --container <A, 64 digits> --ended' killed $b (uid 4242), a process of container B, whose id differs from A's after the 12th digit"; fi
f_done
