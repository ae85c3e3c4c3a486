/* Reading NVML in-process. This runs inside the helper process (helper-main.c): anything here
 * may block forever in the driver, and the caller abandons us at its deadline. Every call names
 * itself and its start time in the shared progress first, so the caller can judge the driver by
 * its own time and say which call hung. The GPUs are read by several threads at once (each in
 * a progress slot of its own): NVML is documented thread-safe, and attaching a GPU (its first
 * handle) took 6.6 ms on an H200, 50 ms for 8 one after another. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap/gpu.h"
#include "gpu/helper.h"
#include "gpu/nvml-abi.h"

typedef nvmlReturn_t (*fn_void)(void);
typedef const char *(*fn_errstr)(nvmlReturn_t);
typedef nvmlReturn_t (*fn_count)(unsigned int *);
typedef nvmlReturn_t (*fn_handle)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*fn_text)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*fn_sys_text)(char *, unsigned int);
typedef nvmlReturn_t (*fn_pci)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*fn_uint)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*fn_mem1)(nvmlDevice_t, nvmlMemory_v1_t *);
typedef nvmlReturn_t (*fn_mem2)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*fn_procs)(nvmlDevice_t, unsigned int *, void *);

struct nvml {
        void *dl;
        fn_void init, shutdown;
        fn_errstr errstr;
        fn_count count;
        fn_handle handle;
        fn_text name, uuid;
        fn_sys_text driver_version, nvml_version;
        fn_pci pci;
        fn_uint minor;
        fn_mem1 mem1;
        fn_mem2 mem2;
        /* per context kind: newest first, with the entry size each version writes */
        struct {
                fn_procs fn;
                const char *name;
                unsigned stride;
        } procs[3][3];
        const char *init_name, *count_name, *handle_name, *pci_name;
        /* per thread: a GPU thread works on a copy with its own slot and GPU */
        struct gr_nvml_progress *progress;
        int gpu;                  /* the GPU the calls are about now; -1: none */
};

static void *sym(struct nvml *n, const char *name)
{
        return dlsym(n->dl, name);
}

/* the first of the names that the library exports */
static void *sym_first(struct nvml *n, const char **ret_name, const char *a, const char *b,
                       const char *c)
{
        const char *names[] = { a, b, c };
        for (size_t i = 0; i < GR_ELEMENTSOF(names); i++) {
                if (!names[i])
                        continue;
                void *f = sym(n, names[i]);
                if (f) {
                        if (ret_name)
                                *ret_name = names[i];
                        return f;
                }
        }
        return NULL;
}

/* Name the call and say when it began, so the caller judges the driver by its own time */
static void calling(struct nvml *n, const char *name)
{
        volatile char *c = n->progress->call;
        size_t i = 0;
        for (; name[i] && i + 1 < sizeof(n->progress->call); i++)
                c[i] = name[i];
        c[i] = '\0';
        __atomic_store_n(&n->progress->gpu, n->gpu, __ATOMIC_RELAXED);
        __atomic_store_n(&n->progress->started_us, gr_now_us(), __ATOMIC_RELEASE);
}

/* The work of one GPU, done by one of up to hdr->threads_max threads at once (the main thread
 * is one of them, so a single GPU starts no thread). GPU i's results go to its own place, so
 * the order is the driver's whatever thread did it, and an error stays with its GPU. Every
 * thread started is joined before this returns: a thread stuck in the driver keeps it here,
 * and the caller's deadline, which looks at every thread's call, abandons the whole helper. */
typedef void gpu_work_fn(struct nvml *n, unsigned gpu, void *arg);

struct gpu_pool {
        const struct nvml *n;
        struct gr_helper_header *hdr;
        unsigned count;
        unsigned next;            /* the next GPU to take */
        gpu_work_fn *work;
        void *arg;
};

struct gpu_thread {
        struct gpu_pool *pool;
        unsigned slot;
};

static void slot_stamp(struct gr_nvml_progress *p, const char *what, bool finished)
{
        struct nvml stamp = { .progress = p, .gpu = -1 };
        calling(&stamp, what);
        if (finished)
                __atomic_store_n(&p->finished, 1, __ATOMIC_RELEASE);
}

static void *gpu_thread_run(void *arg)
{
        struct gpu_thread *t = arg;
        struct gpu_pool *pool = t->pool;
        struct nvml n = *pool->n;
        n.progress = &pool->hdr->threads[t->slot];
        for (;;) {
                unsigned i = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED);
                if (i >= pool->count)
                        break;
                n.gpu = (int)i;
                pool->work(&n, i, pool->arg);
        }
        slot_stamp(n.progress, "finished", true);
        return NULL;
}

static void each_gpu(struct nvml *n, struct gr_helper_header *hdr, unsigned count, gpu_work_fn *work, void *arg)
{
        unsigned k = hdr->threads_max < count ? hdr->threads_max : count;
        if (k > GR_NVML_THREADS_MAX)
                k = GR_NVML_THREADS_MAX;
        if (k == 0)
                return;
        struct gpu_pool pool = { .n = n, .hdr = hdr, .count = count, .work = work, .arg = arg };
        struct gpu_thread t[GR_NVML_THREADS_MAX];
        pthread_t tid[GR_NVML_THREADS_MAX];
        bool started[GR_NVML_THREADS_MAX] = { false };
        /* every slot counts from now, before the caller is told to look at them */
        for (unsigned i = 0; i < k; i++) {
                t[i] = (struct gpu_thread){ .pool = &pool, .slot = i };
                hdr->threads[i].finished = 0;
                slot_stamp(&hdr->threads[i], "start of a GPU thread", false);
        }
        __atomic_store_n(&hdr->n_threads, k, __ATOMIC_RELEASE);
        for (unsigned i = 1; i < k; i++) {
                started[i] = pthread_create(&tid[i], NULL, gpu_thread_run, &t[i]) == 0;
                if (!started[i]) /* fewer threads: the others take its GPUs */
                        slot_stamp(&hdr->threads[i], "finished", true);
        }
        gpu_thread_run(&t[0]);
        for (unsigned i = 1; i < k; i++)
                if (started[i])
                        pthread_join(tid[i], NULL);
        /* the main thread's time runs again from here, then the caller looks at it */
        calling(n, "after the GPU threads");
        __atomic_store_n(&hdr->n_threads, 0, __ATOMIC_RELEASE);
}

static const char *nvml_error(struct nvml *n, nvmlReturn_t r, char *buf, size_t size)
{
        const char *s = n->errstr ? n->errstr(r) : NULL;
        snprintf(buf, size, "%s (error %d)", s && *s ? s : "unknown error", r);
        gr_text_sanitize(buf);
        return buf;
}

static void load(struct nvml *n)
{
        n->init = (fn_void)sym_first(n, &n->init_name, "nvmlInit_v2", "nvmlInit", NULL);
        n->shutdown = (fn_void)sym(n, "nvmlShutdown");
        n->errstr = (fn_errstr)sym(n, "nvmlErrorString");
        n->count = (fn_count)sym_first(n, &n->count_name, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL);
        n->handle = (fn_handle)sym_first(n, &n->handle_name, "nvmlDeviceGetHandleByIndex_v2",
                                         "nvmlDeviceGetHandleByIndex", NULL);
        n->name = (fn_text)sym(n, "nvmlDeviceGetName");
        n->uuid = (fn_text)sym(n, "nvmlDeviceGetUUID");
        n->driver_version = (fn_sys_text)sym(n, "nvmlSystemGetDriverVersion");
        n->nvml_version = (fn_sys_text)sym(n, "nvmlSystemGetNVMLVersion");
        n->pci = (fn_pci)sym_first(n, &n->pci_name, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", NULL);
        n->minor = (fn_uint)sym(n, "nvmlDeviceGetMinorNumber");
        n->mem1 = (fn_mem1)sym(n, "nvmlDeviceGetMemoryInfo");
        n->mem2 = (fn_mem2)sym(n, "nvmlDeviceGetMemoryInfo_v2");

        static const char *const names[3][3] = {
                { "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
                  "nvmlDeviceGetComputeRunningProcesses" },
                { "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
                  "nvmlDeviceGetGraphicsRunningProcesses" },
                { "nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses_v2",
                  "nvmlDeviceGetMPSComputeRunningProcesses" },
        };
        static const unsigned strides[3] = { 0 /* 24 or 32: checked */, 24, 16 };
        for (int k = 0; k < 3; k++)
                for (int v = 0; v < 3; v++) {
                        n->procs[k][v].fn = (fn_procs)sym(n, names[k][v]);
                        n->procs[k][v].name = names[k][v];
                        n->procs[k][v].stride = strides[v];
                }
}

static void copy_text(char *dst, size_t size, const char *src)
{
        /* the driver's strings are NUL-terminated within their buffer; be sure anyway */
        size_t i = 0;
        for (; i + 1 < size && src[i]; i++)
                dst[i] = src[i];
        dst[i] = '\0';
        gr_text_sanitize(dst);
}

static void set_error(gr_gpu *g, const char *what, const char *why)
{
        if (g->error[0])
                return; /* keep the first */
        snprintf(g->error, sizeof(g->error), "%s: %s", what, why);
}

#define SENTINEL 0xA5

static bool pid_plausible(uint32_t pid)
{
        return pid > 0 && pid <= GR_PROC_PID_MAX;
}

/* Which stride did a _v3 call use for n entries? The buffer was filled with SENTINEL first:
 * with 24-byte entries the bytes [24n, 32n) are left untouched. PIDs confirm the choice. */
static unsigned v3_stride(const unsigned char *buf, unsigned n)
{
        bool untouched = true;
        for (size_t i = (size_t)n * 24; i < (size_t)n * 32; i++)
                if (buf[i] != SENTINEL) {
                        untouched = false;
                        break;
                }
        unsigned guess = untouched ? 24 : 32, other = untouched ? 32 : 24;
        bool ok_guess = true, ok_other = true;
        for (unsigned i = 0; i < n; i++) {
                uint32_t a, b;
                memcpy(&a, buf + (size_t)i * guess, sizeof(a));
                memcpy(&b, buf + (size_t)i * other, sizeof(b));
                ok_guess = ok_guess && pid_plausible(a);
                ok_other = ok_other && pid_plausible(b);
        }
        return ok_guess || !ok_other ? guess : other;
}

static void read_procs(struct nvml *n, nvmlDevice_t dev, gr_gpu *g, gr_gpu_proc *out,
                       unsigned *n_out)
{
        char why[128];
        for (int kind = 0; kind < 3; kind++) {
                int v;
                for (v = 0; v < 3 && !n->procs[kind][v].fn; v++)
                        ;
                if (v == 3) {
                        if (kind == GR_CTX_COMPUTE)
                                set_error(g, "process list", "no nvmlDeviceGetComputeRunningProcesses in this NVML");
                        continue;
                }
        retry_version:;
                fn_procs fn = n->procs[kind][v].fn;
                unsigned cap = 64, count;
                unsigned char *buf = NULL;
                nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
                for (int attempt = 0; attempt < 8 && r == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
                        free(buf);
                        buf = malloc((size_t)cap * 32);
                        if (!buf) {
                                set_error(g, "process list", "out of memory");
                                return;
                        }
                        memset(buf, SENTINEL, (size_t)cap * 32);
                        count = cap;
                        calling(n, n->procs[kind][v].name);
                        r = fn(dev, &count, buf);
                        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
                                /* the driver says how many it has now; more may come: add room */
                                unsigned want = count > cap ? count : cap * 2;
                                cap = want + want / 4 + 8;
                                if (cap > GR_GPU_PROCS_MAX * 4)
                                        cap = GR_GPU_PROCS_MAX * 4;
                        }
                }
                if ((r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH ||
                     r == NVML_ERROR_NOT_SUPPORTED) && v < 2) {
                        free(buf);
                        do
                                v++;
                        while (v < 3 && !n->procs[kind][v].fn);
                        if (v < 3)
                                goto retry_version;
                        continue;
                }
                if (r != NVML_SUCCESS) {
                        free(buf);
                        /* graphics and MPS lists are not supported everywhere: not a failure */
                        if (kind == GR_CTX_COMPUTE || r != NVML_ERROR_NOT_SUPPORTED)
                                set_error(g, n->procs[kind][v].name, nvml_error(n, r, why, sizeof(why)));
                        if (kind == GR_CTX_COMPUTE)
                                g->procs_ok = false;
                        continue;
                }
                if (count > cap)
                        count = cap;
                unsigned stride = n->procs[kind][v].stride;
                if (stride == 0)
                        stride = v3_stride(buf, count);
                if (kind == GR_CTX_COMPUTE || !g->proc_stride)
                        g->proc_stride = stride;
                for (unsigned i = 0; i < count; i++) {
                        uint32_t pid;
                        uint64_t used;
                        memcpy(&pid, buf + (size_t)i * stride, sizeof(pid));
                        memcpy(&used, buf + (size_t)i * stride + 8, sizeof(used));
                        if (!pid_plausible(pid))
                                continue; /* never trust an entry we cannot read as a PID */
                        if (*n_out >= GR_GPU_PROCS_MAX) {
                                g->procs_truncated = true;
                                break;
                        }
                        out[*n_out] = (gr_gpu_proc){
                                .pid = pid,
                                .kind = (uint32_t)kind,
                                .used_bytes = used == NVML_VALUE_NOT_AVAILABLE_ULL ? GR_UNKNOWN_U64 : used,
                        };
                        (*n_out)++;
                }
                free(buf);
        }
}

static void read_memory(struct nvml *n, nvmlDevice_t dev, gr_gpu *g)
{
        char why[128];
        nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (n->mem2) {
                nvmlMemory_v2_t m = { .version = NVML_MEMORY_V2_VERSION };
                calling(n, "nvmlDeviceGetMemoryInfo_v2");
                r = n->mem2(dev, &m);
                if (r == NVML_SUCCESS) {
                        g->mem_total = m.total;
                        g->mem_reserved = m.reserved;
                        g->mem_used = m.used;
                        g->mem_free = m.free;
                        g->mem_api = 2;
                        return;
                }
        }
        if (n->mem1) {
                nvmlMemory_v1_t m = { 0 };
                calling(n, "nvmlDeviceGetMemoryInfo");
                r = n->mem1(dev, &m);
                if (r == NVML_SUCCESS) {
                        g->mem_total = m.total;
                        g->mem_used = m.used;
                        g->mem_free = m.free;
                        g->mem_api = 1;
                        return;
                }
        }
        set_error(g, "memory", r == NVML_ERROR_FUNCTION_NOT_FOUND ? "no memory call in this NVML"
                                                                  : nvml_error(n, r, why, sizeof(why)));
}

/* dlopen and nvmlInit; on failure the status and a one-line error */
static gr_gpu_status open_nvml(struct nvml *n, const struct gr_helper_header *hdr, char *error, size_t error_size)
{
        char why[128], by_fd[32];
        const char *library = hdr->library;
        /* the file the caller checked, not whatever its name names by now */
        snprintf(by_fd, sizeof(by_fd), "/proc/self/fd/%d", GR_HELPER_LIBRARY_FD);
        calling(n, "dlopen");
        if (hdr->library_by_fd == GR_LIBRARY_MISSING) {
                snprintf(error, error_size, "cannot load '%s': No such file or directory", library);
                gr_text_sanitize(error);
                return GR_GPU_NO_LIBRARY;
        }
        bool fd = hdr->library_by_fd == GR_LIBRARY_BY_FD;
        n->dl = dlopen(fd ? by_fd : library, RTLD_NOW | RTLD_LOCAL);
        if (fd)
                close(GR_HELPER_LIBRARY_FD); /* loaded (or not): the mapping keeps what it needs */
        if (!n->dl) {
                const char *e = dlerror();
                snprintf(error, error_size, "cannot load '%s': %s", library, e ? e : "unknown error");
                gr_text_sanitize(error);
                return GR_GPU_NO_LIBRARY;
        }
        load(n);
        if (!n->init || !n->count || !n->handle) {
                snprintf(error, error_size, "'%s' lacks nvmlInit, nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex", library);
                return GR_GPU_NO_LIBRARY;
        }
        calling(n, n->init_name);
        nvmlReturn_t r = n->init();
        if (r != NVML_SUCCESS) {
                snprintf(error, error_size, "%s failed: %s", n->init_name, nvml_error(n, r, why, sizeof(why)));
                return GR_GPU_INIT_FAILED;
        }
        return GR_GPU_OK;
}

static void take_handle(struct nvml *n, unsigned i, void *arg)
{
        nvmlDevice_t *dev = arg;
        calling(n, n->handle_name);
        if (n->handle(i, &dev[i]) != NVML_SUCCESS)
                dev[i] = NULL;
}

void gr_nvml_watch_drain(struct gr_drain_shared *sh, void (*done)(int), int done_fd)
{
        struct nvml n = { .progress = &sh->hdr.progress, .gpu = -1 };
        sh->status = open_nvml(&n, &sh->hdr, sh->error, sizeof(sh->error));
        nvmlDevice_t dev[GR_GPUS_MAX] = { 0 };
        unsigned count = 0;
        if (sh->status == GR_GPU_OK) {
                calling(&n, n.count_name);
                if (n.count(&count) != NVML_SUCCESS)
                        count = 0;
                if (count > GR_GPUS_MAX)
                        count = GR_GPUS_MAX;
                each_gpu(&n, &sh->hdr, count, take_handle, dev);
        }
        __atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
        if (sh->status != GR_GPU_OK) {
                done(done_fd);
                return;
        }
        struct timespec nap = { 0, 200000 }; /* 0.2 ms: a memory query costs 10 us */
        while (!__atomic_load_n(&sh->armed, __ATOMIC_ACQUIRE))
                nanosleep(&nap, NULL);
        for (;;) {
                bool all = true;
                for (unsigned i = 0; i < count; i++) {
                        if (sh->targets[i] == GR_UNKNOWN_U64 || !dev[i])
                                continue;
                        gr_gpu g = { .mem_total = GR_UNKNOWN_U64, .mem_reserved = GR_UNKNOWN_U64,
                                     .mem_used = GR_UNKNOWN_U64, .mem_free = GR_UNKNOWN_U64 };
                        read_memory(&n, dev[i], &g);
                        __atomic_store_n(&sh->used[i], g.mem_used, __ATOMIC_RELAXED);
                        /* numbers that cannot be true say nothing about the drain */
                        if (g.mem_used == GR_UNKNOWN_U64 || !gr_gpu_check_memory(&g) || g.mem_used > sh->targets[i])
                                all = false;
                }
                if (all) {
                        __atomic_store_n(&sh->drained_at_us, gr_now_us(), __ATOMIC_RELEASE);
                        done(done_fd);
                        return;
                }
                nanosleep(&nap, NULL);
        }
}

struct gpu_read {
        gr_gpu *gpus;
        gr_gpu_proc *procs;
};

static void read_gpu(struct nvml *n, unsigned i, void *arg)
{
        struct gpu_read *rd = arg;
        gr_gpu *g = &rd->gpus[i];
        char why[128];
        nvmlDevice_t dev = NULL;
        calling(n, n->handle_name);
        nvmlReturn_t r = n->handle(i, &dev);
        if (r != NVML_SUCCESS) {
                set_error(g, n->handle_name, nvml_error(n, r, why, sizeof(why)));
                return;
        }
        char buf[NVML_DEVICE_UUID_BUFFER + 1];
        if (n->name) {
                calling(n, "nvmlDeviceGetName");
                memset(buf, 0, sizeof(buf));
                if (n->name(dev, buf, NVML_DEVICE_NAME_BUFFER) == NVML_SUCCESS)
                        copy_text(g->name, sizeof(g->name), buf);
        }
        if (n->uuid) {
                calling(n, "nvmlDeviceGetUUID");
                memset(buf, 0, sizeof(buf));
                if (n->uuid(dev, buf, NVML_DEVICE_UUID_BUFFER) == NVML_SUCCESS)
                        copy_text(g->uuid, sizeof(g->uuid), buf);
        }
        if (n->pci) {
                nvmlPciInfo_t pci;
                memset(&pci, 0, sizeof(pci));
                calling(n, n->pci_name);
                if (n->pci(dev, &pci) == NVML_SUCCESS) {
                        pci.busId[sizeof(pci.busId) - 1] = '\0';
                        copy_text(g->pci_bus_id, sizeof(g->pci_bus_id), pci.busId);
                }
        }
        if (n->minor) {
                unsigned m;
                calling(n, "nvmlDeviceGetMinorNumber");
                if (n->minor(dev, &m) == NVML_SUCCESS && m < 1000000)
                        g->minor = (int)m;
        }
        read_memory(n, dev, g);
        g->procs_ok = true;
        g->procs = rd->procs + (size_t)i * GR_GPU_PROCS_MAX;
        read_procs(n, dev, g, g->procs, &g->n_procs);
}

void gr_nvml_read(struct gr_query_shared *sh)
{
        struct nvml n = { .progress = &sh->hdr.progress, .gpu = -1 };
        gr_gpu_report *rep = &sh->rep;
        char why[128];
        gr_strlcpy(rep->library, sh->hdr.library, sizeof(rep->library));
        rep->status = open_nvml(&n, &sh->hdr, rep->error, sizeof(rep->error));
        if (rep->status != GR_GPU_OK)
                return;
        nvmlReturn_t r;
        char text[NVML_SYSTEM_VERSION_BUFFER + 16];
        if (n.driver_version) {
                calling(&n, "nvmlSystemGetDriverVersion");
                memset(text, 0, sizeof(text));
                if (n.driver_version(text, NVML_SYSTEM_VERSION_BUFFER) == NVML_SUCCESS)
                        copy_text(rep->driver_version, sizeof(rep->driver_version), text);
        }
        if (n.nvml_version) {
                calling(&n, "nvmlSystemGetNVMLVersion");
                memset(text, 0, sizeof(text));
                if (n.nvml_version(text, NVML_SYSTEM_VERSION_BUFFER) == NVML_SUCCESS)
                        copy_text(rep->nvml_version, sizeof(rep->nvml_version), text);
        }
        unsigned count = 0;
        calling(&n, n.count_name);
        r = n.count(&count);
        if (r != NVML_SUCCESS) {
                rep->status = GR_GPU_FAILED;
                snprintf(rep->error, sizeof(rep->error), "%s failed: %s", n.count_name,
                         nvml_error(&n, r, why, sizeof(why)));
                return;
        }
        if (count > GR_GPUS_MAX)
                count = GR_GPUS_MAX;
        for (unsigned i = 0; i < count; i++) {
                gr_gpu *g = &sh->gpus[i];
                memset(g, 0, sizeof(*g));
                g->index = i;
                g->minor = -1;
                g->mem_total = g->mem_reserved = g->mem_used = g->mem_free = GR_UNKNOWN_U64;
        }
        rep->n_gpus = count;
        struct gpu_read rd = { .gpus = sh->gpus, .procs = sh->procs };
        each_gpu(&n, &sh->hdr, count, read_gpu, &rd);
        calling(&n, "done");
        /* no nvmlShutdown: this process exits next and the driver cleans up; a shutdown that
         * hung would only delay that exit */
}
