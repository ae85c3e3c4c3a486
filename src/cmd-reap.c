/* gpureap reap: kill exactly the leftovers, wait until the driver has the memory back, verify */
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap/reap.h"
#include "gpureap.h"

static void reap_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap reap [--dry-run] [--direct] [--yes] [--json] [--gpu SEL] [--pid PID[,PID...]]\n"
                "                    [--likely] [--all] [--tree] [--user USER] [--all-users]\n"
                "                    [--grace DUR] [--timeout DUR] [--only PID@START[,...]]\n"
                "                    [--job ID|--cgroup P|--container ID|--pod UID [--ended]]\n"
                "                    [--kubelet-socket PATH]\n"
                "\n"
                "Kill the leftovers the diagnosis is sure of (hidden holders of ghosts, workers whose\n"
                "launcher is gone), never live jobs, unsure holders, monitors, PID 1, gpureap or its\n"
                "ancestors; then wait until the driver has the memory back and verify. The plan gives\n"
                "the reason for every process it kills and every holder it spares (docs/verdicts.md).\n"
                "\n"
                "  --dry-run        show the plan and stop\n"
                "  --direct         do not ask a running 'gpureap serve' what it saw (its memory of\n"
                "                   the holders' launchers makes some verdicts sure: docs/serve.md)\n"
                "  --yes            do not ask (needed when stdin is not a terminal)\n"
                "  --json           the plan and what was done, as JSON (docs/json-schema.md)\n"
                "  --gpu SEL, -i    only leftovers of these GPUs (index, UUID prefix, PCI bus id)\n"
                "  --likely         leftovers judged likely too, not only sure ones\n"
                "  --pid PID        exactly these processes (comma separated or repeated)\n"
                "  --all            every holder of the selected GPUs, live jobs too (not monitors)\n"
                "  --tree           with each target, its whole process group (never gpureap's own)\n"
                "  --user USER      only processes of this user (name or uid)\n"
                "  --all-users      as root, other users' processes too\n"
                "  --only PID@START of the plan's targets only these, each with the start time it\n"
                "                   had when you looked (start_time_ticks in status --json); one\n"
                "                   whose PID now names another process is spared\n"
                SCOPE_USAGE
                "  --ended          the scope is over (a job's epilog): every holder of it is a target\n"
                "  --kubelet-socket PATH\n"
                "                   ask the kubelet here, as status does (default\n"
                "                   " GR_KUBELET_SOCKET_DEFAULT ", also\n"
                "                   $GPUREAP_KUBELET_SOCKET): a holder whose pod it lists no more\n"
                "                   can be a likely leftover (--likely)\n"
                "  --grace DUR      between SIGTERM and SIGKILL (default 5s)\n"
                "  --timeout DUR    bounds the signals, the drain and the verification (default 30s);\n"
                "                   the /proc scan before them is never cut short (a partial one could\n"
                "                   call a held GPU clean): on a crowded host it adds its own time\n"
                "\n"
                "exit codes: 0 the GPUs the targets held (or --gpu) are verified free of leftovers\n"
                "and every target ended, 1 something is left (printed), 2 usage error or no consent,\n"
                "3 GPU or driver failure\n");
}

struct reap {
        bool dry, yes, json, direct;
        unsigned n_targets, n_failed;
        char survived[2048];       /* "survived PID START" lines for the state file */
        size_t survived_len;
        char gpus[1024];
        pid_t pids[GR_PLAN_MAX];   /* --pid (the epilog names every holder of an ended job) */
        size_t n_pids;
        gr_pid_start only[256];
        size_t n_only;
        gr_plan_options po;
        gr_snapshot_options so;
        uint64_t grace, timeout, t0, deadline;
        struct gpu_selection sel;
        gr_scope scope;
        json_object *out;          /* the --json result, filled as things happen */
        int code;                  /* what the review decided (declined: usage, no consent) */
        bool quiet;                /* nothing on stdout: reap_request.quiet */
        bool pids_typed;           /* --pid on the command line: a PID that names no process is
                                      the user's mistake (a face's PIDs may end meanwhile) */
        int (*take)(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata);
        void *take_userdata;
};

static const char *const why_names[] = { "leftover", "asked (--pid)", "asked (--all)", "its process group (--tree)",
                                         "a process of the ended scope (--ended)" };
static const char *const why_keys[] = { "leftover", "pid", "all", "tree", "ended" };

static const char *refusal_key(gr_refusal r)
{
        static const char *const k[] = { "none", "init", "self", "kernel", "monitor", "other_user", "zombie",
                                         "gone", "live", "unsure", "likely", "no_uid", "out_of_scope",
                                         "not_on_gpu", "not_holding", "not_only", "drm", "drm_shared",
                                         "drm_unread" };
        return (unsigned)r < GR_ELEMENTSOF(k) ? k[r] : "unknown";
}

static void print_plan(FILE *f, const gr_plan *p)
{
        for (size_t i = 0; i < p->n; i++) {
                const gr_target *t = &p->targets[i];
                if (t->refused != GR_REFUSE_NONE)
                        continue;
                fprintf(f, "  kill   %-8d %-16s uid %-6u ", (int)t->pid, t->comm, (unsigned)t->uid);
                if (t->why == GR_WHY_LEFTOVER)
                        fprintf(f, "leftover, %s: %s", gr_confidence_name(t->confidence), t->reason);
                else if (t->judged)
                        fprintf(f, "%s; judged %s%s%s: %s", why_names[t->why], gr_judgement_name(t->judgement),
                                t->judgement == GR_JUDGE_UNSURE ? "" : ", ",
                                t->judgement == GR_JUDGE_UNSURE ? "" : gr_confidence_name(t->confidence), t->reason);
                else
                        fprintf(f, "%s", why_names[t->why]);
                fputc('\n', f);
        }
        for (size_t i = 0; i < p->n; i++) {
                const gr_target *t = &p->targets[i];
                if (t->refused == GR_REFUSE_NONE)
                        continue;
                fprintf(f, "  spare  %-8d %-16s %s", (int)t->pid, t->comm[0] ? t->comm : "-", gr_refusal_text(t->refused));
                if (t->refused == GR_REFUSE_ZOMBIE || (t->refused == GR_REFUSE_DRM_UNREAD && t->related))
                        fprintf(f, " (PID %d)", (int)t->related);
                if (t->judged && t->reason[0] && t->refused != GR_REFUSE_MONITOR)
                        fprintf(f, ": %s", t->reason);
                fputc('\n', f);
        }
}

static json_object *plan_json(const gr_plan *p)
{
        json_object *o = json_object_new_object(), *targets = json_object_new_array(),
                    *spared = json_object_new_array();
        for (size_t i = 0; i < p->n; i++) {
                const gr_target *t = &p->targets[i];
                json_object *e = json_object_new_object();
                json_object_object_add(e, "pid", json_object_new_int(t->pid));
                json_object_object_add(e, "comm", t->comm[0] ? json_object_new_string(t->comm) : NULL);
                if (t->refused == GR_REFUSE_NONE) {
                        json_object_object_add(e, "uid", json_object_new_int64(t->uid));
                        json_object_object_add(e, "why", json_object_new_string(why_keys[t->why]));
                } else {
                        json_object_object_add(e, "refusal", json_object_new_string(refusal_key(t->refused)));
                        json_object_object_add(e, "related_pid", t->related ? json_object_new_int(t->related) : NULL);
                }
                json_object_object_add(e, "judgement", t->judged ? json_object_new_string(gr_judgement_name(t->judgement)) : NULL);
                json_object_object_add(e, "confidence", t->judged ? json_object_new_string(gr_confidence_name(t->confidence)) : NULL);
                char reason[400];
                snprintf(reason, sizeof(reason), "%s%s%s",
                         t->refused == GR_REFUSE_NONE ? why_names[t->why] : gr_refusal_text(t->refused),
                         t->judged && t->reason[0] ? ": " : "", t->judged ? t->reason : "");
                json_object_object_add(e, "reason", json_object_new_string(reason));
                json_object_array_add(t->refused == GR_REFUSE_NONE ? targets : spared, e);
        }
        json_object_object_add(o, "targets", targets);
        json_object_object_add(o, "spared", spared);
        return o;
}

static int parse_pids(struct reap *r, const char *arg)
{
        char buf[1024];
        if (!list_items_ok(arg)) {
                error_msg("invalid --pid '%s': an empty PID (an empty selection is never 'all')", QUOTED(arg));
                return -1;
        }
        if (!gr_strlcpy(buf, arg, sizeof(buf))) {
                error_msg("--pid list is too long");
                return -1;
        }
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int v;
                if (gr_parse_int(t, &v) < 0 || v <= 0) {
                        error_msg("invalid PID '%s'", QUOTED(t));
                        return -1;
                }
                if (r->n_pids == GR_ELEMENTSOF(r->pids)) {
                        error_msg("too many --pid values (at most %zu)", GR_ELEMENTSOF(r->pids));
                        return -1;
                }
                r->pids[r->n_pids++] = v;
        }
        return 0;
}

static int parse_only(struct reap *r, const char *arg)
{
        char buf[8192];
        if (!list_items_ok(arg)) {
                error_msg("invalid --only '%s': an empty item (an empty selection is never 'all')", QUOTED(arg));
                return -1;
        }
        if (!gr_strlcpy(buf, arg, sizeof(buf))) {
                error_msg("--only list is too long");
                return -1;
        }
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *at = strchr(t, '@');
                int pid;
                uint64_t start;
                if (at)
                        *at = '\0';
                if (!at || gr_parse_int(t, &pid) < 0 || pid <= 0 || gr_parse_u64(at + 1, &start) < 0) {
                        if (at)
                                *at = '@'; /* the item whole, for the message */
                        error_msg("invalid --only item '%s': give PID@START (START: start_time_ticks in status --json)",
                                  QUOTED(t));
                        return -1;
                }
                if (r->n_only == GR_ELEMENTSOF(r->only)) {
                        error_msg("too many --only values (at most %zu)", GR_ELEMENTSOF(r->only));
                        return -1;
                }
                r->only[r->n_only++] = (gr_pid_start){ pid, start };
        }
        return 0;
}

/* --user: a number or a name */
static int parse_user(const char *arg, gr_plan_options *po)
{
        uint64_t v;
        struct passwd *pw;
        if (gr_parse_u64(arg, &v) == 0 && v <= UINT32_MAX)
                po->user = (uid_t)v;
        else if (arg[0] && (pw = getpwnam(arg)))
                po->user = pw->pw_uid;
        else {
                error_msg("no user '%s'", QUOTED(arg));
                return -1;
        }
        po->user_set = true;
        return 0;
}

/* the options that exclude or need each other */
static int check_args(const struct reap *r)
{
        if (r->po.all && r->n_pids > 0) {
                error_msg("--all and --pid exclude each other");
                return -1;
        }
        if (r->po.scope_ended && r->scope.kind == GR_SCOPE_NONE) {
                error_msg("--ended needs the scope that ended: --job, --cgroup, --container or --pod");
                return -1;
        }
        if (r->po.scope_ended && r->scope.kind == GR_SCOPE_CGROUP && strcmp(r->scope.id, "/") == 0) {
                error_msg("--cgroup / --ended would make every holder of the machine a target: name the cgroup that ended");
                return -1;
        }
        return 0;
}

/* 0 to go on, 1 when the help was printed, -1 for a usage error */
static int parse_args(struct reap *r, int argc, char **argv)
{
        static const struct option opts[] = {
                { "dry-run", no_argument, NULL, 'n' },
                { "direct", no_argument, NULL, 'D' },
                { "json", no_argument, NULL, 'j' },
                { "likely", no_argument, NULL, 'L' },
                { "yes", no_argument, NULL, 'y' },
                { "gpu", required_argument, NULL, 'g' },
                { "pid", required_argument, NULL, 'p' },
                { "all", no_argument, NULL, 'a' },
                { "tree", no_argument, NULL, 'r' },
                { "user", required_argument, NULL, 'u' },
                { "all-users", no_argument, NULL, 'U' },
                { "grace", required_argument, NULL, 'G' },
                { "timeout", required_argument, NULL, 'T' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "job", required_argument, NULL, OPT_JOB },
                { "cgroup", required_argument, NULL, OPT_CGROUP },
                { "container", required_argument, NULL, OPT_CONTAINER },
                { "pod", required_argument, NULL, OPT_POD },
                { "ended", no_argument, NULL, OPT_ENDED },
                { "only", required_argument, NULL, 'O' },
                { "kubelet-socket", required_argument, NULL, OPT_KUBELET_SOCKET },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        if (nvml_timeout_from_env(&r->so.gpu.timeout_ms) < 0)
                return -1;
        optind = 1;
        int c;
        const char *kubelet_socket = NULL;
        while ((c = getopt_long(argc, argv, "+njLyg:i:p:aru:UG:T:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 'n': r->dry = true; break;
                case 'D': r->direct = true; break;
                case 'j': r->json = true; break;
                case 'L': r->po.likely = true; break;
                case 'y': r->yes = true; break;
                case 'a': r->po.all = true; break;
                case 'r': r->po.tree = true; break;
                case 'U': r->po.all_users = true; break;
                case 'g':
                case 'i':
                        if (gpu_option_append(r->gpus, sizeof(r->gpus), optarg) < 0)
                                return -1;
                        break;
                case 'p':
                        if (parse_pids(r, optarg) < 0)
                                return -1;
                        break;
                case 'u':
                        if (parse_user(optarg, &r->po) < 0)
                                return -1;
                        break;
                case 'G':
                        if (parse_duration_option(optarg, &r->grace, true) < 0)
                                return -1;
                        break;
                case 'T':
                        if (parse_duration_option(optarg, &r->timeout, true) < 0)
                                return -1;
                        break;
                case 't':
                        if (parse_duration_option(optarg, &r->so.gpu.timeout_ms, false) < 0)
                                return -1;
                        break;
                case OPT_JOB:
                case OPT_CGROUP:
                case OPT_CONTAINER:
                case OPT_POD:
                        if (scope_option(scope_option_name(c), optarg, &r->scope) < 0)
                                return -1;
                        break;
                case OPT_ENDED:
                        r->po.scope_ended = true;
                        break;
                case OPT_KUBELET_SOCKET:
                        kubelet_socket = optarg;
                        break;
                case 'O':
                        if (parse_only(r, optarg) < 0)
                                return -1;
                        r->po.only = r->only;
                        r->po.n_only = r->n_only;
                        break;
                case 'h':
                        reap_usage(stdout);
                        return 1;
                default:
                        unknown_option(argc, argv, opts, "reap");
                        return -1;
                }
        }
        /* the kubelet asked as status and check ask it, so that a likely leftover they count on
         * its word is the one reap --likely plans */
        if (no_stray_arguments(argc, argv, "reap") < 0 || kubelet_socket_option(&r->so, kubelet_socket) < 0)
                return -1;
        /* the kubelet's second comes out of --timeout: at most a quarter of it */
        r->so.kubelet.timeout_ms = r->timeout / 4 < 1000 ? (r->timeout / 4 ? r->timeout / 4 : 1) : 1000;
        return check_args(r);
}

static bool confirm(size_t n)
{
        fprintf(stderr, "kill %zu process%s? [y/N] ", n, n == 1 ? "" : "es");
        fflush(stderr);
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
                return false;
        return line[0] == 'y' || line[0] == 'Y';
}

/* The audit trail of the signals: who, and why, before the first one */
static void audit_targets(const gr_snapshot *s, const gr_plan *plan)
{
        for (size_t i = 0; i < plan->n; i++) {
                const gr_target *t = &plan->targets[i];
                if (t->refused != GR_REFUSE_NONE)
                        continue;
                const gr_process *tp = gr_proc_table_find(s->procs, t->pid);
                /* the batch job it belongs to (its cgroup, else SLURM_JOB_ID it carries) */
                char sj[32] = "", sjt[48] = "";
                if (tp && !(tp->cgroup && gr_cgroup_slurm_job(tp->cgroup, sj, sizeof(sj)) == 0) && tp->env_read)
                        gr_strlcpy(sj, tp->env.slurm_job_id, sizeof(sj));
                if (sj[0])
                        snprintf(sjt, sizeof(sjt), " slurm job %s", sj);
                audit_log(LOG_NOTICE, "signalling pid %d start %llu uid %u comm '%s' cmdline '%.200s' job '%s'%s: %s%s%s%s%s",
                          (int)t->pid, (unsigned long long)t->start_time, (unsigned)t->uid, t->comm,
                          tp && tp->cmdline ? tp->cmdline : "", t->job, sjt, why_names[t->why],
                          t->judged ? "; judged " : "", t->judged ? gr_judgement_name(t->judgement) : "",
                          t->judged ? ": " : "", t->judged ? t->reason : "");
        }
}

/* The first look: a look of its own (it acts on it), with what a running serve saw of its
 * processes (their launchers' ends) */
static int take(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata)
{
        const struct reap *r = userdata;
        if (r->take)
                return r->take(so, ret, r->take_userdata);
        return view_take(so, r->direct ? VIEW_DIRECT : VIEW_OWN_LOOK, ret);
}

/* The plan printed; consent; the audit trail. false: nothing is signalled */
static bool review(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan *plan, void *userdata)
{
        struct reap *r = userdata;
        for (size_t i = 0; r->pids_typed && i < plan->n; i++) {
                const gr_target *t = &plan->targets[i];
                if (t->why == GR_WHY_ASKED_PID && t->refused == GR_REFUSE_GONE) {
                        /* the same rule as a --gpu that matches no GPU: a selection that names
                         * nothing is an error before anything is signalled */
                        error_msg("no process %d (--pid): it has ended, or the PID is wrong; nothing was signalled",
                                  (int)t->pid);
                        r->code = EXIT_USAGE;
                        return false;
                }
        }
        if (selection_rejected(&r->sel, s)) {
                /* a --gpu that names no GPU (NVML's, or by PCI address the AMD and Intel ones
                 * where there is no NVIDIA GPU): an error before anything is signalled */
                r->code = EXIT_USAGE;
                return false;
        }
        if (gr_snapshot_drm_only(s)) {
                /* no NVIDIA driver: the AMD and Intel GPUs are reaped and verified (docs/drm.md) */
                if (!r->json)
                        printf("no NVIDIA driver; %u AMD or Intel GPU%s read from DRM and KFD\n", s->drm->n_gpus,
                               s->drm->n_gpus == 1 ? "" : "s");
        } else if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                if (!r->json)
                        printf("the driver cannot be read: ending the named processes anyway; their GPUs cannot be verified\n");
        }
        r->sel.scope_mask = scope_gpus(s, &r->scope);
        size_t n = gr_plan_count(plan);
        json_object_object_add(r->out, "plan", plan_json(plan));
        if (!r->json) {
                printf("%s", n || plan->n ? "plan:\n" : "");
                print_plan(stdout, plan);
                if (n == 0)
                        printf("nothing to kill\n");
        }
        fflush(stdout);
        if (r->dry)
                return true;
        if (n > 0 && !r->yes) {
                if (!isatty(STDIN_FILENO)) {
                        error_msg("not asking without a terminal: add --yes to kill %zu process%s", n, n == 1 ? "" : "es");
                        r->code = EXIT_USAGE;
                        return false;
                }
                if (!confirm(n)) {
                        error_msg("nothing done");
                        r->code = EXIT_USAGE;
                        return false;
                }
        }
#ifdef GPUREAP_TEST_HOOKS
        /* Test seam (tests/integration/reap-pid-reuse.sh): a command run between the plan and the
         * signals, to recycle a planned PID and prove that the pidfd check spares the newcomer.
         * Only in the gpureap-test-hooks build: a tool that kills as root runs no shell command
         * that its environment names */
        const char *hook = getenv("GPUREAP_TEST_BEFORE_SIGNAL");
        if (hook && *hook) {
                fflush(stdout);
                pid_t hp = fork();
                if (hp == 0) {
                        execl("/bin/sh", "sh", "-c", hook, (char *)NULL);
                        _exit(127);
                }
                if (hp > 0)
                        waitpid(hp, NULL, 0);
        }
#endif
        audit_targets(s, plan);
        return true;
}

/* What became of each target, printed and recorded; the drain */
static void acted(const gr_reap_result *res, void *userdata)
{
        struct reap *r = userdata;
        json_object *outs = json_object_new_array();
        for (size_t i = 0; i < res->n_outcomes; i++) {
                const gr_reap_outcome *o = &res->outcomes[i];
                if (!r->json) {
                        printf("  %-8d %s%s%s", (int)o->pid, gr_kill_result_name(o->result),
                               o->forked ? " (forked during the kill)" : "",
                               o->result == GR_KILL_SPARED ? ": by its signal it held an AMD or Intel GPU's file the plan does not end, or one that could not be read" : "");
                        if (o->error)
                                printf(": %s", strerror(-o->error));
                        putchar('\n');
                }
                json_object *e = json_object_new_object();
                json_object_object_add(e, "pid", json_object_new_int(o->pid));
                json_object_object_add(e, "result", json_object_new_string(gr_kill_result_name(o->result)));
                json_object_object_add(e, "error", o->error ? json_object_new_string(strerror(-o->error)) : NULL);
                json_object_object_add(e, "forked_during_kill", json_object_new_boolean(o->forked));
                json_object_array_add(outs, e);
                r->n_targets++;
                if (gr_kill_result_failed(o->result)) {
                        r->n_failed++;
                        if (o->result == GR_KILL_SURVIVED && r->survived_len < sizeof(r->survived))
                                r->survived_len += (size_t)snprintf(r->survived + r->survived_len,
                                                                    sizeof(r->survived) - r->survived_len,
                                                                    "survived %d %llu\n", (int)o->pid,
                                                                    (unsigned long long)o->start_time);
                }
                audit_log(gr_kill_result_failed(o->result) ? LOG_WARNING : LOG_NOTICE, "pid %d start %llu comm '%s'%s: %s%s%s",
                          (int)o->pid, (unsigned long long)o->start_time, o->comm,
                          o->forked ? " (forked into a target's group during the kill)" : "",
                          gr_kill_result_name(o->result), o->error ? ": " : "", o->error ? strerror(-o->error) : "");
        }
        if (res->n_signalled > 0)
                json_object_object_add(r->out, "outcomes", outs);
        else
                json_object_put(outs);
        fflush(stdout);
}

/* The drain, once gr_reap has waited for it */
static void report_drain(struct reap *r, const gr_reap_result *res)
{
        if (res->drained && !r->json)
                printf("memory back %.1f ms after the first signal\n", (double)res->drain_us / 1000);
        if (res->before->gpu->status == GR_GPU_OK)
                json_object_object_add(r->out, "drain_ms", res->drained ? json_object_new_double((double)res->drain_us / 1000) : NULL);
}

static void progress(const gr_snapshot *s, const gr_diagnosis *d, uint64_t elapsed, void *userdata)
{
        const gr_reap_result *res = userdata; /* the verify's: its GPUs */
        char line[512], mem[32];
        size_t o = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64 && o < sizeof(line); i++)
                if (res->gpus >> i & 1)
                        o += (size_t)snprintf(line + o, sizeof(line) - o, "  GPU %u %s %s used", s->gpu->gpus[i].index,
                                              gr_gpu_state_name(d->gpus[i].state),
                                              gr_format_bytes(s->gpu->gpus[i].mem_used, mem, sizeof(mem)));
        fprintf(stderr, "\r\033[Kverifying %.1fs:%s", (double)elapsed / 1000, line);
        fflush(stderr);
}

static void emit_json(struct reap *r, int code)
{
        if (!r->json || r->quiet || !r->out)
                return;
        json_object_object_add(r->out, "elapsed_ms", json_object_new_int64((int64_t)(gr_now_ms() - r->t0)));
        json_object_object_add(r->out, "exit_code", json_object_new_int(code));
        puts(json_object_to_json_string_ext(r->out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(r->out);
        r->out = NULL;
}

/* The AMD and Intel GPUs the plan's DRM clients were on (docs/drm.md): each one's state, its
 * used VRAM before and after where the driver says it (amdgpu), and the clients that had to go */
static void report_drm(struct reap *r, const gr_reap_result *res)
{
        const gr_snapshot *s = res->after, *b = res->before;
        uint64_t m = gr_plan_drm_gpus(res->plan, s);
        if (!m)
                return;
        json_object *ja = json_object_new_array();
        for (unsigned i = 0; i < s->drm->n_gpus && i < 64; i++) {
                if (!(m >> i & 1))
                        continue;
                const gr_drm_gpu *g = &s->drm->gpus[i];
                uint64_t before = GR_UNKNOWN_U64;
                for (unsigned k = 0; b->drm && k < b->drm->n_gpus; k++)
                        if (strcmp(b->drm->gpus[k].pdev, g->pdev) == 0)
                                before = b->drm->gpus[k].vram_used;
                json_object *ids = json_object_new_array();
                for (size_t k = 0; k < res->plan->n_drm_clients; k++)
                        if (strcmp(res->plan->drm_clients[k].pdev, g->pdev) == 0)
                                json_object_array_add(ids, json_object_new_int64((int64_t)res->plan->drm_clients[k].client_id));
                size_t n = json_object_array_length(ids), held = 0;
                for (size_t k = 0; k < s->drm->n_clients; k++)
                        held += strcmp(s->drm->clients[k].pdev, g->pdev) == 0 &&
                                gr_plan_ends_client(res->plan, s->drm->clients[k].pdev, s->drm->clients[k].client_id);
                const char *state = res->after_d && res->after_d->drm ? gr_gpu_state_name(res->after_d->drm->gpus[i].state) : "unknown";
                char b1[32], b2[32], ended[48];
                if (held)
                        snprintf(ended, sizeof(ended), "%zu of %zu leftover client%s still held", held, n, n == 1 ? "" : "s");
                else
                        snprintf(ended, sizeof(ended), "%zu leftover client%s gone", n, n == 1 ? "" : "s");
                if (!r->json)
                        printf("GPU %s  %s  VRAM %s -> %s  (%s)\n", g->pdev, state, gr_format_bytes(before, b1, sizeof(b1)),
                               gr_format_bytes(g->vram_used, b2, sizeof(b2)), ended);
                json_object *e = json_object_new_object();
                json_object_object_add(e, "pci_bus_id", json_object_new_string(g->pdev));
                json_object_object_add(e, "vendor", json_object_new_string(gr_vendor_name(g->vendor)));
                json_object_object_add(e, "state", json_object_new_string(state));
                json_object_object_add(e, "vram_used_before", before == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)before));
                json_object_object_add(e, "vram_used_after", g->vram_used == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)g->vram_used));
                json_object_object_add(e, "clients", ids);
                json_object_array_add(ja, e);
        }
        json_object_object_add(r->out, "drm_gpus", ja);
}

/* The verify's last look: each GPU's state and memory, and the exit code it makes */
static int report_verify(struct reap *r, const gr_reap_result *res)
{
        const gr_snapshot *s = res->after;
        const gr_diagnosis *d = res->after_d;
        json_object *jg = json_object_new_array();
        for (unsigned i = 0; i < s->gpu->n_gpus && i < GR_GPUS_MAX; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                if (!(res->gpus >> i & 1))
                        continue;
                char b1[32], b2[32];
                if (!r->json)
                        printf("GPU %u  %s  memory %s -> %s\n", g->index, gr_gpu_state_name(d->gpus[i].state),
                               gr_format_bytes(res->mem_before[i], b1, sizeof(b1)), gr_format_bytes(g->mem_used, b2, sizeof(b2)));
                json_object *e = json_object_new_object();
                json_object_object_add(e, "index", json_object_new_int64(g->index));
                json_object_object_add(e, "state", json_object_new_string(gr_gpu_state_name(d->gpus[i].state)));
                json_object_object_add(e, "memory_before", res->mem_before[i] == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)res->mem_before[i]));
                json_object_object_add(e, "memory_after", g->mem_used == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)g->mem_used));
                json_object_array_add(jg, e);
        }
        json_object_object_add(r->out, "gpus", jg);
        report_drm(r, res);
        json_object_object_add(r->out, "verified", json_object_new_boolean(res->status == GR_REAP_VERIFIED));
        bool watched = res->n_signalled > 0;
        struct table_options to = { .width = terminal_width(STDERR_FILENO) };
        fflush(stdout);
        if (s->gpu->status != GR_GPU_OK && !res->drm_only) {
                error_msg("%s", s->gpu->error);
                return EXIT_DRIVER;
        }
        if (res->unknown) {
                error_msg("a GPU could not be read: cannot verify");
                render_status_table(stderr, s, d, &r->sel, &to);
                return EXIT_DRIVER;
        }
        if (res->status == GR_REAP_VERIFIED) {
                if (!r->json)
                        printf("verified in %llu ms: no leftover on the %s GPUs\n", (unsigned long long)(gr_now_ms() - r->t0),
                               r->sel.list || !watched ? "selected" : "targets'");
                return EXIT_CLEAN;
        }
        if (!res->all_ended)
                error_msg("a target may still be alive: see its outcome above");
        if (!res->met)
                error_msg("%s: what is left follows", watched ? "not clean by the deadline" : "not clean");
        render_status_table(stderr, s, d, &r->sel, &to);
        return EXIT_NOT_CLEAN;
}

/* For 'gpureap metrics': when, how, and what survived a SIGKILL */
static int record_reap(const struct reap *r, int code)
{
        char st[2400], path[4096];
        snprintf(st, sizeof(st), "time %llu\nexit %d\ntargets %u\nfailed %u\n%s", (unsigned long long)time(NULL), code,
                 r->n_targets, r->n_failed, r->survived);
        int w = state_write("last-reap", st);
        /* no state directory at all (a user without XDG_RUNTIME_DIR) keeps nothing; one that
         * cannot take the record leaves the metrics saying an older reap */
        if (w < 0 && state_file_path("last-reap", path, sizeof(path)) == 0) {
                error_msg("cannot record the reap in '%s': %s", QUOTED(path), strerror(-w));
                if (code == EXIT_CLEAN || code == EXIT_NOT_CLEAN)
                        code = EXIT_OUTPUT;
        }
        return code;
}

/* The cycle (lib's gr_reap) with what reap prints around it; its exit code */
static int reap_execute(struct reap *r)
{
        r->sel.list = r->gpus[0] ? r->gpus : NULL;
        r->sel.scope = &r->scope;
        r->po.gpus = r->sel.list;
        r->po.scope = r->scope.kind != GR_SCOPE_NONE ? &r->scope : NULL;
        r->po.pids = r->pids;
        r->po.n_pids = r->n_pids;
        if (!r->dry && signalling_env_ok("reap") < 0)
                return EXIT_USAGE;
        if (self_plan_options(&r->po) < 0) {
                error_msg("out of memory");
                return EXIT_DRIVER;
        }
        gr_raise_fd_limit(); /* one pidfd per target */
        if (!r->dry && !r->quiet) /* quiet: a face's own thread (serve's), whose trail is open */
                audit_open("reap");
        r->t0 = gr_now_ms();
        r->code = EXIT_DRIVER;
        r->out = json_object_new_object();
        json_object_object_add(r->out, "schema_version", json_object_new_int(JSON_SCHEMA_VERSION));
        json_object_object_add(r->out, "command", json_object_new_string("reap"));
        json_object_object_add(r->out, "dry_run", json_object_new_boolean(r->dry));
        gr_reap_options o = { .so = &r->so, .po = &r->po, .grace_ms = r->grace, .deadline_ms = r->t0 + r->timeout,
                              .uid = getuid(), .dry = r->dry, .follow_events = true, .take = take,
                              .review = review, .acted = acted, .userdata = r };
#ifdef GPUREAP_TEST_HOOKS
        o.follow_events = !getenv("GPUREAP_TEST_NO_EVENTS"); /* as without CAP_NET_ADMIN */
#endif
        gr_reap_result res;
        if (isatty(STDERR_FILENO) && !r->json)
                o.progress = progress;
        int q = gr_reap(&o, &res);
        int code = r->code;
        bool recorded = false;
        switch (res.status) {
        case GR_REAP_FAILED:
                error_msg("cannot %s: %s",
                          res.stage == GR_REAP_AT_LOOK   ? "take a snapshot"
                          : res.stage == GR_REAP_AT_PLAN ? "plan"
                          : res.stage == GR_REAP_AT_SIGNAL ? "signal"
                                                           : "verify",
                          strerror(-q));
                code = res.stage == GR_REAP_AT_SIGNAL ? EXIT_NOT_CLEAN : EXIT_DRIVER;
                recorded = res.stage >= GR_REAP_AT_SIGNAL;
                break;
        case GR_REAP_PLANNED:
                code = EXIT_CLEAN;
                break;
        case GR_REAP_DECLINED:
                break;
        case GR_REAP_BLIND:
                code = EXIT_DRIVER;
                if (!r->json)
                        printf("%s; the GPUs were not verified (the driver cannot be read)\n",
                               res.all_ended ? "every named process ended" : "not every named process ended");
                break;
        case GR_REAP_DRIVER:
                if (!res.after) { /* the first look: nothing was planned */
                        error_msg("%s", res.before->gpu->error);
                        code = EXIT_DRIVER;
                        break;
                }
                /* the verify could not read a GPU */
                __attribute__((fallthrough));
        case GR_REAP_VERIFIED:
        case GR_REAP_NOT_CLEAN:
                if (isatty(STDERR_FILENO) && !r->json && res.n_signalled > 0)
                        fprintf(stderr, "\r\033[K");
                report_drain(r, &res);
                code = report_verify(r, &res);
                recorded = true;
                break;
        }
        if (recorded)
                code = record_reap(r, code);
        emit_json(r, code);
        json_object_put(r->out);
        r->out = NULL;
        fflush(stdout);
        gr_reap_result_release(&res);
        self_plan_options_release(&r->po);
        return code;
}

int cmd_reap(int argc, char **argv)
{
        struct reap r = { .grace = 5000, .timeout = 30000 };
        int pa = parse_args(&r, argc, argv);
        if (pa != 0)
                return pa > 0 ? EXIT_CLEAN : EXIT_USAGE;
        r.pids_typed = r.n_pids > 0;
        return reap_execute(&r);
}

int reap_request_run(const struct reap_request *q)
{
        struct reap *r = calloc(1, sizeof(*r));
        if (!r) {
                error_msg("out of memory");
                return EXIT_DRIVER;
        }
        r->yes = true;
        r->direct = q->direct;
        r->quiet = r->json = q->quiet; /* json: no text; quiet: no JSON either */
        r->take = q->take;
        r->take_userdata = q->take_userdata;
        r->grace = q->grace_ms;
        r->timeout = q->timeout_ms;
        r->so.gpu.timeout_ms = q->nvml_timeout_ms;
        int code = EXIT_USAGE;
        if (q->gpus && !gr_strlcpy(r->gpus, q->gpus, sizeof(r->gpus))) {
                error_msg("the GPU list is too long");
                goto out;
        }
        if (q->n_pids > GR_ELEMENTSOF(r->pids) || q->n_only > GR_ELEMENTSOF(r->only)) {
                error_msg("too many processes to name (at most %zu)", GR_ELEMENTSOF(r->pids));
                goto out;
        }
        if (q->n_pids)
                memcpy(r->pids, q->pids, q->n_pids * sizeof(*q->pids));
        r->n_pids = q->n_pids;
        if (q->n_only)
                memcpy(r->only, q->only, q->n_only * sizeof(*q->only));
        r->n_only = q->n_only;
        r->po.only = r->n_only ? r->only : NULL;
        r->po.n_only = r->n_only;
        if (q->scope)
                r->scope = *q->scope;
        r->po.scope_ended = q->scope_ended && q->scope;
        r->po.all_users = q->all_users;
        r->po.user_set = q->user_set;
        r->po.user = q->user;
        code = reap_execute(r);
out:
        free(r);
        return code;
}
