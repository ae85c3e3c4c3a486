/* sigexec: run a command with the signal dispositions and mask a test names.
 *
 *   sigexec [--default] [--ignore SIG,...] [--block SIG,...] -- COMMAND [ARG...]
 *
 * --default sets every signal to its default and unblocks them all (what the tests rely on,
 * whatever their caller left: tests/integration/signals.sh runs each test script through it);
 * --ignore and --block then set what a hostile caller leaves (nohup ignores SIGHUP, a shell's
 * "trap '' INT" ignores SIGINT, a program may exec with signals blocked), which the
 * inherited-signals test uses. Dispositions and the mask survive execve; handlers do not. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int signal_number(const char *name)
{
        if (strncmp(name, "SIG", 3) == 0)
                name += 3;
        for (int s = 1; s < NSIG; s++) {
                const char *abbrev = sigabbrev_np(s);
                if (abbrev && strcmp(abbrev, name) == 0)
                        return s;
        }
        char *end;
        long n = strtol(name, &end, 10);
        return *name && !*end && n > 0 && n < NSIG ? (int)n : -1;
}

static int each_signal(const char *list, void (*fn)(int, sigset_t *), sigset_t *set)
{
        char *copy = strdup(list), *save = NULL;
        if (!copy)
                return -1;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int s = signal_number(tok);
                if (s < 0 || s == SIGKILL || s == SIGSTOP) {
                        fprintf(stderr, "sigexec: not a signal one can ignore or block: '%s'\n", tok);
                        free(copy);
                        return -1;
                }
                fn(s, set);
        }
        free(copy);
        return 0;
}

static void ignore_one(int s, sigset_t *unused)
{
        (void)unused;
        signal(s, SIG_IGN);
}

static void block_one(int s, sigset_t *set)
{
        sigaddset(set, s);
}

int main(int argc, char **argv)
{
        sigset_t block;
        sigemptyset(&block);
        int i = 1;
        for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (strcmp(argv[i], "--default") == 0) {
                        for (int s = 1; s < NSIG; s++)
                                if (s != SIGKILL && s != SIGSTOP)
                                        signal(s, SIG_DFL); /* fails harmlessly for the RT signals libc keeps */
                        sigset_t none;
                        sigemptyset(&none);
                        sigprocmask(SIG_SETMASK, &none, NULL);
                } else if (strcmp(argv[i], "--ignore") == 0 && i + 1 < argc) {
                        if (each_signal(argv[++i], ignore_one, NULL) < 0)
                                return 125;
                } else if (strcmp(argv[i], "--block") == 0 && i + 1 < argc) {
                        if (each_signal(argv[++i], block_one, &block) < 0)
                                return 125;
                } else {
                        fprintf(stderr, "usage: sigexec [--default] [--ignore SIG,...] [--block SIG,...] -- COMMAND [ARG...]\n");
                        return 125;
                }
        }
        if (i + 1 >= argc) {
                fprintf(stderr, "sigexec: no command after --\n");
                return 125;
        }
        sigprocmask(SIG_BLOCK, &block, NULL);
        execvp(argv[i + 1], argv + i + 1);
        perror("sigexec: exec");
        return 127;
}
