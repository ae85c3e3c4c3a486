/* A program that embeds libgpureap: each GPU's state, and what holds it that should not.
 * Built outside the tree (docs/architecture.md, "Linking the library"):
 *   cc -o exporter exporter.c $(pkg-config --cflags --libs gpureap)
 *   ./exporter [-l NVML_LIBRARY] [-x NVML_HELPER] [-d DEVICE_DIR]
 * Exit status: 0 every GPU clean, 1 not, 3 the driver could not be read. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gpureap/basic.h>
#include <gpureap/diagnose.h>

int main(int argc, char **argv)
{
        /* the settings of this program's calls: a context of its own */
        gr_context *ctx = NULL;
        if (gr_context_new(&ctx) < 0)
                return 3;
        int c;
        while ((c = getopt(argc, argv, "l:x:d:")) != -1) {
                if (c == 'l')
                        gr_context_set_nvml_library(ctx, optarg, "option -l"); /* checked as any library named */
                else if (c == 'x')
                        gr_context_set_helper(ctx, optarg); /* else the installed gpureap-nvml-helper */
                else if (c == 'd')
                        gr_context_set_dev_dir(ctx, optarg); /* whose files are held: /dev unless set */
                else
                        return 2;
        }
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        int r = gr_snapshot_take(&(gr_snapshot_options){ .ctx = ctx, .gpu.timeout_ms = 5000 }, &s);
        if (r < 0 || (r = gr_diagnose(s, getuid(), &d)) < 0) {
                fprintf(stderr, "exporter: %s\n", strerror(-r));
                gr_snapshot_free(s);
                gr_context_free(ctx);
                return 3;
        }
        int code = 0;
        if (s->gpu->status != GR_GPU_OK) {
                printf("driver: %s\n", s->gpu->error);
                code = 3;
        }
        for (unsigned i = 0; i < s->gpu->n_gpus && i < d->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                char used[32], total[32];
                printf("gpu %u %s %s used %s of %s\n", g->index, g->uuid, gr_gpu_state_name(d->gpus[i].state),
                       gr_format_bytes(g->mem_used, used, sizeof(used)),
                       gr_format_bytes(g->mem_total, total, sizeof(total)));
                if (d->gpus[i].state != GR_GPU_CLEAN && code == 0)
                        code = 1;
                for (size_t k = 0; k < d->n_findings; k++) {
                        const gr_finding *f = &d->findings[k];
                        if (!f->leftover || !gr_finding_on_gpu(f, i))
                                continue;
                        printf("  leftover %s [%s] pids", gr_finding_kind_name(f->kind),
                               gr_confidence_name(f->confidence));
                        for (unsigned p = 0; p < f->n_pids; p++)
                                printf("%s%d", p ? "," : " ", (int)f->pids[p]);
                        /* facts: the next step, and the first holder's decisive evidence */
                        const gr_holder_verdict *v = f->n_pids ? gr_diagnosis_holder(d, f->pids[0]) : NULL;
                        printf("%s, next %s: %s\n", f->n_pids ? "" : " none", gr_action_kind_name(f->action.kind),
                               v && v->reason[0] ? v->reason : "-");
                }
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        gr_context_free(ctx);
        return code;
}
