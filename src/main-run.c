/* gpureap-run: 'gpureap run' as a program of its own, linked static-pie where a static libc can
 * be linked (src/meson.build). gpureap is a dynamic program: its loader, libc's mapping and
 * relocations cost a run about 0.4 ms before main(), a quarter of what tini takes for a whole
 * 'tini -s -- true' (issue 25; docs/benchmarks.md). The run is the same code, cmd-run.c over the
 * library, with three differences, each where a static program cannot do what gpureap does:
 * - the NVML helper is the gpureap beside it (gpureap is its own; this program loads nothing);
 * - the holder scan is the /proc scan (the BPF scan's libelf cannot be linked into a static-pie);
 * - no kubelet module is loaded (a shared object), and user names come from /etc/passwd alone
 *   (users-file.c: glibc's other NSS modules are shared objects too). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/gpu.h"
#include "gpureap-config.h"
#include "gpureap.h"

int main(int argc, char **argv)
{
        /* the name a run's supervisor is known by: its leaf cgroup's owner, and the tree's
         * supervisor in the look at its processes, are alive when their name is gpureap's
         * (lib/diagnose/lineage.c, lib/act/tree.c); under another name a live run's job would
         * be taken for the leftovers of a dead one */
        prctl(PR_SET_NAME, "gpureap");
        /* the NVML helper, the gpureap beside it: a missing one, or as root one that is not as
         * trusted as this program's own file, is never run (it would run as the caller): exit
         * 125, the command not run (a missing one could be put there later, in /tmp, by anyone);
         * where the directory cannot be told (a deleted file, a memfd), the library's own
         * helper, as for any program that links it (gpureap-nvml-helper in libexec) */
        static char helper[PATH_MAX];
        char why[256];
        int b = gpureap_beside_open(helper, sizeof(helper), why, sizeof(why));
        if (b == -EPERM || b == -ENOENT) {
                error_msg("gpureap-run does not run: the gpureap beside it, its NVML helper, %s%s",
                          b == -ENOENT ? "is missing: " : "is not to be trusted: ", b == -ENOENT ? helper : why);
                return EXIT_RUN_FAILED;
        }
        if (b >= 0) {
                close(b);
                gr_context_set_helper(NULL, helper);
        }
        program_start();
        if (argc == 2 && strcmp(argv[1], "--version") == 0) {
                printf("gpureap-run %s\n", GPUREAP_VERSION);
                return output_checked(EXIT_CLEAN, OUTPUT_READ);
        }
        argv[0] = (char *)"run";
        return output_checked(cmd_run(argc, argv), OUTPUT_OWN);
}
