#!/bin/bash
# Issue 26, item 15: usage errors echoed the user's argument raw, escape codes and newlines
# included (94 fuzz runs printed control bytes). Now every message that quotes what a user gave
# (an argument, an option's value, a file name, an environment variable) writes a control byte,
# and a byte that is not UTF-8, as \xNN, and cuts a long one with "...". Each case below gives
# ESC, a newline and 0xff; its stderr must be one line with no byte below 0x20 but the final
# newline, and must show the argument quoted (so the argument did reach the message).
. "$TESTLIB"
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog
BAD=$(printf 'a\033[31mb\nc\377d')
QUOTED='a\\x1b\[31mb\\x0ac\\xffd'

# clean_line DESCRIPTION: $T/err is one line, no control byte in it, and the argument quoted
clean_line() {
        python3 - "$T/err" <<'PY' || fail "$1: a raw control byte on stderr: $(od -c "$T/err" | head -5)"
import sys
e = open(sys.argv[1], "rb").read()
ok = e.endswith(b"\n") and b"\x1b" not in e and all(b >= 0x20 and b != 0x7f for b in e[:-1])
sys.exit(0 if ok else 1)
PY
        has err "$QUOTED" "$1: the argument is quoted"
}

# case RC DESCRIPTION ARGS...: gpureap ARGS exits RC with one clean line
case_of() {
        local rc=$1 desc=$2
        shift 2
        gr "$@"
        expect_rc "$rc" "$desc"
        clean_line "$desc"
}

# negative control: the bytes are really there in what is given
printf '%s' "$BAD" | od -An -tx1 | grep -q '1b' || fail "no ESC in the argument"
printf '%s' "$BAD" | od -An -tx1 | grep -q 'ff' || fail "no 0xff in the argument"
ok "negative control: the argument holds ESC, a newline and 0xff"

case_of 2 "an unknown command" "$BAD"
case_of 2 "an unknown option" status "--$BAD"
case_of 2 "a stray argument" status "$BAD"
case_of 2 "a bad duration" status --nvml-timeout "$BAD"
case_of 2 "a bad --color" status --color "$BAD"
case_of 2 "a --replay file that is not there" status --replay "$T/$BAD"
case_of 2 "a --gpu that matches nothing" status --gpu "$BAD"
case_of 2 "a bad --job" status --job "$BAD"
case_of 2 "a bad --pid" reap --pid "$BAD"
case_of 2 "a bad --only" reap --only "1@$BAD"
case_of 2 "no such --user" reap --user "$BAD"
case_of 2 "a bad --free" wait --free "$BAD"
case_of 3 "check: a bad --format (UNKNOWN)" check --format "$BAD"
case_of 2 "metrics: a bad --gpu" metrics --gpu "$BAD"
case_of 2 "serve: a bad --listen" serve --listen "$BAD"
case_of 2 "slurm-epilog: a bad --gpus" slurm-epilog --gpus ",$BAD"
GPUREAP_NVML_TIMEOUT=$BAD case_of 2 "a bad GPUREAP_NVML_TIMEOUT" status
GPUREAP_PROC_ROOT=/x$BAD case_of 2 "reap with a GPUREAP_PROC_ROOT not /proc" reap --yes

# an unknown short option that is itself a control byte
gr status "-$(printf '\033')"
expect_rc 2 "an unknown short option ESC"
has err "unknown option '-\\\\x1b'" "the option is quoted"

# a long argument is cut with "..."
gr "$(printf 'x%.0s' $(seq 1 500))"
expect_rc 2 "a command of 500 characters"
has err "'x{100,124}\.\.\.' is not" "it is cut with ..."
[ "$(wc -c <"$T/err")" -lt 300 ] || fail "the message is $(wc -c <"$T/err") bytes"
ok "the message stays short"

# valid UTF-8 is kept as it is
gr status --gpu "é"
expect_rc 2 "a --gpu in UTF-8"
has err "no GPU matches 'é'" "UTF-8 is kept"
done_testing
