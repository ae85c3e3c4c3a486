/* The NVML helper: a separate program that does the driver work which may block forever. The
 * caller starts it with posix_spawn (never a bare fork: a library that forks and then calls
 * dlopen is not safe in a threaded program) and hands it two descriptors: fd 3, a memfd mapped
 * shared by both, which starts with a header saying what to do; fd 4, a pipe on which it sends
 * one byte when its work is done. The caller waits until a deadline and abandons it then
 * (SIGKILL; if the driver still holds it, it is left behind rather than waited for).
 * Internal to lib/gpu; the layouts below are the contract between the library and the helper
 * program, which is built from the same sources (GR_HELPER_ABI says when they differ). */
#ifndef GPUREAP_GPU_HELPER_H
#define GPUREAP_GPU_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpureap/gpu.h"

#define GR_HELPER_MAGIC 0x67726870u /* "grhp" */
#define GR_HELPER_ABI 4u            /* bump on any change of the layouts below */
#define GR_HELPER_SHM_FD 3
#define GR_HELPER_DONE_FD 4
#define GR_HELPER_LIBRARY_FD 5 /* the NVML library the caller opened and checked, when it did */
enum { GR_LIBRARY_BY_NAME = 0, GR_LIBRARY_BY_FD = 1, GR_LIBRARY_MISSING = 2 };
/* The exec and start of the helper are not the driver's time: they get this long, however
 * short --nvml-timeout is */
#define GR_HELPER_START_MS 10000

enum gr_helper_kind {
        GR_HELPER_QUERY = 1,
        GR_HELPER_DRAIN = 2,
};

/* The most threads the helper reads GPUs with at once (gr_gpu_options.nvml_threads) */
#define GR_NVML_THREADS_MAX 16

/* What one thread of the helper is doing, for the caller's deadline: the NVML call it is in,
 * since when, and for which GPU */
struct gr_nvml_progress {
        char call[64];
        uint64_t started_us;      /* CLOCK_MONOTONIC microseconds; 0 before the first call */
        int32_t gpu;              /* the GPU the call is about; -1: none (nvmlInit, ...) */
        uint32_t finished;        /* a GPU thread's slot: the thread has done its last call */
};

struct gr_helper_header {
        uint32_t magic, abi, kind;
        uint64_t size;            /* bytes of the whole layout of this kind */
        int32_t parent;           /* the caller: the helper leaves at once if it is not its parent */
        char library[256];        /* the NVML to load (as named, for the messages) */
        uint32_t library_by_fd;   /* GR_LIBRARY_BY_FD: load it through GR_HELPER_LIBRARY_FD, the file
                                     the caller checked; GR_LIBRARY_MISSING: it was not there (never
                                     load it by name then: someone may have put it there since) */
        uint32_t threads_max;     /* GPUs read at once, 1..GR_NVML_THREADS_MAX (0: the most) */
        /* written by the helper: its main thread's call; while the GPU threads run (n_threads
         * of them, else 0) their slots are what the caller judges, not the main thread's */
        struct gr_nvml_progress progress;
        uint32_t n_threads;
        struct gr_nvml_progress threads[GR_NVML_THREADS_MAX];
};

struct gr_query_shared {
        struct gr_helper_header hdr;
        gr_gpu_report rep;
        gr_gpu gpus[GR_GPUS_MAX];
        gr_gpu_proc procs[GR_GPUS_MAX * GR_GPU_PROCS_MAX];
};

struct gr_drain_shared {
        struct gr_helper_header hdr;
        int ready, armed;
        int status;               /* gr_gpu_status */
        char error[256];
        uint64_t targets[GR_GPUS_MAX];
        uint64_t used[GR_GPUS_MAX];
        uint64_t drained_at_us;
};

struct gr_helper {
        pid_t pid;
        int pipe_rd;
        void *shm;
        size_t shm_size;
        uint64_t started_us;      /* when it was spawned */
};

/* The executable to run: the option, else the context's, else the installed one */
const char *gr_helper_path(const gr_gpu_options *opts);
/* The NVML library to load: its name, and, when the caller named one (gr_gpu_options.library,
 * gr_context_set_nvml_library), the file opened after the path was found trusted (gr_open_trusted),
 * which is what the helper loads */
struct gr_nvml_lib {
        char name[256];
        char origin[64];          /* who named it, for the messages ("GPUREAP_NVML_LIBRARY") */
        int fd;                   /* -1: loaded by name (the loader's search) */
        bool missing;             /* the caller named a file that is not there: nothing loads */
        char why[256];            /* why it was refused */
};
/* Choose it: 0, or -EPERM (why says what is not trusted: a bare name for root, a directory or
 * file another user may change). Release with gr_nvml_lib_done. */
int gr_nvml_library(const gr_gpu_options *opts, struct gr_nvml_lib *ret);
void gr_nvml_lib_done(struct gr_nvml_lib *l);
/* Spawn the helper for kind with a zeroed shared layout of shm_size bytes whose header names
 * library and the threads it may use (opts->nvml_threads); -errno when it could not be started
 * (ENOENT: no helper at that path) */
int gr_helper_start(struct gr_helper *h, const char *exe, enum gr_helper_kind kind, size_t shm_size,
                    const struct gr_nvml_lib *library, const gr_gpu_options *opts);
/* 1: done, 0: the deadline passed (deadline_ms, monotonic; UINT64_MAX none) or, with stall_ms,
 * the helper has been in one call that long; -1: the helper ended without finishing. An answer
 * already in the pipe counts, however late the caller comes to look. */
int gr_helper_wait(struct gr_helper *h, uint64_t deadline_ms, uint64_t stall_ms);
/* The call the helper has been in longest (or was in when it stopped), "start" before its
 * first; the GPU it was about in *ret_gpu (-1: none) */
void gr_helper_current_call(const struct gr_helper *h, char *buf, size_t size, int *ret_gpu);
/* Stop it: a helper that finished is left to exit on its own (reaped later without blocking);
 * one that did not is killed. Returns false when a killed helper would not die (stuck in the
 * driver) and was left behind. Unmaps the shared memory. */
bool gr_helper_stop(struct gr_helper *h, bool finished);

/* The helper's side (helper-main.c) */
void gr_helper_done(int done_fd);
void gr_nvml_read(struct gr_query_shared *sh);
void gr_nvml_watch_drain(struct gr_drain_shared *sh, void (*done)(int), int done_fd);

#endif
