#!/bin/bash
# An owner that is a zombie: its parent never reaps it; a forked child keeps the context alive.
. "$TESTLIB"

launch pidfile "$PIDS" reaper child pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" holder exit
wait_role reaper owner holder
owner=$(pid_of owner); holder=$(pid_of holder); reaper=$(pid_of reaper)
wait_state "$owner" Z

gr status --json
expect_rc 1 "a zombie owner's GPU is not clean"
jqok ".gpus[0].context_owners == [{pid: $owner, type: \"compute\", used_memory: (512*1048576), process: \"zombie\"}]" "the owner is listed as a zombie"
jqok ".processes[] | select(.pid == $owner) | .state == \"Z\" and .ppid == $reaper and .devices == null" "the zombie holds no device file; its parent is named"
jqok ".gpus[0].holders == [{pid: $holder, fds: 3}]" "the child holds the GPU"

gr status
has out "^    $owner +compute +512 MiB +zombie" "table: zombie owner"
done_testing
