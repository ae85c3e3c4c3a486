/* gpureap-nvml-helper: the NVML helper program for programs that link libgpureap (gpu.h,
 * gr_context_set_helper). The gpureap command does not need it: it is its own helper. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpureap/gpu.h"

int main(int argc, char **argv)
{
        int r = gr_nvml_helper_main(argc, argv);
        fprintf(stderr, "gpureap-nvml-helper: %s\n",
                r == -EPROTO ? "started by a libgpureap of another build; install the helper of the same build"
                             : "this is the NVML helper of libgpureap, started by the library, not by hand");
        return 2;
}
