#!/bin/bash
# Two contexts in one program, each naming its own kubelet module (seventh adversarial round):
# the second ask ran the first one's module, since both were loaded as /proc/self/fd/N with the
# same N and the loader hands back what it loaded by that name. Built against the library of
# this build (kubelet-module-mix/: two one-device modules and a program that asks through each).
. "$TESTLIB"
[ -n "${KUBELET_MODULE:-}" ] || { echo "1..0 # SKIP built without the kubelet module"; exit 77; }
command -v gcc >/dev/null || { echo "1..0 # SKIP no gcc"; exit 77; }
S=$(cd "$(dirname "$0")" && pwd)
INC=$S/../../include
LIB=$(dirname "$KUBELET_MODULE")
[ -e "$LIB/libgpureap.so" ] || { echo "1..0 # SKIP no shared library in $LIB"; exit 77; }
chmod 755 "$T"
san=()
[ "${SANITIZE:-none}" = none ] || san=(-fsanitize="$SANITIZE") # the library of an ASan build needs its runtime
for m in A B; do
        gcc "${san[@]}" -shared -fPIC -I"$INC" -DWHO="\"from-module-$m\"" -o "$T/mod-$m.so" "$S/kubelet-module-mix/mod.c" ||
                fail "cannot build module $m"
done
gcc "${san[@]}" -I"$INC" -o "$T/mix" "$S/kubelet-module-mix/mix.c" -L"$LIB" -lgpureap -Wl,-rpath,"$LIB" || fail "cannot build the program"
set +e
"$T/mix" "$T/mod-A.so" "$T/mod-B.so" "$T/kubelet.sock" >"$T/out" 2>"$T/err"
RC=$?
set -e
sed 's/^/# /' "$T/out"
expect_rc 0 "each context ran its own module"
has out "^context A: state ok, pod 'from-module-A'" "context A: module A's answer"
has out "^context B: state ok, pod 'from-module-B'" "context B: module B's answer"
done_testing
