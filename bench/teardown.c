/* teardown: how long a supervisor takes to end a tree, side by side and interleaved: 'gpureap
 * run' (one or more builds) against 'tini -s -g' (which passes the TERM to the command's process
 * group) and a bare subreaper that does no more than it must (the floor). The command forks
 * SLEEPERS children in its process group and waits; once they are all there, the supervisor gets
 * SIGTERM; the time until the supervisor has exited is measured, and every sleeper is checked
 * afterwards (left ones are counted, then killed by PID).
 *
 * With --exit the command itself exits (on SIGUSR1 from the bench) and leaves its sleepers: the
 * time from that signal until the supervisor has exited, against dumb-init (which sends SIGTERM
 * to the command's group when the command exits, and exits itself) and a floor that does the
 * same and then reaps until no child is left.
 *
 * With --age MS the tree lives that long before the signal: an old tree (a server's, a training
 * job's) that gpureap has sampled and moved into its cgroup, where a young one has not been.
 *
 *   teardown [-n RUNS] [--exit] [--age MS] SLEEPERS GPUREAP [GPUREAP...]   (tini and dumb-init from PATH;
 *                                          a GPUREAP named gpureap-run is run without "run")
 *   teardown --sleepers N FD [exit]        (the command itself: fork N sleepers, report, wait)
 *   teardown --floor CMD...                (the bare supervisor; --floor-exit: for --exit)
 *   teardown --cpu [-n RUNS] GPUREAP       the CPU time of 'gpureap run -- sleep 1' against
 *                                          'tini -s -g -- sleep 1' (the supervisor's and what it
 *                                          reaped, from wait4; sleep's own CPU is in both) */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void exit_now(int sig)
{
        (void)sig;
        _exit(0);
}

static int sleepers(int n, int report_fd, bool exit_mode)
{
        if (exit_mode) { /* the command's own PID first: the bench tells it to exit */
                pid_t self = getpid();
                if (write(report_fd, &self, sizeof(self)) != sizeof(self))
                        return 1;
        }
        for (int i = 0; i < n; i++) {
                pid_t p = fork();
                if (p == 0) {
                        for (;;)
                                pause();
                }
                if (p < 0)
                        return 1;
                if (write(report_fd, &p, sizeof(p)) != sizeof(p))
                        return 1;
        }
        if (exit_mode)
                signal(SIGUSR1, exit_now); /* after the forks: the sleepers keep the default */
        close(report_fd);
        for (;;)
                pause();
}

/* The floor: what any supervisor that ends the whole tree and waits for it must do */
static int floor_sup(char **cmd, bool exit_mode)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        pid_t c = fork();
        if (c == 0) {
                setpgid(0, 0);
                sigprocmask(SIG_UNBLOCK, &set, NULL);
                execvp(cmd[0], cmd);
                _exit(127);
        }
        setpgid(c, c);
        if (exit_mode) {
                waitpid(c, NULL, 0); /* the command exits: end what it left */
        } else {
                int sig;
                sigwait(&set, &sig);
        }
        kill(-c, SIGTERM);
        kill(-c, SIGCONT);
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                ;
        return 0;
}

static int num(const char *s)
{
        char *end;
        long v = strtol(s, &end, 10);
        if (*end || v < 0 || v > 1000000) {
                fprintf(stderr, "teardown: not a number: '%s'\n", s);
                exit(2);
        }
        return (int)v;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

/* one run: supervisor argv with the command appended; returns the ms from SIGTERM to its exit */
static double one(char **sup, int n, const char *self, bool exit_mode, int age_ms, unsigned *left)
{
        int p[2];
        if (pipe(p) < 0)
                exit(1);
        char fdarg[16], narg[16];
        snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
        snprintf(narg, sizeof(narg), "%d", n);
        char *argv[16];
        int k = 0;
        for (; sup[k]; k++)
                argv[k] = sup[k];
        argv[k++] = (char *)self;
        argv[k++] = (char *)"--sleepers";
        argv[k++] = narg;
        argv[k++] = fdarg;
        if (exit_mode)
                argv[k++] = (char *)"exit";
        argv[k] = NULL;
        pid_t s = fork();
        if (s == 0) {
                close(p[0]);
                int devnull = open("/dev/null", O_WRONLY);
                dup2(devnull, 1);
                dup2(devnull, 2);
                execvp(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        pid_t cmd = 0;
        if (exit_mode && read(p[0], &cmd, sizeof(cmd)) != sizeof(cmd))
                exit(1);
        pid_t *pids = calloc((size_t)n, sizeof(*pids));
        int got = 0;
        while (got < n && read(p[0], &pids[got], sizeof(pid_t)) == sizeof(pid_t))
                got++;
        close(p[0]);
        if (age_ms > 0) {
                struct timespec age = { .tv_sec = age_ms / 1000, .tv_nsec = (long)(age_ms % 1000) * 1000000L };
                while (nanosleep(&age, &age) < 0 && errno == EINTR)
                        ;
        }
        double t0 = now_ms();
        kill(exit_mode ? cmd : s, exit_mode ? SIGUSR1 : SIGTERM); /* ours: its PID is held by
                                                                     its unreaped zombie */
        waitpid(s, NULL, 0);
        double t = now_ms() - t0;
        *left = 0;
        for (int i = 0; i < got; i++) {
                char path[64], buf[256];
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pids[i]);
                FILE *f = fopen(path, "re");
                if (!f)
                        continue;
                size_t len = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
                buf[len] = '\0';
                char *c = strrchr(buf, ')');
                if (c && c[1] == ' ' && c[2] != 'Z') {
                        (*left)++;
                        kill(pids[i], SIGKILL); /* the benchmark's own children's children: by PID */
                }
        }
        free(pids);
        return t;
}

/* CPU ms of one supervised 'sleep 1' */
static double cpu_one(char **sup)
{
        char *argv[16];
        int k = 0;
        for (; sup[k]; k++)
                argv[k] = sup[k];
        argv[k++] = (char *)"sleep";
        argv[k++] = (char *)"1";
        argv[k] = NULL;
        pid_t s = fork();
        if (s == 0) {
                int devnull = open("/dev/null", O_WRONLY);
                dup2(devnull, 1);
                dup2(devnull, 2);
                execvp(argv[0], argv);
                _exit(127);
        }
        struct rusage ru;
        int st;
        if (wait4(s, &st, 0, &ru) != s)
                exit(1);
        return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int cpu_main(int runs, char *gpureap)
{
        char *gr[] = { gpureap, (char *)"run", (char *)"--quiet", (char *)"--", NULL };
        char *tini[] = { (char *)"tini", (char *)"-s", (char *)"-g", (char *)"--", NULL };
        double *tg = calloc((size_t)runs, sizeof(double)), *tt = calloc((size_t)runs, sizeof(double));
        for (int i = 0; i < runs; i++) {
                tg[i] = cpu_one(gr);
                tt[i] = cpu_one(tini);
        }
        qsort(tg, (size_t)runs, sizeof(double), cmp_double);
        qsort(tt, (size_t)runs, sizeof(double), cmp_double);
        printf("sleep 1, %d runs each, interleaved: CPU of gpureap run %.2f ms, tini -s -g %.2f ms, ratio %.2f\n", runs,
               tg[runs / 2], tt[runs / 2], tg[runs / 2] / tt[runs / 2]);
        free(tg);
        free(tt);
        return 0;
}

struct contender {
        char name[64];
        char *argv[8];
        double *t;
        unsigned left;
};

static int report(struct contender *c, size_t nc, int n, int runs, bool exit_mode, int age_ms)
{
        printf("%d sleepers", n);
        if (age_ms > 0)
                printf(" %d ms old", age_ms);
        printf(", %s, %d runs each, interleaved:", exit_mode ? "the command exits" : "SIGTERM to the supervisor", runs);
        for (size_t i = 0; i < nc; i++) {
                qsort(c[i].t, (size_t)runs, sizeof(double), cmp_double);
                printf("%s %s %.1f ms (p10 %.1f, p90 %.1f, left %u)", i ? ";" : "", c[i].name, c[i].t[runs / 2],
                       c[i].t[runs / 10], c[i].t[runs - 1 - runs / 10], c[i].left);
        }
        printf("\n");
        for (size_t i = 0; i + 2 < nc; i++)
                printf("  %s: %.2f x %s, %.2f x the floor\n", c[i].name, c[i].t[runs / 2] / c[nc - 2].t[runs / 2],
                       c[nc - 2].name, c[i].t[runs / 2] / c[nc - 1].t[runs / 2]);
        for (size_t i = 0; i < nc; i++)
                free(c[i].t);
        return 0;
}

int main(int argc, char **argv)
{
        if ((argc == 4 || argc == 5) && strcmp(argv[1], "--sleepers") == 0)
                return sleepers(num(argv[2]), num(argv[3]), argc == 5);
        if (argc > 2 && strcmp(argv[1], "--floor") == 0)
                return floor_sup(argv + 2, false);
        if (argc > 2 && strcmp(argv[1], "--floor-exit") == 0)
                return floor_sup(argv + 2, true);
        if (argc == 3 && strcmp(argv[1], "--cpu") == 0)
                return cpu_main(5, argv[2]);
        if (argc == 5 && strcmp(argv[1], "--cpu") == 0 && strcmp(argv[2], "-n") == 0)
                return cpu_main(num(argv[3]) ? num(argv[3]) : 1, argv[4]);
        int runs = 20, a = 1, age_ms = 0;
        bool exit_mode = false;
        if (argc > 2 && strcmp(argv[a], "-n") == 0) {
                runs = num(argv[a + 1]);
                a += 2;
        }
        if (a < argc && strcmp(argv[a], "--exit") == 0) {
                exit_mode = true;
                a++;
        }
        if (a + 1 < argc && strcmp(argv[a], "--age") == 0) {
                age_ms = num(argv[a + 1]);
                a += 2;
        }
        if (argc - a < 2 || argc - a > 9 || runs < 1) {
                fprintf(stderr, "usage: teardown [-n RUNS] [--exit] [--age MS] SLEEPERS GPUREAP [GPUREAP...]\n");
                return 2;
        }
        int n = num(argv[a]);
        char self[4096];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (sl <= 0)
                return 1;
        self[sl] = '\0';
        struct contender c[10];
        size_t nc = 0;
        for (int i = a + 1; i < argc; i++, nc++) {
                const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
                if (strcmp(base, "gpureap-run") == 0) { /* the static program: its argv has no "run" */
                        c[nc] = (struct contender){ .argv = { argv[i], (char *)"--quiet", (char *)"--" } };
                        snprintf(c[nc].name, sizeof(c[nc].name), "gpureap-run (%s)", argv[i]);
                } else {
                        c[nc] = (struct contender){ .argv = { argv[i], (char *)"run", (char *)"--quiet", (char *)"--" } };
                        snprintf(c[nc].name, sizeof(c[nc].name), argc - a > 2 ? "gpureap run (%s)" : "gpureap run", argv[i]);
                }
        }
        if (exit_mode)
                c[nc++] = (struct contender){ .name = "dumb-init", .argv = { (char *)"dumb-init", (char *)"--" } };
        else
                c[nc++] = (struct contender){ .name = "tini -s -g", .argv = { (char *)"tini", (char *)"-s", (char *)"-g", (char *)"--" } };
        c[nc++] = (struct contender){ .name = "floor", .argv = { self, (char *)(exit_mode ? "--floor-exit" : "--floor") } };
        for (size_t i = 0; i < nc; i++)
                if (!(c[i].t = calloc((size_t)runs, sizeof(double))))
                        return 1;
        for (int r = 0; r < runs; r++)
                for (size_t i = 0; i < nc; i++) {
                        unsigned l;
                        c[i].t[r] = one(c[i].argv, n, self, exit_mode, age_ms, &l);
                        c[i].left += l;
                }
        return report(c, nc, n, runs, exit_mode, age_ms);
}
