#!/bin/bash
# "A tool that may run as root runs no program that its environment names" (architecture.md) and
# root "loads no NVML its environment names unless root owns it and others cannot write it"
# (GPUREAP_NVML_LIBRARY, nvml-library-as-root.sh). GPUREAP_NVIDIA_SMI is not held to that rule:
# 'gpureap reset' as root runs the program it names -- a file another user owns and may write --
# as root. (An environment that sudo -E or env_keep passes.)
# The same environment also steers what root kills: GPUREAP_PROC_ROOT (f-proc-root-fixture.sh) and
# GPUREAP_DEV_DIR (which files count as GPUs), and GPUREAP_SYSLOG_SOCKET silences the audit trail.
. "$TESTLIB"
. "$(dirname "$0")/f-lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root"; exit 77; }
scenario "gpu 0" "stale 0 4096"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
mkdir -p "$T/user"
cat >"$T/user/nvidia-smi" <<S
#!/bin/sh
id -u >"$T/ran-as"
echo "GPU 00000000:19:00.0 was successfully reset."
S
chmod 0777 "$T/user/nvidia-smi"
chown 4242:4242 "$T/user/nvidia-smi"
GPUREAP_NVIDIA_SMI=$T/user/nvidia-smi gr reset --gpu 0 --yes --timeout 2s
f_show
if [ -e "$T/ran-as" ]; then
        bad "root's 'gpureap reset' ran $T/user/nvidia-smi (owned by uid 4242, world-writable) named by GPUREAP_NVIDIA_SMI, as uid $(cat "$T/ran-as")"
else
        ok "root ran no program from GPUREAP_NVIDIA_SMI that another user controls"
fi
f_done
