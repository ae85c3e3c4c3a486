/* 'gpureap' for the run tests run a second time (tests/meson.build): 'gpureap run ARGS' is
 * 'gpureap-run ARGS', the static program (src/main-run.c), executed in its place (the same PID,
 * so that what a test knows of its run holds); anything else is gpureap itself. A program, not a
 * script: a shell resets what the tests set for gpureap to find (an ignored SIGCHLD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        const char *itself = getenv("GPUREAP_ITSELF"), *run = getenv("GPUREAP_RUN_PROGRAM");
        if (!itself || !run) {
                fprintf(stderr, "run-program-shim: GPUREAP_ITSELF and GPUREAP_RUN_PROGRAM must be set\n");
                return 2;
        }
        if (argc >= 2 && strcmp(argv[1], "run") == 0) {
                argv[1] = (char *)"gpureap-run";
                execv(run, argv + 1);
                perror(run);
        } else {
                execv(itself, argv);
                perror(itself);
        }
        return 127;
}
