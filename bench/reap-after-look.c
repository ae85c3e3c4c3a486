/* reap-after-look: what reading a process's /proc entries costs when it is reaped. N sleepers
 * are forked into a process group of their own; then, by turns, nothing is read, each one's
 * /proc/PID/stat is read (the teardown's listing), or its stat and fd links (the listing and the
 * last look); the group gets SIGTERM and every sleeper is reaped with a blocking wait. Printed:
 * the medians of the reads, of the kill and of the reaping. The kernel drops a dead process's
 * /proc entries when it is reaped (proc_flush_pid), so a supervisor that looked pays for it in
 * its wait, where one that never looked (tini, the floor of bench/teardown) does not
 * (docs/benchmarks.md). Only its own sleepers are signalled, by their group.
 *   reap-after-look [N] [ROUNDS] */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void read_stat(pid_t pid)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                if (read(fd, buf, sizeof(buf)) < 0)
                        buf[0] = 0;
                close(fd);
        }
}

static void read_fds(pid_t pid)
{
        char path[64], link[96], target[256];
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
                        if (readlink(link, target, sizeof(target)) < 0)
                                target[0] = 0;
                }
        closedir(d);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return n ? v[n / 2] : 0;
}

int main(int argc, char **argv)
{
        int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100, rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 10;
        if (n < 1 || n > 100000 || rounds < 1 || rounds > 10000) {
                fprintf(stderr, "usage: reap-after-look [N] [ROUNDS]\n");
                return 2;
        }
        signal(SIGTERM, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        static const char *const names[] = { "nothing read", "stat read", "stat and fd links read" };
        double *t[3][3];
        for (int m = 0; m < 3; m++)
                for (int k = 0; k < 3; k++)
                        t[m][k] = calloc((size_t)rounds, sizeof(double));
        pid_t *pids = calloc((size_t)n, sizeof(*pids));
        for (int r = 0; r < rounds; r++)
                for (int m = 0; m < 3; m++) {
                        pid_t group = 0;
                        int made = 0;
                        for (int i = 0; i < n; i++) {
                                pid_t p = fork();
                                if (p < 0)
                                        break;
                                if (p == 0) {
                                        setpgid(0, group);
                                        for (;;)
                                                pause();
                                }
                                if (!group)
                                        group = p;
                                setpgid(p, group); /* before the kill, whichever runs first */
                                pids[made++] = p;
                        }
                        usleep(20000); /* all asleep */
                        double t0 = now_us();
                        for (int i = 0; m > 0 && i < made; i++) {
                                read_stat(pids[i]);
                                if (m == 2)
                                        read_fds(pids[i]);
                        }
                        double t1 = now_us();
                        if (group > 0)
                                kill(-group, SIGTERM);
                        double t2 = now_us();
                        while (waitpid(-1, NULL, 0) > 0)
                                ;
                        double t3 = now_us();
                        t[m][0][r] = t1 - t0;
                        t[m][1][r] = t2 - t1;
                        t[m][2][r] = t3 - t2;
                }
        printf("%d sleepers, %d rounds each, interleaved, medians:\n", n, rounds);
        for (int m = 0; m < 3; m++)
                printf("  %-24s reads %8.0f us  group SIGTERM %8.0f us  reaping all %8.0f us\n", names[m],
                       median(t[m][0], rounds), median(t[m][1], rounds), median(t[m][2], rounds));
        return 0;
}
