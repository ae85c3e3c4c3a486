/* gpureap-run: 'gpureap run' as a program of its own, linked static-pie where a static libc can
 * be linked (src/meson.build). gpureap is a dynamic program: its loader, libc's mapping and
 * relocations cost a run about 0.4 ms before main(), a quarter of what tini takes for a whole
 * 'tini -s -- true' (issue 25; docs/benchmarks.md). The run is the same code, cmd-run.c over the
 * library, with three differences, each where a static program cannot do what gpureap does:
 * - the NVML helper is the gpureap beside it (gpureap is its own; this program loads nothing);
 * - the holder scan is the /proc scan (the BPF scan's libelf cannot be linked into a static-pie);
 * - no kubelet module is loaded (a shared object), and user names come from /etc/passwd alone
 *   (users-file.c: glibc's other NSS modules are shared objects too). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

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
        static char helper[PATH_MAX];
        if (gpureap_beside(helper, sizeof(helper)) == 0)
                gr_context_set_helper(NULL, helper);
        program_start();
        if (argc == 2 && strcmp(argv[1], "--version") == 0) {
                printf("gpureap-run %s\n", GPUREAP_VERSION);
                return output_checked(EXIT_CLEAN, OUTPUT_READ);
        }
        argv[0] = (char *)"run";
        return output_checked(cmd_run(argc, argv), OUTPUT_OWN);
}
