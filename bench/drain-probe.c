/* drain-probe: the driver's own teardown time. With NVML open, SIGKILL a process and poll the
 * GPU's used memory (v2) in a tight loop until it is at or below TARGET bytes; print the ms.
 *   drain-probe PID GPU_INDEX TARGET_BYTES
 * It signals only the PID it is given (the bench script's own CUDA process). */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpu/nvml-abi.h"

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
        if (argc != 4)
                return 2;
        pid_t pid = (pid_t)strtol(argv[1], NULL, 10);
        unsigned idx = (unsigned)strtoul(argv[2], NULL, 10);
        unsigned long long target = strtoull(argv[3], NULL, 10);
        void *dl = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (!dl || pid <= 1)
                return 1;
        nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))dlsym(dl, "nvmlInit_v2");
        nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *) = (nvmlReturn_t (*)(unsigned, nvmlDevice_t *))dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
        nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_v2_t *) = (nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(dl, "nvmlDeviceGetMemoryInfo_v2");
        nvmlDevice_t dev;
        if (init() != 0 || handle(idx, &dev) != 0)
                return 1;
        double t0 = now_ms();
        kill(pid, SIGKILL);
        for (;;) {
                nvmlMemory_v2_t m = { .version = NVML_MEMORY_V2_VERSION };
                if (mem(dev, &m) == 0 && m.used <= target)
                        break;
                if (now_ms() - t0 > 60000)
                        return 1;
        }
        printf("%.1f\n", now_ms() - t0);
        return 0;
}
