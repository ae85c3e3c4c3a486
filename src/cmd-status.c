/* gpureap status: the snapshot, shown as a table or as JSON */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

static void status_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap status [--json] [--why] [--wide] [--color=WHEN] [--gpu SEL[,SEL...]]\n"
                "                      [--watch SEC] [--nvml-timeout DURATION] [--direct | --replay FILE]\n"
                "                      [--kubelet-socket PATH]\n"
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
                "  --gpu SEL, -i SEL      only these GPUs: index, UUID (or its first 8+ characters)\n"
                "                         or PCI bus id (00000000:1A:00.0, 0000:1a:00.0 or\n"
                "                         1a:00.0); comma separated or repeated\n"
                "  --watch SEC, -l SEC    a report every SEC seconds (or 500ms, 2m) until Ctrl-C or\n"
                "                         TERM (then exit 0): at a terminal redrawn in place, to a\n"
                "                         pipe one after another, a blank line between them\n"
                SCOPE_USAGE_25
                "                         (without --gpu: the GPUs its processes hold)\n"
                "  --kubelet-socket PATH  ask the kubelet here which pod and container each holder\n"
                "                         runs in (default " GR_KUBELET_SOCKET_DEFAULT ",\n"
                "                         also $GPUREAP_KUBELET_SOCKET); no socket: not asked\n"
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

int kubelet_socket_option(gr_snapshot_options *so, const char *given)
{
        const char *env = getenv("GPUREAP_KUBELET_SOCKET");
        if (given && !given[0]) {
                error_msg("--kubelet-socket needs a path");
                return -1;
        }
        so->kubelet_ask = true;
        so->kubelet.socket = given ? given : env && env[0] ? env : NULL;
        /* the device manager's checkpoint: read by default only beside the default socket */
        const char *cp = getenv("GPUREAP_KUBELET_CHECKPOINT");
        so->kubelet.checkpoint = cp && cp[0] ? cp : NULL;
        /* the container runtime's CRI socket, asked whether a pod no listed pod names is gone:
         * by default only beside the default socket (containerd's) */
        const char *cri = getenv("GPUREAP_CRI_SOCKET");
        so->kubelet.cri_socket = cri && cri[0] ? cri : NULL;
        return 0;
}

static int parse_timeout(const char *v, uint64_t *ret)
{
        return parse_duration_option(v, ret, false);
}

struct status_args {
        bool json, why, wide, direct;
        enum color_when color;
        gr_scope scope;
        const char *replay;
        char gpus[1024];
        gr_snapshot_options so;
        uint64_t watch_ms;      /* -l/--watch: every this long; 0 once */
};

/* The report of s to f, as getuid() is judged, and its exit code. What it has to say on
 * stderr is said there; or, with ret_would_say, not said and *ret_would_say set (serve renders
 * for a client only reports that say nothing there: status_rendered) */
int status_report(const gr_snapshot *s, const struct status_report_options *o, FILE *f, bool *ret_would_say)
{
        static const gr_scope no_scope = { .kind = GR_SCOPE_NONE };
        const gr_scope *scope = o->scope ? o->scope : &no_scope;
        struct gpu_selection sel = { .list = o->gpus && o->gpus[0] ? o->gpus : NULL, .scope = scope };
        if (ret_would_say)
                *ret_would_say = false;
        sel.scope_mask = scope_gpus(s, scope);
        gr_diagnosis *d = NULL;
        int r = gr_diagnose(s, getuid(), &d);
        if (r < 0) {
                if (ret_would_say)
                        *ret_would_say = true;
                else
                        error_msg("cannot diagnose: %s", strerror(-r));
                return EXIT_DRIVER;
        }
        gr_diagnosis_narrow(d, s, scope); /* the findings, states and exit code: the scope's */
        if (o->json) {
                render_status_json(f, s, d, &sel);
        } else {
                struct table_options to = { .color = o->color, .why = o->why, .width = o->width, .replay = o->replay };
                render_status_table(f, s, d, &sel, &to);
        }
        fflush(f);

        int code = EXIT_CLEAN;
        /* no NVIDIA driver, but AMD or Intel GPUs: their states answer (docs/drm.md) */
        bool drm_answers = gr_snapshot_drm_only(s);
        bool say = !ret_would_say;
        if (drm_answers) {
                if (say)
                        fprintf(stderr, "hint: no NVIDIA driver found; %u AMD or Intel GPU%s read from DRM and KFD\n",
                                s->drm->n_gpus, s->drm->n_gpus == 1 ? "" : "s");
                else
                        *ret_would_say = true;
        } else if (s->gpu->status != GR_GPU_OK) {
                if (say) {
                        error_msg("%s", s->gpu->error);
                        if (s->gpu->status == GR_GPU_NO_LIBRARY)
                                fprintf(stderr, "hint: no NVIDIA driver found; holders of device files were still listed from %s\n",
                                        QUOTED(s->proc_root));
                } else {
                        *ret_would_say = true;
                }
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
        /* AMD and Intel GPUs count: without an NVIDIA driver those --gpu names by their PCI
         * addresses (every one without it), busy or dirty; beside one only where no --gpu
         * (NVML's indexes and ids) was asked, and only dirty (a leftover client or a KFD ghost),
         * since a workstation's desktop keeps its integrated GPU busy */
        for (unsigned i = 0; code == EXIT_CLEAN && d->drm && i < s->drm->n_gpus && i < GR_DRM_GPUS_MAX; i++) {
                bool counted = drm_answers ? drm_gpu_selected(&sel, &s->drm->gpus[i]) : !sel.list;
                if (counted && d->drm->gpus[i].state != GR_GPU_CLEAN && (drm_answers || d->drm->gpus[i].state == GR_GPU_DIRTY))
                        code = EXIT_NOT_CLEAN;
        }
        gr_diagnosis_free(d);
        if (s->proc_error < 0) {
                if (say)
                        error_msg("cannot read '%s': %s", QUOTED(s->proc_root), strerror(-s->proc_error));
                else
                        *ret_would_say = true;
        }
        return code;
}

/* The served path's fast way (issue 25): a plain 'status' or 'status --json' is rendered by
 * serve itself, from the very snapshot its structs would carry, by this very build, for a
 * client of serve's own user (status_rendered): the client copies it out. -errno where serve
 * does not answer so (not running, another build, another user, a report with stderr lines,
 * a look too old): the usual way then */
static int status_served(const struct status_args *a, FILE *f)
{
        /* judged for the real uid (gr_diagnose(getuid())), while serve knows the effective one
         * (SO_PEERCRED): where they differ, not asked */
        if (a->direct || a->replay || a->gpus[0] || a->scope.kind != GR_SCOPE_NONE || !serve_rendered_wanted() ||
            !wire_build_id()[0] || getuid() != geteuid())
                return -ENOTSUP;
        char *buf;
        const char *report;
        size_t len;
        int code = serve_fetch_report(wire_build_id(), a->json, color_wanted(a->color, STDOUT_FILENO), a->why, a->wide,
                                      &buf, &report, &len);
        if (code < 0)
                return code;
        fwrite(report, 1, len, f);
        fflush(f);
        free(buf);
        return code;
}

/* One report to f; its exit code */
static int status_once(const struct status_args *a, FILE *f)
{
        gr_snapshot *s = NULL;
        if (a->replay) {
                char err[512];
                if (snapshot_from_json(a->replay, &s, err, sizeof(err)) < 0) {
                        error_msg("%s", err);
                        return EXIT_USAGE;
                }
        } else {
                int code = status_served(a, f);
                if (code >= 0)
                        return code;
                /* a serve that did not answer in its 500 ms is not asked again for the structs
                 * (another 500 ms): this look is our own */
                int r = view_take(&a->so, a->direct || code == -ETIMEDOUT ? VIEW_DIRECT : VIEW_SERVED_OK, &s);
                if (r < 0) {
                        error_msg("cannot take a snapshot: %s", strerror(-r));
                        return EXIT_DRIVER;
                }
        }
        struct gpu_selection sel = { .list = a->gpus[0] ? a->gpus : NULL, .scope = &a->scope };
        if (selection_rejected(&sel, s)) {
                gr_snapshot_free(s);
                return EXIT_USAGE;
        }
        struct status_report_options o = {
                .json = a->json, .why = a->why, .color = color_wanted(a->color, STDOUT_FILENO),
                .width = a->wide ? 0 : terminal_width(STDOUT_FILENO), .replay = a->replay,
                .gpus = a->gpus, .scope = &a->scope,
        };
        int code = status_report(s, &o, f, NULL);
        gr_snapshot_free(s);
        return code;
}

/* INT or TERM came (blocked, so pending): the watch is over */
static bool stop_pending(void)
{
        sigset_t p;
        return sigpending(&p) == 0 && (sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGTERM) == 1);
}

/* status -l SEC (nvidia-smi -l): a report every SEC; at a terminal each one replaces the last
 * (clear, then the report written at once: no flicker), to a pipe or a file one after another,
 * a blank line between them. INT and TERM are blocked and waited for between reports, so the
 * watch ends cleanly, with 0, never in the middle of a report; one that comes while a report
 * is being made (a terminal's Ctrl-C reaches the NVML helper too) drops that report. */
static int status_watch(const struct status_args *a)
{
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        /* blocked until the end: the command returns, and exits with 0, before either acts */
        sigprocmask(SIG_BLOCK, &stop, NULL);
        bool tty = isatty(STDOUT_FILENO);
        for (unsigned n = 0;; n++) {
                uint64_t next = gr_now_ms() + a->watch_ms;
                char *buf = NULL;
                size_t len = 0;
                FILE *m = open_memstream(&buf, &len);
                if (!m) {
                        error_msg("out of memory");
                        return EXIT_DRIVER;
                }
                int code = status_once(a, m);
                fclose(m);
                if (stop_pending()) {
                        free(buf);
                        break;
                }
                if (tty)
                        fputs("\033[H\033[2J", stdout);
                else if (n > 0)
                        fputc('\n', stdout);
                fwrite(buf, 1, len, stdout);
                free(buf);
                fflush(stdout);
                if (code == EXIT_USAGE)
                        return code;
                if (ferror(stdout))
                        return EXIT_CLEAN; /* the reader went away: main says so, and fails */
                for (;;) {
                        uint64_t now = gr_now_ms();
                        if (now >= next)
                                break;
                        struct timespec ts = { (time_t)((next - now) / 1000), (long)((next - now) % 1000) * 1000000 };
                        int sig = sigtimedwait(&stop, NULL, &ts);
                        if (sig == SIGINT || sig == SIGTERM)
                                return EXIT_CLEAN;
                }
        }
        return EXIT_CLEAN;
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
                { "watch", required_argument, NULL, 'l' },
                { "job", required_argument, NULL, OPT_JOB },
                { "cgroup", required_argument, NULL, OPT_CGROUP },
                { "container", required_argument, NULL, OPT_CONTAINER },
                { "pod", required_argument, NULL, OPT_POD },
                { "kubelet-socket", required_argument, NULL, OPT_KUBELET_SOCKET },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct status_args a = { .color = COLOR_AUTO, .scope = { .kind = GR_SCOPE_NONE } };
        const char *kubelet_socket = NULL;
        if (nvml_timeout_from_env(&a.so.gpu.timeout_ms) < 0)
                return EXIT_USAGE;

        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+jvwg:i:t:r:l:h", opts, NULL)) != -1) {
                switch (c) {
                case 'j':
                        a.json = true;
                        break;
                case 'v':
                        a.why = true;
                        break;
                case 'w':
                        a.wide = true;
                        break;
                case 'c':
                        if (color_option(optarg, &a.color) < 0)
                                return EXIT_USAGE;
                        break;
                case 'g':
                case 'i':
                        if (gpu_option_append(a.gpus, sizeof(a.gpus), optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 't':
                        if (parse_timeout(optarg, &a.so.gpu.timeout_ms) < 0)
                                return EXIT_USAGE;
                        break;
                case 'r':
                        a.replay = optarg;
                        break;
                case 'D':
                        a.direct = true;
                        break;
                case 'l':
                        if (parse_duration_option(optarg, &a.watch_ms, false) < 0)
                                return EXIT_USAGE;
                        break;
                case OPT_JOB:
                case OPT_CGROUP:
                case OPT_CONTAINER:
                case OPT_POD:
                        if (scope_option(scope_option_name(c), optarg, &a.scope) < 0)
                                return EXIT_USAGE;
                        break;
                case OPT_KUBELET_SOCKET: kubelet_socket = optarg; break;
                case 'h':
                        status_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, "status");
                        return EXIT_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "status") < 0 || kubelet_socket_option(&a.so, kubelet_socket) < 0)
                return EXIT_USAGE;
        if (a.watch_ms && a.replay) {
                error_msg("--watch and --replay exclude each other: a recording does not change");
                return EXIT_USAGE;
        }
        return a.watch_ms ? status_watch(&a) : status_once(&a, stdout);
}
