/* What every gpureap program does around its command: the words for a mistaken option, stdout
 * as a stream that keeps the cause of a failed write, SIGPIPE caught, and the library's settings
 * from the environment. gpureap (main.c) and gpureap-run (main-run.c) start and end through it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "gpureap.h"

/* Levenshtein distance, bounded: for "did you mean" */
static size_t distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        if (la > 63 || lb > 63)
                return 99;
        size_t row[64];
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t prev = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t cur = row[j];
                        size_t best = prev + (a[i - 1] != b[j - 1]);
                        if (row[j] + 1 < best)
                                best = row[j] + 1;
                        if (row[j - 1] + 1 < best)
                                best = row[j - 1] + 1;
                        row[j] = best;
                        prev = cur;
                }
        }
        return row[lb];
}

const char *closest_word(const char *word, const char *const *words, size_t n)
{
        const char *best = NULL;
        size_t bd = 3; /* two edits at most: a typo, not another word */
        for (size_t i = 0; i < n; i++) {
                size_t d = distance(word, words[i]);
                if (d < bd || (d == bd && !best && strncmp(word, words[i], strlen(word)) == 0)) {
                        bd = d;
                        best = words[i];
                }
        }
        return best;
}

void unknown_option(int argc, char **argv, const struct option *opts, const char *cmd)
{
        /* getopt is silent (opterr 0): one line of our own, with the option most likely meant */
        const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        char word[64] = "";
        if (strncmp(bad, "--", 2) == 0) {
                gr_strlcpy(word, bad + 2, sizeof(word));
                word[strcspn(word, "=")] = '\0';
        }
        const char *names[64];
        size_t n = 0;
        bool known = false, takes_none = false;
        for (; opts[n].name && n < GR_ELEMENTSOF(names); n++) {
                names[n] = opts[n].name;
                if (word[0] && strcmp(word, opts[n].name) == 0) {
                        known = true;
                        takes_none = opts[n].has_arg == no_argument;
                }
        }
        const char *m = word[0] && !known ? closest_word(word, names, n) : NULL;
        fflush(stdout);
        const char letter[2] = { (char)(optopt > 0 && optopt < 256 ? optopt : '?'), '\0' };
        if (known && takes_none) /* --json=x */
                fprintf(stderr, "gpureap %s: option '--%s' takes no value; see 'gpureap %s --help'\n", cmd, word, cmd);
        else if (known)
                fprintf(stderr, "gpureap %s: option '--%s' needs a value; see 'gpureap %s --help'\n", cmd, word, cmd);
        else if (m)
                fprintf(stderr, "gpureap %s: unknown option '%s'; did you mean '--%s'? see 'gpureap %s --help'\n", cmd,
                        QUOTED(bad), m, cmd);
        else if (optopt && optopt < 256 && !word[0])
                fprintf(stderr, "gpureap %s: unknown option '-%s' (or it needs a value); see 'gpureap %s --help'\n", cmd,
                        QUOTED(letter), cmd);
        else
                fprintf(stderr, "gpureap %s: unknown option '%s'; see 'gpureap %s --help'\n", cmd, QUOTED(bad), cmd);
}

/* SIGPIPE caught, not ignored: a write to a pipe whose reader is gone fails with EPIPE instead
 * of ending gpureap between a SIGTERM and its SIGKILL; and, unlike SIG_IGN, a handler does not
 * survive the exec of nvidia-smi or scontrol */
static void sigpipe_caught(int sig)
{
        (void)sig;
}

struct sigaction caller_sigpipe = { .sa_handler = SIG_DFL };

/* stdout as a stream of our own over fd 1, which keeps the cause of its first failed write:
 * glibc writes a large block (a status --json) straight from the caller's buffer, and when that
 * fails nothing is left pending to fail again at the end, so ferror(stdout) alone would not say
 * why. (glibc lets a program set stdout; the fd and its buffering stay what they were.) */
static int stdout_errno;

/* fds 0-2 the caller closed, held with /dev/null since program_start so that no file of
 * gpureap's (the audit trail's socket, a --json result) takes their number; a held stdout's
 * writes fail as they would have (EBADF) */
static bool std_held[3];

bool std_fd_held(int fd)
{
        return fd >= 0 && fd <= 2 && std_held[fd];
}

static ssize_t stdout_write(void *cookie, const char *buf, size_t size)
{
        (void)cookie;
        if (std_held[STDOUT_FILENO]) {
                if (!stdout_errno)
                        stdout_errno = EBADF;
                errno = EBADF;
                return -1;
        }
        size_t o = 0;
        while (o < size) {
                ssize_t w = write(STDOUT_FILENO, buf + o, size - o);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        if (!stdout_errno)
                                stdout_errno = w < 0 ? errno : EIO;
                        return o > 0 ? (ssize_t)o : -1;
                }
                o += (size_t)w;
        }
        return (ssize_t)size;
}

static void stdout_open(void)
{
        FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = stdout_write });
        if (!f)
                return; /* glibc's own stdout: a failure is still seen, its cause maybe not */
        setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
        stdout = f;
}

/* Everything written to stdout, on its way: 0, or -errno of the write that failed */
static int stdout_finish(void)
{
        errno = 0;
        bool failed = fflush(stdout) != 0 || ferror(stdout);
        int e = stdout_errno ? stdout_errno : errno;
        /* a file on NFS may say only at close; stdout was never opened: nothing to say */
        if (close(STDOUT_FILENO) < 0 && errno != EBADF && !failed) {
                failed = true;
                e = errno;
        }
        if (failed)
                __fpurge(stdout); /* nothing left to try again at exit, on an fd now closed */
        return failed ? -(e ? e : EIO) : 0;
}

/* The exit code, once stdout has been checked (docs/exit-codes.md) */
int output_checked(int code, enum output_kind kind)
{
        int r = stdout_finish();
        if (r == 0 || kind == OUTPUT_OWN || (r == -EPIPE && kind == OUTPUT_ACT))
                return code;
        error_msg("cannot write the output: %s", strerror(-r));
        if (kind == OUTPUT_CHECK)
                return CHECK_UNKNOWN;
        return code == EXIT_CLEAN || code == EXIT_NOT_CLEAN ? EXIT_OUTPUT : code;
}

void library_from_env(void)
{
        /* the command's settings are the default context's (every call of the command names no
         * other); it keeps the pointers: getenv's strings are never freed, also those that a
         * setenv replaced (run's absolute_env, which calls this again) */
        gr_context *c = gr_context_default();
        gr_context_set_proc_root(c, getenv("GPUREAP_PROC_ROOT"));
        gr_context_set_dev_dir(c, getenv("GPUREAP_DEV_DIR"));
        gr_context_set_sys_root(c, getenv("GPUREAP_SYS_ROOT"));
        gr_context_set_nvml_library(c, getenv("GPUREAP_NVML_LIBRARY"), "GPUREAP_NVML_LIBRARY");
        gr_context_set_kubelet_module(c, getenv("GPUREAP_KUBELET_MODULE")); /* loaded only as gr_open_trusted allows */
        static char scan_why[160];
        const char *scan = getenv("GPUREAP_SCAN");
        if (!scan || !*scan || strcmp(scan, "auto") == 0) {
                gr_context_set_scan_mode(c, GR_SCAN_MODE_AUTO, NULL);
        } else if (strcmp(scan, "proc") == 0) {
                gr_context_set_scan_mode(c, GR_SCAN_MODE_PROC, NULL);
        } else if (strcmp(scan, "bpf") == 0) {
                gr_context_set_scan_mode(c, GR_SCAN_MODE_BPF, NULL);
        } else {
                /* not a usage error: the /proc scan, and status --json's scan_fallback says why */
                snprintf(scan_why, sizeof(scan_why), "GPUREAP_SCAN=%s is not proc, bpf or auto", scan);
                gr_context_set_scan_mode(c, GR_SCAN_MODE_PROC, scan_why);
        }
}

/* Before any command: SIGPIPE caught (the caller's disposition kept for run's command), stdout
 * our own stream, the library's settings from the environment */
void program_start(void)
{
        /* fds 0, 1 and 2 that the caller closed are /dev/null from here on, close-on-exec (a
         * command run keeps them closed, as the caller left them): else the first file gpureap
         * opened took the number, and what was written to stdout went into the audit trail's
         * socket ('--json -' failed with 'Transport endpoint is not connected') */
        for (int fd = 0; fd <= 2; fd++) {
                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                int n = open("/dev/null", (fd == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
                if (n >= 0 && n != fd)
                        close(n); /* a lower one was free: not ours to fill */
                else if (n == fd)
                        std_held[fd] = true;
        }
        opterr = 0; /* each command says what it did not understand, with the program's name */
        library_from_env();
        /* 0: JSON from serve, structs: its structs, not its rendered report (docs/serve.md) */
        serve_wire_set(getenv("GPUREAP_SERVE_WIRE"));
        struct sigaction sa = { .sa_handler = sigpipe_caught, .sa_flags = SA_RESTART };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, &caller_sigpipe);
        stdout_open();
}
