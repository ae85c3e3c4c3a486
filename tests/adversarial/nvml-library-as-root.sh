#!/bin/bash
# A root gpureap loads no code that its environment names unless root owns it and nobody else
# may write it: an environment kept by 'sudo -E' must not choose what the NVML helper runs as root.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP the rule is for root"; exit 77; }
cp "$FAKE_NVML" "$T/lib.so"
chmod 0666 "$T/lib.so"
GPUREAP_NVML_LIBRARY=$T/lib.so gr status --json
expect_rc 3 "a library others may write: refused"
has err "refusing GPUREAP_NVML_LIBRARY '.*lib.so' as root" "says why"
jqok '.driver.status == "failed"' "the driver part failed; the /proc part still ran"
GPUREAP_NVML_LIBRARY=libnvidia-ml.so.1 gr status
has err "refusing GPUREAP_NVML_LIBRARY" "a bare name (a search path) is refused too"
chown 4242 "$T/lib.so"; chmod 0644 "$T/lib.so"
GPUREAP_NVML_LIBRARY=$T/lib.so gr status
has err "refusing" "a library owned by another user: refused"
# negative control: root's own, not writable by others, loads
chown 0 "$T/lib.so"; chmod 0755 "$T/lib.so"
GPUREAP_NVML_LIBRARY=$T/lib.so gr status --json
expect_rc 0 "root's own library loads"
jqok '.driver.status == "ok"' "driver ok"

# the path is walked, not stat()ed: a link that another user may flip, in a directory that user
# owns, pointing at root's own library (so that a check of the target passes) was loaded, and
# flipped between the check and the dlopen it loaded that user's code as root
mkdir "$T/theirs"
ln -s "$T/lib.so" "$T/theirs/lib.so"
chown -h 4242:4242 "$T/theirs" "$T/theirs/lib.so"
GPUREAP_NVML_LIBRARY=$T/theirs/lib.so gr status --json
expect_rc 3 "a link in another user's directory, to root's own library: refused"
has err "refusing GPUREAP_NVML_LIBRARY '.*theirs/lib.so' as root: the directory '.*theirs' belongs to user 4242" "says which directory"
jqok '.driver.status == "failed"' "the driver part failed"
# a directory others may write, on the way to a root-owned file
mkdir -m 0777 "$T/open"
cp "$FAKE_NVML" "$T/open/lib.so"; chmod 0755 "$T/open/lib.so"
GPUREAP_NVML_LIBRARY=$T/open/lib.so gr status
has err "others may write the directory '.*open'" "a world-writable directory on the way: refused"
# a root link in root's directory that leads into another user's
ln -s "$T/theirs/lib.so" "$T/via"
GPUREAP_NVML_LIBRARY=$T/via gr status
has err "belongs to user 4242" "a root link into another user's directory: refused at that directory"
# controls: root's own links, relative and absolute, in root's directories, load
ln -s lib.so "$T/rel"
mkdir "$T/d"; ln -s ../rel "$T/d/up"
GPUREAP_NVML_LIBRARY=$T/d/up gr status --json
expect_rc 0 "links that only root can change load (relative, through ..)"
jqok '.driver.status == "ok"' "driver ok through root's links"
# and not only root: another user's gpureap refuses a third user's directory too, and loads
# root's library
chmod 0755 "$T"
mkdir "$T/third"; cp "$FAKE_NVML" "$T/third/lib.so"; chown -R 4243:4243 "$T/third"
setpriv --reuid 4242 --regid 4242 --clear-groups env GPUREAP_NVML_LIBRARY="$T/third/lib.so" "$GPUREAP" status --json >"$T/out" 2>"$T/err" && rc=0 || rc=$?
[ "$rc" -eq 3 ] || fail "uid 4242 with a library of uid 4243: exit $rc"
has err "refusing GPUREAP_NVML_LIBRARY '.*third/lib.so': '.*third/lib.so' belongs to user 4243|the directory '.*third' belongs to user 4243" "uid 4242 refuses uid 4243's library"
setpriv --reuid 4242 --regid 4242 --clear-groups env GPUREAP_NVML_LIBRARY="$T/lib.so" "$GPUREAP" status --json >"$T/out" 2>"$T/err" && rc=0 || rc=$?
jqok '.driver.status == "ok"' "uid 4242 loads root's library"

# the same walk for the programs and directories root trusts: nvidia-smi and the device files
cat >"$T/theirs/nvidia-smi" <<S
#!/bin/sh
id -u >"$T/ran-as"
S
chmod 0755 "$T/theirs/nvidia-smi"
GPUREAP_NVIDIA_SMI=$T/theirs/nvidia-smi gr reset --gpu 0 --yes --timeout 2s
[ ! -e "$T/ran-as" ] || fail "root ran a program in uid 4242's directory"
has err "refusing GPUREAP_NVIDIA_SMI '.*' as root: the directory '.*theirs' belongs to user 4242" "nvidia-smi in another user's directory: refused"
ln -s "$GPUREAP_DEV_DIR" "$T/theirs/dev"
GPUREAP_DEV_DIR=$T/theirs/dev gr reap --yes
expect_rc 2 "a device directory reached through another user's directory: refused before any signal"
has err "refusing GPUREAP_DEV_DIR" "says so"
# and the state directory, whose records are believed (the last reap in the metrics, serve's
# memory): one another user can change is not used
mkdir "$T/theirs/state"; chown 4242:4242 "$T/theirs/state"
printf 'time 1\nexit 0\ntargets 7\nfailed 7\n' >"$T/theirs/state/last-reap"
GPUREAP_STATE_DIR=$T/theirs/state gr metrics
has err "not using the state directory '.*theirs/state': the directory '.*theirs' belongs to user 4242" "metrics says why it does not read it"
hasnt out "gpureap_last_reap_targets 7" "and does not report another user's record"
GPUREAP_STATE_DIR=$T/theirs/state gr reap --yes
[ "$(cat "$T/theirs/state/last-reap")" = "$(printf 'time 1\nexit 0\ntargets 7\nfailed 7')" ] || fail "reap wrote into another user's directory"
ok "reap writes no record there"
has err "not using the state directory" "and says so"
done_testing
