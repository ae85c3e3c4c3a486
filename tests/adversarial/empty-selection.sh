#!/bin/bash
# Issue 9, item 2: an empty or malformed selection is a usage error, never "everything": an empty
# --pid (a script's empty "$PIDS") once fell back to the default plan and killed a leftover nobody
# named; '--gpu ,' selected nothing and reported a dirty GPU clean.
. "$TESTLIB"
scenario "gpu 0 uuid=GPU-abcdef01-0000-0000-0000-000000000000" "gpu 1 uuid=GPU-abcdef01-1111-0000-0000-000000000000"
# a sure leftover: the hidden holder of a ghost, on GPU 0
launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
wait_role owner child
child=$(pid_of child)
wait "$LAST" || true

for bad in "" "," ",$child" "$child," "$child,,1"; do
        gr reap --yes --pid "$bad"
        expect_rc 2 "reap --pid '$bad'"
        has err "invalid --pid" "one-line error for '$bad'"
        kill -0 "$child" || fail "reap --pid '$bad' killed the leftover"
done
ok "no empty selection killed anything"
for bad in "" "," "0," ",1"; do
        for cmd in status wait reap; do
                gr $cmd --gpu "$bad" --timeout 0
                expect_rc 2 "$cmd --gpu '$bad'"
        done
done
gr status --gpu GPU-abcdef01
expect_rc 2 "an ambiguous UUID prefix"
has err "matches 2 GPUs" "said so"
gr status --gpu GPU-abcdef01-1
expect_rc 0 "a longer prefix picks one GPU (GPU 1, clean)"
kill -0 "$child" || fail "the leftover died on its own"
# negative control: named properly, it is killed
gr reap --yes --pid "$child"
expect_rc 0 "named with --pid, it is reaped"
wait_state "$child" gone
done_testing
