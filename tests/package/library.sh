#!/bin/bash
# libgpureap as another program embeds it: installed into a scratch root (meson install
# --destdir), its exports (only gr_*), soname and headers checked, examples/exporter.c built out
# of the tree with pkg-config alone and run on the fake driver: a GPU that a ghost's child
# holds and a clean one, as 'gpureap status' sees them; then, its holder killed, both clean.
. "$TESTLIB"
: "${BUILD_ROOT:?}" "${SOURCE_ROOT:?}" "${LIB_PREFIX:?}" "${LIB_LIBDIR:?}" "${LIB_LIBEXECDIR:?}" "${LIB_VERSION:?}"
CC=${CC:-cc}
for t in "$CC" pkg-config nm readelf "${MESON:-meson}"; do
        command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/install-deps.sh installs it)"; exit 77; }
done

# nothing under lib/ reads the environment: the command passes it in (src/main.c)
if grep -rnE '\b(secure_)?getenv\b' "$SOURCE_ROOT/lib"; then
        fail "lib/ reads the environment"
fi
ok "no getenv under lib/"

"${MESON:-meson}" install -C "$BUILD_ROOT" --no-rebuild --quiet --tags runtime,devel --destdir "$T/root" >"$T/install.log" 2>&1 ||
        { cat "$T/install.log" >&2; fail "meson install failed"; }
R=$T/root$LIB_PREFIX
L=$R/$LIB_LIBDIR
so=$L/libgpureap.so.$LIB_VERSION
[ -f "$so" ] && [ "$(readlink "$L/libgpureap.so.0")" = "libgpureap.so.$LIB_VERSION" ] && [ -L "$L/libgpureap.so" ] ||
        fail "no libgpureap.so.$LIB_VERSION with its links in $L: $(ls -l "$L" 2>&1)"
ok "installed: $LIB_LIBDIR/libgpureap.so.$LIB_VERSION, .so.0, .so"
readelf -d "$so" | grep -q 'Library soname: \[libgpureap\.so\.0\]' || fail "soname: $(readelf -d "$so" | grep -i soname)"
ok "soname libgpureap.so.0"

nm -D --defined-only "$so" | awk '{ print $NF }' >"$T/exports"
bad=$(grep -v '^gr_' "$T/exports" || true)
[ -z "$bad" ] || fail "exported, not gr_*: $(echo $bad)"
for f in gr_snapshot_take gr_diagnose gr_plan_make gr_reap gr_tree_end gr_wait_until gr_context_new gr_context_set_nvml_library gr_context_set_scan_mode; do
        grep -qx "$f" "$T/exports" || fail "$f is not exported"
done
# a gr_* function of lib/ that no public header declares stays inside (lib/gpu/helper.h)
for f in gr_helper_start gr_nvml_library gr_bpf_open gr_ctx_kept gr_ctx_helper; do
        ! grep -qx "$f" "$T/exports" || fail "the internal $f is exported"
done
ok "$(wc -l <"$T/exports") symbols exported, every one gr_*, the internal ones not"

# the helper that the installed library starts is the one of its prefix
helper=$LIB_PREFIX/$LIB_LIBEXECDIR/gpureap-nvml-helper
[ -x "$T/root$helper" ] || fail "no $helper installed"
grep -qaF "$helper" "$so" || fail "the library does not name $helper"
ok "the library's helper is its prefix's: $helper"

export PKG_CONFIG_LIBDIR=$L/pkgconfig PKG_CONFIG_PATH=
pc() { pkg-config --define-variable=prefix="$R" "$@" gpureap; }
[ "$(pc --modversion)" = "$LIB_VERSION" ] || fail "pkg-config --modversion: $(pc --modversion 2>&1)"
pc --print-variables >/dev/null && pkg-config --libs --static --define-variable=prefix="$R" gpureap | grep -q -- '-ldl' ||
        fail "no Libs.private: $(cat "$L/pkgconfig/gpureap.pc")"
ok "pkg-config gpureap $LIB_VERSION, Libs.private for a static link"

# every installed header on its own, from outside: no private header, no config header
flags=(-std=c11 -Wall -Wextra -Werror -pedantic)
san=()
[ "${SANITIZE:-none}" = none ] || san=(-fsanitize="$SANITIZE")
n=0
for h in "$R"/include/gpureap/*.h; do
        n=$((n + 1))
        printf '#include <gpureap/%s>\n' "$(basename "$h")" >"$T/h$n.c"
        # shellcheck disable=SC2046
        "$CC" "${flags[@]}" $(pc --cflags) -c "$T/h$n.c" -o "$T/h$n.o" 2>"$T/err" ||
                fail "include/gpureap/$(basename "$h") does not compile alone"
done
[ "$n" -ge 9 ] || fail "only $n headers installed"
ok "$n installed headers each compile alone (${flags[*]})"

# shellcheck disable=SC2046
"$CC" -Wall -Wextra -Werror "${san[@]}" -o "$T/exporter" "$SOURCE_ROOT/examples/exporter.c" $(pc --cflags --libs) 2>"$T/err" ||
        fail "examples/exporter.c does not build with pkg-config --cflags --libs gpureap"
readelf -d "$T/exporter" | grep -q 'NEEDED.*\[libgpureap\.so\.0\]' || fail "the exporter does not link libgpureap.so.0"
export LD_LIBRARY_PATH=$L
ldd "$T/exporter" | grep -q "libgpureap.so.0 => $L/libgpureap.so.0" || fail "not the scratch copy: $(ldd "$T/exporter")"
ok "examples/exporter.c built out of the tree, linked to the scratch root's libgpureap.so.0"

# exporter ARGS...: the example with the fake driver, its helper and device files, and the
# command's variables set to what would break it if the library read them
exporter() {
        set +e
        GPUREAP_PROC_ROOT=$T/nowhere GPUREAP_SCAN=nonsense GPUREAP_DEV_DIR=$T/nowhere \
                "$T/exporter" -x "$T/root$helper" -d "$T/dev" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
}

scenario "gpu 0 minor=0" "gpu 1 minor=1"
launch pidfile "$PIDS" owner cuda 0 0 2048 spawn-holder "$PIDS" child exit
wait_role owner child
owner=$(pid_of owner); child=$(pid_of child)
wait "$LAST" || true
wait_state "$owner" gone

exporter -l "$FAKE_NVML"
expect_rc 1 "the exporter: not clean"
has out "^gpu 0 GPU-[0-9a-f-]+ dirty used 2\.0 GiB of " "GPU 0 dirty, 2.0 GiB used"
has out "^  leftover ghost \[sure\] pids $child, next reap: it keeps the GPU memory of PID $owner, which is gone" "the ghost's child is GPU 0's leftover, to reap"
has out "^gpu 1 GPU-[0-9a-f-]+ clean used 0 B of " "GPU 1 clean"
[ "$(grep -c '^  leftover' "$T/out")" -eq 1 ] || fail "more than one leftover"
ok "one leftover, on GPU 0 only"
cp "$T/out" "$T/exporter.out"
gr status --json
expect_rc 1 "gpureap status agrees: not clean"
jq -r '.gpus[] | "gpu \(.index) \(.uuid) \(.state)"' "$T/out" >"$T/status.states"
awk '/^gpu / { print $1, $2, $3, $4 }' "$T/exporter.out" >"$T/exporter.states"
cmp -s "$T/status.states" "$T/exporter.states" || fail "status says $(cat "$T/status.states"), the exporter $(cat "$T/exporter.states")"
ok "every GPU's state as gpureap status gives it"

# the checks of a library named by the command's environment apply to one an embedder names
exporter -l "lib/libnvidia-ml.so.1"
expect_rc 3 "a relative library path: the driver part fails"
has out "^driver: refusing option -l 'lib/libnvidia-ml.so.1'.*: not an absolute path" "refused, as GPUREAP_NVML_LIBRARY's would be"
# without -x the library runs its prefix's helper, which is not there in a --destdir root
if [ ! -e "$helper" ]; then
        set +e
        "$T/exporter" -l "$FAKE_NVML" -d "$T/dev" >"$T/out" 2>"$T/err"
        RC=$?
        set -e
        expect_rc 3 "no helper at the prefix"
        has out "^driver: cannot start the NVML helper '$helper'" "its prefix's helper is the one it looked for"
fi

# negative control: the holder killed, both GPUs clean
kill -KILL "$child"
wait_state "$child" gone
exporter -l "$FAKE_NVML"
expect_rc 0 "the exporter: clean once the holder is gone"
hasnt out "leftover" "no leftover"
[ "$(grep -c '^gpu [01] .* clean used 0 B of ' "$T/out")" -eq 2 ] || fail "not two clean GPUs"
ok "both GPUs clean"
done_testing
