#!/bin/bash
# Issue 9, items 11 and 12: any user may name a process as they like (PR_SET_NAME), the kernel
# cuts a name at 15 bytes even mid-character, argv may hold any byte, and the driver's strings
# and a replayed recording are anyone's text. None of it may reach root's terminal raw (the
# table, the launcher lines, the reap plan shown before its prompt), and --json stays valid
# UTF-8. Negative controls: the processes really carry those bytes.
. "$TESTLIB"

ESC=$'\e'
C1=$'\xc2\x9b'                      # U+009B, CSI as one character: some terminals obey it
evil=$'\e]0;pwned\a\e[2J'           # set the window title, clear the screen
cut=$'aaaaaaaaaaaaaa\xc3\xa9'       # 14 + 2 bytes: the kernel keeps 15, half of the é
c1name=$'c1\xc2\x9b2Jx\xff'         # a C1 control and a byte that is never UTF-8

# raw_in FILE: does FILE hold an ESC, a C1 control in UTF-8, or a byte that is not UTF-8?
raw_in() {
        grep -q "$ESC" "$1" && return 0
        LC_ALL=C grep -q "$C1" "$1" && return 0
        ! iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1
}

scenario "gpu 0 minor=0 uuid=GPU-$ESC[31mfa4e pci=0000:19:00.0 name=NVIDIA ${ESC}[5mH200$C1 x"$'\xff' \
        "driver 580.95$ESC[0m"

launch setpgid name "$evil" pidfile "$PIDS" evil cuda 0 0 512 sleep
launch name "$cut" pidfile "$PIDS" cut monitor 0 sleep
launch name "$c1name" pidfile "$PIDS" c1 monitor 0 sleep "$c1name"
wait_role evil cut c1
evil_pid=$(pid_of evil) cut_pid=$(pid_of cut) c1_pid=$(pid_of c1)

# negative controls: the bytes are really there, in the kernel's own files
grep -q "$ESC" "/proc/$evil_pid/comm" || fail "the renamed process has no ESC in its comm"
ok "negative control: /proc/$evil_pid/comm holds an ESC"
[ "$(tail -c 2 "/proc/$cut_pid/comm" | od -An -tx1 | tr -d ' \n')" = "c30a" ] ||
        fail "the kernel did not cut the name mid-character: $(od -c "/proc/$cut_pid/comm")"
ok "negative control: the kernel cut a name in the middle of a character"
LC_ALL=C grep -q $'\xff' "/proc/$c1_pid/cmdline" || fail "no 0xff byte in the argv"
LC_ALL=C grep -q "$C1" "/proc/$c1_pid/comm" || fail "no C1 control in the comm"
ok "negative control: a C1 control in a comm, a 0xff byte in an argv"

gr status
expect_rc 1 "status: the GPU is busy"
! raw_in "$T/out" || fail "status printed an escape sequence or bytes that are not UTF-8"
! raw_in "$T/err" || fail "status printed an escape sequence or bytes that are not UTF-8 on stderr"
ok "status: no escape, no C1 control, valid UTF-8"
has out "launcher: process group $evil_pid \(\?\]0;pwned\?\?\[2J, alive\)" "the launcher line shows the name with '?'"
has out "NVIDIA \?\[5mH200\? x\?" "the driver's GPU name with '?'"
has out "driver 580.95\?\[0m" "the driver version with '?'"

gr status --json
expect_rc 1 "status --json"
iconv -f UTF-8 -t UTF-8 "$T/out" >/dev/null || fail "--json wrote bytes that are not UTF-8"
ok "--json is valid UTF-8"
jqok "[.processes[] | select(.pid == $evil_pid)][0].comm == \"?]0;pwned??[2J\"" "an ESC and a BEL in a name are '?'"
jqok "[.processes[] | select(.pid == $cut_pid)][0].comm == \"aaaaaaaaaaaaaa?\"" "the half character is '?'"
jqok "[.processes[] | select(.pid == $c1_pid)][0].comm == \"c1?2Jx?\"" "the C1 control and 0xff are '?'"
jqok "[.processes[] | select(.pid == $c1_pid)][0].cmdline | endswith(\" c1?2Jx?\")" "so are they in the command line"
jqok '[.. | strings | select(test("[\u0000-\u001f\u007f-\u009f]"))] == []' "no control character in any string"
jqok '.gpus[0].uuid == "GPU-?[31mfa4e" and .driver.driver_version == "580.95?[0m"' "the driver's strings with '?'"
cp "$T/out" "$T/status.json"

gr reap --dry-run --pid "$evil_pid,$c1_pid"
expect_rc 0 "reap --dry-run"
! raw_in "$T/out" || fail "the reap plan printed an escape sequence or bytes that are not UTF-8"
! raw_in "$T/err" || fail "reap printed an escape sequence or bytes that are not UTF-8 on stderr"
has out "kill +$evil_pid +\?\]0;pwned\?\?\[2J" "the plan names the process with '?'"

# a recording is anyone's text as well: escapes and C1 controls as JSON escapes, raw bytes
# that are not UTF-8 (json-c keeps them)
jq '(.processes[] | select(.pid == '"$evil_pid"') | .comm) = "\u001b[31mX\u009b" |
    .host = "h\u001b]0;t\u0007" | .gpus[0].name = "N\u001b[2J" |
    (.processes[] | select(.pid == '"$evil_pid"') | .state) = "\u001b"' "$T/status.json" >"$T/hostile.json"
sed 's/"c1?2Jx?"/"c1\xffz"/' "$T/hostile.json" >"$T/hostile2.json"
grep -q '\\u001b' "$T/hostile.json" || fail "the recording has no escape to replay"
LC_ALL=C grep -q $'\xff' "$T/hostile2.json" || fail "the recording has no 0xff byte to replay"
ok "negative control: the recordings hold escapes and a 0xff byte"
for f in hostile.json hostile2.json; do
        gr status --replay "$T/$f"
        expect_rc 1 "replay of $f"
        ! raw_in "$T/out" || fail "the replay of $f printed an escape sequence or bytes that are not UTF-8"
        ok "the replay of $f shows no escape and only UTF-8"
        gr status --replay "$T/$f" --json
        iconv -f UTF-8 -t UTF-8 "$T/out" >/dev/null || fail "--replay $f --json wrote bytes that are not UTF-8"
        jqok '[.. | strings | select(test("[\u0000-\u001f\u007f-\u009f]"))] == []' "replay $f: no control character in the JSON"
done
has out '"comm": "c1\?z"' "the replayed 0xff byte is '?'"
done_testing
