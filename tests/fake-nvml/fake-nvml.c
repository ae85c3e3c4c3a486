/* A fake libnvidia-ml.so.1 for tests: the same symbols, loaded by gpureap through the same
 * dlopen path, modelling what the real driver was measured to do (DESIGN.md).
 *
 * $GPUREAP_FAKE_NVML_SCENARIO names a scenario file, one directive a line:
 *   driver VERSION
 *   gpu INDEX minor=M total_mib=T reserved_mib=R [uuid=U] [pci=P] [name=REST OF LINE]
 *   contexts DIR            token files of contexts (see fake-ctx.h)
 *   teardown_ms N           a released context's memory stays listed this long
 *   stale INDEX MIB         memory used on GPU INDEX that no context accounts for
 *   stride 24|32            bytes per entry written by the _v3 process calls (580 wrote 24)
 *   not_available INDEX     report used memory of GPU INDEX's contexts as "not available"
 *   bad_memory INDEX MIB    GPU INDEX reports MIB used whatever its contexts hold, and free as
 *                           total - reserved - used, unchecked: past the total it wraps, as a
 *                           broken driver's numbers would (v1: the reserve added to used)
 *   fail FUNCTION CODE [gpu=N]  FUNCTION returns CODE (only for GPU N: the device calls and
 *                           nvmlDeviceGetHandleByIndex*, whose index is the GPU)
 *   hang FUNCTION [gpu=N]   FUNCTION never returns
 *   delay FUNCTION MS [gpu=N]  FUNCTION sleeps MS ms before it answers (attaching a GPU, the
 *                           first nvmlDeviceGetHandleByIndex_v2, took 6.6 ms on an H200)
 *   log FILE                every call appends a line "PID FUNCTION GPU ALL SAME" to FILE as it
 *                           begins: GPU -1 when the call names none; ALL the calls of this
 *                           process in the library at that moment, this one included; SAME
 *                           those of them to the same FUNCTION. So a test sees how many calls
 *                           ran at once without timing anything
 * The first matching fail or hang rule applies, after every matching delay. Up to 128 GPUs.
 * Every call first passes the library's API lock (it does not hold it while it runs, so calls
 * from several threads overlap, as NVML documents itself thread-safe); a test can hold it from
 * a thread (fakeNvmlHoldApiLock), as a program that polls NVML in a thread does.
 * Built twice: as is, and with FAKE_NVML_OLD for an old library without the _v2/_v3 symbols. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake-ctx.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 128
#define MAX_RULES 32
#define MAX_FUNCTIONS 64
#define MAX_CTX 4096

typedef int nvmlReturn_t;

struct fake_gpu {
        unsigned index, minor;
        unsigned long long total_mib, reserved_mib, stale_mib;
        char uuid[96], pci[32], name[96];
        int not_available;
        int bad_memory;
        unsigned long long bad_used_mib;
};

enum rule_kind { RULE_FAIL, RULE_HANG, RULE_DELAY };

struct rule {
        char fn[80];
        enum rule_kind kind;
        int value;  /* fail: the code; delay: milliseconds */
        int gpu;    /* -1: every GPU */
};

static struct {
        int loaded, initialised;
        char driver[80];
        struct fake_gpu gpus[MAX_GPUS];
        unsigned n_gpus;
        char ctx_dir[512];
        long teardown_ms;
        unsigned stride;
        struct rule rules[MAX_RULES];
        unsigned n_rules;
        int log_fd;
} S = { .log_fd = -1 };

/* "fail FN CODE [gpu=N]", "hang FN [gpu=N]", "delay FN MS [gpu=N]" */
static void parse_rule(enum rule_kind kind, const char *rest)
{
        if (S.n_rules >= MAX_RULES)
                return;
        struct rule *r = &S.rules[S.n_rules];
        int off = 0;
        if (sscanf(rest, "%79s %n", r->fn, &off) < 1)
                return;
        rest += off;
        r->kind = kind;
        r->value = kind == RULE_FAIL ? 999 : 0;
        r->gpu = -1;
        if (kind != RULE_HANG && sscanf(rest, "%d %n", &r->value, &off) >= 1)
                rest += off;
        sscanf(rest, "gpu=%d", &r->gpu);
        S.n_rules++;
}

static void load_scenario_once(void)
{
        S.loaded = 1;
        S.stride = 24;
        snprintf(S.driver, sizeof(S.driver), "580.95.05");
        const char *path = getenv("GPUREAP_FAKE_NVML_SCENARIO");
        FILE *f = path ? fopen(path, "re") : NULL;
        if (!f)
                return;
        char line[1024];
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                char word[64] = "";
                int off = 0;
                if (sscanf(line, "%63s %n", word, &off) < 1 || word[0] == '#')
                        continue;
                const char *rest = line + off;
                if (strcmp(word, "driver") == 0) {
                        snprintf(S.driver, sizeof(S.driver), "%s", rest);
                } else if (strcmp(word, "gpu") == 0 && S.n_gpus < MAX_GPUS) {
                        struct fake_gpu *g = &S.gpus[S.n_gpus];
                        memset(g, 0, sizeof(*g));
                        g->index = S.n_gpus;
                        g->minor = g->index;
                        g->total_mib = 143771;
                        g->reserved_mib = 615;
                        snprintf(g->name, sizeof(g->name), "NVIDIA H200");
                        snprintf(g->uuid, sizeof(g->uuid), "GPU-fa4e0000-0000-4000-8000-%012u", g->index);
                        snprintf(g->pci, sizeof(g->pci), "00000000:%02X:00.0", 0x19 + g->index);
                        const char *p = rest;
                        unsigned idx;
                        int n = 0;
                        if (sscanf(p, "%u %n", &idx, &n) >= 1)
                                p += n;
                        while (*p) {
                                char kv[128];
                                if (strncmp(p, "name=", 5) == 0) {
                                        snprintf(g->name, sizeof(g->name), "%s", p + 5);
                                        break;
                                }
                                if (sscanf(p, "%127s %n", kv, &n) < 1)
                                        break;
                                p += n;
                                sscanf(kv, "minor=%u", &g->minor);
                                sscanf(kv, "total_mib=%llu", &g->total_mib);
                                sscanf(kv, "reserved_mib=%llu", &g->reserved_mib);
                                if (strncmp(kv, "uuid=", 5) == 0)
                                        snprintf(g->uuid, sizeof(g->uuid), "%.95s", kv + 5);
                                if (strncmp(kv, "pci=", 4) == 0)
                                        snprintf(g->pci, sizeof(g->pci), "%.31s", kv + 4);
                        }
                        S.n_gpus++;
                } else if (strcmp(word, "contexts") == 0) {
                        snprintf(S.ctx_dir, sizeof(S.ctx_dir), "%s", rest);
                } else if (strcmp(word, "teardown_ms") == 0) {
                        S.teardown_ms = strtol(rest, NULL, 10);
                } else if (strcmp(word, "stale") == 0) {
                        unsigned idx;
                        unsigned long long mib;
                        if (sscanf(rest, "%u %llu", &idx, &mib) == 2 && idx < MAX_GPUS)
                                S.gpus[idx].stale_mib = mib;
                } else if (strcmp(word, "not_available") == 0) {
                        unsigned idx;
                        if (sscanf(rest, "%u", &idx) == 1 && idx < MAX_GPUS)
                                S.gpus[idx].not_available = 1;
                } else if (strcmp(word, "bad_memory") == 0) {
                        unsigned idx;
                        unsigned long long mib;
                        if (sscanf(rest, "%u %llu", &idx, &mib) == 2 && idx < MAX_GPUS) {
                                S.gpus[idx].bad_memory = 1;
                                S.gpus[idx].bad_used_mib = mib;
                        }
                } else if (strcmp(word, "stride") == 0) {
                        S.stride = (unsigned)strtoul(rest, NULL, 10) == 32 ? 32 : 24;
                } else if (strcmp(word, "fail") == 0) {
                        parse_rule(RULE_FAIL, rest);
                } else if (strcmp(word, "hang") == 0) {
                        parse_rule(RULE_HANG, rest);
                } else if (strcmp(word, "delay") == 0) {
                        parse_rule(RULE_DELAY, rest);
                } else if (strcmp(word, "log") == 0 && S.log_fd < 0) {
                        S.log_fd = open(rest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                }
        }
        fclose(f);
}

static void load_scenario(void)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, load_scenario_once);
}

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

/* Not NVML: take the API lock, say so with a byte on ready_fd, and keep it until a byte (or
 * EOF) arrives on go_fd */
EXPORT void fakeNvmlHoldApiLock(int ready_fd, int go_fd)
{
        pthread_mutex_lock(&api_lock);
        char c = 'h';
        while (write(ready_fd, &c, 1) < 0)
                ;
        while (read(go_fd, &c, 1) < 0)
                ;
        pthread_mutex_unlock(&api_lock);
}

/* The calls in the library now: all of them, and per function (the names are the literals of
 * the exported functions below, compared as strings) */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned calls_all;
static struct {
        const char *fn;
        unsigned n;
} calls_fn[MAX_FUNCTIONS];

static unsigned *calls_of(const char *fn)
{
        for (unsigned i = 0; i < MAX_FUNCTIONS; i++) {
                if (!calls_fn[i].fn)
                        calls_fn[i].fn = fn;
                if (strcmp(calls_fn[i].fn, fn) == 0)
                        return &calls_fn[i].n;
        }
        return NULL;
}

struct call {
        const char *fn;
        int rc;   /* the code to fail with, or 0 to go on */
};

static void log_call(const char *fn, int gpu, unsigned all, unsigned same)
{
        if (S.log_fd < 0)
                return;
        char line[160];
        int k = snprintf(line, sizeof(line), "%d %s %d %u %u\n", (int)getpid(), fn, gpu, all, same);
        if (k > 0 && (size_t)k < sizeof(line)) /* one write: O_APPEND keeps lines whole */
                while (write(S.log_fd, line, (size_t)k) < 0 && errno == EINTR)
                        ;
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* A call begins: counted, logged, delayed and failed or hung as the rules for fn and gpu say */
static struct call call_begin(const char *fn, int gpu)
{
        pthread_mutex_lock(&api_lock);
        pthread_mutex_unlock(&api_lock);
        load_scenario();
        pthread_mutex_lock(&calls_lock);
        unsigned all = ++calls_all, same = 0;
        unsigned *c = calls_of(fn);
        if (c)
                same = ++*c;
        pthread_mutex_unlock(&calls_lock);
        log_call(fn, gpu, all, same);
        struct call call = { .fn = fn };
        for (unsigned i = 0; i < S.n_rules; i++) {
                const struct rule *r = &S.rules[i];
                if (strcmp(r->fn, fn) != 0 || (r->gpu >= 0 && r->gpu != gpu))
                        continue;
                if (r->kind == RULE_DELAY)
                        sleep_ms(r->value);
        }
        for (unsigned i = 0; i < S.n_rules; i++) {
                const struct rule *r = &S.rules[i];
                if (strcmp(r->fn, fn) != 0 || (r->gpu >= 0 && r->gpu != gpu) || r->kind == RULE_DELAY)
                        continue;
                if (r->kind == RULE_HANG)
                        for (;;)
                                pause(); /* a wedged driver: never returns */
                call.rc = r->value;
                break;
        }
        return call;
}

static void call_end(struct call *call)
{
        pthread_mutex_lock(&calls_lock);
        calls_all--;
        unsigned *c = calls_of(call->fn);
        if (c)
                --*c;
        pthread_mutex_unlock(&calls_lock);
}

/* First in every exported call: the call ends (and is counted out) on every return */
#define RULE(fn, gpu) \
        struct call call_ __attribute__((cleanup(call_end))) = call_begin(fn, gpu); \
        if (call_.rc) \
                return call_.rc

static long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct ctx {
        unsigned pid, gpu;
        unsigned long long mib;
};

/* The contexts that hold memory now: held ones, and released ones still being torn down. */
static unsigned contexts(struct ctx *out, unsigned max)
{
        if (!S.ctx_dir[0])
                return 0;
        int dfd = open(S.ctx_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return 0;
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return 0;
        }
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d)) && n < max) {
                if (strncmp(de->d_name, "ctx-", 4) != 0 || strchr(de->d_name, '.'))
                        continue;
                char buf[256] = "";
                int fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t k = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                struct ctx c;
                if (k <= 0 || !fake_ctx_parse(buf, &c.pid, &c.gpu, &c.mib))
                        continue; /* still being written */
                int held = fake_ctx_held(dfd, de->d_name);
                if (held < 0)
                        continue;
                if (!held) {
                        char rel[300];
                        snprintf(rel, sizeof(rel), "%s.released", de->d_name);
                        long long t = 0;
                        int rfd = openat(dfd, rel, O_RDONLY | O_CLOEXEC);
                        if (rfd >= 0) {
                                char tb[32] = "";
                                if (read(rfd, tb, sizeof(tb) - 1) > 0)
                                        t = atoll(tb);
                                close(rfd);
                        } else {
                                t = now_ms();
                                rfd = openat(dfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                                if (rfd >= 0) {
                                        dprintf(rfd, "%lld\n", t);
                                        close(rfd);
                                }
                        }
                        if (now_ms() - t >= S.teardown_ms)
                                continue; /* torn down: the memory is back */
                }
                out[n++] = c;
        }
        closedir(d);
        return n;
}

static struct fake_gpu *dev_gpu(void *dev)
{
        struct fake_gpu *g = dev;
        if (g < S.gpus || g >= S.gpus + S.n_gpus)
                return NULL;
        return g;
}

static int gpu_of(void *dev)
{
        struct fake_gpu *g = dev_gpu(dev);
        return g ? (int)g->index : -1;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
        switch (r) {
        case 0: return "Success";
        case 1: return "Uninitialized";
        case 2: return "Invalid Argument";
        case 3: return "Not Supported";
        case 4: return "Insufficient Permissions";
        case 7: return "Insufficient Size";
        case 9: return "Driver Not Loaded";
        case 13: return "Function Not Found";
        case 15: return "GPU is lost";
        default: return "Unknown Error";
        }
}

static nvmlReturn_t do_init(const char *fn)
{
        RULE(fn, -1);
        S.initialised = 1;
        return 0;
}

EXPORT nvmlReturn_t nvmlInit(void) { return do_init("nvmlInit"); }
EXPORT nvmlReturn_t nvmlShutdown(void) { RULE("nvmlShutdown", -1); S.initialised = 0; return 0; }

static nvmlReturn_t copy_str(char *dst, unsigned len, const char *src)
{
        if (!dst)
                return 2;
        if (strlen(src) + 1 > len)
                return 7;
        memcpy(dst, src, strlen(src) + 1);
        return 0;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
        RULE("nvmlSystemGetDriverVersion", -1);
        return copy_str(v, len, S.driver);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
        RULE("nvmlSystemGetNVMLVersion", -1);
        char b[96];
        snprintf(b, sizeof(b), "13.%s", S.driver);
        return copy_str(v, len, b);
}

static nvmlReturn_t do_count(const char *fn, unsigned *c)
{
        RULE(fn, -1);
        if (!S.initialised)
                return 1;
        *c = S.n_gpus;
        return 0;
}

static nvmlReturn_t do_handle(const char *fn, unsigned i, void **dev)
{
        RULE(fn, i < MAX_GPUS ? (int)i : -1);
        if (!S.initialised)
                return 1;
        if (i >= S.n_gpus)
                return 2;
        *dev = &S.gpus[i];
        return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *c) { return do_count("nvmlDeviceGetCount", c); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, void **d) { return do_handle("nvmlDeviceGetHandleByIndex", i, d); }

EXPORT nvmlReturn_t nvmlDeviceGetName(void *dev, char *name, unsigned len)
{
        RULE("nvmlDeviceGetName", gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        return g ? copy_str(name, len, g->name) : 2;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *uuid, unsigned len)
{
        RULE("nvmlDeviceGetUUID", gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        return g ? copy_str(uuid, len, g->uuid) : 2;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(void *dev, unsigned *minor)
{
        RULE("nvmlDeviceGetMinorNumber", gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        if (!g)
                return 2;
        *minor = g->minor;
        return 0;
}

struct pci_info {
        char busIdLegacy[16];
        unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
};

static __attribute__((unused)) nvmlReturn_t do_pci(const char *fn, void *dev, struct pci_info *p)
{
        RULE(fn, gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        if (!g)
                return 2;
        memset(p, 0, sizeof(*p));
        snprintf(p->busId, sizeof(p->busId), "%s", g->pci);
        snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%.15s", g->pci + 4);
        p->bus = 0x19 + g->index;
        p->pciDeviceId = 0x233510de;
        return 0;
}

static unsigned long long gpu_used_mib(const struct fake_gpu *g)
{
        if (g->bad_memory)
                return g->bad_used_mib;
        /* not static: calls come from several threads at once */
        struct ctx *cs = malloc(MAX_CTX * sizeof(*cs));
        unsigned n = cs ? contexts(cs, MAX_CTX) : 0;
        unsigned long long used = g->stale_mib;
        for (unsigned i = 0; i < n; i++)
                if (cs[i].gpu == g->index)
                        used += cs[i].mib;
        free(cs);
        return used;
}

#define MIB 1048576ULL

struct mem_v1 { unsigned long long total, free, used; };
struct mem_v2 { unsigned version; unsigned long long total, reserved, free, used; };

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, struct mem_v1 *m)
{
        RULE("nvmlDeviceGetMemoryInfo", gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        if (!g || !m)
                return 2;
        unsigned long long used = gpu_used_mib(g) + g->reserved_mib;
        m->total = g->total_mib * MIB;
        m->used = used * MIB;
        m->free = m->total - m->used;
        return 0;
}

static nvmlReturn_t do_procs(const char *fn, void *dev, unsigned *count, unsigned char *buf,
                             unsigned stride)
{
        RULE(fn, gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        if (!g || !count)
                return 2;
        struct ctx *cs = malloc(MAX_CTX * sizeof(*cs));
        if (!cs)
                return 999;
        unsigned n = contexts(cs, MAX_CTX), k = 0;
        for (unsigned i = 0; i < n; i++)
                if (cs[i].gpu == g->index)
                        cs[k++] = cs[i];
        if (k > *count || (k > 0 && !buf)) {
                *count = k;
                free(cs);
                return 7; /* INSUFFICIENT_SIZE */
        }
        *count = k;
        for (unsigned i = 0; i < k; i++) {
                unsigned char *e = buf + (size_t)i * stride;
                unsigned long long used = g->not_available ? ~0ULL : cs[i].mib * MIB;
                memset(e, 0, stride);
                memcpy(e, &cs[i].pid, 4);
                memcpy(e + 8, &used, 8);
                if (stride >= 24) {
                        unsigned none = 0xFFFFFFFF; /* no MIG instance */
                        memcpy(e + 16, &none, 4);
                        memcpy(e + 20, &none, 4);
                }
        }
        free(cs);
        return 0;
}

static nvmlReturn_t no_procs(const char *fn, void *dev, unsigned *count)
{
        RULE(fn, gpu_of(dev));
        if (!dev_gpu(dev) || !count)
                return 2;
        *count = 0;
        return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(void *d, unsigned *c, void *b)
{ return do_procs("nvmlDeviceGetComputeRunningProcesses", d, c, b, 16); }
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(void *d, unsigned *c, void *b)
{ (void)b; return no_procs("nvmlDeviceGetGraphicsRunningProcesses", d, c); }
EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(void *d, unsigned *c, void *b)
{ (void)b; return no_procs("nvmlDeviceGetMPSComputeRunningProcesses", d, c); }

#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init("nvmlInit_v2"); }
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *c) { return do_count("nvmlDeviceGetCount_v2", c); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { return do_handle("nvmlDeviceGetHandleByIndex_v2", i, d); }
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *d, struct pci_info *p) { return do_pci("nvmlDeviceGetPciInfo_v3", d, p); }

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *dev, struct mem_v2 *m)
{
        RULE("nvmlDeviceGetMemoryInfo_v2", gpu_of(dev));
        struct fake_gpu *g = dev_gpu(dev);
        if (!g || !m)
                return 2;
        if (m->version != (unsigned)(sizeof(struct mem_v2) | 2u << 24))
                return 25; /* ARGUMENT_VERSION_MISMATCH, as the real one answers */
        m->total = g->total_mib * MIB;
        m->reserved = g->reserved_mib * MIB;
        m->used = gpu_used_mib(g) * MIB;
        m->free = m->total - m->reserved - m->used;
        return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(void *d, unsigned *c, void *b)
{ return do_procs("nvmlDeviceGetComputeRunningProcesses_v2", d, c, b, 24); }
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *c, void *b)
{ return do_procs("nvmlDeviceGetComputeRunningProcesses_v3", d, c, b, S.stride); }
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void *d, unsigned *c, void *b)
{ (void)b; return no_procs("nvmlDeviceGetGraphicsRunningProcesses_v3", d, c); }
EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(void *d, unsigned *c, void *b)
{ (void)b; return no_procs("nvmlDeviceGetMPSComputeRunningProcesses_v3", d, c); }
#endif
