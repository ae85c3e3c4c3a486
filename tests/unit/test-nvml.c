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
#include <time.h>
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
        gr_gpu_options o = { .library = library, .timeout_ms = timeout_ms, .helper = getenv("NVML_HELPER") };
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

/* the caller's whole deadline (gpureap check's) cuts a hung call long before its own 60 s, and
 * the report names the GPU the call was about: -1 for nvmlInit, which is about none */
static void hang_is_abandoned_at_the_whole_deadline(void **state)
{
        static const struct { const char *scenario, *call; int gpu; } cases[] = {
                { "hang nvmlDeviceGetUUID gpu=1", "nvmlDeviceGetUUID", 1 },
                { "hang nvmlInit_v2", "nvmlInit_v2", -1 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                write_scenario(cases[i].scenario);
                gr_gpu_options o = { .library = getenv("FAKE_NVML"), .timeout_ms = 60000, .helper = getenv("NVML_HELPER"),
                                     .deadline_ms = gr_now_ms() + 300 };
                gr_gpu_query *q = NULL;
                assert_int_equal(gr_gpu_query_start(&o, &q, NULL), 0);
                gr_gpu_report *r = NULL;
                assert_int_equal(gr_gpu_query_finish(q, &r), 0);
                assert_int_equal(r->status, GR_GPU_TIMEOUT);
                assert_string_equal(r->stuck_call, cases[i].call);
                assert_int_equal(r->stuck_gpu, cases[i].gpu);
                assert_non_null(strstr(r->error, "(the deadline)"));
                gr_gpu_report_free(r);
        }
}

static void missing_library(void **state)
{
        gr_gpu_report *r = query("/nonexistent/libnvidia-ml.so.1", 1000);
        assert_int_equal(r->status, GR_GPU_NO_LIBRARY);
        assert_non_null(strstr(r->error, "cannot load '/nonexistent/libnvidia-ml.so.1'"));
        gr_gpu_report_free(r);
}

/* The driver's numbers are checked where a report is copied: issue 9 item 10 */
static void inconsistent_memory_is_flagged(void **state)
{
        write_scenario("bad_memory 1 200000");
        gr_gpu_report *r = query(getenv("FAKE_NVML"), 10000);
        assert_int_equal(r->status, GR_GPU_OK);
        assert_false(r->gpus[0].mem_inconsistent);
        assert_true(r->gpus[1].mem_inconsistent);
        assert_non_null(strstr(r->gpus[1].error, "inconsistent memory numbers from the driver: 195.3 GiB used of 140.4 GiB total"));
        gr_gpu_report_free(r);
}

static void memory_check_cases(void **state)
{
        const uint64_t M = 1ULL << 20;
        struct {
                int api;
                uint64_t total, reserved, used, free;
                bool ok;
                const char *why;
        } cases[] = {
                { 2, 1000 * M, 100 * M, 200 * M, 700 * M, true, NULL },
                { 2, 1000 * M, 100 * M, 200 * M, 700 * M + M, true, NULL },   /* 1 MiB of slack */
                { 2, 1000 * M, 400 * M, 400 * M, 400 * M, false, "add up to 1.2 GiB, more than the 1000 MiB total" },
                { 2, 1000 * M, 100 * M, 5000 * M, 100 * M, false, "4.9 GiB used of 1000 MiB total" },
                { 2, 1000 * M, 100 * M, 100 * M, UINT64_MAX - 5, false, "free of 1000 MiB total" },
                { 1, 1000 * M, GR_UNKNOWN_U64, 300 * M, 700 * M, true, NULL }, /* v1: no reserve */
                { 1, 0, GR_UNKNOWN_U64, 0, 0, false, "a total of 0 B" },
                { 2, 1000 * M, UINT64_MAX / 2, 0, 0, false, "reserved of 1000 MiB total" },
                { 0, GR_UNKNOWN_U64, GR_UNKNOWN_U64, GR_UNKNOWN_U64, GR_UNKNOWN_U64, true, NULL }, /* unread */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                gr_gpu g = { .mem_api = cases[i].api, .mem_total = cases[i].total, .mem_reserved = cases[i].reserved,
                             .mem_used = cases[i].used, .mem_free = cases[i].free };
                assert_int_equal(gr_gpu_check_memory(&g), cases[i].ok);
                assert_int_equal(g.mem_inconsistent, !cases[i].ok);
                if (!cases[i].why)
                        assert_string_equal(g.error, "");
                else if (!strstr(g.error, cases[i].why))
                        fail_msg("case %zu: '%s' lacks '%s'", i, g.error, cases[i].why);
                /* checked twice (a replay of a recorded report): the reason is there once */
                char first[sizeof(g.error)];
                memcpy(first, g.error, sizeof(first));
                gr_gpu_check_memory(&g);
                assert_string_equal(g.error, first);
        }
}

/* The caller was busy far longer than the timeout (a slow /proc scan): an answer the helper
 * gave meanwhile still counts. Issue 9 item 7; before, this was a "did not answer" timeout. */
static void late_caller_gets_the_answer(void **state)
{
        write_scenario("");
        gr_gpu_options o = { .library = getenv("FAKE_NVML"), .timeout_ms = 100, .helper = getenv("NVML_HELPER") };
        gr_gpu_query *q = NULL;
        assert_int_equal(gr_gpu_query_start(&o, &q, NULL), 0);
        struct timespec busy = { 0, 600 * 1000 * 1000 };
        nanosleep(&busy, NULL);
        gr_gpu_report *r = NULL;
        assert_int_equal(gr_gpu_query_finish(q, &r), 0);
        assert_int_equal(r->status, GR_GPU_OK);
        assert_int_equal(r->n_gpus, 2);
        gr_gpu_report_free(r);
}

static void missing_helper_is_a_driver_failure(void **state)
{
        write_scenario("");
        gr_gpu_options o = { .library = getenv("FAKE_NVML"), .timeout_ms = 1000, .helper = "/nonexistent/helper" };
        gr_gpu_query *q = NULL;
        pid_t helper = -1;
        assert_int_equal(gr_gpu_query_start(&o, &q, &helper), 0);
        assert_int_equal(helper, 0);
        gr_gpu_report *r = NULL;
        assert_int_equal(gr_gpu_query_finish(q, &r), 0);
        assert_int_equal(r->status, GR_GPU_FAILED);
        assert_non_null(strstr(r->error, "cannot start the NVML helper '/nonexistent/helper'"));
        gr_gpu_report_free(r);
}

/* Issue 14 item 1: N GPUs whose handle calls each take delay_ms, logged by the fake as they
 * begin with the number of calls in the library then (see fake-nvml.c) */
static char log_path[300];

static void write_gpus(unsigned n, unsigned delay_ms, const char *extra)
{
        FILE *f = fopen(scenario_path, "w");
        assert_non_null(f);
        fprintf(f, "log %s\ndelay nvmlDeviceGetHandleByIndex_v2 %u\n%s\n", log_path, delay_ms, extra);
        for (unsigned i = 0; i < n; i++)
                fprintf(f, "gpu %u\n", i);
        fclose(f);
        unlink(log_path);
}

struct calls_seen {
        unsigned most_all, most_handles, handles, pids;
        bool handle_of[GR_GPUS_MAX];
};

static struct calls_seen calls_seen(void)
{
        struct calls_seen c = { 0 };
        FILE *f = fopen(log_path, "r");
        assert_non_null(f);
        char fn[80];
        int pid, gpu, last_pid = 0;
        unsigned all, same;
        while (fscanf(f, "%d %79s %d %u %u", &pid, fn, &gpu, &all, &same) == 5) {
                if (pid != last_pid)
                        c.pids++;
                last_pid = pid;
                if (all > c.most_all)
                        c.most_all = all;
                if (strcmp(fn, "nvmlDeviceGetHandleByIndex_v2") != 0)
                        continue;
                c.handles++;
                if (same > c.most_handles)
                        c.most_handles = same;
                if (gpu >= 0 && gpu < GR_GPUS_MAX)
                        c.handle_of[gpu] = true;
        }
        fclose(f);
        return c;
}

static struct calls_seen query_threads(unsigned n_gpus, unsigned threads)
{
        write_gpus(n_gpus, 20, "");
        gr_gpu_options o = { .library = getenv("FAKE_NVML"), .timeout_ms = 10000, .helper = getenv("NVML_HELPER"),
                             .nvml_threads = threads };
        gr_gpu_query *q = NULL;
        assert_int_equal(gr_gpu_query_start(&o, &q, NULL), 0);
        gr_gpu_report *r = NULL;
        assert_int_equal(gr_gpu_query_finish(q, &r), 0);
        assert_int_equal(r->status, GR_GPU_OK);
        assert_int_equal(r->n_gpus, n_gpus);
        for (unsigned i = 0; i < n_gpus; i++) {
                char uuid[64];
                snprintf(uuid, sizeof(uuid), "GPU-fa4e0000-0000-4000-8000-%012u", i);
                assert_int_equal(r->gpus[i].index, i);
                assert_string_equal(r->gpus[i].uuid, uuid);
                assert_string_equal(r->gpus[i].error, "");
        }
        gr_gpu_report_free(r);
        struct calls_seen c = calls_seen();
        assert_int_equal(c.pids, 1);
        assert_int_equal(c.handles, n_gpus);
        for (unsigned i = 0; i < n_gpus; i++)
                assert_true(c.handle_of[i]);
        return c;
}

/* negative control: one thread makes one call at a time, so the checks below can fail */
static void one_thread_reads_one_gpu_at_a_time(void **state)
{
        struct calls_seen c = query_threads(8, 1);
        assert_int_equal(c.most_handles, 1);
        assert_int_equal(c.most_all, 1);
}

static void threads_bound_the_calls_at_once(void **state)
{
        struct calls_seen c = query_threads(8, 4);
        assert_true(c.most_handles > 1);
        assert_true(c.most_all <= 4);
        c = query_threads(64, 0); /* the default: 16 */
        assert_true(c.most_handles > 1);
        assert_true(c.most_all <= 16);
        c = query_threads(64, 1000); /* more than allowed: 16 */
        assert_true(c.most_all <= 16);
}

/* the drain watcher takes its handles in threads too, and is ready once all are taken */
static void drain_watcher_takes_handles_at_once(void **state)
{
        write_gpus(8, 20, "");
        gr_gpu_options o = { .library = getenv("FAKE_NVML"), .timeout_ms = 10000, .helper = getenv("NVML_HELPER") };
        gr_drain *d = NULL;
        assert_int_equal(gr_drain_start(&o, &d), 0);
        uint64_t targets[8];
        for (unsigned i = 0; i < 8; i++)
                targets[i] = 1ULL << 40;
        assert_true(gr_drain_arm(d, targets, 8, gr_now_ms() + 10000));
        uint64_t at = 0;
        assert_true(gr_drain_wait(d, gr_now_ms() + 10000, &at));
        gr_drain_free(d);
        struct calls_seen c = calls_seen();
        assert_int_equal(c.handles, 8);
        assert_true(c.most_handles > 1);
        assert_true(c.most_all <= 16);
}

static int setup(void **state)
{
        assert_non_null(mkdtemp(dir));
        snprintf(scenario_path, sizeof(scenario_path), "%s/scenario", dir);
        snprintf(log_path, sizeof(log_path), "%s/calls", dir);
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
        unlink(log_path);
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
                cmocka_unit_test(hang_is_abandoned_at_the_whole_deadline),
                cmocka_unit_test(missing_library),
                cmocka_unit_test(inconsistent_memory_is_flagged),
                cmocka_unit_test(memory_check_cases),
                cmocka_unit_test(late_caller_gets_the_answer),
                cmocka_unit_test(missing_helper_is_a_driver_failure),
                cmocka_unit_test(one_thread_reads_one_gpu_at_a_time),
                cmocka_unit_test(threads_bound_the_calls_at_once),
                cmocka_unit_test(drain_watcher_takes_handles_at_once),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
