/* The drain watch (gpu.h): a helper process polling NVML memory until the watched GPUs are back
 * at their targets. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "gpu/helper.h"
#include "gpureap/basic.h"
#include "gpureap/gpu.h"

struct gr_drain {
        struct gr_helper h;
        bool finished;
};

int gr_drain_start(const gr_gpu_options *opts, gr_drain **ret)
{
        gr_drain *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        struct gr_nvml_lib lib;
        int r = gr_nvml_library(opts, &lib);
        if (r == 0)
                r = gr_helper_start(&d->h, gr_helper_path(opts), GR_HELPER_DRAIN, sizeof(struct gr_drain_shared),
                                    &lib, opts);
        gr_nvml_lib_done(&lib);
        if (r < 0) {
                free(d);
                return r;
        }
        *ret = d;
        return 0;
}

bool gr_drain_arm(gr_drain *d, const uint64_t *targets, unsigned n, uint64_t deadline_ms)
{
        struct gr_drain_shared *sh = d->h.shm;
        while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE)) {
                if (gr_now_ms() >= deadline_ms)
                        return false;
                /* a helper that ended before it was ready (not one of our build) ends the wait */
                struct pollfd pfd = { .fd = d->h.pipe_rd, .events = POLLIN };
                struct timespec nap = { 0, 200000 };
                if (ppoll(&pfd, 1, &nap, NULL) > 0 && !__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE))
                        return false;
        }
        if (sh->status != GR_GPU_OK)
                return false;
        for (unsigned i = 0; i < GR_GPUS_MAX; i++)
                sh->targets[i] = i < n ? targets[i] : GR_UNKNOWN_U64;
        __atomic_store_n(&sh->armed, 1, __ATOMIC_RELEASE);
        return true;
}

bool gr_drain_wait(gr_drain *d, uint64_t deadline_ms, uint64_t *ret_drained_at_us)
{
        int w = gr_helper_wait(&d->h, deadline_ms, 0);
        const struct gr_drain_shared *sh = d->h.shm;
        d->finished = w == 1;
        if (w != 1 || sh->status != GR_GPU_OK)
                return false;
        if (ret_drained_at_us)
                *ret_drained_at_us = __atomic_load_n(&sh->drained_at_us, __ATOMIC_ACQUIRE);
        return true;
}

void gr_drain_free(gr_drain *d)
{
        if (!d)
                return;
        gr_helper_stop(&d->h, d->finished);
        free(d);
}
