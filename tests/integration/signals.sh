# Sourced first by lib.sh (and by the scripts that do not use it): a test relies on every
# signal at its default and none blocked, whatever its caller left. Under nohup SIGHUP is
# ignored, after "trap '' INT" SIGINT is, and a program may exec us with signals blocked; the
# test's launchers and workers inherit all that, and their verdicts (or their deaths at TERM)
# change. bash cannot undo a disposition ignored at its start, so the script is started again
# once through sigexec --default (python3 where sigexec was not built). Checked by the test
# inherited-signals.
gr_signals_not_default() { # as a child of this shell gets them (bash ignores SIGQUIT itself)
        [ "$(awk '/^Sig(Ign|Blk):/ { printf "%s", $2 }' /proc/self/status)" != 00000000000000000000000000000000 ]
}
if gr_signals_not_default; then
        if [ "${GR_SIGNALS_RESET:-}" = "$0" ]; then
                echo "signals.sh: the signals are still not at their defaults after a reset (a child's SigIgn, SigBlk: $(awk '/^Sig(Ign|Blk):/ { printf "%s ", $2 }' /proc/self/status))" >&2
                exit 1
        fi
        export GR_SIGNALS_RESET=$0
        if [ -n "${SIGEXEC:-}" ] && [ -x "$SIGEXEC" ]; then
                exec "$SIGEXEC" --default -- /bin/bash "$0" "$@"
        fi
        exec python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for s in signal.valid_signals():
    if s not in (signal.SIGKILL, signal.SIGSTOP):
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
os.execv("/bin/bash", ["/bin/bash"] + sys.argv[1:])' "$0" "$@"
fi
unset GR_SIGNALS_RESET
