#!/bin/bash
# GPUREAP_NVML_LIBRARY naming a file that is missing from a sticky directory (or a root link to
# such a path): the check saw "missing" and the helper then dlopen()ed the name, which another
# user had created meanwhile, as root (found by the fourth adversarial review: root loaded uid
# 4242's library at the 2nd try). Now a path that was missing is never loaded by name. uid 4242
# links and unlinks its library there every millisecond while root runs status; a library that
# root loads writes its euid to a file (its constructor). Bounded: 150 runs.
. "$TESTLIB"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP the attack is on root"; exit 77; }
command -v cc >/dev/null || { echo "1..0 # SKIP no C compiler for the attacker's library"; exit 77; }
chmod 0755 "$T"; mkdir -m 1777 "$T/pub"; mkdir "$T/att"
cat >"$T/evil.c" <<E
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void) { FILE *f = fopen("$T/loaded", "a"); if (f) { fprintf(f, "euid=%d\n", (int)geteuid()); fclose(f); } }
E
cat >"$T/flip.c" <<'E'
#include <time.h>
#include <unistd.h>
int main(int c, char **v) { struct timespec a = { 0, 1000000 }; for (int i = 0; i < 200000; i++) { link(v[1], v[2]); nanosleep(&a, 0); unlink(v[2]); nanosleep(&a, 0); } return 0; }
E
cc -shared -fPIC -o "$T/att/evil.so" "$T/evil.c" && cc -O2 -o "$T/att/flip" "$T/flip.c" || fail "cannot build the attacker"
chown -R 4242:4242 "$T/att"
chmod 0666 "$T/ctx" 2>/dev/null || true
touch "$T/loaded.none"
setpriv --reuid 4242 --regid 4242 --clear-groups "$T/att/flip" "$T/att/evil.so" "$T/pub/lib.so" &
LAUNCHED="$LAUNCHED $!"
ln -s "$T/pub/lib.so" "$T/rootlink"
for i in $(seq 1 150); do
        lib=$T/pub/lib.so
        [ $((i % 2)) -eq 0 ] && lib=$T/rootlink
        GPUREAP_NVML_LIBRARY=$lib "$GPUREAP" status >/dev/null 2>&1 || true
        [ ! -s "$T/loaded" ] || fail "root loaded uid 4242's library at run $i ($lib): $(cat "$T/loaded")"
done
ok "150 runs of root's status against a library that uid 4242 flips in a sticky directory: none loaded it"
GPUREAP_NVML_LIBRARY=$T/pub/none.so gr status --json
jqok '.driver.status == "no_library" or .driver.status == "failed"' "a missing library is reported, not loaded"
has err "cannot load '.*none.so'" "and named"
done_testing
