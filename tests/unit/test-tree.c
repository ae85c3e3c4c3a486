/* The supervisor's tree read two ways, from the kernel's children files and the cgroup (what run
 * uses: O(tree)) and from a walk of all of /proc (the fallback), on a real tree of processes:
 * children, grandchildren, a setsid'd one, an orphan handed to us as a subreaper. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include "gpureap/act.h"
#include "gpureap/tree.h"

static pid_t spawn_sleeper(void)
{
        pid_t p = fork();
        if (p == 0) {
                for (;;)
                        pause();
        }
        return p;
}

/* a child that forks grandchildren (one setsid'd, one orphaned to us) and tells when ready */
static pid_t spawn_family(int ready_fd)
{
        pid_t p = fork();
        if (p == 0) {
                spawn_sleeper();
                pid_t s = fork();
                if (s == 0) {
                        setsid();
                        spawn_sleeper(); /* a grandchild in its own session */
                        char r = 's';
                        if (write(ready_fd, &r, 1) != 1)
                                _exit(1);
                        for (;;)
                                pause();
                }
                pid_t o = fork();
                if (o == 0) {
                        spawn_sleeper(); /* its parent exits: handed to our subreaper */
                        _exit(0);
                }
                waitpid(o, NULL, 0);
                char c = 'r';
                if (write(ready_fd, &c, 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        return p;
}

static void same_tree_both_ways(void **state)
{
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t fam = spawn_family(pfd[1]);
        char c[2]; /* both the family and its setsid'd child have forked all theirs */
        assert_int_equal(read(pfd[0], &c[0], 1), 1);
        assert_int_equal(read(pfd[0], &c[1], 1), 1);
        gr_tree_proc *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        assert_int_equal(gr_tree_list(NULL, getpid(), NULL, NULL, 0, &a, &na), 0);
        assert_int_equal(gr_tree_list_by_walk(NULL, getpid(), NULL, NULL, 0, &b, &nb), 0);
        /* the family (1), its sleeper, the setsid'd one and its sleeper, the orphan's sleeper */
        assert_true(na >= 5);
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
                assert_int_equal(a[i].pid, b[i].pid);
                assert_int_equal(a[i].start_time, b[i].start_time);
                assert_int_equal(a[i].pgid, b[i].pgid);
        }
        /* negative control: another root's tree is not ours */
        gr_tree_proc *c1 = NULL;
        size_t nc = 0;
        assert_int_equal(gr_tree_list(NULL, fam, NULL, NULL, 0, &c1, &nc), 0);
        assert_true(nc < na);
        for (size_t i = 0; i < na; i++)
                kill(a[i].pid, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0)
                ;
        free(a);
        free(b);
        free(c1);
        close(pfd[0]);
        close(pfd[1]);
}

/* a wide tree, read by several threads a wave at a time (WAVE_PARALLEL_MIN 32 in lib/act/tree.c):
 * 40 children, each with a grandchild, every fourth of those with a child of its own; one child
 * skipped (its own line left out, its descendants still found). Both ways give the same tree */
static void wide_tree_both_ways(void **state)
{
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t kids[40];
        for (int i = 0; i < 40; i++) {
                kids[i] = fork();
                if (kids[i] == 0) {
                        pid_t g = fork();
                        if (g == 0) {
                                if (i % 4 == 0)
                                        spawn_sleeper();
                                char r = 'g';
                                if (write(pfd[1], &r, 1) != 1)
                                        _exit(1);
                                for (;;)
                                        pause();
                        }
                        for (;;)
                                pause();
                }
        }
        for (int i = 0; i < 40; i++) {
                char c;
                assert_int_equal(read(pfd[0], &c, 1), 1);
        }
        gr_tree_proc *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        assert_int_equal(gr_tree_list(NULL, getpid(), NULL, &kids[7], 1, &a, &na), 0);
        assert_int_equal(gr_tree_list_by_walk(NULL, getpid(), NULL, &kids[7], 1, &b, &nb), 0);
        /* 40 children, 40 grandchildren, 10 great-grandchildren, less the skipped one */
        assert_int_equal(na, 89);
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
                assert_int_equal(a[i].pid, b[i].pid);
                assert_int_equal(a[i].start_time, b[i].start_time);
                assert_true(a[i].pid != kids[7]);
        }
        for (size_t i = 0; i < na; i++)
                kill(a[i].pid, SIGKILL);
        kill(kids[7], SIGKILL);
        while (waitpid(-1, NULL, 0) > 0)
                ;
        free(a);
        free(b);
        close(pfd[0]);
        close(pfd[1]);
}

/* A recorded /proc (gr_tree_list's proc_root): root 50's children file names 100 and 101; 100's
 * parent is 50, but 101's stat says its parent is 999: its PID was freed between the two reads
 * and taken by a stranger, which must not be listed, nor its children (103); 100's child 102 is */
static void put(const char *dir, const char *path, const char *text)
{
        char p[4200];
        snprintf(p, sizeof(p), "%s/%s", dir, path);
        for (char *c = p + strlen(dir) + 1; (c = strchr(c, '/')); c++) {
                *c = '\0';
                mkdir(p, 0755);
                *c = '/';
        }
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void put_stat(const char *dir, int pid, int ppid)
{
        char path[64], line[512];
        snprintf(path, sizeof(path), "%d/stat", pid);
        snprintf(line, sizeof(line),
                 "%d (p%d) S %d %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 %d 3133440 414 18446744073709551615 "
                 "0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", pid, pid, ppid, pid, pid, 1000 + pid);
        put(dir, path, line);
}

static void stranger_under_freed_pid(void **state)
{
        char dir[] = "/tmp/gpureap-tree-proc.XXXXXX";
        assert_non_null(mkdtemp(dir));
        put(dir, "50/task/50/children", "100 101 ");
        put_stat(dir, 100, 50);
        put(dir, "100/task/100/children", "102 ");
        put_stat(dir, 102, 100);
        put(dir, "102/task/102/children", "");
        put_stat(dir, 101, 999); /* not root's child any more: a stranger's stat under its PID */
        put(dir, "101/task/101/children", "103 ");
        put_stat(dir, 103, 101);
        put(dir, "103/task/103/children", "");
        gr_tree_proc *t = NULL;
        size_t n = 0;
        assert_int_equal(gr_tree_list(dir, 50, NULL, NULL, 0, &t, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(t[0].pid, 100);
        assert_int_equal(t[1].pid, 102);
        free(t);
        /* control: with 101's parent root again, all four are the tree's */
        put_stat(dir, 101, 50);
        assert_int_equal(gr_tree_list(dir, 50, NULL, NULL, 0, &t, &n), 0);
        assert_int_equal(n, 4);
        free(t);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

/* A process born since the last PID was read has a PID in (before, now], also across the wrap
 * at pid_max; a real fork shows it */
static void pid_born_since(void **state)
{
        (void)state;
        assert_true(gr_pid_new_since(101, 100, 105));
        assert_false(gr_pid_new_since(100, 100, 105));
        assert_false(gr_pid_new_since(106, 100, 105));
        assert_false(gr_pid_new_since(50, 100, 100));
        assert_true(gr_pid_new_since(32000, 31990, 20));  /* wrapped meanwhile */
        assert_true(gr_pid_new_since(7, 31990, 20));
        assert_false(gr_pid_new_since(500, 31990, 20));
        pid_t before = 0, now = 0;
        assert_int_equal(gr_last_pid(&before), 0);
        pid_t p = spawn_sleeper();
        assert_int_equal(gr_last_pid(&now), 0);
        assert_true(gr_pid_new_since(p, before, now));
        assert_false(gr_pid_new_since(getpid(), before, now)); /* born long before */
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
}

/* A zombie is not asked for its children (it has none: the kernel handed them to us, the
 * subreaper, before it became one), and they are still listed, as ours */
static void zombie_children_listed(void **state)
{
        (void)state;
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t a = fork();
        if (a == 0) {
                pid_t b = spawn_sleeper();
                if (write(pfd[1], &b, sizeof(b)) != sizeof(b))
                        _exit(1);
                _exit(0); /* a zombie of ours until reaped; b comes to us */
        }
        pid_t b = 0;
        assert_int_equal(read(pfd[0], &b, sizeof(b)), (ssize_t)sizeof(b));
        siginfo_t si = { 0 };
        assert_int_equal(waitid(P_PID, (id_t)a, &si, WEXITED | WNOWAIT), 0); /* a zombie now, not reaped */
        gr_tree_proc *t = NULL;
        size_t n = 0;
        bool saw_a = false, saw_b = false;
        assert_int_equal(gr_tree_list(NULL, getpid(), NULL, NULL, 0, &t, &n), 0);
        for (size_t i = 0; i < n; i++) {
                if (t[i].pid == a)
                        saw_a = t[i].state == 'Z';
                saw_b = saw_b || t[i].pid == b;
        }
        assert_true(saw_a);
        assert_true(saw_b);
        free(t);
        kill(b, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0)
                ;
        close(pfd[0]);
        close(pfd[1]);
}

/* whatever failed, no process of ours outlives the test (it would hold the runner's pipes) */
static int end_our_tree(void **state)
{
        (void)state;
        gr_tree_proc *t = NULL;
        size_t n = 0;
        if (gr_tree_list_by_walk(NULL, getpid(), NULL, NULL, 0, &t, &n) == 0)
                for (size_t i = 0; i < n; i++)
                        kill(t[i].pid, SIGKILL);
        free(t);
        while (waitpid(-1, NULL, 0) > 0)
                ;
        return 0;
}

struct end_seen {
        pid_t cmd;
        bool cmd_reaped, group_told, after_term;
        unsigned killed, termed, ticks;
};

static void seen_reaped(pid_t pid, int status, void *userdata)
{
        struct end_seen *e = userdata;
        e->cmd_reaped = e->cmd_reaped || pid == e->cmd;
}

static void seen_group(bool done, void *userdata)
{
        ((struct end_seen *)userdata)->group_told = done;
}

static void seen_after_term(void *userdata)
{
        ((struct end_seen *)userdata)->after_term = true;
}

static void seen_tick(void *userdata)
{
        ((struct end_seen *)userdata)->ticks++;
}

static void seen_member(const gr_ladder_member *m, bool term, void *userdata)
{
        struct end_seen *e = userdata;
        e->killed += m->result == GR_KILL_KILLED;
        e->termed += m->result == GR_KILL_ENDED;
}

/* The end of a supervised tree (gr_tree_end): a command that leads its own process group, a
 * member of that group, one in a session of its own, an orphan handed to us, and one that
 * ignores SIGTERM; nothing is left, the one that ignored TERM needed SIGKILL, the group had its
 * TERM as one, and the command's status was reaped through the hook */
static void tree_end_leaves_nothing(void **state)
{
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t cmd = fork();
        if (cmd == 0) {
                setpgid(0, 0);
                close(ready[0]);
                spawn_family(ready[1]);
                pid_t stubborn = fork();
                if (stubborn == 0) {
                        signal(SIGTERM, SIG_IGN);
                        char c = 'i';
                        if (write(ready[1], &c, 1) != 1)
                                _exit(1);
                        for (;;)
                                pause();
                }
                for (;;)
                        pause();
        }
        assert_true(cmd > 0);
        setpgid(cmd, cmd); /* either side may run first */
        close(ready[1]);
        char buf[3];
        size_t got = 0;
        while (got < 3) { /* the setsid'd one, the orphan's parent, the stubborn one */
                ssize_t k = read(ready[0], buf, 3 - got);
                assert_true(k > 0);
                got += (size_t)k;
        }
        close(ready[0]);
        gr_tree_proc *t = NULL;
        size_t n = 0;
        assert_int_equal(gr_tree_list(NULL, getpid(), NULL, NULL, 0, &t, &n), 0);
        free(t);
        assert_true(n >= 6); /* cmd, its sleeper, the family's child and its two, the stubborn one */
        int gfd = gr_pidfd_open(cmd);
        assert_true(gfd >= 0);
        struct end_seen e = { .cmd = cmd };
        /* the default context names another /proc (a program that reads a recording): the
         * end's listings and its ladder both take the context given (seventh adversarial round:
         * the ladder took the default's, and settled every member "gone" unsignalled) */
        gr_context *live = NULL;
        assert_int_equal(gr_context_new(&live), 0);
        gr_context_set_proc_root(NULL, "/nonexistent-proc");
        gr_tree_end_options o = { .ctx = live, .grace_ms = 300, .group_fd = gfd, .pgid = cmd, .pgid_held = true,
                                  .reaped = seen_reaped, .group_signalled = seen_group,
                                  .after_term = seen_after_term, .tick = seen_tick, .member = seen_member,
                                  .userdata = &e };
        gr_tree_end_result res;
        assert_true(gr_tree_end(&o, &res));
        gr_context_set_proc_root(NULL, NULL);
        gr_context_free(live);
        close(gfd);
        assert_int_equal(gr_tree_list_by_walk(NULL, getpid(), NULL, NULL, 0, &t, &n), 0);
        free(t);
        assert_int_equal(n, 0);
        assert_true(res.group_termed);
        assert_true(e.group_told);
        assert_true(e.after_term);
        assert_true(e.ticks > 0);
        assert_true(e.cmd_reaped);
        assert_true(e.killed >= 1); /* the stubborn one */
        assert_true(e.termed >= 1); /* the setsid'd one: not in the group, its TERM from the ladder */
        assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child left */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(same_tree_both_ways, end_our_tree),
                cmocka_unit_test_teardown(wide_tree_both_ways, end_our_tree),
                cmocka_unit_test(stranger_under_freed_pid),
                cmocka_unit_test_teardown(pid_born_since, end_our_tree),
                cmocka_unit_test_teardown(zombie_children_listed, end_our_tree),
                cmocka_unit_test_teardown(tree_end_leaves_nothing, end_our_tree),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
