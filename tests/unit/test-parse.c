/* Unit tests of the pure parsers: stat, status, cgroup, cmdline, device paths, maps lines,
 * numbers, sizes and durations, GPU selectors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "gpureap/snapshot.h"

#define STAT_TAIL " 0 0 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n"

static void stat_plain(void **state)
{
        const char *s = "4242 (python3) S 1 4242 4242" STAT_TAIL;
        gr_stat st;
        assert_int_equal(gr_parse_stat(s, strlen(s), &st), 0);
        assert_int_equal(st.pid, 4242);
        assert_string_equal(st.comm, "python3");
        assert_int_equal(st.state, 'S');
        assert_int_equal(st.ppid, 1);
        assert_int_equal(st.pgrp, 4242);
        assert_int_equal(st.session, 4242);
        assert_int_equal(st.n_threads, 1);
        assert_int_equal(st.start_time, 123456);
}

static void stat_comm_with_parens_spaces_newline(void **state)
{
        const char *s = "77 (a) b (c)\nd) ) Z 5 6 7" STAT_TAIL;
        gr_stat st;
        assert_int_equal(gr_parse_stat(s, strlen(s), &st), 0);
        assert_string_equal(st.comm, "a) b (c)?d) " /* the newline is shown as ? */);
        assert_int_equal(st.state, 'Z');
        assert_int_equal(st.ppid, 5);
        assert_int_equal(st.pgrp, 6);
        assert_int_equal(st.session, 7);
        assert_int_equal(st.start_time, 123456);
}

static void stat_long_comm_is_cut(void **state)
{
        char s[512];
        char comm[200];
        memset(comm, 'x', sizeof(comm) - 1);
        comm[sizeof(comm) - 1] = '\0';
        snprintf(s, sizeof(s), "9 (%s) R 1 9 9" STAT_TAIL, comm);
        gr_stat st;
        assert_int_equal(gr_parse_stat(s, strlen(s), &st), 0);
        assert_int_equal(strlen(st.comm), GR_COMM_MAX - 1);
        assert_int_equal(st.state, 'R');
}

/* the flags (field 9): PF_EXITING (0x4), a process that is ending; PF_KTHREAD (0x200000) */
static void stat_flags(void **state)
{
        gr_stat st;
        const char *plain = "9 (x) S 1 9 9" STAT_TAIL; /* flags 0x400100 */
        assert_int_equal(gr_parse_stat(plain, strlen(plain), &st), 0);
        assert_false(st.exiting);
        assert_false(st.kthread);
        const char *ending = "9 (x) R 1 9 9 0 0 4194564 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000 10\n";
        assert_int_equal(gr_parse_stat(ending, strlen(ending), &st), 0);
        assert_true(st.exiting);
        assert_false(st.kthread);
        const char *kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0\n";
        assert_int_equal(gr_parse_stat(kthread, strlen(kthread), &st), 0);
        assert_false(st.exiting);
        assert_true(st.kthread);
}

static void stat_rejects_garbage(void **state)
{
        const char *bad[] = {
                "", "4242", "4242 (x", "4242 x) S 1 2 3", "(x) S 1 2 3" STAT_TAIL,
                "4242 (x) S 1 2", "4242 (x) SS 1 2 3" STAT_TAIL, "abc (x) S 1 2 3" STAT_TAIL,
                "4242 (x) S -1 2 3" STAT_TAIL, "4242 (x) S 1 2 3 0 0",
                "4242 (x) S 1 2 3 0 0 1 2 3 4 5 6 7 8 9 10 11 12 13 99999999999999999999999",
        };
        for (size_t i = 0; i < GR_ELEMENTSOF(bad); i++) {
                gr_stat st = { .pid = -7 };
                assert_true(gr_parse_stat(bad[i], strlen(bad[i]), &st) < 0);
                assert_int_equal(st.pid, -7); /* untouched on failure */
        }
}

static void status_uid_and_nspid(void **state)
{
        const char *s = "Name:\tgpuhold\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
                        "Uid:\t1000\t1001\t1002\t1003\nGid:\t0\t0\t0\t0\n"
                        "NSpid:\t4242\t17\t1\nNSpgid:\t4242\t17\t1\n";
        gr_status st;
        assert_int_equal(gr_parse_status(s, strlen(s), &st), 0);
        assert_true(st.has_uid);
        assert_int_equal(st.uid, 1000);
        assert_int_equal(st.n_nspid, 3);
        assert_int_equal(st.nspid[0], 4242);
        assert_int_equal(st.nspid[1], 17);
        assert_int_equal(st.nspid[2], 1);
}

static void status_without_fields(void **state)
{
        const char *s = "Name:\tx\nUid:\tnope\nNSpid:\n";
        gr_status st;
        assert_int_equal(gr_parse_status(s, strlen(s), &st), 0);
        assert_false(st.has_uid);
        assert_int_equal(st.n_nspid, 0);
}

static void status_nspid_bounded(void **state)
{
        const char *s = "NSpid:\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11\n";
        gr_status st;
        assert_int_equal(gr_parse_status(s, strlen(s), &st), 0);
        assert_int_equal(st.n_nspid, GR_NSPID_MAX);
        assert_int_equal(st.nspid[GR_NSPID_MAX - 1], GR_NSPID_MAX);
}

static void cgroup_v2_and_v1(void **state)
{
        char out[64];
        const char *v2 = "0::/kubepods/pod1234/cri-containerd-abc:def\n";
        assert_int_equal(gr_parse_cgroup(v2, strlen(v2), out, sizeof(out)), 0);
        assert_string_equal(out, "/kubepods/pod1234/cri-containerd-abc:def");

        const char *hybrid = "12:memory:/slurm/uid_0/job_42\n0::/system.slice/x.service\n";
        assert_int_equal(gr_parse_cgroup(hybrid, strlen(hybrid), out, sizeof(out)), 0);
        assert_string_equal(out, "/system.slice/x.service");

        const char *v1 = "12:memory:/slurm/uid_0/job_42\n11:cpu,cpuacct:/slurm/uid_0/job_42/step_0\n";
        assert_int_equal(gr_parse_cgroup(v1, strlen(v1), out, sizeof(out)), 0);
        assert_string_equal(out, "/slurm/uid_0/job_42");

        assert_int_equal(gr_parse_cgroup("garbage", 7, out, sizeof(out)), -ENOENT);
        char small[8];
        assert_int_equal(gr_parse_cgroup(v2, strlen(v2), small, sizeof(small)), 0);
        assert_string_equal(small, "/kubepo");
}

static void cgroup_container_ids(void **state)
{
        char id[16];
        const char *h64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char path[256];
        /* prefix and suffix around the id, as each runtime lays its cgroups out */
        const char *forms[][2] = { { "/system.slice/docker-", ".scope" },
                                   { "/kubepods/besteffort/pod1/cri-containerd-", ".scope" },
                                   { "/kubepods.slice/x.slice/crio-", ".scope" },
                                   { "/docker/", "" },
                                   { "/machine.slice/libpod-", ".scope" } };
        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                snprintf(path, sizeof(path), "%s%s%s", forms[i][0], h64, forms[i][1]);
                assert_int_equal(gr_cgroup_container_id(path, id, sizeof(id)), 0);
                assert_string_equal(id, "0123456789ab");
        }
        /* a job runner's 32-digit service id and other hex names are no container */
        assert_int_equal(gr_cgroup_container_id("/process_api/76df9027413b4a0c9e1f2d3b4c5a6978", id, sizeof(id)), -ENOENT);
        assert_int_equal(gr_cgroup_container_id("/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef.scope", id,
                                                sizeof(id)), -ENOENT);
        snprintf(path, sizeof(path), "/docker/%sff", h64); /* 66 digits */
        assert_int_equal(gr_cgroup_container_id(path, id, sizeof(id)), -ENOENT);
        snprintf(path, sizeof(path), "/user.slice/x%s.scope", h64); /* glued to a name */
        assert_int_equal(gr_cgroup_container_id(path, id, sizeof(id)), -ENOENT);
        assert_int_equal(gr_cgroup_container_id("/", id, sizeof(id)), -ENOENT);
}

/* A truncated read of /proc/PID/environ ends in the middle of an entry: never read as a value */
static void environ_marks_skip_a_cut_entry(void **state)
{
        gr_env_marks m;
        const char whole[] = "A=1\0SLURM_JOB_ID=1234\0GPUREAP_RUN_PID=4321\0";
        gr_parse_environ_marks(whole, sizeof(whole) - 1, &m);
        assert_string_equal(m.slurm_job_id, "1234");
        assert_int_equal(m.run_pid, 4321);
        const char cut[] = "A=1\0GPUREAP_RUN_PID=4321\0SLURM_JOB_ID=12"; /* was 1234 */
        gr_parse_environ_marks(cut, sizeof(cut) - 1, &m);
        assert_string_equal(m.slurm_job_id, "");
        assert_int_equal(m.run_pid, 4321);
        const char cut2[] = "A=1\0GPUREAP_RUN_PID=43"; /* was 4321 */
        gr_parse_environ_marks(cut2, sizeof(cut2) - 1, &m);
        assert_int_equal(m.run_pid, 0);
        assert_int_equal(gr_parse_environ_run_pid(cut2, sizeof(cut2) - 1), 0);
}

/* GPUREAP_RUN_REF=N@T is the start time of the run whose number is in GPUREAP_RUN_PID: in
 * either order; none when the numbers differ (an older gpureap's run inside set the number
 * alone), or when it is cut or malformed */
static void environ_marks_run_ref(void **state)
{
        gr_env_marks m;
        const char both[] = "GPUREAP_RUN_PID=4321\0GPUREAP_RUN_REF=4321@987654\0";
        gr_parse_environ_marks(both, sizeof(both) - 1, &m);
        assert_int_equal(m.run_pid, 4321);
        assert_true(m.run_start == 987654);
        const char swapped[] = "GPUREAP_RUN_REF=4321@987654\0X=1\0GPUREAP_RUN_PID=4321\0";
        gr_parse_environ_marks(swapped, sizeof(swapped) - 1, &m);
        assert_true(m.run_start == 987654);
        const char other[] = "GPUREAP_RUN_PID=555\0GPUREAP_RUN_REF=4321@987654\0";
        gr_parse_environ_marks(other, sizeof(other) - 1, &m);
        assert_int_equal(m.run_pid, 555);
        assert_true(m.run_start == 0);
        const char *bad[] = { "GPUREAP_RUN_REF=4321", "GPUREAP_RUN_REF=4321@", "GPUREAP_RUN_REF=4321@x1",
                              "GPUREAP_RUN_REF=@5", "GPUREAP_RUN_REF=4321@0", "GPUREAP_RUN_REF=4321@-5" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char buf[96];
                int n = snprintf(buf, sizeof(buf), "GPUREAP_RUN_PID=4321%c%s%c", 0, bad[i], 0);
                gr_parse_environ_marks(buf, (size_t)n, &m);
                assert_int_equal(m.run_pid, 4321);
                assert_true(m.run_start == 0);
        }
        const char cut[] = "GPUREAP_RUN_PID=4321\0GPUREAP_RUN_REF=4321@98"; /* was 987654 */
        gr_parse_environ_marks(cut, sizeof(cut) - 1, &m);
        assert_true(m.run_start == 0);
}

static void cmdline_rendering(void **state)
{
        char out[32];
        const char raw[] = "python3\0-m\0sglang.launch_server\0";
        gr_render_cmdline(raw, sizeof(raw) - 1, out, sizeof(out));
        assert_string_equal(out, "python3 -m sglang.launch_server");
        const char ctl[] = "a\nb\tc\0";
        gr_render_cmdline(ctl, sizeof(ctl) - 1, out, sizeof(out));
        assert_string_equal(out, "a?b?c");
        char tiny[4];
        gr_render_cmdline(raw, sizeof(raw) - 1, tiny, sizeof(tiny));
        assert_string_equal(tiny, "pyt");
}

/* Issue 9, items 11 and 12: text from other processes is made safe for terminals and JSON */
static void text_sanitize(void **state)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "python3 -m sglang", "python3 -m sglang" },
                { "", "" },
                { "\033]0;pwned\a\033[2J", "?]0;pwned??[2J" },  /* C0: ESC, BEL */
                { "a\tb\nc\rd", "a?b?c?d" },
                { "del\x7f", "del?" },
                { "c1\xc2\x9b" "2J", "c1?2J" },                /* U+009B CSI: one '?' */
                { "\xc2\x80\xc2\x9f", "??" },                  /* the C1 range's ends */
                { "nbsp\xc2\xa0x", "nbsp\xc2\xa0x" },            /* U+00A0 is not a control */
                { "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80" },
                { "aaaaaaaaaaaaaa\xc3", "aaaaaaaaaaaaaa?" },         /* cut by the kernel at 15 bytes */
                { "\xe6\x97", "??" },                           /* cut 3-byte sequence */
                { "\xf0\x9f\x98", "???" },
                { "\xff\xfe", "??" },
                { "\xc0\xaf", "??" },                           /* overlong '/' */
                { "\xe0\x80\xaf", "???" },
                { "\xed\xa0\x80", "???" },                      /* a surrogate */
                { "\xf4\x90\x80\x80", "????" },                 /* past U+10FFFF */
                { "\xf5\x80", "??" },
                { "\x80x\xbf", "?x?" },                          /* stray continuation bytes */
                { "\xc3(", "?(" },                               /* a lead byte without its continuation */
                { "\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\xef\xbf\xbf\xf4\x8f\xbf\xbf" }, /* U+FFFF, U+10FFFF */
                { "\xe2\x80\xaeniart", "?niart" },             /* U+202E RIGHT-TO-LEFT OVERRIDE */
                { "\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9\xd8\x9c\xe2\x80\x8f", "?????" }, /* U+202A, 2066, 2069, 061C, 200F */
                { "\xe2\x80\xa8\xe2\x80\xa9\xe2\x81\xaa\xe2\x81\xaf", "????" }, /* U+2028, 2029, 206A, 206F */
                { "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xb0", "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xb0" }, /* U+2027, U+202F, U+2070: their neighbours stay */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char buf[128];
                gr_strlcpy(buf, cases[i].in, sizeof(buf));
                size_t n = gr_text_sanitize(buf);
                if (strcmp(buf, cases[i].out) != 0)
                        fail_msg("case %zu: got '%s', want '%s'", i, buf, cases[i].out);
                assert_int_equal(n > 0, strcmp(cases[i].in, cases[i].out) != 0);
                assert_int_equal(gr_text_is_clean(cases[i].in), strcmp(cases[i].in, cases[i].out) == 0);
                assert_true(gr_text_is_clean(buf));
                assert_int_equal(gr_text_sanitize(buf), 0); /* once is enough */
        }
        assert_int_equal(gr_text_sanitize(NULL), 0);
}

/* An argument quoted for a message: what sanitize replaces becomes \xNN, a byte each; cut with
 * "..." between characters, never inside an escape or a UTF-8 sequence */
static void text_quote(void **state)
{
        static const struct {
                const char *in, *out;
                size_t size;
        } cases[] = {
                { "--gpu", "--gpu", 128 },
                { "", "", 128 },
                { "a\033[31mb\nc\377d", "a\\x1b[31mb\\x0ac\\xffd", 128 },
                { "del\x7f", "del\\x7f", 128 },
                { "c1\xc2\x9b", "c1\\xc2\\x9b", 128 },          /* U+009B CSI: its two bytes */
                { "caf\xc3\xa9", "caf\xc3\xa9", 128 },            /* UTF-8 is kept */
                { "\xe6\x97", "\\xe6\\x97", 128 },              /* a cut sequence */
                { "abcdefgh", "abcd...", 8 },                     /* cut, with room for "..." */
                { "abcdefg", "abcdefg", 8 },                      /* fits: not cut */
                { "ab\033cdefgh", "ab...", 8 },                  /* an escape is never cut */
                { "a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", "a\xc3\xa9...", 8 }, /* nor a character */
                { "x", "", 4 },                                   /* no room at all */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char buf[128];
                memset(buf, 'Z', sizeof(buf));
                char *r = gr_text_quote(cases[i].in, buf, cases[i].size);
                assert_ptr_equal(r, buf);
                if (strcmp(buf, cases[i].out) != 0)
                        fail_msg("case %zu: got '%s', want '%s'", i, buf, cases[i].out);
                assert_true(strlen(buf) < cases[i].size || cases[i].size == 0);
        }
        char buf[GR_QUOTE_MAX], big[1000];
        memset(big, '\033', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        gr_text_quote(big, buf, sizeof(buf));
        assert_true(strlen(buf) < sizeof(buf));
        assert_string_equal(buf + strlen(buf) - 3, "...");
        assert_string_equal(gr_text_quote(NULL, buf, sizeof(buf)), "");
}

static void names_and_argv_are_made_safe(void **state)
{
        const char *s = "42 (\033[31mx\xc3) S 1 42 42" STAT_TAIL;
        gr_stat st;
        assert_int_equal(gr_parse_stat(s, strlen(s), &st), 0);
        assert_string_equal(st.comm, "?[31mx?");
        const char *odd = "42 (x) \033 1 42 42" STAT_TAIL;
        assert_int_equal(gr_parse_stat(odd, strlen(odd), &st), 0);
        assert_int_equal(st.state, '?');

        const char argv[] = "python3\0-c\0\xff\xc2\x9b\033]0;t\a\0";
        char out[64];
        gr_render_cmdline(argv, sizeof(argv) - 1, out, sizeof(out));
        assert_string_equal(out, "python3 -c ???]0;t?");
        /* a cut at the buffer's end leaves no half character */
        const char wide[] = "ab\xc3\xa9";
        gr_render_cmdline(wide, sizeof(wide) - 1, out, 4);
        assert_string_equal(out, "ab?");

        char cg[64];
        const char cgroup[] = "0::/user.slice/\033[2Jevil\xff.scope\n";
        assert_int_equal(gr_parse_cgroup(cgroup, sizeof(cgroup) - 1, cg, sizeof(cg)), 0);
        assert_string_equal(cg, "/user.slice/?[2Jevil?.scope");
}

static void device_paths(void **state)
{
        unsigned minor = 99;
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia0", &minor), GR_DEV_GPU);
        assert_int_equal(minor, 0);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia17", &minor), GR_DEV_GPU);
        assert_int_equal(minor, 17);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidiactl", NULL), GR_DEV_CTL);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia-uvm", NULL), GR_DEV_UVM);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia-uvm-tools", NULL), GR_DEV_UVM);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia-caps/nvidia-cap1", NULL), GR_DEV_CAPS);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia-modeset", NULL), GR_DEV_OTHER);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia0 (deleted)", NULL), GR_DEV_OTHER);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/null", NULL), GR_DEV_NONE);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/devx/nvidia0", NULL), GR_DEV_NONE);
        assert_int_equal(gr_classify_device_path("/dev", 4, "socket:[1234]", NULL), GR_DEV_NONE);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/tmp/dev/nvidia0", NULL), GR_DEV_NONE);
        assert_int_equal(gr_classify_device_path("/tmp/t/dev", 10, "/tmp/t/dev/nvidia3", &minor), GR_DEV_GPU);
        assert_int_equal(minor, 3);
        assert_int_equal(gr_classify_device_path("/dev", 4, "/dev/nvidia99999999999", NULL), GR_DEV_OTHER);
}

static void maps_lines(void **state)
{
        const char *a = "7f0000000000-7f0000001000 rw-s 00000000 00:05 1234                       /dev/nvidia0";
        const char *b = "7f0000000000-7f0000001000 rw-s 00000000 00:05 1234                       /dev/nvidiactl";
        const char *c = "7f0000000000-7f0000001000 r-xp 00000000 08:01 99   /usr/lib/libnvidia-ml.so.1";
        const char *d = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0";
        const char *e = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0    [heap]";
        assert_true(gr_maps_line_is_nvidia(a, strlen(a), "/dev", 4));
        assert_true(gr_maps_line_is_nvidia(b, strlen(b), "/dev", 4));
        assert_false(gr_maps_line_is_nvidia(c, strlen(c), "/dev", 4));
        assert_false(gr_maps_line_is_nvidia(d, strlen(d), "/dev", 4));
        assert_false(gr_maps_line_is_nvidia(e, strlen(e), "/dev", 4));
        assert_false(gr_maps_line_is_nvidia(a, 20, "/dev", 4));
}

static void numbers_sizes_durations(void **state)
{
        uint64_t v;
        assert_int_equal(gr_parse_u64("18446744073709551615", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(gr_parse_u64("18446744073709551616", &v), -ERANGE);
        assert_int_equal(gr_parse_u64("12a", &v), -EINVAL);
        assert_int_equal(gr_parse_u64("", &v), -EINVAL);
        assert_int_equal(gr_parse_u64("-1", &v), -EINVAL);
        int i;
        assert_int_equal(gr_parse_int("-42", &i), 0);
        assert_int_equal(i, -42);
        assert_int_equal(gr_parse_int("2147483648", &i), -ERANGE);

        assert_int_equal(gr_parse_duration_ms("5", &v), 0);
        assert_int_equal(v, 5000);
        assert_int_equal(gr_parse_duration_ms("250ms", &v), 0);
        assert_int_equal(v, 250);
        assert_int_equal(gr_parse_duration_ms("1.5s", &v), 0);
        assert_int_equal(v, 1500);
        assert_int_equal(gr_parse_duration_ms("2m", &v), 0);
        assert_int_equal(v, 120000);
        assert_int_equal(gr_parse_duration_ms("soon", &v), -EINVAL);
        assert_int_equal(gr_parse_duration_ms("5 s", &v), -EINVAL);
        assert_int_equal(gr_parse_duration_ms(".", &v), -EINVAL);

        assert_int_equal(gr_parse_size("20GiB", &v), 0);
        assert_true(v == 20ULL << 30);
        assert_int_equal(gr_parse_size("1.5G", &v), 0);
        assert_true(v == 3ULL << 29);
        assert_int_equal(gr_parse_size("512", &v), 0);
        assert_int_equal(v, 512);
        assert_int_equal(gr_parse_size("99999999999T", &v), -ERANGE);
        assert_int_equal(gr_parse_size("12 parsecs", &v), -EINVAL);

        char b[32];
        assert_string_equal(gr_format_bytes(0, b, sizeof(b)), "0 B");
        assert_string_equal(gr_format_bytes(615ULL << 20, b, sizeof(b)), "615 MiB");
        assert_string_equal(gr_format_bytes(20ULL << 30, b, sizeof(b)), "20.0 GiB");
        assert_string_equal(gr_format_bytes(GR_UNKNOWN_U64, b, sizeof(b)), "?");
}

/* nvidia-smi -i's selectors: the index, the UUID, the PCI bus id as NVML and lspci write it */
static void gpu_selectors(void **state)
{
        (void)state;
        gr_gpu g = { .index = 2, .minor = 3, .uuid = "GPU-26b043a8-20c9-8525-575a-88ca6ff0bd39",
                     .pci_bus_id = "00000000:1A:00.0" };
        assert_true(gr_gpu_matches(&g, "2"));
        assert_false(gr_gpu_matches(&g, "3"));
        assert_true(gr_gpu_matches(&g, "nvidia3"));
        assert_true(gr_gpu_matches(&g, "GPU-26b043a8"));
        assert_true(gr_gpu_matches(&g, "gpu-26B043A8-20c9"));
        assert_false(gr_gpu_matches(&g, "GPU-26b"));          /* under 8 characters */
        assert_true(gr_gpu_matches(&g, "00000000:1A:00.0"));  /* NVML's */
        assert_true(gr_gpu_matches(&g, "00000000:1a:00.0"));
        assert_true(gr_gpu_matches(&g, "0000:1a:00.0"));      /* lspci's */
        assert_true(gr_gpu_matches(&g, "0000:1A:00.0"));
        assert_true(gr_gpu_matches(&g, "1a:00.0"));           /* any domain */
        assert_true(gr_gpu_matches(&g, "1A:0.0"));
        assert_false(gr_gpu_matches(&g, "0001:1a:00.0"));     /* another domain */
        assert_false(gr_gpu_matches(&g, "1b:00.0"));
        assert_false(gr_gpu_matches(&g, "1a:00.1"));
        assert_false(gr_gpu_matches(&g, "1a:00"));
        assert_false(gr_gpu_matches(&g, "1a:00.0.0"));
        assert_false(gr_gpu_matches(&g, "1a:00.8"));
        assert_false(gr_gpu_matches(&g, "0:0:1a:00.0"));
        assert_false(gr_gpu_matches(&g, ":1a:00.0"));
        assert_false(gr_gpu_matches(&g, "1a:00.0 "));
        assert_false(gr_gpu_matches(&g, "x1a:00.0"));
        gr_gpu lspci = { .index = 0, .minor = 0, .pci_bus_id = "0000:1a:00.0" }; /* a recording's */
        assert_true(gr_gpu_matches(&lspci, "00000000:1A:00.0"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(stat_plain),
                cmocka_unit_test(stat_comm_with_parens_spaces_newline),
                cmocka_unit_test(stat_long_comm_is_cut),
                cmocka_unit_test(stat_flags),
                cmocka_unit_test(stat_rejects_garbage),
                cmocka_unit_test(status_uid_and_nspid),
                cmocka_unit_test(status_without_fields),
                cmocka_unit_test(status_nspid_bounded),
                cmocka_unit_test(cgroup_v2_and_v1),
                cmocka_unit_test(cgroup_container_ids),
                cmocka_unit_test(environ_marks_skip_a_cut_entry),
                cmocka_unit_test(environ_marks_run_ref),
                cmocka_unit_test(cmdline_rendering),
                cmocka_unit_test(text_sanitize),
                cmocka_unit_test(text_quote),
                cmocka_unit_test(names_and_argv_are_made_safe),
                cmocka_unit_test(device_paths),
                cmocka_unit_test(maps_lines),
                cmocka_unit_test(numbers_sizes_durations),
                cmocka_unit_test(gpu_selectors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
