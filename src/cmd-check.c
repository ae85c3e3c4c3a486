/* gpureap check: one line and an exit code for a health framework (Nagios and LBNL NHC, or a
 * Kubernetes node-problem-detector custom plugin). Busy is fine: a node runs jobs. A leftover or
 * stale memory is a problem: the next job gets less of the GPU than it asks for. A driver that
 * does not answer is critical too, not unknown: a node whose driver hangs cannot run GPU jobs,
 * and a framework drains a node on critical, not on unknown. Unknown is kept for a check that
 * cannot judge at all. A node without NVIDIA GPUs is OK: a site's one configuration runs on its
 * CPU nodes too; where it has AMD or Intel GPUs instead, theirs is the answer (docs/drm.md).
 *
 * The whole check keeps a deadline (--timeout, 4 s: node-problem-detector kills a plugin at 5 s
 * and reports it as unknown, without our reason): the driver gets what is left of it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

#define CHECK_TIMEOUT_MS 4000

static void check_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap check [--format nagios|npd] [--gpu SEL] [--timeout DUR]\n"
                "                     [--nvml-timeout DUR] [--direct | --replay FILE]\n"
                "                     [--job ID | --cgroup PATH | --container ID | --pod UID]\n"
                "                     [--kubelet-socket PATH]\n"
                "\n"
                "One line for a health framework, and its exit code. Busy GPUs are fine; leftovers,\n"
                "stale memory and a driver that does not answer are problems; a node without NVIDIA\n"
                "GPUs is OK (docs/integrations.md).\n"
                "\n"
                "  --format nagios  Nagios, Icinga, LBNL NHC (the default): 0 OK, 1 WARNING (a holder\n"
                "                   gpureap cannot judge), 2 CRITICAL (a leftover, stale memory, a GPU or\n"
                "                   driver that cannot be read), 3 UNKNOWN (a check that cannot judge)\n"
                "  --format npd     a node-problem-detector custom plugin: 0 OK, 1 problem (critical),\n"
                "                   2 unknown; the message fits in 80 characters\n"
                "  --gpu SEL, -i    only these GPUs (index, UUID prefix, PCI bus id)\n"
                "  --timeout DUR    the whole check ends within this (default 4s, inside\n"
                "                   node-problem-detector's 5s); the driver gets what is left\n"
                "  --nvml-timeout   how long one driver call may take (default: what is left of\n"
                "                   --timeout; also $GPUREAP_NVML_TIMEOUT)\n"
                "  --direct         read the driver and /proc here, not through a running\n"
                "                   'gpureap serve' (whose view, with its memory, status gives too)\n"
                "  --replay FILE    judge a snapshot recorded with 'gpureap status --json'\n"
                "  --kubelet-socket PATH\n"
                "                   the kubelet's pod-resources socket (default\n"
                "                   " GR_KUBELET_SOCKET_DEFAULT ",\n"
                "                   also $GPUREAP_KUBELET_SOCKET): asked within --timeout, at most 1s\n"
                SCOPE_USAGE
                "                   (without --gpu: the GPUs its processes hold; only its\n"
                "                   findings count, and memory no process is tied to)\n");
}

/* a bad command line is the check's own failure: UNKNOWN for Nagios, "other" (unknown) for
 * node-problem-detector; never 2, which Nagios reads as CRITICAL */
#define CHECK_USAGE CHECK_UNKNOWN

static const char *const level_names[] = { "OK", "WARNING", "CRITICAL", "UNKNOWN" };

/* The driver's failure, its short facts first: which GPU, what kind, how long */
static void say_driver(struct summary *m, const gr_gpu_report *rep)
{
        char gpu[24] = "";
        if (rep->status == GR_GPU_TIMEOUT) {
                if (rep->stuck_gpu >= 0)
                        snprintf(gpu, sizeof(gpu), "GPU %d: ", rep->stuck_gpu);
                summary_say(m, SUMMARY_CRITICAL, "%sdriver hung, no answer in %.1f s ('%s')%s", gpu,
                            (double)rep->elapsed_ms / 1000, rep->stuck_call,
                            strstr(rep->error, "left behind") ? "; its helper is stuck in the driver, left behind" : "");
        } else {
                summary_say(m, SUMMARY_CRITICAL, "driver failed: %s", rep->error);
        }
}

/* "N GPUs with leftovers (0,2): " before the items when more than one GPU is in trouble, so that
 * the start of the line counts them all */
static void head_text(const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel,
                      char *buf, size_t size)
{
        unsigned idx[GR_GPUS_MAX], n = 0, states = 0;
        buf[0] = '\0';
        for (unsigned i = 0; d && i < s->gpu->n_gpus && n < GR_GPUS_MAX; i++) {
                gr_gpu_state st = d->gpus[i].state;
                if (!gpu_selected(sel, &s->gpu->gpus[i]) ||
                    (st != GR_GPU_DIRTY && st != GR_GPU_STALE && st != GR_GPU_UNKNOWN))
                        continue;
                idx[n++] = s->gpu->gpus[i].index;
                states |= 1u << st;
        }
        if (n < 2)
                return;
        char list[256];
        const char *what = states == 1u << GR_GPU_DIRTY   ? "with leftovers"
                           : states == 1u << GR_GPU_STALE ? "with stale memory"
                           : states == 1u << GR_GPU_UNKNOWN ? "unreadable"
                                                            : "not clean";
        snprintf(buf, size, "%u GPUs %s (%s): ", n, what, gr_index_list_text(idx, n, list, sizeof(list)));
}

/* What the command line asked for */
struct check_cmd {
        uint64_t timeout;
        gr_scope scope;
        bool npd, direct;
        const char *replay;
        char gpus[1024];
        gr_snapshot_options so;
};

/* -1 to go on, else the exit code */
static int check_parse(int argc, char **argv, struct check_cmd *k)
{
        static const struct option opts[] = {
                { "format", required_argument, NULL, 'f' },
                { "gpu", required_argument, NULL, 'g' },
                { "timeout", required_argument, NULL, 'T' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "replay", required_argument, NULL, 'r' },
                { "direct", no_argument, NULL, 'D' },
                { "job", required_argument, NULL, OPT_JOB },
                { "cgroup", required_argument, NULL, OPT_CGROUP },
                { "container", required_argument, NULL, OPT_CONTAINER },
                { "pod", required_argument, NULL, OPT_POD },
                { "kubelet-socket", required_argument, NULL, OPT_KUBELET_SOCKET },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *kubelet_socket = NULL;
        if (nvml_timeout_from_env(&k->so.gpu.timeout_ms) < 0)
                return CHECK_USAGE;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+f:g:i:t:r:Dh", opts, NULL)) != -1) {
                switch (c) {
                case 'D': k->direct = true; break;
                case 'r': k->replay = optarg; break;
                case 'f':
                        if (strcmp(optarg, "npd") == 0)
                                k->npd = true;
                        else if (strcmp(optarg, "nagios") != 0) {
                                error_msg("unknown --format '%s' (nagios or npd)", QUOTED(optarg));
                                return CHECK_USAGE;
                        }
                        break;
                case 'g':
                case 'i':
                        if (gpu_option_append(k->gpus, sizeof(k->gpus), optarg) < 0)
                                return CHECK_USAGE;
                        break;
                case 'T':
                        if (parse_duration_option(optarg, &k->timeout, false) < 0)
                                return CHECK_USAGE;
                        break;
                case 't':
                        if (parse_duration_option(optarg, &k->so.gpu.timeout_ms, false) < 0)
                                return CHECK_USAGE;
                        break;
                case OPT_JOB:
                case OPT_CGROUP:
                case OPT_CONTAINER:
                case OPT_POD:
                        if (scope_option(scope_option_name(c), optarg, &k->scope) < 0)
                                return CHECK_USAGE;
                        break;
                case OPT_KUBELET_SOCKET: kubelet_socket = optarg; break;
                case 'h':
                        check_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, "check");
                        return CHECK_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "check") < 0 || kubelet_socket_option(&k->so, kubelet_socket) < 0)
                return CHECK_USAGE;
        return -1;
}

/* The summary of what the look r (a snapshot s, or -errno) shows for the GPUs selected; the
 * diagnosis into *ret_d. -1 to go on, else the exit code (a selection that matches nothing) */
static int check_judge(const struct check_cmd *k, int r, gr_snapshot *s, struct gpu_selection *sel,
                       struct summary *m, gr_diagnosis **ret_d)
{
        char dev[1100];
        unsigned n_sel = 0, busy = 0;
        gr_diagnosis *d = NULL;
        /* no GPU here: no driver library, or one that cannot start, and no device file of a GPU
         * (a recording is another machine's: its device files are not here to look at) */
        bool no_driver = r >= 0 && (s->gpu->status == GR_GPU_NO_LIBRARY || s->gpu->status == GR_GPU_INIT_FAILED);
        bool no_gpu_here = no_driver && !k->replay && !gr_nvidia_device_file(s->dev_dir, dev, sizeof(dev));
        /* no NVIDIA GPU, but AMD or Intel ones: theirs is the answer (docs/drm.md), as in status;
         * a scope names NVML's holders only */
        bool drm_alone = r >= 0 && gr_snapshot_drm_only(s) && k->scope.kind == GR_SCOPE_NONE;
        if (r < 0) {
                summary_say(m, SUMMARY_UNKNOWN, "cannot take a snapshot: %s", strerror(-r));
        } else if (drm_alone && selection_rejected(sel, s)) {
                return CHECK_USAGE;
        } else if (drm_alone) {
                if ((r = gr_diagnose(s, getuid(), &d)) < 0)
                        summary_say(m, SUMMARY_UNKNOWN, "cannot diagnose: %s", strerror(-r));
                else
                        n_sel = summary_drm(m, s, d, sel, &busy);
        } else if (no_gpu_here) {
                summary_say(m, SUMMARY_OK, "no NVIDIA GPU here (no '%s/nvidia[0-9]*'; %s)", s->dev_dir, s->gpu->error);
        } else if (s->gpu->status == GR_GPU_NO_LIBRARY) {
                summary_say(m, SUMMARY_UNKNOWN, "no NVIDIA driver: %s", s->gpu->error);
        } else if (s->gpu->status != GR_GPU_OK) {
                say_driver(m, s->gpu);
        } else if (s->gpu->n_gpus == 0 && !k->replay && gr_nvidia_device_file(s->dev_dir, dev, sizeof(dev))) {
                summary_say(m, SUMMARY_CRITICAL, "the driver lists no GPU, but '%s' is there", dev);
        } else if (s->gpu->n_gpus == 0) {
                summary_say(m, SUMMARY_OK, "no NVIDIA GPU here (the driver lists none)");
        } else if (selection_rejected(sel, s)) {
                return CHECK_USAGE;
        } else if ((r = gr_diagnose(s, getuid(), &d)) < 0) {
                summary_say(m, SUMMARY_UNKNOWN, "cannot diagnose: %s", strerror(-r));
        } else {
                sel->scope_mask = scope_gpus(s, &k->scope);
                gr_diagnosis_narrow(d, s, &k->scope);
                for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                        if (gpu_selected(sel, &s->gpu->gpus[i])) {
                                n_sel++;
                                summary_gpu(m, s, d, i);
                                busy += d->gpus[i].state == GR_GPU_BUSY;
                        }
                /* beside NVIDIA's, an AMD or Intel GPU is said only when dirty, and only where
                 * no --gpu (NVML's) or scope narrows the check, as status counts it */
                if (!sel->list && k->scope.kind == GR_SCOPE_NONE)
                        summary_drm(m, s, d, sel, NULL);
        }
        if (m->o == 0) {
                if (k->scope.kind != GR_SCOPE_NONE && n_sel == 0 && d)
                        summary_say(m, SUMMARY_OK, "the %s's processes hold no GPU", gr_scope_kind_name(k->scope.kind));
                else if (busy)
                        summary_say(m, SUMMARY_OK, "%u GPU%s, %u busy, none with leftovers", n_sel, n_sel == 1 ? "" : "s", busy);
                else
                        summary_say(m, SUMMARY_OK, "%u GPU%s clean", n_sel, n_sel == 1 ? "" : "s");
        }
        *ret_d = d;
        return -1;
}

int cmd_check(int argc, char **argv)
{
        uint64_t t0 = gr_now_ms();
        struct check_cmd k = { .timeout = CHECK_TIMEOUT_MS };
        int code = check_parse(argc, argv, &k);
        if (code >= 0)
                return code;
        /* the driver's deadline leaves a tenth (at most 250 ms) for the helper's end, the
         * diagnosis and the line; a call gets no longer than that either */
        uint64_t reserve = k.timeout / 10 < 250 ? k.timeout / 10 : 250;
        k.so.gpu.deadline_ms = t0 + k.timeout - reserve;
        uint64_t left = k.so.gpu.deadline_ms - t0;
        if (!k.so.gpu.timeout_ms || k.so.gpu.timeout_ms > left)
                k.so.gpu.timeout_ms = left ? left : 1;
        struct gpu_selection sel = { .list = k.gpus[0] ? k.gpus : NULL, .scope = &k.scope };
        struct summary m = { .level = SUMMARY_OK, .scope = &k.scope };
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        int r;
        if (k.replay) {
                char err[512];
                if (snapshot_from_json(k.replay, &s, err, sizeof(err)) < 0) {
                        error_msg("%s", err);
                        return CHECK_USAGE;
                }
                r = 0;
        } else {
                r = view_take(&k.so, k.direct ? VIEW_DIRECT : VIEW_SERVED_OK, &s);
        }
        if ((code = check_judge(&k, r, s, &sel, &m, &d)) >= 0) {
                gr_snapshot_free(s);
                return code;
        }
        char head[320] = "";
        if (d)
                head_text(s, d, &sel, head, sizeof(head));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        if (k.npd) {
                /* node-problem-detector keeps the first 80 characters of the message */
                char line[81];
                snprintf(line, sizeof(line), "gpureap %s: %s%s", level_names[m.level], head, m.text);
                puts(line);
                return m.level == SUMMARY_CRITICAL ? 1 : m.level == SUMMARY_UNKNOWN ? 2 : 0;
        }
        printf("GPUREAP %s - %s%s\n", level_names[m.level], head, m.text);
        return (int)m.level;
}
