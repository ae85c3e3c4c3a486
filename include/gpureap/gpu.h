/* gpureap gpu layer: what the driver says about each GPU, read through NVML in a helper
 * process that the caller can abandon at a deadline, so a wedged driver never hangs gpureap. */
#ifndef GPUREAP_GPU_H
#define GPUREAP_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
        char library[256];                     /* what was loaded */
        char driver_version[GR_GPU_TEXT_MAX];
        char nvml_version[GR_GPU_TEXT_MAX];
        unsigned n_gpus;
        gr_gpu *gpus;
        uint64_t elapsed_ms;
} gr_gpu_report;

typedef struct gr_gpu_options {
        const char *library;      /* default $GPUREAP_NVML_LIBRARY or libnvidia-ml.so.1 */
        uint64_t timeout_ms;      /* default 5000 */
} gr_gpu_options;

typedef struct gr_gpu_query gr_gpu_query;

/* Start reading the driver in a helper process; the caller may do other work (the /proc scan)
 * before it collects the result with gr_gpu_query_finish(), which waits at most until the
 * deadline that began here. The helper's PID is given so a scan can leave it out. */
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
uint64_t gr_now_us(void);

struct gr_drain_shared {
        char current_call[64];
        int ready, armed;
        int status;               /* gr_gpu_status */
        char error[256];
        uint64_t targets[GR_GPUS_MAX];
        uint64_t used[GR_GPUS_MAX];
        uint64_t drained_at_us;
};
void gr_nvml_watch_drain(const char *library, struct gr_drain_shared *sh, void (*done)(int), int done_fd);

/* Read the driver in this process (the helper's work); exposed for tests and benchmarks. */
void gr_nvml_read(const char *library, gr_gpu_report *rep, gr_gpu *gpus, gr_gpu_proc *procs,
                  volatile char *current_call, size_t current_call_size);

#endif
