#!/bin/bash
# Issue 9, item 14: GPUREAP_TEST_BEFORE_SIGNAL runs a shell command between the plan and the
# signals. In a tool that kills as root that is a seam no environment may reach: the installed
# gpureap ignores it; only the test build (gpureap-test-hooks, never installed) has it, which
# the negative control shows.
. "$TESTLIB"
: "${GPUREAP_TEST_HOOKS:?the test build of gpureap}"

# a leftover to reap: a ghost's hidden holder, so that reap gets as far as its signals
leftover() {
        launch pidfile "$PIDS" owner cuda 0 0 256 spawn-holder "$PIDS" child exit
        wait_role owner child
        wait "$LAST" || true
        child=$(pid_of child)
}

leftover
GPUREAP_TEST_BEFORE_SIGNAL="touch $T/hook-ran" gr reap --yes --grace 200ms --timeout 5s
expect_rc 0 "the installed gpureap reaped the leftover"
has out "^  $child +ended" "the leftover was signalled"
[ ! -e "$T/hook-ran" ] || fail "the installed gpureap ran the command named by GPUREAP_TEST_BEFORE_SIGNAL"
ok "the installed gpureap ignored GPUREAP_TEST_BEFORE_SIGNAL"

# negative control: the same run with the test build does run it, so the check above can fail
sed -i '/^owner /d; /^child /d' "$PIDS"
leftover
set +e
GPUREAP_TEST_BEFORE_SIGNAL="touch $T/hook-ran" "$GPUREAP_TEST_HOOKS" reap --yes --grace 200ms --timeout 5s \
        >"$T/out" 2>"$T/err"
RC=$?
set -e
expect_rc 0 "the test build reaped the leftover"
[ -e "$T/hook-ran" ] || fail "the test build did not run the hook: the check above proves nothing"
ok "negative control: the test build runs the hook"
done_testing
