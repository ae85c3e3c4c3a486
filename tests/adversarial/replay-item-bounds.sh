#!/bin/bash
# Issue 26, item 14: --replay was bounded in bytes only: 18 MB of empty process objects took
# 23 s and 4.7 GB of memory, 64 MiB took 84 s and 16 GB. Now a recording is bounded in items
# too: JSON values and objects counted before it is parsed, and every list it reads (processes,
# GPUs, context owners, ...) no longer than gpureap writes one; past a bound, one line and exit
# 2. Each replay here runs under a memory cap, so that a regression fails instead of taking the
# machine, and under a deadline that only a hang reaches; no timing is asserted.
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
FIX=$(dirname "$TESTLIB")/../fixtures

# The cap: 1 GiB of address space; a sanitizer build reserves terabytes of it for its shadow,
# so there the sanitizer's own RSS limit (2 GiB, its shadow and redzones included)
CAP=(prlimit --as=$((1 << 30)) --)
if ! "${CAP[@]}" "$GPUREAP" --version >/dev/null 2>&1; then
        CAP=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2048")
        echo "# a sanitizer build: capped by hard_rss_limit_mb"
fi

# replay FILE [ARGS...]: status --replay FILE, capped, its exit status in RC
replay() {
        local f=$1
        shift
        set +e
        timeout -s KILL 60 "${CAP[@]}" "$GPUREAP" status --replay "$f" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        [ $RC -ne 137 ] || fail "the replay of $f hung or was killed"
}

# refused FILE PATTERN DESCRIPTION: exit 2 and the one line that names the bound
refused() {
        replay "$1"
        expect_rc 2 "$3"
        has err "^gpureap: '$1' $2$" "names the bound"
        [ "$(wc -l <"$T/err")" -eq 1 ] || fail "more than one line on stderr"
        ok "one line"
}

# gen NAME PYTHON: a recording made from a real one (h200 orphans), changed by PYTHON on d
gen() {
        python3 - "$FIX/h200-2026-12-03/orphans.json" "$T/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
with open(sys.argv[2], "w") as f:
    if isinstance(d, str):
        f.write(d)
    else:
        json.dump(d, f)
PY
}

# negative controls: real recordings replay under the cap, and so does one at the bound
for f in h200-2026-12-03/orphans.json h200-2026-12-03-c/served-eight.json h200-2026-12-02/ghost.json; do
        [ -f "$FIX/$f" ] || continue
        replay "$FIX/$f" --json
        [ $RC -le 1 ] || fail "the recording $f no longer replays (exit $RC)"
        jq -e '.processes | length > 0' "$T/out" >/dev/null || fail "$f: no processes replayed"
        ok "the recording $f replays under the cap (exit $RC)"
done
gen at-bound 'p = next(p for p in d["processes"] if (p.get("devices") or {}).get("gpus"))
d["processes"] = [dict(p, pid=100000 + i) for i in range(8192)]'
replay "$T/at-bound.json" --json
[ $RC -le 1 ] || fail "8192 processes (the bound) are refused (exit $RC)"
jqok '.processes | length == 8192' "8192 holders (the bound) replay under the cap"

# the review's file: 18 MB of empty process objects
gen empty-objects 's = json.dumps(d)
d = s.replace("\"processes\": [", "\"processes\": [" + "{}, " * 4500000, 1)'
refused "$T/empty-objects.json" "holds more JSON objects and arrays than a snapshot may \(262144\)" \
        "18 MB of empty process objects are refused"
# as many values, none of them an object
gen numbers 'd["pad"] = [0] * 3000000'
refused "$T/numbers.json" "holds more JSON values than a snapshot may \(2097152\)" "3 million numbers are refused"
# lists longer than gpureap writes
gen processes 'd["processes"] = [{"pid": 100000 + i} for i in range(8193)]'
refused "$T/processes.json" "lists more processes than a snapshot may \(8192\)" "8193 processes are refused"
gen gpus 'd["gpus"] = [d["gpus"][0]] * 65'
refused "$T/gpus.json" "lists more GPUs than a snapshot may \(64\)" "65 GPUs are refused"
gen owners 'd["gpus"][0]["context_owners"] = [{"pid": 5, "type": "compute", "used_memory": 1}] * 1025'
refused "$T/owners.json" "lists more context owners of a GPU than a snapshot may \(1024\)" "1025 owners of a GPU are refused"
gen nspid 'd["processes"][0]["nspid"] = list(range(1, 10))'
refused "$T/nspid.json" "lists more PID namespaces of a process than a snapshot may \(8\)" "9 PID namespaces are refused"
gen holds 'next(p for p in d["processes"] if p.get("devices"))["devices"]["gpus"] = [{"minor": 0, "fds": 1}] * 65'
refused "$T/holds.json" "lists more GPUs a process holds than a snapshot may \(64\)" "65 GPUs held by one process are refused"
done_testing
