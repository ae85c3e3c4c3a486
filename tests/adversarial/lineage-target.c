/* lineage-target MODE PIDFILE: a leftover for reap-lineage-edges.sh, holding 12 fds of
 * $GPUREAP_DEV_DIR/nvidia0 and nvidiactl, that answers SIGTERM the way some processes do:
 *   leader-exit  its main thread ends (pthread_exit) and, 150 ms later, its other thread forks
 *                a child that keeps the files (recorded as "child"); the process lives on
 *   fork-exit    it forks a child that keeps the files ("child") and exits at once
 * Records "target PID" in PIDFILE once set up. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *pidfile;
static int wake[2];
static volatile sig_atomic_t termed;

static void record(const char *role)
{
        FILE *f = fopen(pidfile, "a");
        if (f) {
                fprintf(f, "%s %d\n", role, (int)getpid());
                fclose(f);
        }
}

static void on_term(int sig)
{
        (void)sig;
        termed = 1;
}

static void *late_forker(void *arg)
{
        char c;
        if (read(wake[0], &c, 1) != 1)
                return arg;
        usleep(150000);
        if (fork() == 0)
                record("child");
        for (;;)
                pause();
}

int main(int argc, char **argv)
{
        if (argc != 3)
                return 2;
        pidfile = argv[2];
        const char *dir = getenv("GPUREAP_DEV_DIR");
        char path[4096];
        snprintf(path, sizeof(path), "%s/nvidia0", dir ? dir : "/dev");
        for (int i = 0; i < 12; i++)
                if (open(path, O_RDWR) < 0)
                        return 1;
        snprintf(path, sizeof(path), "%s/nvidiactl", dir ? dir : "/dev");
        if (open(path, O_RDWR) < 0)
                return 1;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        bool leader_exit = strcmp(argv[1], "leader-exit") == 0;
        if (leader_exit) {
                if (pipe(wake) < 0)
                        return 1;
                sigset_t m;
                sigemptyset(&m);
                sigaddset(&m, SIGTERM);
                pthread_sigmask(SIG_BLOCK, &m, NULL); /* the TERM is the main thread's */
                pthread_t t;
                if (pthread_create(&t, NULL, late_forker, NULL) != 0)
                        return 1;
                pthread_sigmask(SIG_UNBLOCK, &m, NULL);
        }
        record("target");
        while (!termed)
                pause();
        if (leader_exit) {
                if (write(wake[1], "x", 1) != 1)
                        return 1;
                pthread_exit(NULL);
        }
        if (fork() == 0) {
                record("child");
                for (;;)
                        pause();
        }
        _exit(0);
}
