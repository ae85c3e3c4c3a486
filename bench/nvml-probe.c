/* nvml-probe: where the time and memory of reading NVML go, call by call, in one process.
 *   nvml-probe [LIBRARY] [lazy] [noattach]
 * Prints microseconds and resident memory after each step. Read-only: it only queries. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/nvml-abi.h"

static double t0;

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long rss_kib(void)
{
        FILE *f = fopen("/proc/self/statm", "r");
        long size = 0, res = 0;
        if (f) {
                if (fscanf(f, "%ld %ld", &size, &res) != 2)
                        res = 0;
                fclose(f);
        }
        return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void step(const char *what, int rc)
{
        double t = now_us();
        printf("%-48s rc=%-4d %9.1f us  rss %6ld KiB\n", what, rc, t - t0, rss_kib());
        t0 = now_us();
}

typedef int (*fn_v)(void);
typedef int (*fn_flags)(unsigned);
typedef int (*fn_cnt)(unsigned *);
typedef int (*fn_h)(unsigned, nvmlDevice_t *);
typedef int (*fn_mem2)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef int (*fn_procs)(nvmlDevice_t, unsigned *, void *);
typedef int (*fn_text)(nvmlDevice_t, char *, unsigned);

#define SYM(T, name) ((T)dlsym(dl, name))

int main(int argc, char **argv)
{
        const char *lib = argc > 1 ? argv[1] : "libnvidia-ml.so.1";
        int lazy = 0, noattach = 0;
        for (int i = 2; i < argc; i++) {
                lazy |= strcmp(argv[i], "lazy") == 0;
                noattach |= strcmp(argv[i], "noattach") == 0;
        }
        t0 = now_us();
        step("start", 0);
        void *dl = dlopen(lib, (lazy ? RTLD_LAZY : RTLD_NOW) | RTLD_LOCAL);
        step(lazy ? "dlopen RTLD_LAZY" : "dlopen RTLD_NOW", dl ? 0 : -1);
        if (!dl)
                return 1;
        int rc;
        if (noattach) {
                fn_flags f = SYM(fn_flags, "nvmlInitWithFlags");
                rc = f ? f(2 /* NVML_INIT_FLAG_NO_ATTACH */) : -1;
                step("nvmlInitWithFlags(NO_ATTACH)", rc);
        } else {
                rc = SYM(fn_v, "nvmlInit_v2")();
                step("nvmlInit_v2", rc);
        }
        unsigned n = 0;
        rc = SYM(fn_cnt, "nvmlDeviceGetCount_v2")(&n);
        step("nvmlDeviceGetCount_v2", rc);
        for (unsigned i = 0; i < n; i++) {
                nvmlDevice_t d;
                rc = SYM(fn_h, "nvmlDeviceGetHandleByIndex_v2")(i, &d);
                step("nvmlDeviceGetHandleByIndex_v2", rc);
                char buf[128];
                rc = SYM(fn_text, "nvmlDeviceGetName")(d, buf, sizeof(buf));
                step("nvmlDeviceGetName", rc);
                rc = SYM(fn_text, "nvmlDeviceGetUUID")(d, buf, sizeof(buf));
                step("nvmlDeviceGetUUID", rc);
                nvmlPciInfo_t pci;
                rc = ((int (*)(nvmlDevice_t, nvmlPciInfo_t *))dlsym(dl, "nvmlDeviceGetPciInfo_v3"))(d, &pci);
                step("nvmlDeviceGetPciInfo_v3", rc);
                unsigned minor;
                rc = ((int (*)(nvmlDevice_t, unsigned *))dlsym(dl, "nvmlDeviceGetMinorNumber"))(d, &minor);
                step("nvmlDeviceGetMinorNumber", rc);
                nvmlMemory_v2_t m = { .version = NVML_MEMORY_V2_VERSION };
                rc = SYM(fn_mem2, "nvmlDeviceGetMemoryInfo_v2")(d, &m);
                step("nvmlDeviceGetMemoryInfo_v2", rc);
                unsigned char pbuf[64 * 32];
                const char *names[] = { "nvmlDeviceGetComputeRunningProcesses_v3",
                                        "nvmlDeviceGetGraphicsRunningProcesses_v3",
                                        "nvmlDeviceGetMPSComputeRunningProcesses_v3" };
                for (int k = 0; k < 3; k++) {
                        unsigned cnt = 64;
                        rc = SYM(fn_procs, names[k])(d, &cnt, pbuf);
                        step(names[k], rc);
                }
        }
        rc = SYM(fn_v, "nvmlShutdown")();
        step("nvmlShutdown", rc);
        return 0;
}
