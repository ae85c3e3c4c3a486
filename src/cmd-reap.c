/* gpureap reap: kill exactly the leftovers, wait until the driver has the memory back, verify */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap.h"

static void reap_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap reap [--dry-run] [--yes] [--gpu SEL] [--pid PID[,PID...]] [--all]\n"
                "                    [--tree] [--user USER] [--all-users] [--grace DUR] [--timeout DUR]\n"
                "\n"
                "Kill the leftovers the diagnosis found (hidden holders of ghosts, orphaned workers),\n"
                "never live jobs, monitors, PID 1, gpureap or its ancestors; then wait until the\n"
                "driver has the memory back and verify.\n"
                "\n"
                "  --dry-run        show the plan and stop\n"
                "  --yes            do not ask (needed when stdin is not a terminal)\n"
                "  --gpu SEL        only leftovers of these GPUs\n"
                "  --pid PID        exactly these processes (comma separated or repeated)\n"
                "  --all            every holder of the selected GPUs, live jobs too (not monitors)\n"
                "  --tree           with each target, its whole process group\n"
                "  --user USER      only processes of this user (name or uid)\n"
                "  --all-users      as root, other users' processes too\n"
                "  --grace DUR      between SIGTERM and SIGKILL (default 5s)\n"
                "  --timeout DUR    for the processes to end and the memory to come back (default 30s)\n"
                "\n"
                "exit codes: 0 the selected GPUs are verified free of leftovers, 1 something is\n"
                "left (printed), 2 usage error or no consent, 3 GPU or driver failure\n");
}

static int ancestors(pid_t **ret, size_t *ret_n)
{
        pid_t *a = NULL;
        size_t n = 0;
        pid_t pid = getppid();
        for (int depth = 0; pid > 1 && depth < 128; depth++) {
                pid_t *na = realloc(a, (n + 1) * sizeof(*a));
                if (!na) {
                        free(a);
                        return -1;
                }
                a = na;
                a[n++] = pid;
                char path[64], buf[1024];
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                FILE *f = fopen(path, "re");
                size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
                if (f)
                        fclose(f);
                buf[len] = '\0';
                gr_stat st;
                if (gr_parse_stat(buf, len, &st) < 0)
                        break;
                pid = st.ppid;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

static void print_plan(FILE *f, const gr_plan *p)
{
        static const char *const why[] = { "leftover", "asked (--pid)", "asked (--all)", "its process group (--tree)" };
        for (size_t i = 0; i < p->n; i++) {
                const gr_target *t = &p->targets[i];
                if (t->refused == GR_REFUSE_NONE)
                        fprintf(f, "  kill   %-8d %-16s uid %-6u %s\n", (int)t->pid, t->comm, (unsigned)t->uid, why[t->why]);
        }
        for (size_t i = 0; i < p->n; i++) {
                const gr_target *t = &p->targets[i];
                if (t->refused == GR_REFUSE_NONE)
                        continue;
                fprintf(f, "  spare  %-8d %-16s %s", (int)t->pid, t->comm[0] ? t->comm : "-", gr_refusal_text(t->refused));
                if (t->refused == GR_REFUSE_ZOMBIE)
                        fprintf(f, " (PID %d)", (int)t->related);
                fputc('\n', f);
        }
}

struct verify {
        const struct gpu_selection *sel;
};

/* free of leftovers: clean, or busy with a job that was not to be touched */
static bool verified(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        const struct verify *v = userdata;
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                if (gpu_selected(v->sel, &s->gpu->gpus[i]) &&
                    d->gpus[i].state != GR_GPU_CLEAN && d->gpus[i].state != GR_GPU_BUSY)
                        return false;
        return true;
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

int cmd_reap(int argc, char **argv)
{
        static const struct option opts[] = {
                { "dry-run", no_argument, NULL, 'n' },
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
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool dry = false, yes = false;
        char gpus[1024] = "";
        pid_t pids[256];
        size_t n_pids = 0;
        gr_plan_options po = { .my_uid = getuid(), .self = getpid() };
        gr_snapshot_options so = { 0 };
        uint64_t grace = 5000, timeout = 30000;
        if (nvml_timeout_from_env(&so.gpu.timeout_ms) < 0)
                return EXIT_USAGE;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+nyg:p:aru:UG:T:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 'n': dry = true; break;
                case 'y': yes = true; break;
                case 'a': po.all = true; break;
                case 'r': po.tree = true; break;
                case 'U': po.all_users = true; break;
                case 'g':
                        if (gpu_option_append(gpus, sizeof(gpus), optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'p': {
                        char buf[1024];
                        gr_strlcpy(buf, optarg, sizeof(buf));
                        char *save = NULL;
                        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                                int v;
                                if (gr_parse_int(t, &v) < 0 || v <= 0) {
                                        error_msg("invalid PID '%s'", t);
                                        return EXIT_USAGE;
                                }
                                if (n_pids == GR_ELEMENTSOF(pids)) {
                                        error_msg("too many --pid values (at most %zu)", GR_ELEMENTSOF(pids));
                                        return EXIT_USAGE;
                                }
                                pids[n_pids++] = v;
                        }
                        break;
                }
                case 'u': {
                        uint64_t v;
                        struct passwd *pw;
                        if (gr_parse_u64(optarg, &v) == 0 && v <= UINT32_MAX)
                                po.user = (uid_t)v;
                        else if ((pw = getpwnam(optarg)))
                                po.user = pw->pw_uid;
                        else {
                                error_msg("no user '%s'", optarg);
                                return EXIT_USAGE;
                        }
                        po.user_set = true;
                        break;
                }
                case 'G':
                        if (parse_duration_option(optarg, &grace, true) < 0)
                                return EXIT_USAGE;
                        break;
                case 'T':
                        if (parse_duration_option(optarg, &timeout, true) < 0)
                                return EXIT_USAGE;
                        break;
                case 't':
                        if (parse_duration_option(optarg, &so.gpu.timeout_ms, false) < 0)
                                return EXIT_USAGE;
                        break;
                case 'h':
                        reap_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        fprintf(stderr, "see 'gpureap reap --help'\n");
                        return EXIT_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "reap") < 0)
                return EXIT_USAGE;
        if (po.all && n_pids > 0) {
                error_msg("--all and --pid exclude each other");
                return EXIT_USAGE;
        }
        struct gpu_selection sel = { .list = gpus[0] ? gpus : NULL };
        po.gpus = sel.list;
        po.pids = pids;
        po.n_pids = n_pids;
        pid_t *anc = NULL;
        size_t n_anc = 0;
        if (ancestors(&anc, &n_anc) < 0) {
                error_msg("out of memory");
                return EXIT_DRIVER;
        }
        po.ancestors = anc;
        po.n_ancestors = n_anc;

        uint64_t t0 = gr_now_ms();
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        gr_plan *plan = NULL;
        gr_drain *drain = NULL;
        int code = EXIT_DRIVER;
        /* the drain watcher initialises NVML while the snapshot is taken */
        if (!dry && gr_drain_start(&so.gpu, &drain) < 0)
                drain = NULL;
        int r = gr_snapshot_take(&so, &s);
        if (r < 0) {
                error_msg("cannot take a snapshot: %s", strerror(-r));
                goto out;
        }
        if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                goto out;
        }
        char bad[128];
        if (gpu_selection_unmatched(&sel, s->gpu, bad, sizeof(bad))) {
                error_msg("no GPU matches '%s' (this machine has %u)", bad, s->gpu->n_gpus);
                code = EXIT_USAGE;
                goto out;
        }
        if ((r = gr_diagnose(s, getuid(), &d)) < 0 || (r = gr_plan_make(s, d, &po, &plan)) < 0) {
                error_msg("cannot plan: %s", strerror(-r));
                goto out;
        }
        size_t n = gr_plan_count(plan);
        uint64_t before[GR_GPUS_MAX];
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                before[i] = s->gpu->gpus[i].mem_used;

        printf("%s", n || plan->n ? "plan:\n" : "");
        print_plan(stdout, plan);
        if (n == 0)
                printf("nothing to kill\n");
        fflush(stdout);
        if (dry) {
                code = EXIT_CLEAN;
                goto out;
        }
        if (n > 0 && !yes) {
                if (!isatty(STDIN_FILENO)) {
                        error_msg("not asking without a terminal: add --yes to kill %zu process%s", n, n == 1 ? "" : "es");
                        code = EXIT_USAGE;
                        goto out;
                }
                if (!confirm(n)) {
                        error_msg("nothing done");
                        code = EXIT_USAGE;
                        goto out;
                }
        }
        /* Test seam (tests/integration/reap-pid-reuse.sh): a command run between the plan and the
         * signals, to recycle a planned PID and prove that the pidfd check spares the newcomer */
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
        gr_kill_options ko = { .proc_root = s->proc_root, .grace_ms = grace, .deadline_ms = timeout };
        gr_kill_outcome *res = NULL;
        size_t n_res = 0;
        /* what each GPU of the plan uses when drained: the live jobs left alone, and the slack */
        uint64_t targets[GR_GPUS_MAX];
        for (unsigned i = 0; i < GR_GPUS_MAX; i++) {
                targets[i] = GR_UNKNOWN_U64;
                if (i >= s->gpu->n_gpus || !(plan->gpus >> i & 1))
                        continue;
                const gr_gpu *g = &s->gpu->gpus[i];
                targets[i] = GR_BASELINE_SLACK + (g->mem_api == 1 ? (640ULL << 20) : 0);
                for (unsigned j = 0; j < g->n_procs; j++) {
                        const gr_process *op = gr_proc_table_find(s->procs, (pid_t)g->procs[j].pid);
                        bool planned = false;
                        for (size_t k = 0; k < plan->n && !planned; k++)
                                planned = plan->targets[k].pid == (pid_t)g->procs[j].pid &&
                                          plan->targets[k].refused == GR_REFUSE_NONE;
                        if (op && op->state != 'Z' && !planned && g->procs[j].used_bytes != GR_UNKNOWN_U64)
                                targets[i] += g->procs[j].used_bytes;
                }
        }
        bool watching = drain && n > 0 &&
                        gr_drain_arm(drain, targets, GR_GPUS_MAX, gr_now_ms() + (so.gpu.timeout_ms ? so.gpu.timeout_ms : 5000));
        uint64_t t_sig = gr_now_us();
        if (n > 0) {
                if ((r = gr_kill_plan(plan, &ko, &res, &n_res)) < 0) {
                        error_msg("cannot signal: %s", strerror(-r));
                        goto out;
                }
                for (size_t i = 0; i < n_res; i++)
                        printf("  %-8d %s\n", (int)res[i].pid, gr_kill_result_name(res[i].result));
                free(res);
        }
        /* --tree: processes forked into the groups during the kill are found and killed too */
        for (int round = 0; po.tree && n > 0 && round < 20; round++) {
                gr_snapshot *s2 = NULL;
                gr_diagnosis *d2 = NULL;
                gr_plan *p2 = NULL;
                if (gr_snapshot_take(&so, &s2) < 0)
                        break;
                pid_t late[GR_PLAN_MAX];
                size_t n_late = 0;
                for (size_t k = 0; k < s2->procs->n && n_late < GR_ELEMENTSOF(late); k++)
                        for (size_t i = 0; i < plan->n; i++) {
                                const gr_process *q = &s2->procs->procs[k];
                                const gr_process *t = gr_proc_table_find(s->procs, plan->targets[i].pid);
                                if (plan->targets[i].refused == GR_REFUSE_NONE && t && q->pgrp == t->pgrp &&
                                    q->state != 'Z' && !gr_proc_table_find(s->procs, q->pid)) {
                                        late[n_late++] = q->pid;
                                        break;
                                }
                        }
                size_t killed = 0;
                if (n_late > 0 && gr_diagnose(s2, getuid(), &d2) == 0) {
                        gr_plan_options po2 = po;
                        po2.pids = late;
                        po2.n_pids = n_late;
                        po2.all = false;
                        po2.tree = false;
                        if (gr_plan_make(s2, d2, &po2, &p2) == 0 && gr_plan_count(p2) > 0 &&
                            gr_kill_plan(p2, &ko, &res, &n_res) == 0) {
                                for (size_t i = 0; i < n_res; i++)
                                        printf("  %-8d %s (forked during the kill)\n", (int)res[i].pid,
                                               gr_kill_result_name(res[i].result));
                                killed = n_res;
                                free(res);
                        }
                }
                gr_plan_free(p2);
                gr_diagnosis_free(d2);
                gr_snapshot_free(s2);
                if (killed == 0)
                        break;
        }

        /* the drain: until the driver has the memory back, seen by the watcher within 0.2 ms */
        uint64_t drained_at = 0;
        bool drained = watching && gr_drain_wait(drain, gr_now_ms() + timeout, &drained_at);
        if (drained)
                printf("memory back %.1f ms after the first signal\n", (double)(drained_at - t_sig) / 1000);
        gr_drain_free(drain);
        drain = NULL;
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        s = NULL;
        d = NULL;
        struct verify v = { &sel };
        struct wait_spec w = { .so = &so, .timeout_ms = timeout };
        bool met = false;
        if ((r = wait_until(&w, verified, &v, &s, &d, &met)) < 0) {
                error_msg("cannot verify: %s", strerror(-r));
                goto out;
        }
        uint64_t t_end = gr_now_ms();
        for (unsigned i = 0; i < s->gpu->n_gpus && i < GR_GPUS_MAX; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                if (!gpu_selected(&sel, g))
                        continue;
                char b1[32], b2[32];
                printf("GPU %u  %s  memory %s -> %s", g->index, gr_gpu_state_name(d->gpus[i].state),
                       gr_format_bytes(before[i], b1, sizeof(b1)), gr_format_bytes(g->mem_used, b2, sizeof(b2)));
                putchar('\n');
        }
        if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                code = EXIT_DRIVER;
        } else if (met) {
                printf("verified in %llu ms: no leftover on the selected GPUs\n", (unsigned long long)(t_end - t0));
                code = EXIT_CLEAN;
        } else {
                error_msg("not clean after %.1fs: what is left follows", (double)timeout / 1000);
                render_status_table(stderr, s, d, &sel, false);
                code = EXIT_NOT_CLEAN;
        }
out:
        fflush(stdout);
        gr_drain_free(drain);
        gr_plan_free(plan);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        free(anc);
        return code;
}
