/* gpureap: is this GPU really clean, and if not, who holds it and why */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap-config.h"
#include "gpureap.h"

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
};

static const struct command commands[] = {
        { "status", cmd_status, "is every GPU clean? if not, who holds it, why, and what to do" },
        { "reap", cmd_reap, "kill the leftovers, wait for the memory to come back, verify" },
        { "wait", cmd_wait, "wait until GPUs are clean or have enough memory free" },
        { "run", cmd_run, "run a command so that it leaves no process and no GPU memory behind" },
        { "reset", cmd_reset, "reset a GPU that nothing holds (nvidia-smi --gpu-reset), verified" },
        { "check", cmd_check, "one line and an exit code for a health check (Nagios, NHC, node-problem-detector)" },
        { "metrics", cmd_metrics, "the Prometheus text format, for node_exporter's textfile collector" },
        { "serve", cmd_serve, "watch resident: remember launchers, answer status fast, serve /metrics" },
        { "slurm-prolog", cmd_slurm_prolog, "Slurm's Prolog: refuse a job whose GPUs are not clean" },
        { "slurm-epilog", cmd_slurm_epilog, "Slurm's Epilog: reap the ended job's leftovers on its GPUs, verify" },
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
        bool known = false;
        for (; opts[n].name && n < GR_ELEMENTSOF(names); n++) {
                names[n] = opts[n].name;
                known |= word[0] && strcmp(word, opts[n].name) == 0;
        }
        const char *m = word[0] && !known ? closest_word(word, names, n) : NULL;
        fflush(stdout);
        if (known)
                fprintf(stderr, "gpureap %s: option '--%s' needs a value; see 'gpureap %s --help'\n", cmd, word, cmd);
        else if (m)
                fprintf(stderr, "gpureap %s: unknown option '%s'; did you mean '--%s'? see 'gpureap %s --help'\n", cmd, bad, m, cmd);
        else if (optopt && optopt < 256 && !word[0])
                fprintf(stderr, "gpureap %s: unknown option '-%c' (or it needs a value); see 'gpureap %s --help'\n", cmd, optopt, cmd);
        else
                fprintf(stderr, "gpureap %s: unknown option '%s'; see 'gpureap %s --help'\n", cmd, bad, cmd);
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
                "  3  GPU or driver failure, or the driver did not answer in time\n");
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
        gr_gpu_set_helper("/proc/self/exe");
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
                          strcmp(argv[1], "help") == 0)) {
                usage(stdout);
                return EXIT_CLEAN;
        }
        if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
                printf("gpureap %s\n", GPUREAP_VERSION);
                return EXIT_CLEAN;
        }
        if (argc < 2 || argv[1][0] == '-')
                return cmd_status(argc, argv);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].run(argc - 1, argv + 1);
        const char *names[GR_ELEMENTSOF(commands)];
        for (size_t i = 0; i < GR_ELEMENTSOF(commands); i++)
                names[i] = commands[i].name;
        const char *m = closest_word(argv[1], names, GR_ELEMENTSOF(commands));
        if (m)
                error_msg("'%s' is not a gpureap command; did you mean '%s'? see 'gpureap --help'", argv[1], m);
        else
                error_msg("'%s' is not a gpureap command; see 'gpureap --help'", argv[1]);
        return EXIT_USAGE;
}
