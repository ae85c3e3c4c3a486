#!/bin/bash
# Holders in another PID namespace and of another user are named as such.
. "$TESTLIB"
if [ "$(id -u)" -ne 0 ] || ! unshare -p -f true 2>/dev/null; then
        echo "1..0 # SKIP needs root (a PID namespace and another uid)"
        exit 77
fi
chmod 0755 "$T"; chmod 0666 "$T"/dev/*; chmod 1777 "$T/ctx"; chmod 0666 "$PIDS"

unshare -p -f "$GPUHOLD" pidfile "$PIDS" nsinit child pidfile "$PIDS" nsowner cuda 0 0 256 sleep &
LAUNCHED="$LAUNCHED $!"
# uid 4242 has no account: setpriv needs none, and nothing is left behind
setpriv --reuid=4242 --regid=4242 --clear-groups "$GPUHOLD" pidfile "$PIDS" other cuda 0 0 128 sleep &
LAUNCHED="$LAUNCHED $!"
wait_role nsowner other
ns=$(pid_of nsowner); other=$(pid_of other)

gr status --json
jqok ".findings[] | select(.kind == \"foreign\" and .pids == [$ns]) | .explanation | test(\"another PID namespace as PID 2\")" "namespace: host PID and namespace PID"
jqok ".findings[] | select(.kind == \"foreign\" and .pids == [$other]) | .explanation | test(\"uid 4242\")" "other user named"
jqok ".processes[] | select(.pid == $ns) | .verdict.conditions | index(\"other_namespace\")" "condition other_namespace"
jqok ".processes[] | select(.pid == $other) | .verdict.conditions | index(\"other_user\")" "condition other_user"
jqok '.gpus[0].state == "busy"' "both alive with live launchers: busy"
jqok ".processes[] | select(.pid == $$) | .verdict == null" "negative control: the test's own shell is no holder"
done_testing
