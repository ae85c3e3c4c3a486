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
done_testing
