/* gpureap check: one line and an exit code for a health framework (Nagios and LBNL NHC, or a
 * Kubernetes node-problem-detector custom plugin). Busy is fine: a node runs jobs. A leftover or
 * stale memory is a problem: the next job gets less of the GPU than it asks for. A driver that
 * does not answer is critical too, not unknown: a node whose driver hangs cannot run GPU jobs,
 * and a framework drains a node on critical, not on unknown. Unknown is kept for a check that
 * cannot judge at all (no NVIDIA driver on this machine). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

static void check_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap check [--format nagios|npd] [--gpu SEL] [--nvml-timeout DUR]\n"
                "                     [--direct | --replay FILE]\n"
                "\n"
                "One line for a health framework, and its exit code. Busy GPUs are fine; leftovers,\n"
                "stale memory and a driver that does not answer are problems (docs/integrations.md).\n"
                "\n"
                "  --format nagios  Nagios, Icinga, LBNL NHC (the default): 0 OK, 1 WARNING (a holder\n"
                "                   gpureap cannot judge), 2 CRITICAL (a leftover, stale memory, a GPU or\n"
                "                   driver that cannot be read), 3 UNKNOWN (no NVIDIA driver here)\n"
                "  --format npd     a node-problem-detector custom plugin: 0 OK, 1 problem (critical),\n"
                "                   2 unknown; the message fits in 80 characters\n"
                "  --gpu SEL        only these GPUs\n"
                "  --nvml-timeout   how long the driver gets (default 5s)\n"
                "  --direct         read the driver and /proc here, not through a running\n"
                "                   'gpureap serve' (whose view, with its memory, status gives too)\n"
                "  --replay FILE    judge a snapshot recorded with 'gpureap status --json'\n");
}

/* a bad command line is the check's own failure: UNKNOWN for Nagios, "other" (unknown) for
 * node-problem-detector; never 2, which Nagios reads as CRITICAL */
#define CHECK_USAGE CHECK_UNKNOWN

static const char *const level_names[] = { "OK", "WARNING", "CRITICAL", "UNKNOWN" };

int cmd_check(int argc, char **argv)
{
        static const struct option opts[] = {
                { "format", required_argument, NULL, 'f' },
                { "gpu", required_argument, NULL, 'g' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "replay", required_argument, NULL, 'r' },
                { "direct", no_argument, NULL, 'D' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool npd = false;
        const char *replay = NULL;
        bool direct = false;
        char gpus[1024] = "";
        gr_snapshot_options so = { 0 };
        if (nvml_timeout_from_env(&so.gpu.timeout_ms) < 0)
                return CHECK_USAGE;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+f:g:t:r:Dh", opts, NULL)) != -1) {
                switch (c) {
                case 'D': direct = true; break;
                case 'r':
                        replay = optarg;
                        break;
                case 'f':
                        if (strcmp(optarg, "npd") == 0)
                                npd = true;
                        else if (strcmp(optarg, "nagios") != 0) {
                                error_msg("unknown --format '%s' (nagios or npd)", QUOTED(optarg));
                                return CHECK_USAGE;
                        }
                        break;
                case 'g':
                        if (gpu_option_append(gpus, sizeof(gpus), optarg) < 0)
                                return CHECK_USAGE;
                        break;
                case 't':
                        if (parse_duration_option(optarg, &so.gpu.timeout_ms, false) < 0)
                                return CHECK_USAGE;
                        break;
                case 'h':
                        check_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, "check");
                        return CHECK_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "check") < 0)
                return CHECK_USAGE;
        struct gpu_selection sel = { .list = gpus[0] ? gpus : NULL };
        struct summary m = { .level = SUMMARY_OK };
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        unsigned n_sel = 0;
        int r;
        if (replay) {
                char err[512];
                if (snapshot_from_json(replay, &s, err, sizeof(err)) < 0) {
                        error_msg("%s", err);
                        return CHECK_USAGE;
                }
                r = 0;
        } else {
                r = view_take(&so, direct ? VIEW_DIRECT : VIEW_SERVED_OK, &s);
        }
        if (r < 0) {
                summary_say(&m, SUMMARY_UNKNOWN, "cannot take a snapshot: %s", strerror(-r));
        } else if (s->gpu->status == GR_GPU_NO_LIBRARY) {
                summary_say(&m, SUMMARY_UNKNOWN, "no NVIDIA driver: %s", s->gpu->error);
        } else if (s->gpu->status != GR_GPU_OK) {
                summary_say(&m, SUMMARY_CRITICAL, "%s", s->gpu->error);
        } else if (gpu_selection_unmatched(&sel, s->gpu, m.text, sizeof(m.text))) {
                gpu_selection_error(&sel, s->gpu);
                gr_snapshot_free(s);
                return CHECK_USAGE;
        } else if ((r = gr_diagnose(s, getuid(), &d)) < 0) {
                summary_say(&m, SUMMARY_UNKNOWN, "cannot diagnose: %s", strerror(-r));
        } else {
                for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                        if (gpu_selected(&sel, &s->gpu->gpus[i])) {
                                n_sel++;
                                summary_gpu(&m, s, d, i);
                        }
        }
        if (m.o == 0) {
                unsigned busy = 0;
                for (unsigned i = 0; d && i < s->gpu->n_gpus; i++)
                        busy += gpu_selected(&sel, &s->gpu->gpus[i]) && d->gpus[i].state == GR_GPU_BUSY;
                if (busy)
                        summary_say(&m, SUMMARY_OK, "%u GPU%s, %u busy, none with leftovers", n_sel, n_sel == 1 ? "" : "s", busy);
                else
                        summary_say(&m, SUMMARY_OK, "%u GPU%s clean", n_sel, n_sel == 1 ? "" : "s");
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        if (npd) {
                /* node-problem-detector keeps the first 80 characters of the message */
                char line[81];
                snprintf(line, sizeof(line), "gpureap %s: %s", level_names[m.level], m.text);
                puts(line);
                return m.level == SUMMARY_CRITICAL ? 1 : m.level == SUMMARY_UNKNOWN ? 2 : 0;
        }
        printf("GPUREAP %s - %s\n", level_names[m.level], m.text);
        return (int)m.level;
}
