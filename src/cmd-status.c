/* gpureap status: the snapshot, shown as a table or as JSON */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

static void status_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap status [--json] [--why] [--wide] [--color=WHEN] [--gpu SEL[,SEL...]]\n"
                "                      [--nvml-timeout DURATION] [--direct | --replay FILE]\n"
                "\n"
                "For every GPU: is it clean, and if not, who holds it, why, and what to do next.\n"
                "\n"
                "  --json                 write facts, verdicts, evidence and findings as JSON\n"
                "                         (schema: docs/json-schema.md)\n"
                "  --why, -v              details of every GPU, clean ones too, and every piece of\n"
                "                         evidence behind each holder's verdict (docs/verdicts.md)\n"
                "  --wide, -w             whole lines, never cut to the terminal's width (a pipe\n"
                "                         or a file always gets them whole)\n"
                "  --color=WHEN           auto (the default: on a terminal, unless $NO_COLOR is\n"
                "                         set), always or never\n"
                "  --direct               read the driver and /proc here, not through a running\n"
                "                         'gpureap serve' (which also remembers what a snapshot\n"
                "                         cannot see: docs/serve.md)\n"
                "  --replay FILE          diagnose a snapshot recorded with --json instead of\n"
                "                         this machine (for bug reports and tests; a regular\n"
                "                         file of at most 64 MiB)\n"
                "  --gpu SEL              only these GPUs: index, UUID (or its first 8+ characters)\n"
                "                         or PCI bus id; comma separated or repeated\n"
                SCOPE_USAGE_25
                "                         (without --gpu: the GPUs its processes hold)\n"
                "  --nvml-timeout DUR     give the driver this long to answer each call, in its\n"
                "                         own time (default 5s; also $GPUREAP_NVML_TIMEOUT); a\n"
                "                         /proc scan that takes longer is noted as slow\n"
                "\n"
                "environment: GPUREAP_SERVE_SOCKET (serve's socket, default " SERVE_SOCKET_DEFAULT "),\n"
                "GPUREAP_NVML_LIBRARY (the NVML to load), GPUREAP_PROC_ROOT, GPUREAP_DEV_DIR\n"
                "(where /proc and the device files are, for tests)\n"
                "\n"
                "exit codes: 0 every selected GPU clean (monitors do not count), 1 a selected GPU\n"
                "is busy, dirty or stale, 2 usage error, 3 GPU or driver failure or timeout\n");
}

int parse_duration_option(const char *v, uint64_t *ret, bool zero_ok)
{
        uint64_t ms;
        if (gr_parse_duration_ms(v, &ms) < 0 || (ms == 0 && !zero_ok) || ms > 86400000) {
                error_msg("invalid duration '%s' (try '5s' or '500ms')", QUOTED(v));
                return -1;
        }
        *ret = ms;
        return 0;
}

/* Is every item of a comma-separated list non-empty? An empty selection must never mean "all"
 * (a script's empty "$GPUS"). */
bool list_items_ok(const char *value)
{
        if (!value[0])
                return false;
        for (const char *p = value; *p; p++)
                if (*p == ',' && (p == value || p[1] == ',' || p[1] == '\0'))
                        return false;
        return true;
}

int gpu_option_append(char *list, size_t size, const char *value)
{
        if (!list_items_ok(value)) {
                error_msg("invalid --gpu '%s': an empty GPU selector (give an index, a UUID prefix or a bus id)", QUOTED(value));
                return -1;
        }
        if (strlen(list) + strlen(value) + 2 >= size) {
                error_msg("--gpu list is too long");
                return -1;
        }
        if (list[0])
                strncat(list, ",", size - strlen(list) - 1);
        strncat(list, value, size - strlen(list) - 1);
        return 0;
}

int no_stray_arguments(int argc, char **argv, const char *cmd)
{
        if (optind >= argc)
                return 0;
        error_msg("unexpected argument '%s'; see 'gpureap %s --help'", QUOTED(argv[optind]), cmd);
        return -1;
}

int nvml_timeout_from_env(uint64_t *ret)
{
        const char *env = getenv("GPUREAP_NVML_TIMEOUT");
        return env && *env ? parse_duration_option(env, ret, false) : 0;
}

static int parse_timeout(const char *v, uint64_t *ret)
{
        return parse_duration_option(v, ret, false);
}

int cmd_status(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "why", no_argument, NULL, 'v' },
                { "wide", no_argument, NULL, 'w' },
                { "color", required_argument, NULL, 'c' },
                { "gpu", required_argument, NULL, 'g' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "replay", required_argument, NULL, 'r' },
                { "direct", no_argument, NULL, 'D' },
                { "job", required_argument, NULL, OPT_JOB },
                { "cgroup", required_argument, NULL, OPT_CGROUP },
                { "container", required_argument, NULL, OPT_CONTAINER },
                { "pod", required_argument, NULL, OPT_POD },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool json = false, why = false, wide = false, direct = false;
        enum color_when color = COLOR_AUTO;
        gr_scope scope = { .kind = GR_SCOPE_NONE };
        const char *replay = NULL;
        char gpus[1024] = "";
        gr_snapshot_options so = { 0 };
        if (nvml_timeout_from_env(&so.gpu.timeout_ms) < 0)
                return EXIT_USAGE;

        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+jvwg:t:r:h", opts, NULL)) != -1) {
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'v':
                        why = true;
                        break;
                case 'w':
                        wide = true;
                        break;
                case 'c':
                        if (color_option(optarg, &color) < 0)
                                return EXIT_USAGE;
                        break;
                case 'g':
                        if (gpu_option_append(gpus, sizeof(gpus), optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 't':
                        if (parse_timeout(optarg, &so.gpu.timeout_ms) < 0)
                                return EXIT_USAGE;
                        break;
                case 'r':
                        replay = optarg;
                        break;
                case 'D':
                        direct = true;
                        break;
                case OPT_JOB:
                case OPT_CGROUP:
                case OPT_CONTAINER:
                case OPT_POD:
                        if (scope_option(scope_option_name(c), optarg, &scope) < 0)
                                return EXIT_USAGE;
                        break;
                case 'h':
                        status_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, "status");
                        return EXIT_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "status") < 0)
                return EXIT_USAGE;
        struct gpu_selection sel = { .list = gpus[0] ? gpus : NULL, .scope = &scope };

        gr_snapshot *s = NULL;
        if (replay) {
                char err[512];
                if (snapshot_from_json(replay, &s, err, sizeof(err)) < 0) {
                        error_msg("%s", err);
                        return EXIT_USAGE;
                }
        } else {
                int r = view_take(&so, direct ? VIEW_DIRECT : VIEW_SERVED_OK, &s);
                if (r < 0) {
                        error_msg("cannot take a snapshot: %s", strerror(-r));
                        return EXIT_DRIVER;
                }
        }
        if (s->gpu->status == GR_GPU_OK) {
                char bad[128];
                if (gpu_selection_unmatched(&sel, s->gpu, bad, sizeof(bad))) {
                        gpu_selection_error(&sel, s->gpu);
                        gr_snapshot_free(s);
                        return EXIT_USAGE;
                }
        }

        sel.scope_mask = scope_gpus(s, &scope);
        gr_diagnosis *d = NULL;
        int r = gr_diagnose(s, getuid(), &d);
        if (r < 0) {
                error_msg("cannot diagnose: %s", strerror(-r));
                gr_snapshot_free(s);
                return EXIT_DRIVER;
        }
        if (json) {
                render_status_json(stdout, s, d, &sel);
        } else {
                struct table_options to = {
                        .color = color_wanted(color, STDOUT_FILENO),
                        .why = why,
                        .width = wide ? 0 : terminal_width(STDOUT_FILENO),
                        .replay = replay,
                };
                render_status_table(stdout, s, d, &sel, &to);
        }
        fflush(stdout);

        int code = EXIT_CLEAN;
        if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                if (s->gpu->status == GR_GPU_NO_LIBRARY)
                        fprintf(stderr, "hint: no NVIDIA driver found; holders of device files were still listed from %s\n",
                                QUOTED(s->proc_root));
                code = EXIT_DRIVER;
        } else {
                for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                        if (!gpu_selected(&sel, &s->gpu->gpus[i]))
                                continue;
                        if (d->gpus[i].state == GR_GPU_UNKNOWN)
                                code = EXIT_DRIVER;
                        else if (code == EXIT_CLEAN && d->gpus[i].state != GR_GPU_CLEAN)
                                code = EXIT_NOT_CLEAN;
                }
        }
        gr_diagnosis_free(d);
        if (s->proc_error < 0)
                error_msg("cannot read '%s': %s", QUOTED(s->proc_root), strerror(-s->proc_error));
        gr_snapshot_free(s);
        return code;
}
