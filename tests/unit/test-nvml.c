/* The NVML backend against the fake libnvidia-ml, through the same helper-process path that
 * gpureap uses: buffer growth, the _v3 stride check, fallbacks, deadlines. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include "gpureap/gpu.h"

static char dir[] = "/tmp/gpureap-nvml.XXXXXX";
static char scenario_path[256];
static int ctx_fds[256];
static unsigned n_ctx;

static void write_scenario(const char *extra)
{
        FILE *f = fopen(scenario_path, "w");
        assert_non_null(f);
        fprintf(f, "contexts %s\ngpu 0\ngpu 1 minor=4 name=NVIDIA H200 NVL\n%s\n", dir, extra);
        fclose(f);
}

/* a context as gpuhold makes one, with a made-up PID: this process holds its OFD lock */
static void add_context(unsigned pid, unsigned gpu, unsigned mib)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/ctx-%u", dir, pid);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
        dprintf(fd, "pid=%u gpu=%u mib=%u\n", pid, gpu, mib);
        ctx_fds[n_ctx++] = fd;
}

static gr_gpu_report *query(const char *library, uint64_t timeout_ms)
{
        gr_gpu_options o = { .library = library, .timeout_ms = timeout_ms };
        gr_gpu_query *q = NULL;
        pid_t helper = 0;
        assert_int_equal(gr_gpu_query_start(&o, &q, &helper), 0);
        assert_true(helper > 0 && helper != getpid());
        gr_gpu_report *r = NULL;
        assert_int_equal(gr_gpu_query_finish(q, &r), 0);
        assert_non_null(r);
        return r;
}

static void many_contexts_with_stride(unsigned stride)
{
        char extra[32];
        snprintf(extra, sizeof(extra), "stride %u", stride);
        write_scenario(extra);
        gr_gpu_report *r = query(getenv("FAKE_NVML"), 10000);
        assert_int_equal(r->status, GR_GPU_OK);
        assert_int_equal(r->n_gpus, 2);
        assert_string_equal(r->gpus[1].name, "NVIDIA H200 NVL");
        assert_int_equal(r->gpus[1].minor, 4);
        const gr_gpu *g = &r->gpus[0];
        assert_int_equal(g->proc_stride, stride);
        assert_int_equal(g->n_procs, 100); /* more than the first buffer: grown on INSUFFICIENT_SIZE */
        uint64_t sum = 0;
        for (unsigned i = 0; i < g->n_procs; i++) {
                assert_true(g->procs[i].pid >= 1000 && g->procs[i].pid < 1100);
                assert_int_equal(g->procs[i].used_bytes, (uint64_t)(g->procs[i].pid - 999) << 20);
                sum += g->procs[i].used_bytes;
        }
        assert_true(sum == g->mem_used);
        assert_int_equal(r->gpus[1].n_procs, 0);
        gr_gpu_report_free(r);
}

static void process_list_grows_stride_24(void **state) { many_contexts_with_stride(24); }
static void process_list_grows_stride_32(void **state) { many_contexts_with_stride(32); }

static void v3_missing_falls_back_to_v2(void **state)
{
        write_scenario("fail nvmlDeviceGetComputeRunningProcesses_v3 13");
        gr_gpu_report *r = query(getenv("FAKE_NVML"), 10000);
        assert_int_equal(r->status, GR_GPU_OK);
        assert_int_equal(r->gpus[0].n_procs, 100);
        assert_int_equal(r->gpus[0].proc_stride, 24);
        gr_gpu_report_free(r);
}

static void hang_is_abandoned_at_deadline(void **state)
{
        write_scenario("hang nvmlDeviceGetUUID");
        gr_gpu_report *r = query(getenv("FAKE_NVML"), 200);
        assert_int_equal(r->status, GR_GPU_TIMEOUT);
        assert_string_equal(r->stuck_call, "nvmlDeviceGetUUID");
        assert_non_null(strstr(r->error, "did not answer 'nvmlDeviceGetUUID' within 200 ms"));
        assert_int_equal(r->n_gpus, 0);
        gr_gpu_report_free(r);
}

static void missing_library(void **state)
{
        gr_gpu_report *r = query("/nonexistent/libnvidia-ml.so.1", 1000);
        assert_int_equal(r->status, GR_GPU_NO_LIBRARY);
        assert_non_null(strstr(r->error, "cannot load '/nonexistent/libnvidia-ml.so.1'"));
        gr_gpu_report_free(r);
}

static int setup(void **state)
{
        assert_non_null(mkdtemp(dir));
        snprintf(scenario_path, sizeof(scenario_path), "%s/scenario", dir);
        setenv("GPUREAP_FAKE_NVML_SCENARIO", scenario_path, 1);
        for (unsigned i = 0; i < 100; i++)
                add_context(1000 + i, 0, i + 1);
        return 0;
}

static int teardown(void **state)
{
        char path[512];
        for (unsigned i = 0; i < n_ctx; i++) {
                close(ctx_fds[i]);
                snprintf(path, sizeof(path), "%s/ctx-%u", dir, 1000 + i);
                unlink(path);
                snprintf(path, sizeof(path), "%s/ctx-%u.released", dir, 1000 + i);
                unlink(path);
        }
        unlink(scenario_path);
        rmdir(dir);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(process_list_grows_stride_24),
                cmocka_unit_test(process_list_grows_stride_32),
                cmocka_unit_test(v3_missing_falls_back_to_v2),
                cmocka_unit_test(hang_is_abandoned_at_deadline),
                cmocka_unit_test(missing_library),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
