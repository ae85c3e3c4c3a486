#!/bin/bash
# The second command of the README, and what CI runs: build twice (plain, and with ASan+UBSan),
# warnings as errors, run every suite in both, and end with the line "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
# The tests rely on every signal at its default and none blocked, whatever the caller left
# (under nohup SIGHUP is ignored: the tests' launchers inherited it, and their verdicts dropped
# to unsure; bash cannot undo a disposition ignored at its start): set once here, for all below
if [ "${GPUREAP_TEST_SIGNALS:-}" != default ]; then
        export GPUREAP_TEST_SIGNALS=default
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

status=0
run_build() { # dir, meson options...
        local dir=$1
        shift
        if [ ! -d "$dir" ]; then
                meson setup "$dir" --werror "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
                rm -f "$dir.setup.log"
        fi
        ninja -C "$dir" || return 1
        # ASan reports leaks and UBSan stops at the first error: a finding fails the test
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                meson test -C "$dir" --print-errorlogs --num-processes 2 || return 1
}

run_build build || status=1
run_build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug || status=1

passed=0 failed=0 skipped=0
for log in build/meson-logs/testlog.json build-asan/meson-logs/testlog.json; do
        [ -f "$log" ] || { failed=$((failed + 1)); continue; }
        read -r p f s < <(jq -rs '[(map(select(.result == "OK" or .result == "EXPECTEDFAIL")) | length),
                                   (map(select(.result == "FAIL" or .result == "TIMEOUT" or .result == "ERROR" or .result == "UNEXPECTEDPASS")) | length),
                                   (map(select(.result == "SKIP")) | length)] | @tsv' "$log")
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
done
[ $status -eq 0 ] || [ $failed -gt 0 ] || failed=1
[ $skipped -eq 0 ] || echo "$skipped skipped (exit 77: the machine cannot run them; each says why in the log)"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
