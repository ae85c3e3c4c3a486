#!/bin/bash
# reap --dry-run --gpu SEL where SEL matches no GPU: a usage error (exit 2), as before the cycle
# moved into lib (02fcd0f: the check came before the plan, dry run or not). Negative control:
# the same without --dry-run is exit 2.
. "$TESTLIB"
scenario "gpu 0 minor=0"
gr reap --dry-run --direct --gpu 7
expect_rc 2 "reap --dry-run --gpu 7 (no such GPU) is a usage error"
gr reap --dry-run --direct --json --gpu 7
expect_rc 2 "the same with --json"
gr reap --yes --direct --gpu 7
expect_rc 2 "without --dry-run: a usage error"
done_testing
