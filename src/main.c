/* gpureap: is this GPU really clean, and if not, who holds it and why */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
        { "slurm-prolog", cmd_slurm_prolog, "Slurm's Prolog: refuse a job whose GPUs are not clean" },
        { "slurm-epilog", cmd_slurm_epilog, "Slurm's Epilog: reap the ended job's leftovers on its GPUs, verify" },
};

void error_msg(const char *fmt, ...)
{
        va_list ap;
        fflush(stdout); /* one file for both: the lines in the order they happened */
        fputs("gpureap: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
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
        error_msg("'%s' is not a gpureap command; see 'gpureap --help'", argv[1]);
        return EXIT_USAGE;
}
