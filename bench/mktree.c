/* mktree: a synthetic process tree for the holder-scan benchmark. Starts PROCS sleeping
 * processes in a new process group, each with FDS open files; every HOLD_EVERY-th one also holds
 * DEVDIR/nvidia0; with THREADS, each runs that many threads (sharing its file table, as
 * threads do). Prints "ready PGID" when all are set up, then sleeps; end it with
 * kill -- -PGID (the group it made).
 *
 *   mktree PROCS FDS HOLD_EVERY DEVDIR [THREADS] */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static void *idle(void *arg)
{
        for (;;)
                pause();
        return arg;
}

int main(int argc, char **argv)
{
        if (argc != 5 && argc != 6) {
                fprintf(stderr, "usage: mktree PROCS FDS HOLD_EVERY DEVDIR [THREADS]\n");
                return 2;
        }
        long threads = argc == 6 ? strtol(argv[5], NULL, 10) : 1;
        long procs = strtol(argv[1], NULL, 10), fds = strtol(argv[2], NULL, 10);
        long every = strtol(argv[3], NULL, 10);
        const char *dev = argv[4];
        struct rlimit rl = { (rlim_t)fds + 64, (rlim_t)fds + 64 };
        setrlimit(RLIMIT_NOFILE, &rl);
        setpgid(0, 0);
        int p[2];
        if (pipe(p) < 0)
                return 1;
        char gpu[1024];
        snprintf(gpu, sizeof(gpu), "%s/nvidia0", dev);
        for (long i = 0; i < procs; i++) {
                pid_t c = fork();
                if (c < 0) {
                        perror("fork");
                        kill(0, SIGKILL);
                }
                if (c == 0) {
                        close(p[0]);
                        for (long k = 0; k < fds; k++)
                                if (open(k % 2 ? "/dev/null" : "/proc/self/stat", O_RDONLY) < 0)
                                        break;
                        if (every > 0 && i % every == 0 && open(gpu, O_RDONLY) < 0)
                                perror(gpu);
                        pthread_attr_t a;
                        pthread_attr_init(&a);
                        pthread_attr_setstacksize(&a, 64 * 1024);
                        for (long t = 1; t < threads; t++) {
                                pthread_t th;
                                if (pthread_create(&th, &a, idle, NULL) != 0)
                                        break;
                        }
                        if (write(p[1], "x", 1) != 1)
                                _exit(1);
                        close(p[1]);
                        for (;;)
                                pause();
                }
        }
        close(p[1]);
        long got = 0;
        char b[256];
        ssize_t n;
        while (got < procs && (n = read(p[0], b, sizeof(b))) > 0)
                got += n;
        printf("ready %d\n", (int)getpgrp());
        fflush(stdout);
        for (;;)
                pause();
}
