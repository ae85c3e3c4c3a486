#!/bin/bash
# The Debian packages, built from the tree (dpkg-buildpackage -b -us -uc) in a copy of it, then
# unpacked into a scratch root: the binary runs, the man pages open, the completions, the
# Slurm scripts, the Prometheus rules and the Grafana dashboard are where a distribution
# expects them; libgpureap0 has the shared library and its helper, libgpureap-dev what the
# example builds with; lintian reports no error.
set -eu
SRC=${MESON_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
for t in dpkg-buildpackage dh lintian scdoc man; do
        command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/install-deps.sh installs it)"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-deb.XXXXXX")
trap 'rm -rf "$T"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# the tracked files only: no build directory travels into the package's source
mkdir "$T/src"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard | grep -zv '^build' | xargs -0 cp -P --parents -t "$T/src") 2>/dev/null ||
        (cd "$SRC" && tar --exclude='./build*' -cf - . | tar -xf - -C "$T/src")
(cd "$T/src" && dpkg-buildpackage -b -us -uc >"$T/build.log" 2>&1) || { tail -40 "$T/build.log" >&2; fail "dpkg-buildpackage failed"; }
deb=$(ls "$T"/gpureap_*.deb)
ok "built $(basename "$deb")"
dpkg-deb -x "$deb" "$T/root"
"$T/root/usr/bin/gpureap" --version | grep -q '^gpureap ' || fail "the installed gpureap does not run"
ok "the installed gpureap runs: $("$T/root/usr/bin/gpureap" --version)"
# gpureap-run, 'gpureap run' as a static program: its NVML helper is the gpureap beside it
"$T/root/usr/bin/gpureap-run" --quiet -- true || fail "the installed gpureap-run does not run a command"
ok "the installed gpureap-run runs a command: $("$T/root/usr/bin/gpureap-run" --version)"
for page in gpureap gpureap-reap gpureap-status gpureap-run gpureap-slurm; do
        f=$(ls "$T/root/usr/share/man/man1/$page.1"*)
        man -l "$f" 2>/dev/null | grep -q "^NAME" || fail "man -l $page does not render"
done
ok "man -l renders the installed pages"
[ -f "$T/root/usr/share/bash-completion/completions/gpureap" ] || fail "no bash completion"
[ -f "$T/root/usr/share/zsh/vendor-completions/_gpureap" ] || fail "no zsh completion"
for program in gpureap-status gpureap-run; do
        [ "$(readlink "$T/root/usr/share/bash-completion/completions/$program")" = gpureap ] ||
                fail "no bash completion for $program (a link to gpureap's)"
done
ok "bash and zsh completions installed"
[ -x "$T/root/usr/lib/gpureap/slurm-epilog" ] && [ -x "$T/root/usr/lib/gpureap/slurm-prolog" ] || fail "no Slurm scripts"
grep -qx "exec /usr/bin/gpureap slurm-epilog --drain" "$T/root/usr/lib/gpureap/slurm-epilog" || fail "the Epilog does not run /usr/bin/gpureap: $(cat "$T/root/usr/lib/gpureap/slurm-epilog")"
ok "Slurm prolog and epilog scripts installed"
cmp -s "$T/root/usr/share/gpureap/prometheus/gpureap-rules.yml" "$SRC/contrib/prometheus/gpureap-rules.yml" &&
        cmp -s "$T/root/usr/share/gpureap/grafana/gpureap.json" "$SRC/contrib/grafana/gpureap.json" ||
        fail "the Prometheus rules or the Grafana dashboard are not installed in /usr/share/gpureap"
ok "the Prometheus rules and the Grafana dashboard installed in /usr/share/gpureap"
! dpkg-deb -c "$deb" | grep -E 'libgpureap|/include/|libexec|man8' || fail "the command's package ships the library's files"
# serve's unit: enabled and started at install (Debian's way for a daemon), with the unix socket
# only until /etc/default/gpureap names a listener
unit=$(ls "$T"/root/lib/systemd/system/gpureap-serve.service "$T"/root/usr/lib/systemd/system/gpureap-serve.service 2>/dev/null | head -1)
[ -n "$unit" ] || fail "no gpureap-serve.service in the package"
grep -qx 'EnvironmentFile=-/etc/default/gpureap' "$unit" && grep -qx 'ExecStart=/usr/bin/gpureap serve $GPUREAP_SERVE_OPTS' "$unit" &&
        grep -qx 'Environment="GPUREAP_SERVE_OPTS=--listen none"' "$unit" ||
        fail "the unit does not take serve's options from /etc/default/gpureap, without a listener: $(grep -E '^(Env|Exec)' "$unit")"
mkdir "$T/ctrl" && dpkg-deb -e "$deb" "$T/ctrl"
grep -qx /etc/default/gpureap "$T/ctrl/conffiles" || fail "/etc/default/gpureap is not a conffile: $(cat "$T/ctrl/conffiles" 2>&1)"
grep -q "deb-systemd-helper enable 'gpureap-serve.service'" "$T/ctrl/postinst" &&
        grep -q "deb-systemd-invoke .*'gpureap-serve.service'" "$T/ctrl/postinst" && grep -q '_dh_action=start' "$T/ctrl/postinst" ||
        fail "postinst does not enable and start gpureap-serve.service: $(cat "$T/ctrl/postinst")"
ok "gpureap-serve.service enabled and started at install, its options in the conffile /etc/default/gpureap"
# serve as the unit starts it with the installed file: the unix socket, and no TCP listener
env -i PATH=/usr/bin:/bin bash -c 'cd "$1" && set -a && . root/etc/default/gpureap && exec root/usr/bin/gpureap serve $GPUREAP_SERVE_OPTS --socket "$1/serve.sock"' _ "$T" >"$T/serve.out" 2>&1 &
spid=$!
i=0
until grep -q 'HTTP' "$T/serve.out" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 500 ] || { kill -KILL $spid; fail "serve did not start: $(cat "$T/serve.out")"; }; sleep 0.02
done
inodes=$(find /proc/$spid/fd -lname 'socket:*' -printf '%l\n' 2>/dev/null | sed 's/[^0-9]//g')
listening=$(awk 'NR > 1 && $4 == "0A" { print $10 }' /proc/$spid/net/tcp /proc/$spid/net/tcp6 2>/dev/null)
kill -TERM $spid; wait $spid 2>/dev/null || true
[ -S "$T/serve.sock" ] || [ -n "$inodes" ] || fail "serve has no socket: $(cat "$T/serve.out")"
for i in $inodes; do
        ! grep -qx "$i" <<<"$listening" || fail "serve with the installed options listens on TCP: $(cat "$T/serve.out")"
done
grep -q ", HTTP none," "$T/serve.out" || fail "serve's start line: $(cat "$T/serve.out")"
ok "serve with the installed /etc/default/gpureap: its unix socket, no TCP listener ($(sed 's/.*), //' "$T/serve.out" | cut -c1-60))"
lib=$(ls "$T"/libgpureap0_*.deb) && dev=$(ls "$T"/libgpureap-dev_*.deb) || fail "no libgpureap0 or libgpureap-dev package"
dpkg-deb -x "$lib" "$T/root"
dpkg-deb -x "$dev" "$T/root"
so=$(ls "$T"/root/usr/lib/*/libgpureap.so.0)
[ -x "$T/root/usr/libexec/gpureap-nvml-helper" ] && grep -qaF /usr/libexec/gpureap-nvml-helper "$so" ||
        fail "libgpureap0: no helper at /usr/libexec, or the library names another"
ok "libgpureap0: $(basename "$(readlink "$so")") and its helper in /usr/libexec"
mod=$(ls "$T"/root/usr/lib/*/gpureap/gpureap-kubelet.so 2>/dev/null) && grep -qaF "$(echo "$mod" | sed "s|^$T/root||")" "$so" ||
        fail "libgpureap0: no kubelet module where the library loads it from"
ok "libgpureap0: the kubelet's module ($(echo "$mod" | sed "s|^$T/root||"))"
man -l "$T"/root/usr/share/man/man8/gpureap-nvml-helper.8* 2>/dev/null | grep -q "^NAME" || fail "no man page of the helper in libgpureap0"
ok "libgpureap0: the helper's man page (gpureap-nvml-helper(8))"
pc=$(ls "$T"/root/usr/lib/*/pkgconfig/gpureap.pc)
grep -qx 'prefix=/usr' "$pc" || fail "gpureap.pc: $(cat "$pc")"
# shellcheck disable=SC2046
cc -Wall -Werror -o "$T/exporter" "$T/root/usr/share/doc/libgpureap-dev/examples/exporter.c" \
        $(PKG_CONFIG_LIBDIR=$(dirname "$pc") pkg-config --define-variable=prefix="$T/root/usr" --cflags --libs gpureap) ||
        fail "the packaged example does not build against libgpureap-dev"
ok "libgpureap-dev: the headers, gpureap.pc and the example, which builds with them"
TMPDIR=$T lintian -I --no-tag-display-limit "$deb" "$lib" "$dev" >"$T/lintian" 2>&1 || true # its scratch dirs in ours: removed with it
if grep -q '^E:' "$T/lintian"; then
        cat "$T/lintian" >&2
        fail "lintian reports errors"
fi
# bindnow and relro as the dynamic section says, in every ELF file of the three packages
for f in $(find "$T/root" -type f \( -perm -u+x -o -name '*.so*' \)); do
        head -c4 "$f" | grep -q ELF || continue
        readelf -d "$f" | grep -qE 'FLAGS.*\bNOW\b|BIND_NOW' && readelf -lW "$f" | grep -q GNU_RELRO ||
                fail "$(basename "$f") is linked without bindnow or relro: $(readelf -d "$f" | grep FLAGS)"
done
ok "every ELF file of the packages is linked with bindnow and relro (readelf)"
if grep -E 'hardening-no-(bindnow|relro|pie|fortify)|no-manual-page' "$T/lintian"; then
        fail "lintian: a binary without full hardening, or without its man page"
fi
ok "lintian: no error ($(grep -c '^W:' "$T/lintian" || true) warnings), every binary hardened (bindnow) and with its man page"
echo "1..$n"
