/* gpureap: is this GPU really clean, and if not, who holds it and why */
#include <stdio.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap/gpu.h"
#include "gpureap-config.h"
#include "gpureap.h"

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

static int run_command(const struct command *c, int argc, char **argv)
{
        return output_checked(c->run(argc, argv), c->output);
}

int main(int argc, char **argv)
{
        /* the NVML helper is this program again (one build: the layouts it shares match) */
        if (argc == 2 && strcmp(argv[1], GR_NVML_HELPER_ARG) == 0) {
                gr_nvml_helper_main(argc, argv);
                error_msg("'%s' is gpureap's own NVML helper, started by gpureap, not by hand", GR_NVML_HELPER_ARG);
                return EXIT_USAGE;
        }
        gr_context_set_helper(NULL, "/proc/self/exe");
        program_start();
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
