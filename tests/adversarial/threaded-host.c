/* Issue 9, "one way to signal": a program with threads may use the library. The helper used to
 * be a fork of the caller that then loaded NVML. In a program that uses NVML itself (an
 * exporter polling it from a thread) dlopen in the fork returns the program's own copy of the
 * library, with its locks as they were at the fork: while that thread was inside a call, the
 * helper waited for a lock nobody would release, and a working driver was reported as hung.
 * The helper is now an executed program with a fresh NVML. Negative control: the lock is held
 * (a call from another thread of the program waits). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/gpu.h"

static int checks;

#define CHECK(cond, ...)                                                       \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "FAIL: " __VA_ARGS__);                 \
                        fputc('\n', stderr);                                   \
                        fflush(stdout);                                        \
                        _exit(1); /* exit() would wait for the held lock */    \
                }                                                              \
                printf("ok %d - %s\n", ++checks, #cond);                       \
        } while (0)

static void *nvml;
static int held[2], go[2];

/* the program's own NVML work: inside a call, holding the library's lock */
static void *poller(void *arg)
{
        void (*hold)(int, int) = (void (*)(int, int))dlsym(nvml, "fakeNvmlHoldApiLock");
        hold(held[1], go[0]);
        return arg;
}

static void *caller(void *arg)
{
        int (*init)(void) = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
        init();
        return arg;
}

static bool joined_within(pthread_t t, long ms)
{
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ms / 1000;
        until.tv_nsec += (ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
        }
        return pthread_timedjoin_np(t, NULL, &until) == 0;
}

int main(void)
{
        const char *fake = getenv("FAKE_NVML");
        CHECK(fake != NULL, "FAKE_NVML must be set");
        char scenario[] = "/tmp/gpureap-threaded.XXXXXX";
        int sfd = mkstemp(scenario);
        CHECK(sfd >= 0 && write(sfd, "gpu 0\n", 6) == 6, "scenario: %s", strerror(errno));
        close(sfd);
        setenv("GPUREAP_FAKE_NVML_SCENARIO", scenario, 1);
        CHECK(pipe(held) == 0 && pipe(go) == 0, "pipe: %s", strerror(errno));
        nvml = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
        CHECK(nvml != NULL, "dlopen %s: %s", fake, dlerror());

        pthread_t p, c;
        CHECK(pthread_create(&p, NULL, poller, NULL) == 0, "pthread_create");
        char b;
        CHECK(read(held[0], &b, 1) == 1, "the lock was not taken");
        /* negative control: a call from another thread waits for the held lock */
        CHECK(pthread_create(&c, NULL, caller, NULL) == 0, "pthread_create");
        CHECK(!joined_within(c, 300), "a call got through while the lock was held: this test proves nothing");

        gr_gpu_options o = { .library = fake, .timeout_ms = 2000, .helper = getenv("NVML_HELPER") };
        gr_gpu_query *q = NULL;
        pid_t helper = 0;
        CHECK(gr_gpu_query_start(&o, &q, &helper) == 0 && helper > 0, "the query did not start");
        gr_gpu_report *r = NULL;
        CHECK(gr_gpu_query_finish(q, &r) == 0 && r, "no report");
        if (r->status != GR_GPU_OK)
                fprintf(stderr, "# %s\n", r->error);
        CHECK(r->status == GR_GPU_OK, "the driver was not read while a thread of the program was in NVML");
        CHECK(r->n_gpus == 1, "the driver's GPU is in the report");
        gr_gpu_report_free(r);

        CHECK(write(go[1], "g", 1) == 1, "write");
        CHECK(pthread_join(p, NULL) == 0, "join");
        CHECK(joined_within(c, 10000), "the waiting call got through once the lock was given back");
        unlink(scenario);
        printf("1..%d\n", checks);
        return 0;
}
