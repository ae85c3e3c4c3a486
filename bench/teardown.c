/* teardown: how long a supervisor takes to end a tree when it gets SIGTERM, side by side and
 * interleaved: 'gpureap run' against 'tini -s -g' (which passes the TERM to the command's process
 * group). The command forks SLEEPERS children in its process group and waits; once they are all
 * there, the supervisor gets SIGTERM; the time until the supervisor has exited is measured, and
 * every sleeper is checked afterwards (left ones are counted, then killed by PID).
 *
 * A third contender is the floor of the job: a bare subreaper that sends SIGTERM to the group and
 * reaps until it has no child left, verifying nothing (teardown --floor CMD...).
 *
 *   teardown [-n RUNS] SLEEPERS GPUREAP    (run from the build dir; tini from PATH)
 *   teardown --sleepers N                  (the command itself: fork N sleepers, report, wait)
 *   teardown --floor CMD...                (the bare supervisor)
 *   teardown --cpu [-n RUNS] GPUREAP       the CPU time of 'gpureap run -- sleep 1' against
 *                                          'tini -s -g -- sleep 1' (the supervisor's and what it
 *                                          reaped, from wait4; sleep's own CPU is in both) */
#include <errno.h>
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

static int sleepers(int n, int report_fd)
{
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
        close(report_fd);
        for (;;)
                pause();
}

/* The floor: what any supervisor that ends the whole tree and waits for it must do */
static int floor_sup(char **cmd)
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
        int sig;
        sigwait(&set, &sig);
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
static double one(char **sup, int n, const char *self, unsigned *left)
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
        pid_t *pids = calloc((size_t)n, sizeof(*pids));
        int got = 0;
        while (got < n && read(p[0], &pids[got], sizeof(pid_t)) == sizeof(pid_t))
                got++;
        close(p[0]);
        double t0 = now_ms();
        kill(s, SIGTERM);
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

int main(int argc, char **argv)
{
        if (argc == 4 && strcmp(argv[1], "--sleepers") == 0)
                return sleepers(num(argv[2]), num(argv[3]));
        if (argc > 2 && strcmp(argv[1], "--floor") == 0)
                return floor_sup(argv + 2);
        if (argc == 3 && strcmp(argv[1], "--cpu") == 0)
                return cpu_main(5, argv[2]);
        if (argc == 5 && strcmp(argv[1], "--cpu") == 0 && strcmp(argv[2], "-n") == 0)
                return cpu_main(num(argv[3]) ? num(argv[3]) : 1, argv[4]);
        int runs = 20, a = 1;
        if (argc > 2 && strcmp(argv[1], "-n") == 0) {
                runs = num(argv[2]);
                a = 3;
        }
        if (argc - a != 2) {
                fprintf(stderr, "usage: teardown [-n RUNS] SLEEPERS GPUREAP\n");
                return 2;
        }
        int n = num(argv[a]);
        char self[4096];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (sl <= 0)
                return 1;
        self[sl] = '\0';
        char *gr[] = { argv[a + 1], (char *)"run", (char *)"--quiet", (char *)"--", NULL };
        char *tini[] = { (char *)"tini", (char *)"-s", (char *)"-g", (char *)"--", NULL };
        char *fl[] = { self, (char *)"--floor", NULL };
        double *tg = calloc((size_t)runs, sizeof(double)), *tt = calloc((size_t)runs, sizeof(double)),
               *tf = calloc((size_t)runs, sizeof(double));
        unsigned left_g = 0, left_t = 0, left_f = 0;
        for (int i = 0; i < runs; i++) {
                unsigned l;
                tg[i] = one(gr, n, self, &l);
                left_g += l;
                tt[i] = one(tini, n, self, &l);
                left_t += l;
                tf[i] = one(fl, n, self, &l);
                left_f += l;
        }
        qsort(tg, (size_t)runs, sizeof(double), cmp_double);
        qsort(tt, (size_t)runs, sizeof(double), cmp_double);
        qsort(tf, (size_t)runs, sizeof(double), cmp_double);
        printf("%d sleepers, %d runs each, interleaved: gpureap run %.1f ms (left %u), tini -s -g %.1f ms (left %u), "
               "floor %.1f ms (left %u); ratio to tini %.2f, to the floor %.2f\n",
               n, runs, tg[runs / 2], left_g, tt[runs / 2], left_t, tf[runs / 2], left_f, tg[runs / 2] / tt[runs / 2],
               tg[runs / 2] / tf[runs / 2]);
        free(tg);
        free(tt);
        free(tf);
        return 0;
}
