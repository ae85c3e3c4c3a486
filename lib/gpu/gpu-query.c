/* Reading the driver in a helper process (helper.h) under a deadline: a wedged driver gives a
 * clear error naming the call that hung, never a hang of gpureap. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/helper.h"
#include "gpureap/basic.h"
#include "gpureap/gpu.h"

struct shared {
        char current_call[64];
        gr_gpu_report rep;
        gr_gpu gpus[GR_GPUS_MAX];
        gr_gpu_proc procs[GR_GPUS_MAX * GR_GPU_PROCS_MAX];
};

struct gr_gpu_query {
        struct gr_helper h;
        uint64_t started_ms, deadline_ms, timeout_ms;
        char library[256];
};

const char *gr_ctx_kind_name(gr_ctx_kind k)
{
        switch (k) {
        case GR_CTX_COMPUTE: return "compute";
        case GR_CTX_GRAPHICS: return "graphics";
        case GR_CTX_MPS: return "mps";
        }
        return "unknown";
}

static const char *default_library(void)
{
        const char *e = getenv("GPUREAP_NVML_LIBRARY");
        return e && *e ? e : "libnvidia-ml.so.1";
}

static void query_work(void *shm, const void *arg, int done_fd)
{
        struct shared *sh = shm;
        gr_nvml_read(arg, &sh->rep, sh->gpus, sh->procs, sh->current_call, sizeof(sh->current_call));
        gr_helper_done(done_fd);
}

int gr_gpu_query_start(const gr_gpu_options *opts, gr_gpu_query **ret, pid_t *ret_helper)
{
        gr_gpu_query *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        gr_strlcpy(q->library, opts && opts->library ? opts->library : default_library(),
                   sizeof(q->library));
        q->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 5000;
        q->started_ms = gr_now_ms();
        q->deadline_ms = q->started_ms + q->timeout_ms;
        int r = gr_helper_start(&q->h, sizeof(struct shared), query_work, q->library);
        if (r < 0) {
                free(q);
                return r;
        }
        *ret = q;
        if (ret_helper)
                *ret_helper = q->h.pid;
        return 0;
}

static int copy_report(const struct shared *sh, gr_gpu_report **ret)
{
        gr_gpu_report *rep = calloc(1, sizeof(*rep));
        if (!rep)
                return -ENOMEM;
        *rep = sh->rep;
        rep->gpus = NULL;
        if (rep->n_gpus > GR_GPUS_MAX)
                rep->n_gpus = GR_GPUS_MAX;
        if (rep->n_gpus > 0) {
                rep->gpus = calloc(rep->n_gpus, sizeof(gr_gpu));
                if (!rep->gpus) {
                        free(rep);
                        return -ENOMEM;
                }
        }
        for (unsigned i = 0; i < rep->n_gpus; i++) {
                gr_gpu *g = &rep->gpus[i];
                *g = sh->gpus[i];
                g->error[sizeof(g->error) - 1] = '\0';
                g->procs = NULL;
                if (g->n_procs > GR_GPU_PROCS_MAX)
                        g->n_procs = GR_GPU_PROCS_MAX;
                if (g->n_procs > 0) {
                        g->procs = calloc(g->n_procs, sizeof(gr_gpu_proc));
                        if (!g->procs) {
                                gr_gpu_report_free(rep);
                                return -ENOMEM;
                        }
                        memcpy(g->procs, sh->procs + (size_t)i * GR_GPU_PROCS_MAX,
                               g->n_procs * sizeof(gr_gpu_proc));
                }
        }
        *ret = rep;
        return 0;
}

int gr_gpu_query_finish(gr_gpu_query *q, gr_gpu_report **ret)
{
        int w = gr_helper_wait(&q->h, q->deadline_ms);
        int status = 0;
        gr_gpu_report *rep = NULL;
        const struct shared *sh = q->h.shm;
        if (w == 1) {
                status = copy_report(sh, &rep);
                gr_helper_stop(&q->h, true);
        } else {
                char call[sizeof(sh->current_call)];
                memcpy(call, sh->current_call, sizeof(call));
                call[sizeof(call) - 1] = '\0';
                bool reaped = gr_helper_stop(&q->h, false);
                rep = calloc(1, sizeof(*rep));
                if (!rep) {
                        free(q);
                        return -ENOMEM;
                }
                gr_strlcpy(rep->library, q->library, sizeof(rep->library));
                if (w < 0) {
                        rep->status = GR_GPU_FAILED;
                        snprintf(rep->error, sizeof(rep->error),
                                 "the NVML helper process died during '%s'", call[0] ? call : "start");
                } else {
                        rep->status = GR_GPU_TIMEOUT;
                        gr_strlcpy(rep->stuck_call, call[0] ? call : "start", sizeof(rep->stuck_call));
                        snprintf(rep->error, sizeof(rep->error),
                                 "the driver did not answer '%s' within %llu ms%s",
                                 rep->stuck_call, (unsigned long long)q->timeout_ms,
                                 reaped ? "" : " (the helper is stuck in the driver and was left behind)");
                }
        }
        if (rep)
                rep->elapsed_ms = gr_now_ms() - q->started_ms;
        free(q);
        if (status < 0)
                return status;
        *ret = rep;
        return 0;
}

void gr_gpu_report_free(gr_gpu_report *r)
{
        if (!r)
                return;
        for (unsigned i = 0; i < r->n_gpus; i++)
                free(r->gpus[i].procs);
        free(r->gpus);
        free(r);
}
