/* gpureap wait: block until the selected GPUs are clean, or have enough memory free */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

static void wait_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap wait [--gpu SEL[,SEL...]] [--free SIZE|PERCENT%%] [--timeout DURATION] [--json]\n"
                "                    [--direct]\n"
                "\n"
                "Wait until every selected GPU is clean (memory back at baseline, nothing holds it but\n"
                "monitors), or with --free until each has that much memory free: the gate before a\n"
                "benchmark or a server started with --mem-fraction-static. Without an NVIDIA driver,\n"
                "the AMD and Intel GPUs: no DRM client or KFD ghost left (docs/drm.md).\n"
                "\n"
                "  --gpu SEL, -i SEL  only these GPUs (index, UUID prefix, PCI bus id; AMD and Intel GPUs\n"
                "                     by PCI address)\n"
                SCOPE_USAGE_21
                "                     (with a scope: until none of its processes holds a GPU and the\n"
                "                     GPUs they held are clean)\n"
                "  --free SIZE        e.g. 40GiB, or 90%% of the GPU's total memory\n"
                "  --timeout DUR      give up after this long (default 60s; 0: look once)\n"
                "  --nvml-timeout DUR how long the driver gets for each call (default 5s)\n"
                "  --json             the result as JSON on stdout: the condition, whether it held,\n"
                "                     how long it took, the last look (docs/json-schema.md)\n"
                "  --direct           do not join what a running 'gpureap serve' saw to each look\n"
                "\n"
                "exit codes: 0 the condition holds, 1 timeout (what still holds memory is printed),\n"
                "2 usage error, 3 GPU or driver failure\n");
}

struct wait_args {
        struct gpu_selection sel;
        gr_scope scope;
        bool mask_fixed;          /* the scope's GPUs, as its processes held them at the start */
        uint64_t free_bytes;
        unsigned free_percent; /* 0: not asked */
        bool free_set;
};

/* The AMD and Intel GPUs (docs/drm.md), on a machine without an NVIDIA driver, where no scope
 * was given (a scope names NVML's holders): those --gpu names by their PCI addresses, else
 * every one; clean, or with --free that much VRAM free where the driver says how much is used
 * (amdgpu's mem_info_vram_used; unknown: not met). Beside an NVIDIA driver they do not count:
 * a workstation's desktop keeps its integrated GPU busy, and the wait is for the NVIDIA GPUs */
static bool drm_cond(const gr_snapshot *s, const gr_diagnosis *d, const struct wait_args *a)
{
        if (!s->drm || !d->drm || a->scope.kind != GR_SCOPE_NONE || s->gpu->status == GR_GPU_OK)
                return true;
        uint64_t gpus = 0;
        for (unsigned i = 0; i < s->drm->n_gpus && i < GR_DRM_GPUS_MAX; i++)
                gpus |= (uint64_t)drm_gpu_selected(&a->sel, &s->drm->gpus[i]) << i;
        if (!a->free_set)
                return gr_drm_gpus_free(s, d, gpus, false);
        for (unsigned i = 0; i < s->drm->n_gpus && i < GR_DRM_GPUS_MAX; i++) {
                const gr_drm_gpu *g = &s->drm->gpus[i];
                if (!(gpus >> i & 1))
                        continue;
                if (g->vram_total == GR_UNKNOWN_U64 || g->vram_used == GR_UNKNOWN_U64 || g->vram_used > g->vram_total)
                        return false;
                uint64_t want = a->free_percent ? g->vram_total / 100 * a->free_percent : a->free_bytes;
                if (g->vram_total - g->vram_used < want)
                        return false;
        }
        return true;
}

static bool cond(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        struct wait_args *a = userdata;
        if (a->scope.kind != GR_SCOPE_NONE) {
                /* a scope: until none of its processes holds a GPU, and the GPUs they held are
                 * clean (or have the memory free) */
                uint64_t now = scope_gpus(s, &a->scope);
                if (!a->mask_fixed) {
                        a->sel.scope_mask = now;
                        a->mask_fixed = true;
                }
                if (now)
                        return false;
        }
        for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                if (!gpu_selected(&a->sel, g))
                        continue;
                if (d->gpus[i].state == GR_GPU_UNKNOWN)
                        return false;
                if (a->free_set) {
                        if (g->mem_free == GR_UNKNOWN_U64)
                                return false;
                        uint64_t want = a->free_percent ? g->mem_total / 100 * a->free_percent : a->free_bytes;
                        if (g->mem_free < want)
                                return false;
                } else if (d->gpus[i].state != GR_GPU_CLEAN) {
                        return false;
                }
        }
        return drm_cond(s, d, a);
}

static void progress(const gr_snapshot *s, const gr_diagnosis *d, uint64_t elapsed, void *userdata)
{
        const struct wait_args *a = userdata;
        char line[512], mem[32];
        size_t o = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && o < sizeof(line); i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                if (!gpu_selected(&a->sel, g))
                        continue;
                unsigned holders = 0;
                for (size_t k = 0; k < d->n_holders; k++)
                        holders += d->holders[k].role != GR_ROLE_MONITOR &&
                                   gr_process_fds_on_minor(d->holders[k].process, g->minor) > 0;
                o += (size_t)snprintf(line + o, sizeof(line) - o, "  GPU %u %s %s used, %u holder%s",
                                      g->index, gr_gpu_state_name(d->gpus[i].state),
                                      gr_format_bytes(g->mem_used, mem, sizeof(mem)), holders,
                                      holders == 1 ? "" : "s");
        }
        for (unsigned i = 0; s->drm && d->drm && s->gpu->status != GR_GPU_OK && i < s->drm->n_gpus && o < sizeof(line); i++)
                o += (size_t)snprintf(line + o, sizeof(line) - o, "  %s %s", s->drm->gpus[i].pdev,
                                      gr_gpu_state_name(d->drm->gpus[i].state));
        fprintf(stderr, "\r\033[Kwaiting %.1fs:%s", (double)elapsed / 1000, line);
        fflush(stderr);
}

static int wait_take(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata)
{
        return view_take(so, VIEW_OWN_LOOK, ret);
}

/* --free SIZE or PERCENT% into a */
static int parse_free(const char *v, struct wait_args *a)
{
        size_t n = strlen(v);
        uint64_t x;
        a->free_set = true;
        if (n > 1 && v[n - 1] == '%') {
                char num[32];
                if (n - 1 >= sizeof(num)) {
                        error_msg("invalid --free '%s'", QUOTED(v));
                        return -1;
                }
                memcpy(num, v, n - 1);
                num[n - 1] = '\0';
                if (gr_parse_u64(num, &x) < 0 || x == 0 || x > 100) {
                        error_msg("invalid --free '%s' (a percentage is 1%% to 100%%)", QUOTED(v));
                        return -1;
                }
                a->free_percent = (unsigned)x;
        } else if (gr_parse_size(v, &a->free_bytes) < 0) {
                error_msg("invalid --free '%s' (try '40GiB' or '90%%')", QUOTED(v));
                return -1;
        }
        return 0;
}

/* What the command line asked for */
struct wait_cmd {
        struct wait_args a;
        bool json, direct;
        char gpus[1024];
        gr_snapshot_options so;
        uint64_t timeout;
};

/* -1 to go on, else the exit code */
static int wait_parse(int argc, char **argv, struct wait_cmd *w)
{
        static const struct option opts[] = {
                { "gpu", required_argument, NULL, 'g' },
                { "free", required_argument, NULL, 'f' },
                { "timeout", required_argument, NULL, 'T' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "job", required_argument, NULL, OPT_JOB },
                { "cgroup", required_argument, NULL, OPT_CGROUP },
                { "container", required_argument, NULL, OPT_CONTAINER },
                { "pod", required_argument, NULL, OPT_POD },
                { "json", no_argument, NULL, 'j' },
                { "direct", no_argument, NULL, 'D' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        if (nvml_timeout_from_env(&w->so.gpu.timeout_ms) < 0)
                return EXIT_USAGE;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+g:i:f:T:t:jDh", opts, NULL)) != -1) {
                switch (c) {
                case 'D': w->direct = true; break;
                case 'j': w->json = true; break;
                case 'g':
                case 'i':
                        if (gpu_option_append(w->gpus, sizeof(w->gpus), optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'f':
                        if (parse_free(optarg, &w->a) < 0)
                                return EXIT_USAGE;
                        break;
                case 'T':
                        if (parse_duration_option(optarg, &w->timeout, true) < 0)
                                return EXIT_USAGE;
                        break;
                case 't':
                        if (parse_duration_option(optarg, &w->so.gpu.timeout_ms, false) < 0)
                                return EXIT_USAGE;
                        break;
                case OPT_JOB:
                case OPT_CGROUP:
                case OPT_CONTAINER:
                case OPT_POD:
                        if (scope_option(scope_option_name(c), optarg, &w->a.scope) < 0)
                                return EXIT_USAGE;
                        break;
                case 'h':
                        wait_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, "wait");
                        return EXIT_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "wait") < 0)
                return EXIT_USAGE;
        return -1;
}

/* The exit code of the last look, its reasons said on stderr */
static int wait_outcome(const struct wait_cmd *w, const gr_snapshot *s, const gr_diagnosis *d, bool met)
{
        /* no NVIDIA driver, but AMD or Intel GPUs: their states answer, as in status */
        bool drm_answers = gr_snapshot_drm_only(s);
        if (s->gpu->status != GR_GPU_OK && !drm_answers) {
                error_msg("%s", s->gpu->error);
                return EXIT_DRIVER;
        }
        if (selection_rejected(&w->a.sel, s))
                return EXIT_USAGE;
        if (met)
                return EXIT_CLEAN;
        bool unknown = false;
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                unknown |= gpu_selected(&w->a.sel, &s->gpu->gpus[i]) && d->gpus[i].state == GR_GPU_UNKNOWN;
        error_msg("timeout after %.1fs: %s", (double)w->timeout / 1000, w->a.free_set ? "not enough memory free" : "not clean");
        if (!w->json)
                render_status_table(stderr, s, d, &w->a.sel, &(struct table_options){ .width = terminal_width(STDERR_FILENO) });
        return unknown ? EXIT_DRIVER : EXIT_NOT_CLEAN;
}

static void wait_json(const struct wait_cmd *w, const gr_snapshot *s, const gr_diagnosis *d, uint64_t waited, int code)
{
        const struct wait_args *a = &w->a;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "schema_version", json_object_new_int(JSON_SCHEMA_VERSION));
        json_object_object_add(o, "command", json_object_new_string("wait"));
        json_object *cnd = json_object_new_object();
        json_object_object_add(cnd, "kind", json_object_new_string(a->free_set ? "free" : "clean"));
        json_object_object_add(cnd, "free_bytes", a->free_set && !a->free_percent ? json_object_new_int64((int64_t)a->free_bytes) : NULL);
        json_object_object_add(cnd, "free_percent", a->free_percent ? json_object_new_int(a->free_percent) : NULL);
        json_object_object_add(o, "condition", cnd);
        json_object_object_add(o, "timeout_ms", json_object_new_int64((int64_t)w->timeout));
        json_object_object_add(o, "met", json_object_new_boolean(code == EXIT_CLEAN));
        json_object_object_add(o, "waited_ms", json_object_new_int64((int64_t)waited));
        json_object_object_add(o, "exit_code", json_object_new_int(code));
        /* the last look, as 'status --json' gives it: what still holds, when it did not hold */
        json_object_object_add(o, "status", status_json(s, d, &a->sel));
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
}

int cmd_wait(int argc, char **argv)
{
        struct wait_cmd w = { .timeout = 60000 };
        int code = wait_parse(argc, argv, &w);
        if (code >= 0)
                return code;
        w.a.sel.list = w.gpus[0] ? w.gpus : NULL;
        w.a.sel.scope = &w.a.scope;
        bool tty = isatty(STDERR_FILENO) && !w.json;
        /* each look through the one view: taken here (wait watches it change), with what a
         * running serve saw joined, so that its verdicts are status's and reap's */
        gr_wait_options wo = { .so = &w.so, .timeout_ms = w.timeout, .progress = tty ? progress : NULL,
                               .take = w.direct ? NULL : wait_take, .drm = true };
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        bool met = false;
        uint64_t t0 = gr_now_ms();
        int r = gr_wait_until(&wo, cond, &w.a, &s, &d, &met);
        uint64_t waited = gr_now_ms() - t0;
        if (tty)
                fprintf(stderr, "\r\033[K");
        if (r < 0) {
                error_msg("cannot take a snapshot: %s", strerror(-r));
                return EXIT_DRIVER;
        }
        code = wait_outcome(&w, s, d, met);
        if (w.json)
                wait_json(&w, s, d, waited, code);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        return code;
}
