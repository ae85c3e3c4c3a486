/* proc-threads: reading N processes' /proc/PID/stat (what the teardown's listing reads of each
 * member of its cgroup) and their fd links (the last look) with one thread against several
 * started for the job, as gr_run_parallel starts them (docs/benchmarks.md). The N processes are
 * sleepers forked here, ended by PID at the end.
 *   proc-threads [N] [ROUNDS] */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t *pids;
static int n_pids;
static int next_item;
static int mode; /* 0 stat, 1 fds */

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void one(pid_t pid)
{
        char path[64], buf[1024];
        if (mode == 0) {
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        if (read(fd, buf, sizeof(buf)) < 0)
                                buf[0] = 0;
                        close(fd);
                }
                return;
        }
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return;
        struct dirent *e;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.' && readlinkat(dirfd(d), e->d_name, buf, sizeof(buf)) < 0)
                        buf[0] = 0;
        closedir(d);
}

static void *work(void *arg)
{
        (void)arg;
        for (;;) {
                int i = __atomic_fetch_add(&next_item, 1, __ATOMIC_RELAXED);
                if (i >= n_pids)
                        return NULL;
                one(pids[i]);
        }
}

static double round_us(int threads)
{
        pthread_t t[16];
        next_item = 0;
        double t0 = now_us();
        for (int i = 1; i < threads; i++)
                pthread_create(&t[i], NULL, work, NULL);
        work(NULL);
        for (int i = 1; i < threads; i++)
                pthread_join(t[i], NULL);
        return now_us() - t0;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
        n_pids = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100;
        int rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 50;
        if (n_pids < 1 || n_pids > 100000 || rounds < 1 || rounds > 100000)
                return 2;
        pids = calloc((size_t)n_pids, sizeof(*pids));
        for (int i = 0; i < n_pids; i++) {
                pids[i] = fork();
                if (pids[i] == 0) {
                        for (;;)
                                pause();
                }
        }
        static const int counts[] = { 1, 2, 4, 8 };
        double *t = calloc((size_t)rounds, sizeof(double));
        for (mode = 0; mode < 2; mode++) {
                printf("%d processes, %s, %d rounds, medians:", n_pids, mode ? "fd links" : "stat", rounds);
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                        for (int r = 0; r < rounds; r++)
                                t[r] = round_us(counts[c]);
                        qsort(t, (size_t)rounds, sizeof(double), cmp);
                        printf(" %d thread%s %.0f us%s", counts[c], counts[c] > 1 ? "s" : "", t[rounds / 2],
                               c + 1 < sizeof(counts) / sizeof(counts[0]) ? ";" : "\n");
                }
        }
        for (int i = 0; i < n_pids; i++)
                kill(pids[i], SIGKILL); /* our own children, by PID */
        while (wait(NULL) > 0)
                ;
        return 0;
}
