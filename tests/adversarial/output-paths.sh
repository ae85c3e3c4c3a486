#!/bin/bash
# The files gpureap writes whole and renames into place (run --json, run --ready-file, metrics
# --textfile) replace what their path names. Before, a device node given there became a regular
# file (as root, '--json /dev/null' would have replaced the system's /dev/null; an adversary's
# test turned /dev/full into a JSON file), a symbolic link was replaced, and the ready file was
# unlinked at the end, whatever it was by then. Shown on device nodes of our own.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (mknod)"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
mknod -m 666 "$T/null1" c 1 3
mknod -m 666 "$T/null2" c 1 3
mknod -m 666 "$T/null3" c 1 3
ln -s "$T/null1" "$T/link"
mkdir "$T/dir"
is_dev() { [ -c "$1" ] && [ ! -L "$1" ] || fail "$1 is no longer the device: $(ls -l "$1" 2>&1)"; }
for args in "--json $T/null1" "--json $T/link" "--json $T/dir" "--ready-file $T/null2" "--ready-log x --ready-file $T/link"; do
        gr run --quiet $args -- true
        expect_rc 2 "run $args is refused"
        has err "is not a regular file" "it says why"
done
is_dev "$T/null1"; is_dev "$T/null2"; [ -L "$T/link" ] || fail "the link was replaced"
ok "the devices and the link are as they were"
gr metrics --textfile "$T/null3"
expect_rc 2 "metrics --textfile on a device is refused"
is_dev "$T/null3"
# a regular file, and a new path, are written as before
echo old >"$T/result.json"
gr run --quiet --json "$T/result.json" -- true
expect_rc 0 "run --json over a regular file"
jq -e '.command == "run"' "$T/result.json" >/dev/null || fail "not the result: $(cat "$T/result.json")"
gr run --quiet --json "$T/new.json" -- true
expect_rc 0 "run --json to a new path"
[ -f "$T/new.json" ] || fail "no $T/new.json"
ok "regular files and new paths are written"
# the ready file is removed at the end only while it is the one written
cat >"$T/swap.sh" <<SH
echo listening
while [ ! -e "$T/ready" ]; do sleep 0.01; done
rm "$T/ready"; mknod -m 666 "$T/ready" c 1 3
SH
gr run --quiet --ready-log listening --ready-file "$T/ready" -- sh "$T/swap.sh"
expect_rc 0 "a run whose ready file was replaced by a device meanwhile"
is_dev "$T/ready"
ok "the device that replaced the ready file is left where it is"
gr run --quiet --ready-log listening --ready-file "$T/ready2" -- sh -c 'echo listening; sleep 0.3'
expect_rc 0 "a plain ready file"
[ ! -e "$T/ready2" ] || fail "the ready file was not removed at the end"
ok "and the ready file it wrote is removed at the end"
done_testing
