/* The /proc scan on a recorded fixture tree and on this live system. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include <pthread.h>

#include "gpureap/proc.h"

static char fixture[1024];

static void fixture_ghost_tree(void **state)
{
        gr_proc_options o = { .proc_root = fixture, .dev_dir = "/dev" };
        gr_proc_table *t = NULL;
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_BPF, NULL); /* asked for, but the iterator cannot see a recording */
        assert_int_equal(gr_proc_scan(&o, &t), 0);
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_AUTO, NULL);
        assert_int_equal(t->scan, GR_SCAN_PROC);
        assert_non_null(strstr(t->scan_fallback, "not /proc"));
        /* 1, 2, 200, 300, 500; 400 vanished (no stat); "self" and "stat" are not PIDs */
        assert_int_equal(t->n, 5);
        assert_int_equal(t->n_vanished, 1);
        assert_int_equal(t->n_holders, 1);
        assert_int_equal(t->boot_time, 1764684000);
        for (size_t i = 1; i < t->n; i++)
                assert_true(t->procs[i - 1].pid < t->procs[i].pid);

        gr_process *p = gr_proc_table_find(t, 200);
        assert_non_null(p);
        assert_non_null(p->hold);
        assert_int_equal(p->hold->n_fds, 7);
        assert_int_equal(p->hold->n_ctl, 1);
        assert_int_equal(p->hold->n_uvm, 2);
        assert_int_equal(p->hold->n_caps, 1);
        assert_int_equal(p->hold->n_maps, 3);
        assert_int_equal(p->hold->n_gpus, 2);
        assert_int_equal(p->hold->gpus[0].minor, 0);
        assert_int_equal(p->hold->gpus[0].n_fds, 2);
        assert_int_equal(p->hold->gpus[1].minor, 1);
        assert_int_equal(p->hold->gpus[1].n_fds, 1);
        assert_true(p->has_details);
        assert_int_equal(p->uid, 1000);
        assert_int_equal(p->n_nspid, 2);
        assert_int_equal(p->nspid[1], 7);
        assert_string_equal(p->cmdline, "python3 -m sglang.launch_server --tp-size 8");
        assert_string_equal(p->cgroup, "/kubepods/besteffort/pod1234/cri-containerd-abc");
        assert_int_equal(p->ppid, 1);
        assert_int_equal(p->pgrp, 100);
        assert_int_equal(p->start_time, 5000);

        p = gr_proc_table_find(t, 300);
        assert_non_null(p);
        assert_string_equal(p->comm, "a) b (c)?d" /* its newline shown as ? */);
        assert_null(p->hold);
        assert_false(p->has_details); /* details are read for holders and on demand */
        assert_int_equal(gr_proc_load_details(&o, p), 0);
        assert_true(p->has_details);

        p = gr_proc_table_find(t, 500);
        assert_non_null(p);
        assert_int_equal(p->state, 'Z');
        assert_null(p->hold);

        p = gr_proc_table_find(t, 2);
        assert_non_null(p);
        assert_int_equal(gr_proc_load_details(&o, p), -ESRCH); /* no status: a kernel thread here */

        assert_null(gr_proc_table_find(t, 400));
        assert_null(gr_proc_table_find(t, 100));
        gr_proc_table_free(t);
}

static void fixture_other_dev_dir_finds_nothing(void **state)
{
        /* negative control: the same tree seen with another device directory has no holder */
        gr_proc_options o = { .proc_root = fixture, .dev_dir = "/dev/shm" };
        gr_proc_table *t = NULL;
        assert_int_equal(gr_proc_scan(&o, &t), 0);
        assert_int_equal(t->n_holders, 0);
        gr_proc_table_free(t);
}

static void live_scan_finds_this_process(void **state)
{
        char dir[] = "/tmp/gpureap-unit.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[256];
        snprintf(path, sizeof(path), "%s/nvidia5", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);

        gr_proc_options o = { .proc_root = "/proc", .dev_dir = dir };
        gr_proc_table *t = NULL;
        assert_int_equal(gr_proc_scan(&o, &t), 0);
        gr_process *me = gr_proc_table_find(t, getpid());
        assert_non_null(me);
        assert_non_null(me->hold);
        assert_int_equal(me->hold->n_gpus, 1);
        assert_int_equal(me->hold->gpus[0].minor, 5);
        assert_int_equal(t->n_holders, 1);
        assert_int_equal(gr_proc_same_process("/proc", getpid(), me->start_time), 1);
        assert_int_equal(gr_proc_same_process("/proc", getpid(), me->start_time + 1), 0);
        gr_proc_table_free(t);

        close(fd);
        assert_int_equal(gr_proc_scan(&o, &t), 0);
        me = gr_proc_table_find(t, getpid());
        assert_non_null(me);
        assert_null(me->hold);
        assert_int_equal(t->n_holders, 0);
        gr_proc_table_free(t);
        unlink(path);
        rmdir(dir);
}

/* The BPF scan and the /proc scan on this live system: the same holding of this process */
static void live_bpf_scan_matches_proc(void **state)
{
        char dir[] = "/tmp/gpureap-unit.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[256];
        snprintf(path, sizeof(path), "%s/nvidia6", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        int fd2 = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0 && fd2 >= 0);
        gr_proc_options o = { .proc_root = "/proc", .dev_dir = dir };
        gr_proc_table *tb = NULL, *tp = NULL;
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_BPF, NULL);
        assert_int_equal(gr_proc_scan(&o, &tb), 0);
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_PROC, NULL);
        assert_int_equal(gr_proc_scan(&o, &tp), 0);
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_AUTO, NULL);
        close(fd);
        close(fd2);
        unlink(path);
        rmdir(dir);
        assert_int_equal(tp->scan, GR_SCAN_PROC);
        if (tb->scan != GR_SCAN_BPF) {
                fprintf(stderr, "the BPF scan cannot run here: %s\n", tb->scan_fallback);
                gr_proc_table_free(tb);
                gr_proc_table_free(tp);
                skip();
        }
        assert_string_equal(tb->scan_fallback, "");
        gr_process *b = gr_proc_table_find(tb, getpid()), *q = gr_proc_table_find(tp, getpid());
        assert_non_null(b);
        assert_non_null(q);
        assert_non_null(b->hold);
        assert_non_null(q->hold);
        assert_int_equal(b->hold->n_gpus, 1);
        assert_int_equal(b->hold->gpus[0].minor, 6);
        assert_int_equal(b->hold->gpus[0].n_fds, 2);
        assert_memory_equal(b->hold, q->hold, sizeof(*b->hold));
        assert_int_equal(tb->n_holders, 1);
        assert_int_equal(tp->n_holders, 1);
        gr_proc_table_free(tb);
        gr_proc_table_free(tp);
}

static void threaded_scan_matches_single(void **state)
{
        char dir[] = "/tmp/gpureap-unit.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[256];
        snprintf(path, sizeof(path), "%s/nvidia7", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        for (unsigned threads = 1; threads <= 4; threads += 3) {
                gr_proc_options o = { .proc_root = "/proc", .dev_dir = dir, .threads = threads };
                gr_proc_table *t = NULL;
                assert_int_equal(gr_proc_scan(&o, &t), 0);
                assert_true(t->n > 1);
                for (size_t i = 1; i < t->n; i++)
                        assert_true(t->procs[i - 1].pid < t->procs[i].pid);
                assert_int_equal(t->n_holders, 1);
                gr_process *me = gr_proc_table_find(t, getpid());
                assert_non_null(me);
                assert_non_null(me->hold);
                assert_int_equal(me->hold->gpus[0].minor, 7);
                gr_proc_table_free(t);
        }
        close(fd);
        unlink(path);
        rmdir(dir);
}

static void missing_root_is_an_error(void **state)
{
        gr_proc_options o = { .proc_root = "/nonexistent/proc", .dev_dir = "/dev" };
        gr_proc_table *t = (gr_proc_table *)0x1;
        assert_int_equal(gr_proc_scan(&o, &t), -ENOENT);
        assert_ptr_equal(t, (gr_proc_table *)0x1);
}

static void bounded_file_reads(void **state)
{
        char dir[] = "/tmp/gpureap-unit.XXXXXX";
        assert_non_null(mkdtemp(dir));
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        int fd = openat(dfd, "f", O_WRONLY | O_CREAT, 0600);
        assert_int_equal(write(fd, "0123456789", 10), 10);
        close(fd);
        char buf[11];
        size_t len = 0;
        assert_int_equal(gr_read_file_at(dfd, "f", buf, sizeof(buf), &len), 0);
        assert_int_equal(len, 10);
        char small[5];
        assert_int_equal(gr_read_file_at(dfd, "f", small, sizeof(small), &len), -EFBIG);
        assert_string_equal(small, "0123");
        assert_int_equal(gr_read_file_at(dfd, "nope", buf, sizeof(buf), &len), -ESRCH);
        unlinkat(dfd, "f", 0);
        close(dfd);
        rmdir(dir);
}

static int no_line(const char *line, size_t len, void *userdata)
{
        (*(unsigned *)userdata)++;
        return 0;
}

/* Issue 9 item 9: a FIFO in a recorded tree blocked the reader for ever; a directory or a
 * device is no file of a process either. Refused at once, and a real /proc file still reads. */
static void only_regular_files_are_read(void **state)
{
        char dir[] = "/tmp/gpureap-unit.XXXXXX";
        assert_non_null(mkdtemp(dir));
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
        assert_int_equal(mkdirat(dfd, "sub", 0700), 0);
        char buf[64];
        size_t len = 0;
        unsigned lines = 0;
        assert_int_equal(gr_read_file_at(dfd, "fifo", buf, sizeof(buf), &len), -EINVAL);
        assert_int_equal(gr_read_lines_at(dfd, "fifo", no_line, &lines), -EINVAL);
        assert_int_equal(gr_read_file_at(dfd, "sub", buf, sizeof(buf), &len), -EINVAL);
        assert_int_equal(gr_read_file_at(AT_FDCWD, "/dev/zero", buf, sizeof(buf), &len), -EINVAL);
        assert_int_equal(gr_read_lines_at(AT_FDCWD, "/dev/zero", no_line, &lines), -EINVAL);
        assert_int_equal(lines, 0);
        int r = gr_read_file_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf), &len);
        assert_true(r == 0 || r == -EFBIG); /* longer than 63 bytes: a prefix is fine */
        assert_true(len > 0);
        assert_int_equal(gr_read_lines_at(AT_FDCWD, "/proc/self/status", no_line, &lines), 0);
        assert_true(lines > 5);
        unlinkat(dfd, "fifo", 0);
        unlinkat(dfd, "sub", AT_REMOVEDIR);
        close(dfd);
        rmdir(dir);
}

/* The library reads no environment: the default context's settings stand for options left NULL,
 * and a reason given with the /proc scan is the table's fallback */
static void defaults_are_the_programs(void **state)
{
        setenv("GPUREAP_PROC_ROOT", "/nonexistent", 1); /* the command's variable: not read here */
        gr_context_set_proc_root(NULL, fixture);
        gr_context_set_dev_dir(NULL, "/dev");
        assert_string_equal(gr_context_proc_root(NULL), fixture);
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_PROC, "the caller said so");
        gr_proc_table *t = NULL;
        assert_int_equal(gr_proc_scan(&(gr_proc_options){ 0 }, &t), 0);
        gr_context_set_proc_root(NULL, NULL);
        gr_context_set_dev_dir(NULL, NULL);
        gr_context_set_scan_mode(NULL, GR_SCAN_MODE_AUTO, NULL);
        unsetenv("GPUREAP_PROC_ROOT");
        assert_string_equal(gr_context_proc_root(NULL), "/proc");
        assert_string_equal(gr_context_dev_dir(NULL), "/dev");
        assert_int_equal(t->scan, GR_SCAN_PROC);
        assert_string_equal(t->scan_fallback, "the caller said so");
        assert_int_equal(t->n, 5); /* the fixture's processes */
        gr_process *p = gr_proc_table_find(t, 200);
        assert_non_null(p);
        assert_non_null(p->hold);
        gr_proc_table_free(t);
}

/* A recorded AMD node (tests/fixtures/drm-amdgpu): DRM and KFD fds by name under the device
 * directory, kept apart from NVIDIA's holdings, in fd order; another directory names none */
static void fixture_drm_fds_by_name(void **state)
{
        char root[1100];
        snprintf(root, sizeof(root), "%.*s/drm-amdgpu/proc", (int)(strrchr(fixture, '/') - fixture), fixture);
        gr_proc_options o = { .proc_root = root, .dev_dir = "/dev" };
        gr_proc_table *t = NULL;
        assert_int_equal(gr_proc_scan(&o, &t), 0);
        assert_int_equal(t->n_holders, 0);
        assert_int_equal(t->n_drm_holders, 4); /* 710, 800, 810, 811 */
        gr_process *p = gr_proc_table_find(t, 710);
        assert_non_null(p);
        assert_null(p->hold);
        assert_non_null(p->drm);
        assert_int_equal(p->drm->n, 2);
        assert_int_equal(p->drm->n_kfd, 1);
        assert_int_equal(p->drm->fds[0].fd, 5);
        assert_int_equal(p->drm->fds[0].node, GR_DRM_NODE_KFD);
        assert_int_equal(p->drm->fds[1].fd, 6);
        assert_int_equal(p->drm->fds[1].node, GR_DRM_NODE_RENDER);
        assert_int_equal(p->drm->fds[1].minor, 128);
        assert_true(p->has_details); /* a holder: its details are read */
        assert_null(gr_proc_table_find(t, 790)->drm); /* its terminal is no DRM file */
        gr_proc_table_free(t);
        o.dev_dir = "/elsewhere";
        assert_int_equal(gr_proc_scan(&o, &t), 0);
        assert_int_equal(t->n_drm_holders, 0);
        gr_proc_table_free(t);
}

struct ctx_scan {
        gr_context *ctx;
        gr_proc_table *t;
        int r;
};

static void *scan_in(void *userdata)
{
        struct ctx_scan *cs = userdata;
        cs->r = gr_proc_scan(&(gr_proc_options){ .ctx = cs->ctx }, &cs->t);
        return NULL;
}

/* Two contexts in one process, scanning at once in two threads: each scan has its own context's
 * root, device directory and scan mode, and the default context is left as it was */
static void contexts_do_not_mix(void **state)
{
        gr_context *a = NULL, *b = NULL;
        assert_int_equal(gr_context_new(&a), 0);
        assert_int_equal(gr_context_new(&b), 0);
        gr_context_set_proc_root(a, fixture);
        gr_context_set_dev_dir(a, "/dev");
        gr_context_set_scan_mode(a, GR_SCAN_MODE_PROC, "context a said so");
        gr_context_set_proc_root(b, fixture);
        gr_context_set_dev_dir(b, "/dev/shm"); /* the fixture's holders hold /dev/nvidia* */
        assert_string_equal(gr_context_proc_root(NULL), "/proc");
        assert_string_equal(gr_context_dev_dir(b), "/dev/shm");
        assert_string_equal(gr_context_sys_root(a), "/sys");
        struct ctx_scan sa = { .ctx = a }, sb = { .ctx = b };
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, scan_in, &sa), 0);
        assert_int_equal(pthread_create(&tb, NULL, scan_in, &sb), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        assert_int_equal(sa.r, 0);
        assert_int_equal(sb.r, 0);
        assert_int_equal(sa.t->n, 5);
        assert_int_equal(sb.t->n, 5);
        assert_string_equal(sa.t->scan_fallback, "context a said so");
        assert_non_null(strstr(sb.t->scan_fallback, "not /proc")); /* auto: the iterator cannot see a recording */
        assert_non_null(gr_proc_table_find(sa.t, 200)->hold);
        assert_null(gr_proc_table_find(sb.t, 200)->hold);
        assert_string_equal(gr_context_proc_root(NULL), "/proc");
        assert_string_equal(gr_context_dev_dir(NULL), "/dev");
        gr_proc_table_free(sa.t);
        gr_proc_table_free(sb.t);
        gr_context_set_proc_root(a, "");      /* back to the default */
        assert_string_equal(gr_context_proc_root(a), "/proc");
        gr_context_free(a);
        gr_context_free(b);
        gr_context_free(gr_context_default()); /* not freed: still usable */
        assert_string_equal(gr_context_proc_root(gr_context_default()), "/proc");
}

int main(void)
{
        const char *f = getenv("FIXTURES");
        snprintf(fixture, sizeof(fixture), "%s/proc-ghost", f ? f : "tests/fixtures");
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(fixture_ghost_tree),
                cmocka_unit_test(fixture_other_dev_dir_finds_nothing),
                cmocka_unit_test(fixture_drm_fds_by_name),
                cmocka_unit_test(live_scan_finds_this_process),
                cmocka_unit_test(threaded_scan_matches_single),
                cmocka_unit_test(live_bpf_scan_matches_proc),
                cmocka_unit_test(missing_root_is_an_error),
                cmocka_unit_test(bounded_file_reads),
                cmocka_unit_test(only_regular_files_are_read),
                cmocka_unit_test(defaults_are_the_programs),
                cmocka_unit_test(contexts_do_not_mix),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
