/* runbench: time commands over many runs, interleaved so that every command sees the same
 * machine, and report the median wall time and the peak RSS (of the command and the children
 * it waited for, from wait4), and the median CPU time (user + system, the command's and the
 * children it waited for, from wait4). Output goes to /dev/null so terminals and pipes are not measured.
 *
 *   runbench [-n RUNS] [-w WARMUP] NAME -- CMD ARGS... [::: NAME -- CMD ARGS...]...   */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 8

struct cmd {
        const char *name;
        char **argv;
        double *ms;
        double *cpu_ms;
        long max_rss_kib;
        int last_status;
};

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double run_once(struct cmd *c, double *ret_cpu_ms)
{
        double t0 = now_ms();
        pid_t pid = fork();
        if (pid < 0) {
                perror("fork");
                exit(2);
        }
        if (pid == 0) {
                int fd = open("/dev/null", O_RDWR);
                dup2(fd, 1);
                dup2(fd, 2);
                char **av = c->argv; /* NAME=VALUE words first: the environment, set here (no env(1) exec to time) */
                while (av[0] && av[1] && av[0][strcspn(av[0], "=/")] == '=')
                        putenv(*av++);
                execvp(av[0], av);
                _exit(127);
        }
        int st;
        struct rusage ru;
        while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
                ;
        double t = now_ms() - t0;
        if (ret_cpu_ms)
                *ret_cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                              (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
        if (ru.ru_maxrss > c->max_rss_kib)
                c->max_rss_kib = ru.ru_maxrss;
        c->last_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return t;
}

int main(int argc, char **argv)
{
        int runs = 50, warmup = 3, i = 1;
        for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i += 2) {
                if (i + 1 >= argc)
                        break;
                if (strcmp(argv[i], "-n") == 0)
                        runs = (int)strtol(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "-w") == 0)
                        warmup = (int)strtol(argv[i + 1], NULL, 10);
        }
        struct cmd cmds[MAX_CMDS];
        int n = 0;
        while (i < argc && n < MAX_CMDS) {
                struct cmd *c = &cmds[n];
                memset(c, 0, sizeof(*c));
                c->name = argv[i++];
                if (i >= argc || strcmp(argv[i], "--") != 0) {
                        fprintf(stderr, "usage: runbench [-n RUNS] [-w WARMUP] NAME -- CMD... [::: NAME -- CMD...]\n");
                        return 2;
                }
                c->argv = &argv[++i];
                while (i < argc && strcmp(argv[i], ":::") != 0)
                        i++;
                if (i < argc)
                        argv[i++] = NULL;
                c->ms = calloc((size_t)runs, sizeof(double));
                c->cpu_ms = calloc((size_t)runs, sizeof(double));
                n++;
        }
        if (n == 0 || runs < 1)
                return 2;
        for (int w = 0; w < warmup; w++)
                for (int k = 0; k < n; k++)
                        run_once(&cmds[k], NULL);
        for (int r = 0; r < runs; r++)
                for (int k = 0; k < n; k++) {
                        int j = (k + r) % n; /* rotate who goes first each round */
                        cmds[j].ms[r] = run_once(&cmds[j], &cmds[j].cpu_ms[r]);
                }
        printf("%-28s %5s %10s %10s %10s %10s %6s %10s\n", "command", "runs", "median_ms", "p10_ms", "p90_ms",
               "peak_rss", "exit", "cpu_ms");
        for (int k = 0; k < n; k++) {
                struct cmd *c = &cmds[k];
                qsort(c->ms, (size_t)runs, sizeof(double), cmp_double);
                qsort(c->cpu_ms, (size_t)runs, sizeof(double), cmp_double);
                printf("%-28s %5d %10.3f %10.3f %10.3f %7.1fMiB %6d %10.3f\n", c->name, runs, c->ms[runs / 2],
                       c->ms[runs / 10], c->ms[(runs * 9) / 10], (double)c->max_rss_kib / 1024.0,
                       c->last_status, c->cpu_ms[runs / 2]);
        }
        return 0;
}
