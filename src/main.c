/* gpureap: is this GPU really clean, and if not, who holds it and why */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/drm.h"
#include "gpureap/gpu.h"
#include "gpureap/proc.h"
#include "gpureap-config.h"
#include "gpureap.h"

/* What a command's exit code becomes when its output cannot be written (docs/exit-codes.md) */
enum output_kind {
        OUTPUT_READ,    /* the output is the answer: any write error fails it, 4 for 0 and 1 */
        OUTPUT_ACT,     /* it signals, resets or drains: a reader gone away (EPIPE: 'reap | head
                           -1') is no error once it acted; another write error is, 4 for 0 and 1 */
        OUTPUT_CHECK,   /* a health check's line: without it the check's own failure, 3 (UNKNOWN) */
        OUTPUT_OWN,     /* run: its exit code is the command's; it reports its own output */
};

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        enum output_kind output;
        const char *summary;
};

static const struct command commands[] = {
        { "status", cmd_status, OUTPUT_READ, "is every GPU clean? if not, who holds it, why, and what to do" },
        { "reap", cmd_reap, OUTPUT_ACT, "kill the leftovers, wait for the memory to come back, verify" },
        { "wait", cmd_wait, OUTPUT_READ, "wait until GPUs are clean or have enough memory free" },
        { "run", cmd_run, OUTPUT_OWN, "run a command so that it leaves no process and no GPU memory behind" },
        { "reset", cmd_reset, OUTPUT_ACT, "reset a GPU that nothing holds (nvidia-smi --gpu-reset), verified" },
        { "check", cmd_check, OUTPUT_CHECK, "one line and an exit code for a health check (Nagios, NHC, node-problem-detector)" },
        { "metrics", cmd_metrics, OUTPUT_READ, "the Prometheus text format, for node_exporter's textfile collector" },
        { "serve", cmd_serve, OUTPUT_READ, "watch resident: remember launchers, answer status fast, serve /metrics" },
        { "slurm-prolog", cmd_slurm_prolog, OUTPUT_ACT, "Slurm's Prolog: refuse a job whose GPUs are not clean" },
        { "slurm-epilog", cmd_slurm_epilog, OUTPUT_ACT, "Slurm's Epilog: reap the ended job's leftovers on its GPUs, verify" },
};


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

static void usage(FILE *f)
{
        fprintf(f, "usage: gpureap [COMMAND] [OPTIONS]\n\ncommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
        fprintf(f,
                "\nwithout a command, gpureap runs 'status'. 'gpureap COMMAND --help' tells more.\n"
                "\nexit codes:\n"
                "  0  every selected GPU is clean (or the action is done)\n"
                "  1  something holds a selected GPU\n"
                "  2  usage error\n"
                "  3  GPU or driver failure, or the driver did not answer in time\n"
                "  4  the output could not be written (a full disk, a closed stdout)\n");
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

static ssize_t stdout_write(void *cookie, const char *buf, size_t size)
{
        (void)cookie;
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
static int output_checked(int code, enum output_kind kind)
{
        int r = stdout_finish();
        if (r == 0 || kind == OUTPUT_OWN || (r == -EPIPE && kind == OUTPUT_ACT))
                return code;
        error_msg("cannot write the output: %s", strerror(-r));
        if (kind == OUTPUT_CHECK)
                return CHECK_UNKNOWN;
        return code == EXIT_CLEAN || code == EXIT_NOT_CLEAN ? EXIT_OUTPUT : code;
}

static int run_command(const struct command *c, int argc, char **argv)
{
        return output_checked(c->run(argc, argv), c->output);
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

int main(int argc, char **argv)
{
        opterr = 0; /* each command says what it did not understand, with the program's name */
        /* the NVML helper is this program again (one build: the layouts it shares match) */
        if (argc == 2 && strcmp(argv[1], GR_NVML_HELPER_ARG) == 0) {
                gr_nvml_helper_main(argc, argv);
                error_msg("'%s' is gpureap's own NVML helper, started by gpureap, not by hand", GR_NVML_HELPER_ARG);
                return EXIT_USAGE;
        }
        gr_context_set_helper(NULL, "/proc/self/exe");
        library_from_env();
        /* 0: JSON from serve, structs: its structs, not its rendered report (docs/serve.md) */
        serve_wire_set(getenv("GPUREAP_SERVE_WIRE"));
        struct sigaction sa = { .sa_handler = sigpipe_caught, .sa_flags = SA_RESTART };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, &caller_sigpipe);
        stdout_open();
        /* 'gpureap help reap': reap's own help */
        for (size_t i = 0; argc == 3 && strcmp(argv[1], "help") == 0 && i < GR_ELEMENTSOF(commands); i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                        char *help[] = { argv[2], (char *)"--help", NULL };
                        return run_command(&commands[i], 2, help);
                }
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
                          strcmp(argv[1], "help") == 0)) {
                usage(stdout);
                return output_checked(EXIT_CLEAN, OUTPUT_READ);
        }
        if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
                printf("gpureap %s\n", GPUREAP_VERSION);
                return output_checked(EXIT_CLEAN, OUTPUT_READ);
        }
        if (argc < 2 || argv[1][0] == '-')
                return run_command(&commands[0], argc, argv); /* status */
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return run_command(&commands[i], argc - 1, argv + 1);
        const char *names[GR_ELEMENTSOF(commands)];
        for (size_t i = 0; i < GR_ELEMENTSOF(commands); i++)
                names[i] = commands[i].name;
        const char *m = closest_word(argv[1], names, GR_ELEMENTSOF(commands));
        if (m)
                error_msg("'%s' is not a gpureap command; did you mean '%s'? see 'gpureap --help'", QUOTED(argv[1]), m);
        else
                error_msg("'%s' is not a gpureap command; see 'gpureap --help'", QUOTED(argv[1]));
        return EXIT_USAGE;
}
