/* Reading the driver in a helper process (helper.h) under a deadline: a wedged driver gives a
 * clear error naming the call that hung, never a hang of gpureap. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu/helper.h"
#include "gpureap/basic.h"
#include "gpureap/gpu.h"
#include "basic/names.h"

struct gr_gpu_query {
        struct gr_helper h;
        int start_error;          /* -errno when the helper could not be started */
        bool library_refused;     /* the caller named a library that is not trusted */
        char library_why[256];
        char library_origin[64];  /* who named it */
        char helper[256];
        uint64_t started_ms, timeout_ms, deadline_ms;
        char library[256];
};

GR_NAME_TABLE(gr_ctx_kind_name, gr_ctx_kind, GR_CTX_MPS, "unknown",
              [GR_CTX_COMPUTE] = "compute", [GR_CTX_GRAPHICS] = "graphics", [GR_CTX_MPS] = "mps")

int gr_gpu_query_start(const gr_gpu_options *opts, gr_gpu_query **ret, pid_t *ret_helper)
{
        gr_gpu_query *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        struct gr_nvml_lib nl;
        int lib = gr_nvml_library(opts, &nl);
        gr_strlcpy(q->library, nl.name, sizeof(q->library));
        gr_strlcpy(q->library_why, nl.why, sizeof(q->library_why));
        gr_strlcpy(q->library_origin, nl.origin, sizeof(q->library_origin));
        gr_strlcpy(q->helper, gr_helper_path(opts), sizeof(q->helper));
        q->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 5000;
        q->deadline_ms = opts ? opts->deadline_ms : 0;
        q->started_ms = gr_now_ms();
        int r = lib < 0 ? lib : gr_helper_start(&q->h, q->helper, GR_HELPER_QUERY, sizeof(struct gr_query_shared), &nl,
                                                  opts);
        gr_nvml_lib_done(&nl);
        q->library_refused = lib == -EPERM;
        if (r == -ENOMEM) {
                free(q);
                return r;
        }
        /* no helper is a failure of the driver part only: the /proc part still runs */
        q->start_error = r;
        *ret = q;
        if (ret_helper)
                *ret_helper = q->h.pid;
        return 0;
}

static void sanitize_report(gr_gpu_report *rep)
{
        /* what the helper wrote came from the driver: names, versions and its error strings */
        char *texts[] = { rep->error, rep->stuck_call, rep->library, rep->driver_version, rep->nvml_version };
        size_t sizes[] = { sizeof(rep->error), sizeof(rep->stuck_call), sizeof(rep->library),
                           sizeof(rep->driver_version), sizeof(rep->nvml_version) };
        for (size_t i = 0; i < GR_ELEMENTSOF(texts); i++) {
                texts[i][sizes[i] - 1] = '\0';
                gr_text_sanitize(texts[i]);
        }
}

static void sanitize_gpu(gr_gpu *g)
{
        char *texts[] = { g->uuid, g->pci_bus_id, g->name, g->error };
        size_t sizes[] = { sizeof(g->uuid), sizeof(g->pci_bus_id), sizeof(g->name), sizeof(g->error) };
        for (size_t i = 0; i < GR_ELEMENTSOF(texts); i++) {
                texts[i][sizes[i] - 1] = '\0';
                gr_text_sanitize(texts[i]);
        }
}

static int copy_report(const struct gr_query_shared *sh, gr_gpu_report **ret)
{
        gr_gpu_report *rep = calloc(1, sizeof(*rep));
        if (!rep)
                return -ENOMEM;
        *rep = sh->rep;
        rep->gpus = NULL;
        sanitize_report(rep);
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
                sanitize_gpu(g);
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
                gr_gpu_check_memory(g);
        }
        *ret = rep;
        return 0;
}

int gr_gpu_query_finish(gr_gpu_query *q, gr_gpu_report **ret)
{
        int w = q->start_error < 0 ? -2
                : gr_helper_wait(&q->h, q->deadline_ms ? q->deadline_ms : UINT64_MAX, q->timeout_ms);
        int status = 0;
        gr_gpu_report *rep = NULL;
        if (w == 1) {
                const struct gr_query_shared *sh = q->h.shm;
                /* the driver's time: from the spawn to its last call ("done") */
                uint64_t done_us = __atomic_load_n(&sh->hdr.progress.started_us, __ATOMIC_ACQUIRE);
                status = copy_report(sh, &rep);
                if (rep)
                        rep->elapsed_ms = done_us > q->h.started_us ? (done_us - q->h.started_us) / 1000 : 0;
                gr_helper_stop(&q->h, true);
        } else {
                char call[64], on_gpu[24] = "";
                int gpu;
                gr_helper_current_call(&q->h, call, sizeof(call), &gpu);
                if (gpu >= 0)
                        snprintf(on_gpu, sizeof(on_gpu), " on GPU %d", gpu);
                /* the caller's whole deadline, or the one call's own time */
                uint64_t now = gr_now_ms();
                bool total = q->deadline_ms && now >= q->deadline_ms;
                bool reaped = w == -2 || gr_helper_stop(&q->h, false);
                rep = calloc(1, sizeof(*rep));
                if (!rep) {
                        free(q);
                        return -ENOMEM;
                }
                gr_strlcpy(rep->library, q->library, sizeof(rep->library));
                if (w == -2 && q->library_refused) {
                        rep->status = GR_GPU_FAILED;
                        snprintf(rep->error, sizeof(rep->error),
                                 "refusing %s '%s'%s: %s (give a file that only root%s can change, in directories that only root%s can change)",
                                 q->library_origin, q->library, geteuid() == 0 ? " as root" : "", q->library_why,
                                 geteuid() == 0 ? "" : " or you", geteuid() == 0 ? "" : " or you");
                } else if (w == -2) {
                        rep->status = GR_GPU_FAILED;
                        snprintf(rep->error, sizeof(rep->error), "cannot start the NVML helper '%s': %s",
                                 q->helper, strerror(-q->start_error));
                } else if (w < 0 && strcmp(call, "start") == 0) {
                        /* before its first call: it refused the layouts (another build's helper:
                         * gpureap-run's is the gpureap beside it, which may have been upgraded
                         * since the run started), or it is no helper at all */
                        rep->status = GR_GPU_FAILED;
                        snprintf(rep->error, sizeof(rep->error),
                                 "the NVML helper '%s' ended before its first call: not this build's helper "
                                 "(another version of gpureap?)", q->helper);
                } else if (w < 0) {
                        rep->status = GR_GPU_FAILED;
                        snprintf(rep->error, sizeof(rep->error),
                                 "the NVML helper process died during '%s'%s", call, on_gpu);
                } else if (strcmp(call, "start") == 0) {
                        rep->status = GR_GPU_FAILED;
                        if (total)
                                snprintf(rep->error, sizeof(rep->error),
                                         "the NVML helper '%s' had not started by the deadline (%llu ms)", q->helper,
                                         (unsigned long long)(now - q->started_ms));
                        else
                                snprintf(rep->error, sizeof(rep->error),
                                         "the NVML helper '%s' did not start within %d s", q->helper,
                                         GR_HELPER_START_MS / 1000);
                } else {
                        rep->status = GR_GPU_TIMEOUT;
                        rep->stuck_gpu = gpu;
                        gr_strlcpy(rep->stuck_call, call, sizeof(rep->stuck_call));
                        snprintf(rep->error, sizeof(rep->error),
                                 "the driver did not answer '%s' within %llu ms%s%s%s",
                                 rep->stuck_call,
                                 (unsigned long long)(total ? now - q->started_ms : q->timeout_ms),
                                 total ? " (the deadline)" : "", on_gpu,
                                 reaped ? "" : " (the helper is stuck in the driver and was left behind)");
                }
                sanitize_report(rep);
                rep->elapsed_ms = gr_now_ms() - q->started_ms;
        }
        free(q);
        if (status < 0)
                return status;
        *ret = rep;
        return 0;
}

bool gr_gpu_check_memory(gr_gpu *g)
{
        if (g->mem_api == 0)
                return true; /* nothing was read: unknown, which is not inconsistent */
        uint64_t total = g->mem_total;
        uint64_t parts[3] = { g->mem_used, g->mem_free, g->mem_api == 2 ? g->mem_reserved : 0 };
        static const char *const names[3] = { "used", "free", "reserved" };
        char a[32], b[32], why[128] = "";
        uint64_t sum = 0;
        bool overflow = false;
        for (int i = 0; i < 3; i++)
                overflow |= __builtin_add_overflow(sum, parts[i], &sum);
        if (total == GR_UNKNOWN_U64) {
                snprintf(why, sizeof(why), "no total number");
        } else if (total == 0) {
                snprintf(why, sizeof(why), "a total of 0 B");
        } else {
                for (int i = 0; i < 3 && !why[0]; i++)
                        if (parts[i] == GR_UNKNOWN_U64) /* a recording without it */
                                snprintf(why, sizeof(why), "no %s number", names[i]);
                        else if (parts[i] > total)
                                snprintf(why, sizeof(why), "%s %s of %s total", gr_format_bytes(parts[i], a, sizeof(a)),
                                         names[i], gr_format_bytes(total, b, sizeof(b)));
                /* the parts are one report of the driver and add up to the total exactly on an
                 * H200; 1 MiB of slack keeps a driver that rounds from being called wrong */
                if (!why[0] && (overflow || sum > total + (1ULL << 20)))
                        snprintf(why, sizeof(why), "used, free and reserved add up to %s, more than the %s total",
                                 overflow ? "more than 16 EiB" : gr_format_bytes(sum, a, sizeof(a)),
                                 gr_format_bytes(total, b, sizeof(b)));
        }
        if (!why[0])
                return true;
        g->mem_inconsistent = true;
        char text[200];
        snprintf(text, sizeof(text), "inconsistent memory numbers from the driver: %s", why);
        size_t n = strlen(g->error);
        if (!strstr(g->error, text)) /* a replayed report carries it already */
                snprintf(g->error + n, sizeof(g->error) - n, "%s%s", n ? "; " : "", text);
        return false;
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
