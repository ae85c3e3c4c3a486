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
#include "gpureap/tree.h"
#include "gpureap.h"
#include "procevents.h"

static void reap_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap reap [--dry-run] [--direct] [--yes] [--json] [--gpu SEL] [--pid PID[,PID...]]\n"
                "                    [--likely] [--all] [--tree] [--user USER] [--all-users]\n"
                "                    [--grace DUR] [--timeout DUR] [--only PID@START[,...]]\n"
                "                    [--job ID|--cgroup P|--container ID|--pod UID [--ended]]\n"
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
                "  --gpu SEL        only leftovers of these GPUs\n"
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
        pid_t pids[256];
        size_t n_pids;
        gr_pid_start only[256];
        size_t n_only;
        gr_plan_options po;
        gr_snapshot_options so;
        uint64_t grace, timeout, t0, deadline;
        struct gpu_selection sel;
        gr_scope scope;
        json_object *out;          /* the --json result, filled as things happen */
        int events_fd;             /* the kernel's process events, from before the snapshot; -1 */
};

static const char *const why_names[] = { "leftover", "asked (--pid)", "asked (--all)", "its process group (--tree)",
                                         "a process of the ended scope (--ended)" };
static const char *const why_keys[] = { "leftover", "pid", "all", "tree", "ended" };

static const char *refusal_key(gr_refusal r)
{
        static const char *const k[] = { "none", "init", "self", "kernel", "monitor", "other_user", "zombie",
                                         "gone", "live", "unsure", "likely", "no_uid", "out_of_scope",
                                         "not_on_gpu", "not_holding", "not_only" };
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
                if (t->refused == GR_REFUSE_ZOMBIE)
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
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        if (nvml_timeout_from_env(&r->so.gpu.timeout_ms) < 0)
                return -1;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+njLyg:p:aru:UG:T:t:h", opts, NULL)) != -1) {
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
                        if (gpu_option_append(r->gpus, sizeof(r->gpus), optarg) < 0)
                                return -1;
                        break;
                case 'p':
                        if (parse_pids(r, optarg) < 0)
                                return -1;
                        break;
                case 'u': {
                        uint64_t v;
                        struct passwd *pw;
                        if (gr_parse_u64(optarg, &v) == 0 && v <= UINT32_MAX)
                                r->po.user = (uid_t)v;
                        else if (optarg[0] && (pw = getpwnam(optarg)))
                                r->po.user = pw->pw_uid;
                        else {
                                error_msg("no user '%s'", QUOTED(optarg));
                                return -1;
                        }
                        r->po.user_set = true;
                        break;
                }
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
        if (no_stray_arguments(argc, argv, "reap") < 0)
                return -1;
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

static bool confirm(size_t n)
{
        fprintf(stderr, "kill %zu process%s? [y/N] ", n, n == 1 ? "" : "es");
        fflush(stderr);
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
                return false;
        return line[0] == 'y' || line[0] == 'Y';
}

/* What each GPU of the plan uses when drained: the live jobs left alone, and the slack */
static void drain_targets(const gr_snapshot *s, const gr_plan *plan, uint64_t *targets)
{
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
}

/* What a target forks while the ladder runs (a leftover that forks on SIGTERM, a launcher that
 * restarts its workers) gets the plan's checks and selection and the current rung: a process
 * the snapshot did not have (what it had, the plan judged), that is a child of a member of the
 * ladder (by parentage, never by a group number that a newcomer may have reused), or, born
 * since the plan, in a target's group whose leader is gone and that was the targets' alone (no
 * process of it alive at the snapshot but the targets: a group shared with a live job, or one of
 * gpureap's callers', tells nothing of who forked what), and that holds a device file of the
 * chosen GPUs (with --tree, any process of such a group), born while a member of that group
 * may still have lived (after all of them ended, a process in it has taken its number). */
struct tree_watch {
        const gr_snapshot *s;
        const gr_plan_options *po;
        pid_t pgids[GR_PLAN_MAX];  /* the targets' groups that were theirs alone */
        size_t n_pgids;
        uint64_t minors;           /* bit m: /dev/nvidia<m> is of a chosen GPU (with --gpu) */
        bool minors_set;
        bool tree;
        uint64_t since_ticks;      /* born after this (clock ticks since boot): new since the plan */
        long hz;
        /* the members and their groups, and when the ladder first saw each one ended (clock
         * ticks since boot, 0 while it runs): a newcomer is taken for a fork into a group only
         * if it was born while a member of that group may still have lived (a group whose
         * members are all gone cannot grow, except by a new process that took its number) */
        struct { pid_t pid, pgrp; uint64_t done_ticks; } mem[1024];
        size_t n_mem;
        /* With the kernel's process events (root): who forked whom, in order. The live
         * descendants of the targets: the targets, then each child forked by one of them while
         * it lived, each removed when it ends (a PID taken again afterwards is someone else's).
         * A newcomer is theirs exactly when it is among them; groups and times are not needed.
         * lineage_ok false (no events, some lost, too many): the rules above instead. */
        int events_fd;
        bool lineage_ok;
        struct { pid_t pid; uint64_t start; } lineage[4096]; /* start 0: ended before it was read */
        size_t n_lineage;
        uint64_t next_ms;
        gr_ladder *l;
        pid_t found[256];
        uint64_t found_start[256];
        size_t n_found;
};

static bool is_member(const gr_ladder *l, pid_t pid)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->m[i].ref.pid == pid)
                        return true;
        return false;
}

/* Is the process that has this PID now a member itself, not another that took its number once
 * the member ended (the same start time)? */
static bool is_member_now(const struct tree_watch *tw, pid_t pid)
{
        for (size_t i = 0; i < tw->l->n; i++) {
                const gr_ladder_member *m = &tw->l->m[i];
                if (m->ref.pid != pid)
                        continue;
                gr_stat st;
                return gr_proc_read_stat(tw->s->proc_root, pid, &st) == 0 && st.start_time == m->ref.start_time;
        }
        return false;
}

/* Is the leader of process group G gone, or one of the ladder's? A group led by a live
 * process that is not (a newcomer that took a dead group's number, a live launcher) is not the
 * targets' */
static bool group_ours(struct tree_watch *tw, pid_t g)
{
        if (is_member(tw->l, g))
                return true;
        char path[1100], buf[1024];
        snprintf(path, sizeof(path), "%s/%d", tw->s->proc_root, (int)g);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return true;
        size_t len;
        gr_stat st;
        bool gone = gr_read_file_at(fd, "stat", buf, sizeof(buf), &len) < 0 || gr_parse_stat(buf, len, &st) < 0 ||
                    st.state == 'Z' || st.pgrp != g;
        close(fd);
        return gone;
}

/* Does it hold a device file of the chosen GPUs (any NVIDIA file without --gpu)? */
static bool holds_chosen(const struct tree_watch *tw, const gr_holding *h)
{
        if (!h)
                return false;
        if (!tw->minors_set)
                return true;
        for (unsigned i = 0; i < h->n_gpus; i++)
                if (h->gpus[i].minor < 64 && (tw->minors >> h->gpus[i].minor & 1))
                        return true;
        return false;
}

static uint64_t boot_ticks(long hz)
{
        struct timespec bt;
        clock_gettime(CLOCK_BOOTTIME, &bt);
        return (uint64_t)bt.tv_sec * (uint64_t)hz + (uint64_t)bt.tv_nsec / (1000000000ULL / (uint64_t)hz);
}

static void watch_member(struct tree_watch *tw, pid_t pid, pid_t pgrp)
{
        if (tw->n_mem < GR_ELEMENTSOF(tw->mem))
                tw->mem[tw->n_mem++] = (__typeof__(tw->mem[0])){ pid, pgrp, 0 };
}

/* Could a member of group g have been alive at this start time (clock ticks)? */
static bool group_lived_at(const struct tree_watch *tw, pid_t g, uint64_t start)
{
        for (size_t i = 0; i < tw->n_mem; i++)
                if (tw->mem[i].pgrp == g && (tw->mem[i].done_ticks == 0 || start <= tw->mem[i].done_ticks + 2))
                        return true;
        return false;
}

static ssize_t lineage_index(const struct tree_watch *tw, pid_t pid)
{
        for (size_t i = 0; i < tw->n_lineage; i++)
                if (tw->lineage[i].pid == pid)
                        return (ssize_t)i;
        return -1;
}

/* Is this process (PID and start time) one of the targets' live descendants? The start time
 * makes a PID that another process took since unlike it */
static bool in_lineage(const struct tree_watch *tw, pid_t pid, uint64_t start)
{
        ssize_t i = lineage_index(tw, pid);
        return i >= 0 && tw->lineage[i].start == start;
}

static void lineage_fork(pid_t parent, pid_t child, void *userdata)
{
        struct tree_watch *tw = userdata;
        if (!tw->lineage_ok || lineage_index(tw, parent) < 0 || lineage_index(tw, child) >= 0)
                return;
        if (tw->n_lineage == GR_ELEMENTSOF(tw->lineage)) {
                tw->lineage_ok = false; /* more than it can follow: the rules without events */
                return;
        }
        gr_stat st;
        uint64_t start = gr_proc_read_stat(tw->s->proc_root, child, &st) == 0 ? st.start_time : 0;
        tw->lineage[tw->n_lineage].pid = child;
        tw->lineage[tw->n_lineage++].start = start;
}

static void lineage_exit(pid_t pid, int wait_status, void *userdata)
{
        (void)wait_status;
        struct tree_watch *tw = userdata;
        ssize_t i = lineage_index(tw, pid);
        if (i < 0)
                return;
        /* the main thread may have ended alone (pthread_exit): the kernel tells it as the
         * process's exit while its other threads run on, and fork */
        gr_stat st;
        if (gr_proc_read_stat(tw->s->proc_root, pid, &st) == 0 && st.start_time == tw->lineage[i].start &&
            (st.state != 'Z' || gr_proc_zombie_leader_alive(tw->s->proc_root, pid)))
                return;
        tw->lineage[i] = tw->lineage[--tw->n_lineage];
}

/* What the kernel told since the last look, in its order */
static void read_lineage(struct tree_watch *tw)
{
        if (tw->events_fd < 0 || !tw->lineage_ok)
                return;
        bool lost = false;
        if (procev_read_lineage(tw->events_fd, lineage_fork, lineage_exit, tw, &lost) < 0 || lost)
                tw->lineage_ok = false;
}

/* Was a process whose parent is ppid reparented (its parent ended: ppid is an init, a
 * subreaper, or gone)? A live parent of another kind forked it itself: a process that joined a
 * target's group with setpgid is not the targets' */
static bool reparented(const struct tree_watch *tw, pid_t ppid)
{
        gr_stat st;
        if (ppid <= 1 || gr_proc_read_stat(tw->s->proc_root, ppid, &st) < 0 || st.state == 'Z' || st.state == 'X')
                return true;
        if (!gr_proc_comm_is_init(st.comm))
                return false;
        /* an init by what it is, not by the name it gave itself */
        char path[1100], exe[GR_EXE_NAME_MAX];
        snprintf(path, sizeof(path), "%s/%d", tw->s->proc_root, (int)ppid);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bool read = fd >= 0 && gr_proc_read_exe_at(fd, exe, sizeof(exe)) == 0;
        if (fd >= 0)
                close(fd);
        return gr_proc_is_init_program(st.comm, read ? GR_EXE_READ : GR_EXE_UNREADABLE, exe);
}

static int fork_cb(pid_t pid, const gr_stat *st, void *userdata)
{
        struct tree_watch *tw = userdata;
        if (st->state == 'Z' || st->kthread || is_member(tw->l, pid))
                return 0;
        const gr_process *known = gr_proc_table_find(tw->s->procs, pid);
        if (known && known->start_time == st->start_time)
                return 0; /* in the snapshot: the plan judged it (spared, or not chosen) */
        /* forked by a member: its parent still is one, or (a child whose parent exited at once,
         * reparented) it was born since the plan into a target's group that is still theirs */
        bool in_group = false;
        for (size_t k = 0; k < tw->n_pgids && !in_group; k++)
                in_group = st->pgrp == tw->pgids[k];
        bool forked = tw->lineage_ok ? in_lineage(tw, pid, st->start_time)
                                     : is_member_now(tw, st->ppid) ||
                                               (in_group && pid != st->pgrp && st->start_time >= tw->since_ticks &&
                                                group_lived_at(tw, st->pgrp, st->start_time) && group_ours(tw, st->pgrp) &&
                                                reparented(tw, st->ppid));
        if (!forked)
                return 0;
        if (!(tw->tree && in_group)) {
                gr_holding *h = NULL;
                bool chosen = gr_proc_holding(tw->s->proc_root, tw->s->dev_dir, pid, &h) == 0 && holds_chosen(tw, h);
                free(h);
                if (!chosen)
                        return 0; /* a child that holds none of the GPUs is none of this reap's business */
        }
        if (tw->n_found < GR_ELEMENTSOF(tw->found)) {
                tw->found[tw->n_found] = pid;
                tw->found_start[tw->n_found++] = st->start_time;
        }
        return 0;
}

static void tree_refresh(gr_ladder *l, void *userdata)
{
        struct tree_watch *tw = userdata;
        /* each round: when a member was first seen ended (the rules without events need it,
         * also once events were lost) */
        uint64_t ticks = 0;
        for (size_t i = 0; i < l->n; i++) {
                if (!l->m[i].done)
                        continue;
                for (size_t k = 0; k < tw->n_mem; k++)
                        if (tw->mem[k].pid == l->m[i].ref.pid && tw->mem[k].done_ticks == 0)
                                tw->mem[k].done_ticks = ticks ? ticks : (ticks = boot_ticks(tw->hz));
        }
        uint64_t now = gr_now_ms();
        if (now < tw->next_ms && !l->final_look)
                return;
        tw->next_ms = now + 50; /* a walk of /proc each time: not at every 10 ms round */
        tw->l = l;
        read_lineage(tw);
        tw->n_found = 0;
        if (gr_proc_walk(tw->s->proc_root, fork_cb, tw) < 0)
                return;
        for (size_t i = 0; i < tw->n_found; i++) {
                gr_process p = { .pid = tw->found[i], .start_time = tw->found_start[i] };
                gr_proc_options pop = { .proc_root = tw->s->proc_root };
                /* only its owner and parent are needed: the plan's safety rules */
                if (gr_proc_load_details(&pop, &p) < 0)
                        continue;
                char buf[1024];
                size_t len;
                gr_stat st;
                char path[1100];
                snprintf(path, sizeof(path), "%s/%d", tw->s->proc_root, (int)p.pid);
                int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0 && gr_read_file_at(fd, "stat", buf, sizeof(buf), &len) == 0 &&
                    gr_parse_stat(buf, len, &st) == 0 && st.start_time == p.start_time) {
                        p.ppid = st.ppid;
                        p.pgrp = st.pgrp;
                        p.state = st.state;
                        p.kthread = st.kthread;
                        /* the plan's selection too: --user, the job, cgroup, container or pod */
                        bool selected = (!tw->po->user_set || (p.has_uid && p.uid == tw->po->user)) &&
                                        (!tw->po->scope || gr_scope_contains(tw->po->scope, &p) != GR_SCOPE_OUT);
                        if (selected && gr_plan_refusal(tw->s, NULL, tw->po, &p) == GR_REFUSE_NONE &&
                            gr_ladder_add(l, p.pid, p.start_time, &p.uid) > 0)
                                watch_member(tw, p.pid, p.pgrp);
                }
                if (fd >= 0)
                        close(fd);
                free(p.cmdline);
                free(p.cgroup);
        }
}

struct verify {
        const struct gpu_selection *sel;
        uint64_t gpus;             /* bit i: GPU index i must be free of leftovers */
        bool unknown;              /* a GPU could not be read: nothing to wait for */
};

/* free of leftovers: clean, or busy with a job that was not to be touched. A GPU that cannot be
 * read ends the wait at once: waiting does not make the driver answer (exit 3) */
static bool verified(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        struct verify *v = userdata;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64; i++)
                if ((v->gpus >> i & 1) && d->gpus[i].state == GR_GPU_UNKNOWN) {
                        v->unknown = true;
                        return true;
                }
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64; i++)
                if ((v->gpus >> i & 1) && d->gpus[i].state != GR_GPU_CLEAN && d->gpus[i].state != GR_GPU_BUSY)
                        return false;
        return true;
}

static void progress(const gr_snapshot *s, const gr_diagnosis *d, uint64_t elapsed, void *userdata)
{
        const struct verify *v = userdata;
        char line[512], mem[32];
        size_t o = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64 && o < sizeof(line); i++)
                if (v->gpus >> i & 1)
                        o += (size_t)snprintf(line + o, sizeof(line) - o, "  GPU %u %s %s used", s->gpu->gpus[i].index,
                                              gr_gpu_state_name(d->gpus[i].state),
                                              gr_format_bytes(s->gpu->gpus[i].mem_used, mem, sizeof(mem)));
        fprintf(stderr, "\r\033[Kverifying %.1fs:%s", (double)elapsed / 1000, line);
        fflush(stderr);
}

static uint64_t left_ms(const struct reap *r)
{
        uint64_t now = gr_now_ms();
        return now < r->deadline ? r->deadline - now : 0;
}

static void emit_json(struct reap *r, int code)
{
        if (!r->json || !r->out)
                return;
        json_object_object_add(r->out, "elapsed_ms", json_object_new_int64((int64_t)(gr_now_ms() - r->t0)));
        json_object_object_add(r->out, "exit_code", json_object_new_int(code));
        puts(json_object_to_json_string_ext(r->out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(r->out);
        r->out = NULL;
}

/* Signal the plan; print and record what became of each target; true when none may be left */
static bool run_plan(struct reap *r, const gr_snapshot *s, const gr_plan *plan)
{
        struct tree_watch *tw = calloc(1, sizeof(*tw));
        if (!tw) {
                error_msg("out of memory");
                return false;
        }
        tw->s = s;
        tw->po = &r->po;
        tw->tree = r->po.tree;
        tw->events_fd = r->events_fd;
        tw->lineage_ok = r->events_fd >= 0;
        for (size_t i = 0; i < plan->n && tw->n_lineage < GR_ELEMENTSOF(tw->lineage); i++)
                if (plan->targets[i].refused == GR_REFUSE_NONE) {
                        tw->lineage[tw->n_lineage].pid = plan->targets[i].pid;
                        tw->lineage[tw->n_lineage++].start = plan->targets[i].start_time;
                }
        /* what happened since the snapshot, before any signal: a target that ended since then
         * leaves the lineage (its PID may be another's by the time it is looked at) */
        read_lineage(tw);
        long hz = sysconf(_SC_CLK_TCK);
        tw->hz = hz > 0 ? hz : 100;
        hz = tw->hz;
        uint64_t now_ticks = boot_ticks(hz);
        uint64_t since_plan = (gr_wall_ms() > s->taken_at_ms ? gr_wall_ms() - s->taken_at_ms : 0) + 1000;
        uint64_t back = since_plan * (uint64_t)hz / 1000;
        tw->since_ticks = now_ticks > back ? now_ticks - back : 0;
        for (size_t i = 0; i < plan->n && tw->n_pgids < GR_ELEMENTSOF(tw->pgids); i++) {
                const gr_process *t = gr_proc_table_find(s->procs, plan->targets[i].pid);
                if (plan->targets[i].refused == GR_REFUSE_NONE && t)
                        watch_member(tw, t->pid, t->pgrp);
                if (plan->targets[i].refused == GR_REFUSE_NONE && t && t->pgrp > 1 &&
                    gr_plan_group_targets_alone(s, plan, &r->po, t->pgrp))
                        tw->pgids[tw->n_pgids++] = t->pgrp;
        }
        tw->minors_set = r->po.gpus != NULL; /* chosen GPUs without a device file known: nothing matches */
        for (unsigned i = 0; r->po.gpus && i < s->gpu->n_gpus; i++)
                if (gr_gpu_matches_list(&s->gpu->gpus[i], r->po.gpus) && s->gpu->gpus[i].minor >= 0 &&
                    s->gpu->gpus[i].minor < 64)
                        tw->minors |= 1ULL << s->gpu->gpus[i].minor;
        /* --timeout bounds the whole command: the SIGKILL comes early enough to take effect */
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
        uint64_t budget = left_ms(r), reserve = budget / 5 < 1000 ? budget / 5 : 1000;
        gr_kill_options ko = { .proc_root = s->proc_root,
                               .grace_ms = r->grace < budget - reserve ? r->grace : budget - reserve,
                               .deadline_ms = budget, .refresh = tree_refresh, .userdata = tw };
        gr_kill_outcome *res = NULL;
        size_t n_res = 0;
        int q = gr_kill_plan(plan, &ko, &res, &n_res);
        free(tw);
        if (q < 0) {
                error_msg("cannot signal: %s", strerror(-q));
                return false;
        }
        bool all_ended = true;
        json_object *outs = json_object_new_array();
        for (size_t i = 0; i < n_res; i++) {
                bool forked = true;
                for (size_t k = 0; k < plan->n && forked; k++)
                        forked = plan->targets[k].pid != res[i].pid;
                if (!r->json) {
                        printf("  %-8d %s%s", (int)res[i].pid, gr_kill_result_name(res[i].result),
                               forked ? " (forked during the kill)" : "");
                        if (res[i].error)
                                printf(": %s", strerror(-res[i].error));
                        putchar('\n');
                }
                json_object *e = json_object_new_object();
                json_object_object_add(e, "pid", json_object_new_int(res[i].pid));
                json_object_object_add(e, "result", json_object_new_string(gr_kill_result_name(res[i].result)));
                json_object_object_add(e, "error", res[i].error ? json_object_new_string(strerror(-res[i].error)) : NULL);
                json_object_object_add(e, "forked_during_kill", json_object_new_boolean(forked));
                json_object_array_add(outs, e);
                all_ended = all_ended && !gr_kill_result_failed(res[i].result);
                r->n_targets++;
                if (gr_kill_result_failed(res[i].result)) {
                        r->n_failed++;
                        if (res[i].result == GR_KILL_SURVIVED && r->survived_len < sizeof(r->survived))
                                r->survived_len += (size_t)snprintf(r->survived + r->survived_len,
                                                                    sizeof(r->survived) - r->survived_len,
                                                                    "survived %d %llu\n", (int)res[i].pid,
                                                                    (unsigned long long)res[i].start_time);
                }
                audit_log(gr_kill_result_failed(res[i].result) ? LOG_WARNING : LOG_NOTICE,
                          "pid %d start %llu comm '%s'%s: %s%s%s", (int)res[i].pid,
                          (unsigned long long)res[i].start_time, res[i].comm,
                          forked ? " (forked into a target's group during the kill)" : "",
                          gr_kill_result_name(res[i].result), res[i].error ? ": " : "",
                          res[i].error ? strerror(-res[i].error) : "");
        }
        json_object_object_add(r->out, "outcomes", outs);
        free(res);
        return all_ended;
}

/* Which GPUs to verify: --gpu, or the GPUs the targets held; with nothing signalled, every
 * selected GPU, looked at once (nothing can change) */
static uint64_t gpus_to_verify(const struct reap *r, const gr_snapshot *s, const gr_plan *plan, size_t n)
{
        uint64_t m = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64; i++)
                if (gpu_selected(&r->sel, &s->gpu->gpus[i]) && (r->sel.list || n == 0 || (plan->gpus >> i & 1)))
                        m |= 1ULL << i;
        return m;
}

static int verify_and_report(struct reap *r, uint64_t gpus, bool watched_anything, const uint64_t *before,
                             bool all_ended)
{
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        struct verify v = { .sel = &r->sel, .gpus = gpus };
        bool tty = isatty(STDERR_FILENO) && !r->json;
        struct wait_spec w = { .so = &r->so, .timeout_ms = watched_anything ? left_ms(r) : 0,
                               .progress = tty ? progress : NULL };
        bool met = false;
        int q = wait_until(&w, verified, &v, &s, &d, &met);
        if (tty && watched_anything)
                fprintf(stderr, "\r\033[K");
        if (q < 0) {
                error_msg("cannot verify: %s", strerror(-q));
                return EXIT_DRIVER;
        }
        json_object *jg = json_object_new_array();
        for (unsigned i = 0; i < s->gpu->n_gpus && i < GR_GPUS_MAX; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                if (!(gpus >> i & 1))
                        continue;
                char b1[32], b2[32];
                if (!r->json)
                        printf("GPU %u  %s  memory %s -> %s\n", g->index, gr_gpu_state_name(d->gpus[i].state),
                               gr_format_bytes(before[i], b1, sizeof(b1)), gr_format_bytes(g->mem_used, b2, sizeof(b2)));
                json_object *e = json_object_new_object();
                json_object_object_add(e, "index", json_object_new_int64(g->index));
                json_object_object_add(e, "state", json_object_new_string(gr_gpu_state_name(d->gpus[i].state)));
                json_object_object_add(e, "memory_before", before[i] == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)before[i]));
                json_object_object_add(e, "memory_after", g->mem_used == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)g->mem_used));
                json_object_array_add(jg, e);
        }
        json_object_object_add(r->out, "gpus", jg);
        json_object_object_add(r->out, "verified", json_object_new_boolean(met && all_ended && !v.unknown));
        int code;
        fflush(stdout);
        if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                code = EXIT_DRIVER;
        } else if (v.unknown) {
                error_msg("a GPU could not be read: cannot verify");
                render_status_table(stderr, s, d, &r->sel, &(struct table_options){ .width = terminal_width(STDERR_FILENO) });
                code = EXIT_DRIVER;
        } else if (met && all_ended) {
                if (!r->json)
                        printf("verified in %llu ms: no leftover on the %s GPUs\n",
                               (unsigned long long)(gr_now_ms() - r->t0), r->sel.list || !watched_anything ? "selected" : "targets'");
                code = EXIT_CLEAN;
        } else {
                if (!all_ended)
                        error_msg("a target may still be alive: see its outcome above");
                if (!met)
                        error_msg("%s: what is left follows", watched_anything ? "not clean by the deadline" : "not clean");
                render_status_table(stderr, s, d, &r->sel, &(struct table_options){ .width = terminal_width(STDERR_FILENO) });
                code = EXIT_NOT_CLEAN;
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        return code;
}

int cmd_reap(int argc, char **argv)
{
        struct reap r = { .grace = 5000, .timeout = 30000, .events_fd = -1 };
        int pa = parse_args(&r, argc, argv);
        if (pa != 0)
                return pa > 0 ? EXIT_CLEAN : EXIT_USAGE;
        r.sel.list = r.gpus[0] ? r.gpus : NULL;
        r.sel.scope = &r.scope;
        r.po.gpus = r.sel.list;
        r.po.scope = r.scope.kind != GR_SCOPE_NONE ? &r.scope : NULL;
        r.po.pids = r.pids;
        r.po.n_pids = r.n_pids;
        if (!r.dry && signalling_env_ok("reap") < 0)
                return EXIT_USAGE;
        if (self_plan_options(&r.po) < 0) {
                error_msg("out of memory");
                return EXIT_DRIVER;
        }
        gr_raise_fd_limit(); /* one pidfd per target */
        if (!r.dry)
                audit_open("reap");
        r.t0 = gr_now_ms();
        r.deadline = r.t0 + r.timeout;
        r.out = json_object_new_object();
        json_object_object_add(r.out, "schema_version", json_object_new_int(JSON_SCHEMA_VERSION));
        json_object_object_add(r.out, "command", json_object_new_string("reap"));
        json_object_object_add(r.out, "dry_run", json_object_new_boolean(r.dry));

        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        gr_plan *plan = NULL;
        gr_drain *drain = NULL;
        int code = EXIT_DRIVER;
        /* the drain watcher initialises NVML while the snapshot is taken */
        if (!r.dry && gr_drain_start(&r.so.gpu, &drain) < 0)
                drain = NULL;
        /* who forks whom from now on, for what the targets fork while they are ended (root;
         * without it, the rules of tree_watch). The events name processes by their PIDs in the
         * initial PID namespace: elsewhere those are not the numbers /proc shows */
        r.events_fd = r.dry || !gr_proc_in_init_pidns() ? -1 : procev_open();
#ifdef GPUREAP_TEST_HOOKS
        if (r.events_fd >= 0 && getenv("GPUREAP_TEST_NO_EVENTS")) { /* as without CAP_NET_ADMIN */
                close(r.events_fd);
                r.events_fd = -1;
        }
#endif
        if (r.events_fd < 0)
                r.events_fd = -1;
        /* a look of its own (it acts on it), with what a running serve saw of its processes */
        int q = view_take(&r.so, r.direct ? VIEW_DIRECT : VIEW_OWN_LOOK, &s);
        if (q < 0) {
                error_msg("cannot take a snapshot: %s", strerror(-q));
                goto out;
        }
        /* a driver that cannot be read: the processes named with --pid (a job's epilog names
         * the ended job's holders from /proc) are still ended, each verified as ever; their GPUs
         * cannot be verified, and the exit status says so */
        bool blind = false;
        if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                if (r.n_pids == 0 || r.sel.list)
                        goto out;
                blind = true;
                if (!r.json)
                        printf("the driver cannot be read: ending the named processes anyway; their GPUs cannot be verified\n");
        }
        char bad[128];
        if (!blind && gpu_selection_unmatched(&r.sel, s->gpu, bad, sizeof(bad))) {
                gpu_selection_error(&r.sel, s->gpu);
                code = EXIT_USAGE;
                goto out;
        }
        r.sel.scope_mask = scope_gpus(s, &r.scope);
        /* whoever is named gets its owner read, holder or not: the plan refuses what it cannot
         * attribute to a user, and the ladder checks the owner again before the signal */
        for (size_t i = 0; i < r.n_pids; i++) {
                gr_process *np = gr_proc_table_find(s->procs, r.pids[i]);
                if (np)
                        gr_proc_load_details(&r.so.proc, np);
        }
        if ((q = gr_diagnose(s, getuid(), &d)) < 0 || (q = gr_plan_make(s, d, &r.po, &plan)) < 0) {
                error_msg("cannot plan: %s", strerror(-q));
                goto out;
        }
        if (r.po.tree) { /* the groups' members are targets too: plan again with their owners read */
                bool loaded = false;
                for (size_t i = 0; i < plan->n; i++) {
                        gr_process *tp = gr_proc_table_find(s->procs, plan->targets[i].pid);
                        if (tp && !tp->has_details)
                                loaded |= gr_proc_load_details(&r.so.proc, tp) == 0;
                }
                if (loaded) {
                        gr_plan_free(plan);
                        plan = NULL;
                        if ((q = gr_plan_make(s, d, &r.po, &plan)) < 0) {
                                error_msg("cannot plan: %s", strerror(-q));
                                goto out;
                        }
                }
        }
        size_t n = gr_plan_count(plan);
        uint64_t before[GR_GPUS_MAX];
        for (unsigned i = 0; i < s->gpu->n_gpus && i < GR_GPUS_MAX; i++)
                before[i] = s->gpu->gpus[i].mem_used;

        json_object_object_add(r.out, "plan", plan_json(plan));
        if (!r.json) {
                printf("%s", n || plan->n ? "plan:\n" : "");
                print_plan(stdout, plan);
                if (n == 0)
                        printf("nothing to kill\n");
        }
        fflush(stdout);
        if (r.dry) {
                code = EXIT_CLEAN;
                goto out;
        }
        if (n > 0 && !r.yes) {
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
        uint64_t targets[GR_GPUS_MAX];
        drain_targets(s, plan, targets);
        uint64_t arm_by = gr_now_ms() + (r.so.gpu.timeout_ms ? r.so.gpu.timeout_ms : 5000);
        bool watching = !blind && drain && n > 0 && gr_drain_arm(drain, targets, GR_GPUS_MAX, arm_by < r.deadline ? arm_by : r.deadline);
        uint64_t t_sig = gr_now_us();
        bool all_ended = n == 0 || run_plan(&r, s, plan);
        if (blind) {
                code = EXIT_DRIVER;
                if (!r.json)
                        printf("%s; the GPUs were not verified (the driver cannot be read)\n",
                               all_ended ? "every named process ended" : "not every named process ended");
                goto out;
        }
        /* the drain: until the driver has the memory back, seen by the watcher within 0.2 ms */
        uint64_t drained_at = 0;
        bool drained = watching && gr_drain_wait(drain, r.deadline, &drained_at);
        if (drained && !r.json)
                printf("memory back %.1f ms after the first signal\n", (double)(drained_at - t_sig) / 1000);
        json_object_object_add(r.out, "drain_ms", drained ? json_object_new_double((double)(drained_at - t_sig) / 1000) : NULL);
        gr_drain_free(drain);
        drain = NULL;
        uint64_t gpus = gpus_to_verify(&r, s, plan, n);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        s = NULL;
        d = NULL;
        code = verify_and_report(&r, gpus, n > 0, before, all_ended);
        {
                /* for 'gpureap metrics': when, how, and what survived a SIGKILL */
                char st[2400];
                snprintf(st, sizeof(st), "time %llu\nexit %d\ntargets %u\nfailed %u\n%s",
                         (unsigned long long)time(NULL), code, r.n_targets, r.n_failed, r.survived);
                char path[4096];
                int w = state_write("last-reap", st);
                /* no state directory at all (a user without XDG_RUNTIME_DIR) keeps nothing; one
                 * that cannot take the record leaves the metrics saying an older reap */
                if (w < 0 && state_file_path("last-reap", path, sizeof(path)) == 0) {
                        error_msg("cannot record the reap in '%s': %s", QUOTED(path), strerror(-w));
                        if (code == EXIT_CLEAN || code == EXIT_NOT_CLEAN)
                                code = EXIT_OUTPUT;
                }
        }
out:
        if (r.events_fd >= 0)
                close(r.events_fd);
        emit_json(&r, code);
        json_object_put(r.out);
        fflush(stdout);
        gr_drain_free(drain);
        gr_plan_free(plan);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        self_plan_options_release(&r.po);
        return code;
}
