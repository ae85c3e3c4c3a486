/* forkstorm: fork children that exit at once, as fast as one process can, for SECONDS; prints
 * how many. Each child's exit is a process event that 'gpureap serve' reads.
 *   forkstorm SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: forkstorm SECONDS\n");
                return 2;
        }
        double secs = strtod(argv[1], NULL);
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        unsigned long n = 0;
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
                        break;
                pid_t p = fork();
                if (p == 0)
                        _exit(0);
                if (p > 0) {
                        waitpid(p, NULL, 0);
                        n++;
                }
        }
        printf("%lu\n", n);
        return 0;
}
