#!/bin/bash
# Issue 10, item 6: every signal gpureap sends, and the verdict behind it, is logged to syslog:
# who ran gpureap, the target's PID, start time, command, uid, job, why, and the result. Read
# back from a syslog socket of the test's own ($GPUREAP_SYSLOG_SOCKET; /dev/log otherwise).
. "$TESTLIB"
syslog_listener

launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
wait_role owner child
child=$(pid_of child); owner=$(pid_of owner)
wait "$LAST" || true
start=$(sed 's/.*) //' "/proc/$child/stat" | cut -d' ' -f20)
gr reap --yes
expect_rc 0 "reaped"
i=0; until grep -q "pid $child .*: ended" "$T/syslog" 2>/dev/null; do i=$((i + 1)); [ $i -lt 500 ] || break; sleep 0.01; done
cp "$T/syslog" "$T/out"
doc_example audit-trail.log "$T/syslog" # docs/integrations.md shows it
has out "^<85>.* gpureap\\[[0-9]+\\]: reap by uid $(id -u) \\(euid $(id -u), parent $$ " "who ran it (facility authpriv, notice)"
has out "signalling pid $child start $start uid $(id -u) comm 'gpuhold' cmdline '[^']*gpuhold[^']*' job 'process group [0-9]+': leftover; judged leftover: it keeps the GPU memory of PID $owner" "the target, its identity, job and the verdict"
has out "pid $child start $start comm 'gpuhold': ended" "the result"
# a dry run signals nothing and logs nothing
: >"$T/syslog"
launch pidfile "$PIDS" o2 cuda 0 0 256 spawn-holder "$PIDS" c2 exit
wait_role o2 c2
wait "$LAST" || true
gr reap --dry-run
sleep 0.2 # give a stray datagram the time to arrive before looking for its absence
[ ! -s "$T/syslog" ] || fail "a dry run logged: $(cat "$T/syslog")"
ok "a dry run logs nothing"
done_testing
