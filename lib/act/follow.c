/* Following what the targets fork while the ladder ends them: each newcomer that is theirs gets
 * the plan's checks and selection and the current rung (lib/act/reap.c gives it to the ladder
 * as its refresh) */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/reap.h"

/* What a target forks while the ladder runs (a leftover that forks on SIGTERM, a launcher that
 * restarts its workers) gets the plan's checks and selection and the current rung: a process
 * the snapshot did not have (what it had, the plan judged), that is a child of a member of the
 * ladder (by parentage, never by a group number that a newcomer may have reused), or, born
 * since the plan, in a target's group whose leader is gone and that was the targets' alone (no
 * process of it alive at the snapshot but the targets: a group shared with a live job, or one of
 * gpureap's callers', tells nothing of who forked what), and that holds a device file of the
 * chosen GPUs (with --tree, any process of such a group), born while a member of that group
 * may still have lived (after all of them ended, a process in it has taken its number). */
struct gr_follow {
        const gr_snapshot *s;
        const gr_plan *plan;
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
static bool is_member_now(const gr_follow *tw, pid_t pid)
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
static bool group_ours(gr_follow *tw, pid_t g)
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
static bool holds_chosen(const gr_follow *tw, const gr_holding *h)
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

static void watch_member(gr_follow *tw, pid_t pid, pid_t pgrp)
{
        if (tw->n_mem < GR_ELEMENTSOF(tw->mem))
                tw->mem[tw->n_mem++] = (__typeof__(tw->mem[0])){ pid, pgrp, 0 };
}

/* Could a member of group g have been alive at this start time (clock ticks)? */
static bool group_lived_at(const gr_follow *tw, pid_t g, uint64_t start)
{
        for (size_t i = 0; i < tw->n_mem; i++)
                if (tw->mem[i].pgrp == g && (tw->mem[i].done_ticks == 0 || start <= tw->mem[i].done_ticks + 2))
                        return true;
        return false;
}

static ssize_t lineage_index(const gr_follow *tw, pid_t pid)
{
        for (size_t i = 0; i < tw->n_lineage; i++)
                if (tw->lineage[i].pid == pid)
                        return (ssize_t)i;
        return -1;
}

/* Is this process (PID and start time) one of the targets' live descendants? The start time
 * makes a PID that another process took since unlike it */
static bool in_lineage(const gr_follow *tw, pid_t pid, uint64_t start)
{
        ssize_t i = lineage_index(tw, pid);
        return i >= 0 && tw->lineage[i].start == start;
}

static void lineage_fork(pid_t parent, pid_t child, void *userdata)
{
        gr_follow *tw = userdata;
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
        gr_follow *tw = userdata;
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
static void read_lineage(gr_follow *tw)
{
        if (tw->events_fd < 0 || !tw->lineage_ok)
                return;
        bool lost = false;
        if (gr_procev_read_lineage(tw->events_fd, lineage_fork, lineage_exit, tw, &lost) < 0 || lost)
                tw->lineage_ok = false;
}

/* Was a process whose parent is ppid reparented (its parent ended: ppid is an init, a
 * subreaper, or gone)? A live parent of another kind forked it itself: a process that joined a
 * target's group with setpgid is not the targets' */
static bool reparented(const gr_follow *tw, pid_t ppid)
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
        gr_follow *tw = userdata;
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

void gr_follow_refresh(gr_ladder *l, void *userdata)
{
        gr_follow *tw = userdata;
        /* each round: when a member was first seen ended (the rules without events need it,
         * also once events were lost) */
        uint64_t ticks = 0;
        for (size_t i = 0; i < l->n; i++) {
                if (!l->m[i].done)
                        continue;
                for (size_t k = 0; k < tw->n_mem; k++)
                        if (tw->mem[k].pid == l->m[i].ref.pid && tw->mem[k].done_ticks == 0)
                                tw->mem[k].done_ticks = ticks ? ticks : (ticks = gr_boot_ticks(tw->hz));
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
                        /* a newcomer that holds an AMD or Intel GPU's file is refused unless
                         * every one is of a client the plan ends (a fork of a target's, which
                         * must end too for the client to go); /dev/kfd, or unreadable: refused */
                        if (selected && gr_plan_drm_allows(tw->plan, tw->s->proc_root, tw->s->dev_dir, p.pid, p.start_time) != 0)
                                selected = false;
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


int gr_follow_new(const gr_snapshot *s, const gr_plan *plan, const gr_plan_options *po, int events_fd,
                  gr_follow **ret)
{
        gr_follow *tw = calloc(1, sizeof(*tw));
        if (!tw)
                return -ENOMEM;
        tw->s = s;
        tw->plan = plan;
        tw->po = po;
        tw->tree = po->tree;
        tw->events_fd = events_fd;
        tw->lineage_ok = events_fd >= 0;
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
        uint64_t now_ticks = gr_boot_ticks(tw->hz);
        uint64_t since_plan = (gr_wall_ms() > s->taken_at_ms ? gr_wall_ms() - s->taken_at_ms : 0) + 1000;
        uint64_t back = since_plan * (uint64_t)tw->hz / 1000;
        tw->since_ticks = now_ticks > back ? now_ticks - back : 0;
        for (size_t i = 0; i < plan->n && tw->n_pgids < GR_ELEMENTSOF(tw->pgids); i++) {
                const gr_process *t = gr_proc_table_find(s->procs, plan->targets[i].pid);
                if (plan->targets[i].refused == GR_REFUSE_NONE && t)
                        watch_member(tw, t->pid, t->pgrp);
                if (plan->targets[i].refused == GR_REFUSE_NONE && t && t->pgrp > 1 &&
                    gr_plan_group_targets_alone(s, plan, po, t->pgrp))
                        tw->pgids[tw->n_pgids++] = t->pgrp;
        }
        tw->minors_set = po->gpus != NULL; /* chosen GPUs without a device file known: nothing matches */
        for (unsigned i = 0; po->gpus && i < s->gpu->n_gpus; i++)
                if (gr_gpu_matches_list(&s->gpu->gpus[i], po->gpus) && s->gpu->gpus[i].minor >= 0 &&
                    s->gpu->gpus[i].minor < 64)
                        tw->minors |= 1ULL << s->gpu->gpus[i].minor;
        *ret = tw;
        return 0;
}

void gr_follow_free(gr_follow *f)
{
        free(f);
}
