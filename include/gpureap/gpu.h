/* gpureap gpu layer: what the driver says about each GPU, read through NVML in a helper
 * process that the caller can abandon at a deadline, so a wedged driver never hangs gpureap. */
#ifndef GPUREAP_GPU_H
#define GPUREAP_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpureap/context.h"

#pragma GCC visibility push(default)

#define GR_GPUS_MAX 64
#define GR_GPU_PROCS_MAX 1024    /* entries kept per list (compute, graphics, MPS) per GPU */
#define GR_GPU_TEXT_MAX 96

typedef enum gr_ctx_kind {
        GR_CTX_COMPUTE,
        GR_CTX_GRAPHICS,
        GR_CTX_MPS,
} gr_ctx_kind;

const char *gr_ctx_kind_name(gr_ctx_kind k);

typedef struct gr_gpu_proc {
        uint32_t pid;            /* host PID as NVML reports it */
        uint32_t kind;           /* gr_ctx_kind */
        uint64_t used_bytes;     /* GR_UNKNOWN_U64 when NVML says "not available" */
} gr_gpu_proc;

typedef struct gr_gpu {
        unsigned index;
        int minor;                             /* -1 unknown */
        char uuid[GR_GPU_TEXT_MAX];            /* "" unknown */
        char pci_bus_id[GR_GPU_TEXT_MAX];
        char name[GR_GPU_TEXT_MAX];
        /* bytes; GR_UNKNOWN_U64 when unknown. mem_api: 2 for the _v2 call (reserved reported
         * apart from used), 1 for the v1 call (reserved counted in used), 0 when both failed */
        uint64_t mem_total, mem_reserved, mem_used, mem_free;
        int mem_api;
        bool mem_inconsistent;                 /* the numbers cannot all be true (see
                                                  gr_gpu_check_memory): the state is unknown */
        unsigned proc_stride;                  /* bytes per entry the driver wrote (_v3: 24 or 32) */
        bool procs_ok;                         /* the process lists were read */
        bool procs_truncated;
        unsigned n_procs;
        gr_gpu_proc *procs;
        char error[160];                       /* what failed for this GPU, "" when nothing */
} gr_gpu;

typedef enum gr_gpu_status {
        GR_GPU_OK = 0,
        GR_GPU_NO_LIBRARY,   /* libnvidia-ml could not be loaded: no driver here */
        GR_GPU_INIT_FAILED,  /* nvmlInit failed (driver not loaded, no permission, ...) */
        GR_GPU_FAILED,       /* a call needed for the list of GPUs failed, or the helper died */
        GR_GPU_TIMEOUT,      /* the driver did not answer within the deadline */
} gr_gpu_status;

typedef struct gr_gpu_report {
        gr_gpu_status status;
        char error[256];                       /* one line saying what went wrong */
        char stuck_call[64];                   /* with GR_GPU_TIMEOUT: the NVML call that hung */
        int stuck_gpu;                         /* with GR_GPU_TIMEOUT: the index of the GPU that
                                                  call was about, -1 when none (nvmlInit) or not
                                                  known (a recording) */
        char library[256];                     /* what was loaded */
        char driver_version[GR_GPU_TEXT_MAX];
        char nvml_version[GR_GPU_TEXT_MAX];
        unsigned n_gpus;
        gr_gpu *gpus;
        uint64_t elapsed_ms;
} gr_gpu_report;

typedef struct gr_gpu_options {
        gr_context *ctx;          /* NULL: gr_context_default() */
        const char *library;      /* the NVML to load; NULL: the context's, else
                                     libnvidia-ml.so.1 by the loader's search. A library named
                                     here or there must pass gr_open_trusted() for this euid
                                     (as root: an absolute path) or nothing is loaded */
        uint64_t timeout_ms;      /* how long one NVML call may take, in the driver's own time
                                     (the caller's other work meanwhile does not count); 5000 */
        uint64_t deadline_ms;     /* the whole read's deadline (monotonic, gr_now_ms()): the
                                     helper is abandoned then, however long each call took, so
                                     that a command can keep a total bound (gpureap check under
                                     node-problem-detector's timeout); 0: none */
        const char *helper;       /* the helper program; NULL: the context's (below) */
        unsigned nvml_threads;    /* the most GPUs the helper reads at once, each in a thread of
                                     its own (attaching a GPU, its first handle, took 6.6 ms on
                                     an H200); 0: 16, also the most allowed */
} gr_gpu_options;

typedef struct gr_gpu_query gr_gpu_query;

/* Start reading the driver in a helper process; the caller may do other work (the /proc scan)
 * before it collects the result with gr_gpu_query_finish(). An answer that came meanwhile is
 * taken however late the caller looks; a call the helper is still in fails the query once it
 * has taken timeout_ms. Call both from the same thread: the helper is killed when the thread
 * that started it ends (PR_SET_PDEATHSIG). The helper's PID is given so a scan can leave it out
 * (0 when the helper could not be started: finish then reports why). */
int gr_gpu_query_start(const gr_gpu_options *opts, gr_gpu_query **ret, pid_t *ret_helper);
int gr_gpu_query_finish(gr_gpu_query *q, gr_gpu_report **ret);
void gr_gpu_report_free(gr_gpu_report *r);

/* The drain watch: a helper that keeps NVML open and polls the memory of the watched GPUs every
 * 0.2 ms until each is at or below its target, so the wait for the driver's teardown costs no
 * more than the teardown. Start it early (nvmlInit takes ~10 ms), arm it when the targets are
 * known, signal, then wait. */
typedef struct gr_drain gr_drain;
int gr_drain_start(const gr_gpu_options *opts, gr_drain **ret);
/* targets[i]: used memory (as the report gives it for GPU i) at or below which GPU i counts as
 * drained; GR_UNKNOWN_U64 leaves it unwatched. Waits for the watcher to be ready first (until
 * deadline_ms); false when it failed (then poll snapshots instead) */
bool gr_drain_arm(gr_drain *d, const uint64_t *targets, unsigned n, uint64_t deadline_ms);
/* true when every watched GPU was seen drained before deadline_ms (monotonic); the moment it
 * was (CLOCK_MONOTONIC microseconds) */
bool gr_drain_wait(gr_drain *d, uint64_t deadline_ms, uint64_t *ret_drained_at_us);
void gr_drain_free(gr_drain *d);

/* The helper program. A query or drain watcher runs NVML in a process of its own, started with
 * posix_spawn, so that a program with threads can use this library (a fork followed by dlopen
 * is not safe there) and a driver stuck in state D cannot keep the caller from exiting. Which
 * executable: gr_gpu_options.helper, else the context's (gr_context_set_helper), else the
 * installed gpureap-nvml-helper (GR_HELPER_PATH, libexecdir). The gpureap command names
 * "/proc/self/exe", as it is its own helper. */
/* The main of a helper program: a program is a helper when argv[1] is GR_NVML_HELPER_ARG; it
 * then calls this and exits. Returns only on a bad start (-EINVAL: not started as a helper,
 * -EBADF / -EPROTO: not by a library of the same build). */
#define GR_NVML_HELPER_ARG "--gpureap-nvml-helper"
int gr_nvml_helper_main(int argc, char **argv);

/* Are the driver's memory numbers of g possible (no part above the total, the parts not adding
 * up to more than it)? When not, mem_inconsistent is set and the reason added to g->error:
 * nothing may then be concluded from them. Where a report is read or copied. */
bool gr_gpu_check_memory(gr_gpu *g);

#pragma GCC visibility pop

#endif
