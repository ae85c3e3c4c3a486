/* gpureap slurm-prolog and slurm-epilog: job-scoped cleanup where leftovers are made. Slurm runs
 * them as root with its job's environment, no PATH and no terminal; they never ask, never hang
 * (one deadline bounds everything), and log to syslog. The epilog reaps every process of the
 * ended job that still holds one of its GPUs (the job is over: each is a leftover by definition),
 * waits for the memory and verifies; it fails only when a GPU stays dirty, so that Slurm drains
 * the node, and says why. The prolog refuses a GPU that is not clean. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap.h"

static void slurm_usage(FILE *f, const char *cmd)
{
        fprintf(f,
                "usage: gpureap %s [--drain] [--gpus LIST] [--timeout DUR] [--grace DUR]\n"
                "                          [--scontrol PATH] [--node NAME]\n"
                "\n"
                "For slurm.conf's %s= (docs/integrations.md). Reads SLURM_JOB_ID, SLURM_JOB_UID and\n"
                "SLURM_JOB_GPUS (else CUDA_VISIBLE_DEVICES): GRES indices, taken as /dev/nvidiaN, as\n"
                "gres.conf's File=/dev/nvidia[0-N] and AutoDetect=nvml number them.\n"
                "%s"
                "\n"
                "  --drain          also drain the node with gpureap's reason (scontrol update)\n"
                "  --gpus LIST      the job's GPUs, as for --gpu, instead of SLURM_JOB_GPUS\n"
                "  --timeout DUR    bounds the whole command (default %s)\n"
                "  --grace DUR      between SIGTERM and SIGKILL (epilog; default 3s)\n"
                "  --scontrol PATH  the scontrol to run (default: /usr/bin/scontrol, /usr/local/bin, ...)\n"
                "  --node NAME      this node's name in Slurm (default $SLURMD_NODENAME, else the host name)\n"
                "\n"
                "exit codes: 0 the job's GPUs are clean (epilog: after reaping), 1 a GPU is not\n"
                "(the reason on stderr and in syslog; Slurm drains the node), 2 usage\n",
                cmd, strcmp(cmd, "slurm-epilog") == 0 ? "Epilog" : "Prolog",
                strcmp(cmd, "slurm-epilog") == 0
                        ? "Reaps every process of the ended job that still holds one of its GPUs, waits for\n"
                          "the memory, verifies.\n"
                        : "Refuses the job (exit 1) when one of its GPUs is not clean within the timeout.\n",
                strcmp(cmd, "slurm-epilog") == 0 ? "60s" : "10s");
}

struct slurm {
        const char *cmd;
        bool epilog, drain;
        const char *job, *gpus_opt, *scontrol, *node;
        char gpus[1024];          /* "nvidia0,nvidia1" */
        uint64_t timeout, grace;
        uint64_t deadline;        /* the whole command's */
        const char *uid;          /* SLURM_JOB_UID, when it is a number: only its processes */
        uid_t uid_value;
        pid_t blind[GR_PLAN_MAX]; /* the driver could not be read: the job's holders by /proc */
        size_t n_blind;
};

/* How long the driver gets per look: its usual deadline, but never more than a third of what
 * is left, so that a hung driver cannot take the epilog past its own --timeout */
static uint64_t nvml_budget(const struct slurm *sl)
{
        uint64_t t = 5000;
        nvml_timeout_from_env(&t);
        uint64_t now = gr_now_ms(), left = sl->deadline > now ? sl->deadline - now : 0;
        uint64_t third = left / 3 > 200 ? left / 3 : 200;
        return t < third ? t : third;
}

static bool job_uid_ok(const struct slurm *sl, const gr_process *p)
{
        uint64_t u;
        return !sl->uid || (p->has_uid && gr_parse_u64(sl->uid, &u) == 0 && u == p->uid);
}

/* Is item one of the comma-separated list's? */
static bool list_has(const char *list, const char *item)
{
        size_t n = strlen(item);
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && strncmp(p, item, n) == 0)
                        return true;
                p += len;
                if (*p == ',')
                        p++;
        }
        return false;
}

/* SLURM_JOB_GPUS (GRES indices) into a --gpu list of device files */
static int job_gpus(struct slurm *sl)
{
        if (sl->gpus_opt) {
                if (!gr_strlcpy(sl->gpus, sl->gpus_opt, sizeof(sl->gpus)))
                        return -1;
                return 0;
        }
        const char *v = getenv("SLURM_JOB_GPUS");
        if (!v || !*v)
                v = getenv("CUDA_VISIBLE_DEVICES");
        if (!v || !*v || strcmp(v, "NoDevFiles") == 0)
                return 0; /* no GPU: the scope's processes tell which GPUs they held */
        size_t o = 0;
        char item[32];
        for (const char *p = v; *p;) {
                size_t n = strcspn(p, ",");
                uint64_t idx;
                if (n == 0 || n >= sizeof(item))
                        return -1;
                memcpy(item, p, n);
                item[n] = '\0';
                if (gr_parse_u64(item, &idx) < 0 || idx > 4096)
                        return -1; /* a UUID in CUDA_VISIBLE_DEVICES: give --gpus */
                o += (size_t)snprintf(sl->gpus + o, o < sizeof(sl->gpus) ? sizeof(sl->gpus) - o : 0, "%snvidia%llu",
                                      o ? "," : "", (unsigned long long)idx);
                p += n;
                if (*p == ',')
                        p++;
        }
        return o < sizeof(sl->gpus) ? 0 : -1;
}

static const char *find_scontrol(const char *given)
{
        if (given)
                return given;
        static const char *const paths[] = { "/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol",
                                             "/usr/sbin/scontrol" };
        for (size_t i = 0; i < GR_ELEMENTSOF(paths); i++)
                if (access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

/* scontrol update nodename=NODE state=drain reason="gpureap: ...", bounded by the deadline */
static void drain_node(const struct slurm *sl, const char *why, uint64_t deadline)
{
        const char *sc = find_scontrol(sl->scontrol);
        char node[256], reason[400], nodearg[300];
        if (sl->node)
                gr_strlcpy(node, sl->node, sizeof(node));
        else if (getenv("SLURMD_NODENAME") && *getenv("SLURMD_NODENAME"))
                gr_strlcpy(node, getenv("SLURMD_NODENAME"), sizeof(node));
        else if (gethostname(node, sizeof(node) - 1) < 0)
                node[0] = '\0';
        node[strcspn(node, ".")] = '\0'; /* Slurm's node names are short */
        if (!sc || !node[0]) {
                error_msg("cannot drain the node: %s", sc ? "no node name" : "no scontrol found (--scontrol PATH)");
                return;
        }
        snprintf(nodearg, sizeof(nodearg), "nodename=%s", node);
        snprintf(reason, sizeof(reason), "reason=gpureap: %.180s", why);
        /* scontrol gets an environment of its own: only the SLURM_CONF slurmd gave us (the
         * cluster's configuration where it is not the default one) */
        char conf[1100] = "";
        const char *c = getenv("SLURM_CONF");
        if (c && c[0] == '/' && strlen(c) < sizeof(conf) - 12)
                snprintf(conf, sizeof(conf), "SLURM_CONF=%s", c);
        pid_t pid = fork();
        if (pid == 0) {
                char *const env[] = { conf[0] ? conf : NULL, NULL };
                execle(sc, sc, "update", nodearg, "state=drain", reason, (char *)NULL, env);
                _exit(127);
        }
        if (pid < 0)
                return;
        int st = 0;
        for (;;) {
                pid_t w = waitpid(pid, &st, WNOHANG);
                if (w == pid)
                        break;
                if (gr_now_ms() >= deadline) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &st, 0);
                        error_msg("'%s update' did not finish in time", QUOTED(sc));
                        return;
                }
                poll(NULL, 0, 20);
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                audit_log(LOG_WARNING, "job %s: node %s drained: %s", sl->job, node, why);
                fprintf(stderr, "gpureap: node %s drained: %s\n", QUOTED(node), why);
        } else {
                error_msg("'%s update nodename=%s state=drain' failed", QUOTED(sc), QUOTED(node));
        }
}

/* What is wrong with the job's GPUs now, in one line; true when nothing is */
static bool gpus_ok(struct slurm *sl, const gr_scope *scope, struct summary *m)
{
        gr_snapshot_options so = { 0 };
        so.gpu.timeout_ms = nvml_budget(sl);
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        /* the verdict the node is judged by: the view reap acted on (serve's memory joined) */
        int r = view_take(&so, VIEW_OWN_LOOK, &s);
        if (r < 0) {
                summary_say(m, SUMMARY_CRITICAL, "cannot take a snapshot: %s", strerror(-r));
                return false;
        }
        struct gpu_selection sel = { .list = sl->gpus[0] ? sl->gpus : NULL, .scope = scope };
        sel.scope_mask = scope_gpus(s, scope);
        if (s->gpu->status != GR_GPU_OK)
                summary_say(m, SUMMARY_CRITICAL, "%s", s->gpu->error);
        else if ((r = gr_diagnose(s, 0, &d)) < 0)
                summary_say(m, SUMMARY_CRITICAL, "cannot diagnose: %s", strerror(-r));
        else
                for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                        if (!gpu_selected(&sel, &s->gpu->gpus[i]))
                                continue;
                        summary_gpu(m, s, d, i);
                        /* after the job, memory on its GPU that PIDs this view cannot see hold
                         * (a PID namespace of its own: slurmd in a container) may be the
                         * job's, still there: the job's end cannot be verified */
                        for (size_t k = 0; sl->epilog && k < d->n_findings; k++) {
                                const gr_finding *f = &d->findings[k];
                                char mem[32] = "memory";
                                if (f->kind != GR_FIND_UNMAPPED || !gr_finding_on_gpu(f, i))
                                        continue;
                                if (gr_finding_memory_on(f, i) != GR_UNKNOWN_U64)
                                        gr_format_bytes(gr_finding_memory_on(f, i), mem, sizeof(mem));
                                summary_say(m, SUMMARY_CRITICAL,
                                            "GPU %u: %s held by PIDs this view cannot see (another PID namespace): the job's end cannot be verified",
                                            s->gpu->gpus[i].index, mem);
                        }
                        /* at a prolog, any holder of the job's GPU is somebody else's */
                        if (!sl->epilog && d->gpus[i].state == GR_GPU_BUSY) {
                                const gr_process *h = NULL;
                                size_t n = 0;
                                for (size_t k = 0; s->procs && k < s->procs->n; k++) {
                                        const gr_process *p = &s->procs->procs[k];
                                        if (p->hold && gr_process_fds_on_minor(p, s->gpu->gpus[i].minor) > 0) {
                                                h = h ? h : p;
                                                n++;
                                        }
                                }
                                if (h)
                                        summary_say(m, SUMMARY_CRITICAL, "GPU %u: held by PID %d (%s)%s, not of this job",
                                                    s->gpu->gpus[i].index, (int)h->pid, h->comm, n > 1 ? " and others" : "");
                                else
                                        summary_say(m, SUMMARY_CRITICAL, "GPU %u: in use, not by this job", s->gpu->gpus[i].index);
                        }
                }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        return m->level < SUMMARY_CRITICAL;
}

/* No GPU list from the driver: the job's processes that hold any NVIDIA device file are still
 * ended (by PID, each verified), and the verdict says the GPUs could not be read */
static void blind_pids_of_scope(struct slurm *sl, gr_snapshot *s, const gr_scope *scope)
{
        sl->n_blind = 0;
        /* the lineage verdicts need no driver: what only carries the job's SLURM_JOB_ID (out of
         * its cgroup) is taken unless judged live, as the plan of an ended scope does */
        gr_diagnosis *d = NULL;
        if (gr_diagnose(s, 0, &d) < 0)
                d = NULL;
        for (size_t k = 0; s->procs && k < s->procs->n; k++) {
                const gr_process *p = &s->procs->procs[k];
                gr_scope_match m = p->hold ? gr_scope_contains(scope, p) : GR_SCOPE_OUT;
                const gr_holder_verdict *v = d ? gr_diagnosis_holder(d, p->pid) : NULL;
                if (!gr_plan_ended_scope_takes(m, v) || !job_uid_ok(sl, p))
                        continue;
                if (sl->n_blind == GR_ELEMENTSOF(sl->blind)) {
                        /* more than one reap takes: the verdict after it says what is left */
                        audit_log(LOG_WARNING, "job %s: more than %zu holders and no driver: the first %zu are ended",
                                  sl->job, GR_ELEMENTSOF(sl->blind), GR_ELEMENTSOF(sl->blind));
                        fprintf(stderr, "gpureap: job %s: more than %zu holders and no driver: the first %zu are ended\n",
                                QUOTED(sl->job), GR_ELEMENTSOF(sl->blind), GR_ELEMENTSOF(sl->blind));
                        break;
                }
                sl->blind[sl->n_blind++] = p->pid;
        }
        gr_diagnosis_free(d);
}

/* Whether the driver can be read; without SLURM_JOB_GPUS, the GPUs the job's processes hold
 * now, before they are reaped */
static void gpus_of_scope(struct slurm *sl, const gr_scope *scope)
{
        gr_snapshot_options so = { 0 };
        so.gpu.timeout_ms = nvml_budget(sl);
        gr_snapshot *s = NULL;
        if (gr_snapshot_take(&so, &s) < 0)
                return;
        if (s->gpu->status != GR_GPU_OK) {
                blind_pids_of_scope(sl, s, scope);
                gr_snapshot_free(s);
                return;
        }
        /* the GPUs the job's processes hold, added to those Slurm gave it: the job is over, so
         * what of it holds a GPU outside SLURM_JOB_GPUS (no device cgroup kept it out) is its
         * leftover too, and that GPU is judged with the others */
        bool given = sl->gpus[0] != '\0';
        size_t o = strlen(sl->gpus);
        for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                const gr_process *h = NULL;
                for (size_t k = 0; s->procs && k < s->procs->n && !h; k++) {
                        const gr_process *p = &s->procs->procs[k];
                        /* beyond the GPUs Slurm gave, only what runs in the job's cgroup widens
                         * the list: a process that merely carries its SLURM_JOB_ID does not */
                        gr_scope_match sm = p->hold ? gr_scope_contains(scope, p) : GR_SCOPE_OUT;
                        bool counts = given ? sm == GR_SCOPE_IN : sm != GR_SCOPE_OUT;
                        if (counts && job_uid_ok(sl, p) && gr_process_fds_on_minor(p, g->minor) > 0)
                                h = p;
                }
                char item[32];
                snprintf(item, sizeof(item), "nvidia%d", g->minor);
                if (!h || g->minor < 0 || list_has(sl->gpus, item) || o >= sizeof(sl->gpus))
                        continue;
                if (given) {
                        char why[200];
                        snprintf(why, sizeof(why), "job %s: its process %d (%s) holds GPU %u, which is not in SLURM_JOB_GPUS: reaped and judged too",
                                 sl->job, (int)h->pid, h->comm, g->index);
                        audit_log(LOG_WARNING, "%s", why);
                        fprintf(stderr, "gpureap: %s\n", why);
                }
                o += (size_t)snprintf(sl->gpus + o, sizeof(sl->gpus) - o, "%s%s", o ? "," : "", item);
        }
        gr_snapshot_free(s);
}

static int run_epilog(struct slurm *sl, const gr_scope *scope, uint64_t deadline)
{
        /* the reap of the ended job's scope: the same plan, checks, ladder, drain and audit as
         * 'gpureap reap --job ID --ended', as options */
        uint64_t left = deadline > gr_now_ms() ? deadline - gr_now_ms() : 0;
        struct reap_request q = {
                .scope = scope,
                .scope_ended = true,
                .all_users = true, /* the job's processes are its user's; we are root */
                /* and nobody else's: a root daemon or another user's process that carries the
                 * job's id in its environment is spared */
                .user_set = sl->uid != NULL,
                .user = sl->uid_value,
                .timeout_ms = left > 1000 ? left - 500 : left,
                .grace_ms = sl->grace,
                .nvml_timeout_ms = nvml_budget(sl),
                .gpus = sl->gpus[0] ? sl->gpus : NULL,
        };
        if (sl->n_blind) {
                /* the driver could not be read: its holders by PID (no scope, no GPU list) */
                q.scope = NULL;
                q.scope_ended = false;
                q.gpus = NULL;
                q.pids = sl->blind;
                q.n_pids = sl->n_blind;
                return reap_request_run(&q);
        }
        int code = reap_request_run(&q);
        if (code != EXIT_DRIVER)
                return code;
        /* the first look had the driver, reap's own did not (a slow driver): reap ended
         * nothing, so the job's holders are ended by PID from /proc, as when neither had it */
        gr_snapshot_options so = { .gpu_down = "the driver did not answer reap's look" };
        gr_snapshot *s = NULL;
        if (gr_snapshot_take(&so, &s) < 0)
                return code;
        blind_pids_of_scope(sl, s, scope);
        gr_snapshot_free(s);
        if (!sl->n_blind)
                return code;
        char list[2048];
        size_t o = 0;
        for (size_t i = 0; i < sl->n_blind && o < sizeof(list); i++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d", i ? "," : "", (int)sl->blind[i]);
        audit_log(LOG_WARNING, "job %s: the driver did not answer reap's look: ending the job's holders %s by PID",
                  sl->job, list);
        return run_epilog(sl, scope, deadline);
}

/* the options: -1 to go on, else the exit code (EXIT_CLEAN after the help) */
static int slurm_parse(struct slurm *sl, int argc, char **argv)
{
        static const struct option opts[] = {
                { "drain", no_argument, NULL, 'd' },
                { "gpus", required_argument, NULL, 'g' },
                { "timeout", required_argument, NULL, 'T' },
                { "grace", required_argument, NULL, 'G' },
                { "scontrol", required_argument, NULL, 's' },
                { "node", required_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+dg:T:G:s:n:h", opts, NULL)) != -1) {
                switch (c) {
                case 'd': sl->drain = true; break;
                case 'g':
                        if (!list_items_ok(optarg)) {
                                error_msg("invalid --gpus '%s'", QUOTED(optarg));
                                return EXIT_USAGE;
                        }
                        sl->gpus_opt = optarg;
                        break;
                case 'T':
                        if (parse_duration_option(optarg, &sl->timeout, false) < 0)
                                return EXIT_USAGE;
                        break;
                case 'G':
                        if (parse_duration_option(optarg, &sl->grace, true) < 0)
                                return EXIT_USAGE;
                        break;
                case 's': sl->scontrol = optarg; break;
                case 'n': sl->node = optarg; break;
                case 'h':
                        slurm_usage(stdout, sl->cmd);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, sl->cmd);
                        return EXIT_USAGE;
                }
        }
        return no_stray_arguments(argc, argv, sl->cmd) < 0 ? EXIT_USAGE : -1;
}

/* what Slurm's environment says: the job, its user, its scope and its GPUs; 0 or EXIT_USAGE */
static int slurm_job_env(struct slurm *sl, gr_scope *scope)
{
        const char *hook = sl->epilog ? "Epilog" : "Prolog";
        sl->job = getenv("SLURM_JOB_ID");
        const char *ju = getenv("SLURM_JOB_UID");
        uint64_t juv;
        if (ju && (gr_parse_u64(ju, &juv) < 0 || juv > UINT32_MAX)) {
                /* without it the user filter would be dropped: every user's process of the
                 * job's scope would be taken */
                error_msg("invalid SLURM_JOB_UID '%s': run me as Slurm's %s", QUOTED(ju), hook);
                return EXIT_USAGE;
        }
        sl->uid = ju;
        sl->uid_value = ju ? (uid_t)juv : 0;
        if (!sl->job || gr_scope_parse(GR_SCOPE_SLURM_JOB, sl->job, scope) < 0) {
                error_msg("no valid SLURM_JOB_ID in the environment: run me as Slurm's %s", hook);
                return EXIT_USAGE;
        }
        if (job_gpus(sl) < 0) {
                error_msg("cannot read the job's GPUs from SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES: give --gpus");
                return EXIT_USAGE;
        }
        return 0;
}

/* the verdict the node is judged by: the job's GPUs now (after the epilog's reap, or before the
 * job at the prolog, given the teardown of the last job's memory time) */
static int slurm_verdict(struct slurm *sl, const gr_scope *scope, uint64_t deadline)
{
        struct summary m = { .level = SUMMARY_OK };
        bool ok = false;
        for (;;) {
                m = (struct summary){ .level = SUMMARY_OK };
                ok = gpus_ok(sl, scope, &m);
                if (ok || gr_now_ms() + 200 >= deadline)
                        break;
                poll(NULL, 0, 200);
        }
        if (ok) {
                audit_log(LOG_INFO, "job %s: its GPUs are clean", sl->job);
                return EXIT_CLEAN;
        }
        char why[600];
        snprintf(why, sizeof(why), "job %s: %s", sl->job, m.o ? m.text : "a process of the job could not be ended");
        error_msg("%s", why);
        audit_log(LOG_WARNING, "%s", why);
        if (sl->drain)
                drain_node(sl, why, deadline + 2000);
        return EXIT_NOT_CLEAN;
}

static int cmd_slurm(int argc, char **argv, bool epilog)
{
        struct slurm sl = { .cmd = epilog ? "slurm-epilog" : "slurm-prolog", .epilog = epilog,
                            .timeout = epilog ? 60000 : 10000, .grace = 3000 };
        int code = slurm_parse(&sl, argc, argv);
        if (code >= 0)
                return code;
        uint64_t deadline = gr_now_ms() + sl.timeout;
        sl.deadline = deadline;
        gr_scope scope;
        if (slurm_job_env(&sl, &scope) != 0)
                return EXIT_USAGE;
        audit_open(sl.cmd);
        audit_log(LOG_INFO, "job %s (uid %s): GPUs %s", sl.job, sl.uid ? sl.uid : "?", sl.gpus[0] ? sl.gpus : "(those it holds)");
        if (epilog) {
                /* the driver's state and, without SLURM_JOB_GPUS, the GPUs the job holds */
                gpus_of_scope(&sl, &scope);
                if (sl.n_blind)
                        sl.gpus[0] = '\0'; /* the driver cannot say which GPU is which */
                if (!sl.gpus[0] && !sl.n_blind) {
                        audit_log(LOG_INFO, "job %s: no GPU, nothing of it holds one", sl.job);
                        return EXIT_CLEAN;
                }
                /* what the reap could not end keeps its GPU dirty: the verdict below says so,
                 * after the teardown of the memory has had its time */
                if (run_epilog(&sl, &scope, deadline) == EXIT_USAGE)
                        return EXIT_USAGE;
        }
        return slurm_verdict(&sl, &scope, deadline);
}

int cmd_slurm_epilog(int argc, char **argv)
{
        return cmd_slurm(argc, argv, true);
}

int cmd_slurm_prolog(int argc, char **argv)
{
        return cmd_slurm(argc, argv, false);
}
