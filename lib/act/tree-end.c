/* The end of a supervised tree (act.h, gr_tree_end): what 'gpureap run' does once its command
 * is to end or has ended and left processes. The caller is the tree's child subreaper (every
 * orphan of the tree comes back to it) and may have a leaf cgroup that holds the tree. First
 * the command's process group gets SIGTERM and SIGCONT at once, through a pidfd that names that
 * group whatever process gets its number later; then one ladder over the whole tree, listed
 * again at every round so that what forks meanwhile gets the current rung, each member checked
 * against its start time through a pidfd before its signal; then rounds of SIGKILL until no
 * child is left and the cgroup is empty. Zombies are reaped by PID as they appear. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap/tree.h"
#include "basic/pidset.h"
#include "tree-internal.h"

struct tree_end {
        const gr_tree_end_options *o;
        gr_tree_end_result *res;
        bool pgid_held;           /* the group's leader is our child, not reaped: kill(-pgid) is safe */
        pid_t last_pid_at_term;   /* ns_last_pid when the group had its SIGTERM */
        uint64_t next_us;         /* the next look at the tree: at most a third of the time looking */
        bool first_tick;          /* the first tick comes right after the first rung */
        bool listed;              /* this round's first listing was taken */
        const char *proc_root;    /* the context's: the listings' and the ladder's */
        gr_pidref told[64];       /* members whose failed signal the caller was told of */
        size_t n_told;
        unsigned n_reaped;        /* children reaped here so far */
        struct gr_pidset ended;   /* the PIDs counted in res->ended */
        const gr_tree_proc *before; /* the tree just before the group's signal (sorted), or NULL */
        size_t n_before;
        struct gr_ancestors ancestors; /* gpureap's: never of the tree, even moved into the leaf */
};

/* gpureap's own parent (or theirs), which root may have moved into the leaf: never listed as a
 * member, never signalled */
static bool is_ancestor(const struct tree_end *te, const gr_tree_proc *p)
{
        return gr_ancestors_has(&te->ancestors, p->pid, p->start_time);
}

/* One of the tree's processes ended: counted once in res->ended (by PID: within one end a
 * number is not handed out twice, short of a wrap of pid_max) */
static void count_ended(struct tree_end *te, pid_t pid)
{
        if (pid > 0 && gr_pidset_add(&te->ended, pid) > 0)
                te->res->ended++;
}

static void reaped(pid_t pid, int status, void *userdata)
{
        struct tree_end *te = userdata;
        count_ended(te, pid);
        if (pid == te->o->pgid)
                te->pgid_held = false; /* its number may be another group's now */
        te->n_reaped++;
        if (te->o->reaped)
                te->o->reaped(pid, status, te->o->userdata);
}

/* Reap one that has ended by its PID: the kernel finds one child in constant time, while a wait
 * for any child walks all of them, and a tree of a thousand orphans made that quadratic. True
 * once it is reaped, or not ours to reap (its own parent waits for it) */
static bool reap_member(struct tree_end *te, pid_t pid)
{
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w < 0)
                return errno == ECHILD;
        if (w != pid)
                return false;
        reaped(w, st, te);
        return true;
}

/* No child left (every descendant has one of our children as its ancestor) and an empty
 * cgroup: the tree is gone, no need to read /proc at all */
static bool tree_gone(struct tree_end *te)
{
        if (!gr_reap_children(reaped, te))
                return false;
        return !te->o->cgroup || !te->o->cgroup[0] || gr_cgroup_empty(te->o->cgroup);
}

/* The tree: before the group's signal as quickly as it can be listed; once the ladder runs,
 * deep: a member's child that was moved out of the cgroup (by root, or by itself through
 * 'systemd-run --scope') while its parent lives is listed then and gets its SIGTERM, where
 * before it was found only once its parent had ended, after the grace, and got SIGKILL alone
 * (the members still there after the settle are few: asking them costs little) */
static int list_tree(const struct tree_end *te, bool deep, gr_tree_proc **t, size_t *n)
{
        const char *cg = te->o->cgroup_complete ? te->o->cgroup : NULL;
        return deep ? gr_tree_list_deep(te->proc_root, getpid(), cg, NULL, 0, t, n)
                    : gr_tree_list(te->proc_root, getpid(), cg, NULL, 0, t, n);
}

static int cmp_proc(const void *a, const void *b)
{
        pid_t x = ((const gr_tree_proc *)a)->pid, y = ((const gr_tree_proc *)b)->pid;
        return (x > y) - (x < y);
}

/* Had it the group's SIGTERM: in the command's group, born before it (a false "born since"
 * costs a second TERM, never a missing one) */
static bool had_group_term(const struct tree_end *te, const gr_tree_proc *p, pid_t last_pid_now)
{
        /* listed just before the signal: in the group then (one that left it in its handler had
         * it, one that joined it since did not) */
        const gr_tree_proc *b = te->n_before ? bsearch(p, te->before, te->n_before, sizeof(*p), cmp_proc) : NULL;
        if (b && b->start_time == p->start_time)
                return b->pgid == te->o->pgid;
        return p->pgid == te->o->pgid && !gr_pid_new_since(p->pid, te->last_pid_at_term, last_pid_now);
}

/* The members listed join the ladder; the zombies among them are reaped by PID (those not
 * reaped here go to the wait for any child at the end, which walks all of them) */
static void add_listed(gr_ladder *l, const gr_tree_proc *t, size_t n, struct tree_end *te)
{
        pid_t now = 0; /* read after the listing: every member listed was born by then */
        bool group = te->res->group_termed && gr_last_pid(&now) == 0;
        for (size_t i = 0; i < n; i++) {
                if (is_ancestor(te, &t[i]))
                        continue;
                bool had = group && had_group_term(te, &t[i], now);
                if (t[i].state == 'Z') {
                        if (had && !te->listed) /* counted with no grace too: it ended */
                                te->res->group_ended++;
                        reap_member(te, t[i].pid);
                        continue;
                }
                /* with no grace too: the ladder's SIGKILL comes all the same, and one that ended
                 * before its pin is counted as ended, not as gone */
                int q = had ? gr_ladder_add_signalled(l, t[i].pid, t[i].start_time, NULL)
                            : gr_ladder_add(l, t[i].pid, t[i].start_time, NULL);
                if (q > 0)
                        gr_strlcpy(l->m[l->n - 1].comm, t[i].comm, sizeof(l->m[l->n - 1].comm));
        }
        te->listed = true;
}

static void refresh(gr_ladder *l, void *userdata)
{
        struct tree_end *te = userdata;
        uint64_t t0 = gr_now_us();
        if (t0 < te->next_us)
                return;
        gr_tree_proc *t = NULL;
        size_t n = 0;
        int q = list_tree(te, true, &t, &n);
        uint64_t cost = gr_now_us() - t0;
        te->next_us = gr_now_us() + (2 * cost > 5000 ? 2 * cost : 5000);
        if (q < 0)
                return;
        add_listed(l, t, n, te);
        free(t);
}

static void tick(gr_ladder *l, void *userdata)
{
        struct tree_end *te = userdata;
        if (te->first_tick) {
                te->first_tick = false;
                if (te->o->after_term)
                        te->o->after_term(te->o->userdata);
        }
        for (size_t i = 0; i < l->n; i++) {
                gr_ladder_member *m = &l->m[i];
                if (m->done && !m->reaped)
                        m->reaped = reap_member(te, m->ref.pid);
        }
        if (te->o->tick)
                te->o->tick(te->o->userdata);
}

/* cgroup.kill, once gpureap's ancestors are out of the leaf (again: one may have been moved in
 * since the end began) */
static void kill_cgroup(const struct tree_end *te)
{
        const gr_tree_end_options *o = te->o;
        if (!o->cgroup || !o->cgroup[0])
                return;
        gr_cgroup_evict(o->cgroup, &te->ancestors);
        gr_cgroup_kill(o->cgroup);
}

static void before_kill(void *userdata)
{
        kill_cgroup(userdata);
}

/* Was the caller told of this member's failed signal already? (Noted now if not: the first
 * 64 such members; past them each is told every round, as is better than never) */
static bool told_before(struct tree_end *te, const gr_pidref *ref)
{
        for (size_t i = 0; i < te->n_told; i++)
                if (te->told[i].pid == ref->pid && te->told[i].start_time == ref->start_time)
                        return true;
        if (te->n_told < GR_ELEMENTSOF(te->told))
                te->told[te->n_told++] = *ref;
        return false;
}

/* One ladder over what the tree holds now (the listing given, or listed here); grace 0:
 * straight to SIGKILL (a later round) */
static void ladder_round(struct tree_end *te, uint64_t grace, gr_tree_proc *t, size_t n, bool listed, bool first)
{
        te->next_us = 0;
        te->first_tick = first;
        te->listed = false;
        gr_ladder l;
        gr_ladder_options lo = { .proc_root = te->proc_root, .grace_ms = grace, .deadline_ms = grace + 10000, .refresh = refresh,
                                 .tick = tick, .before_kill = before_kill, .userdata = te };
        gr_ladder_init(&l, &lo);
        if (listed) {
                add_listed(&l, t, n, te);
                te->next_us = gr_now_us() + 5000;
        } else {
                refresh(&l, te);
        }
        if (l.n > 0)
                gr_ladder_run(&l);
        for (size_t i = 0; i < l.n; i++) {
                const gr_ladder_member *m = &l.m[i];
                if (m->signalled && !gr_kill_result_failed(m->result))
                        count_ended(te, m->ref.pid);
                if (!te->o->member || (!m->signalled && !gr_kill_result_failed(m->result)))
                        continue;
                if (gr_kill_result_failed(m->result) && told_before(te, &m->ref))
                        continue; /* a member the kernel will not let us end: said once */
                te->o->member(m, grace > 0, te->o->userdata);
        }
        gr_ladder_done(&l);
}

/* SIGTERM and SIGCONT to the command's group at once, as 'tini -g' and 'kill -- -PGID' send
 * them, before anything is listed: its members start exiting while the tree is listed and
 * pinned. Only through the group's pidfd (or, before Linux 6.9, a kill of the group while its
 * leader, our child, is not reaped: its PID is the group's) */
static void group_term(struct tree_end *te)
{
        const gr_tree_end_options *o = te->o;
        if (o->group_fd < 0 || o->pgid <= 0 || gr_last_pid(&te->last_pid_at_term) < 0)
                return;
        int q = gr_pidfd_signal_group(o->group_fd, SIGTERM);
        if (q == -EINVAL && te->pgid_held)
                q = kill(-o->pgid, SIGTERM) < 0 ? -errno : 0;
        if (q < 0)
                return; /* nobody left in the group, or no way to reach it safely */
        if (gr_pidfd_signal_group(o->group_fd, SIGCONT) == -EINVAL && te->pgid_held)
                kill(-o->pgid, SIGCONT);
        te->res->group_termed = true;
}

/* After the group's SIGTERM: a process without a handler for it exits within microseconds, and
 * most trees end by themselves. Reaped as they go, for as long as children keep ending, they need
 * no listing and no pin each (on a 16-core machine those cost four times what the kernel takes
 * to end a hundred sleepers). True when the tree is gone; *waited_ms the time it took */
#define SETTLE_MAX_MS 50
#define SETTLE_IDLE_US 2000
static bool settle(struct tree_end *te, uint64_t *waited_ms)
{
        const gr_tree_end_options *o = te->o;
        *waited_ms = 0;
        uint64_t cap_us = (o->grace_ms / 2 < SETTLE_MAX_MS ? o->grace_ms / 2 : SETTLE_MAX_MS) * 1000;
        if (!o->settle || o->wake_fd < 0 || !te->res->group_termed || cap_us == 0)
                return false;
        uint64_t t0 = gr_now_us(), last = 0; /* the last child ended: none yet */
        unsigned base = te->n_reaped;
        bool gone = false;
        for (;;) {
                unsigned before = te->n_reaped;
                if (tree_gone(te)) {
                        gone = true;
                        break;
                }
                uint64_t now = gr_now_us();
                if (te->n_reaped != before)
                        last = now;
                if (now - t0 >= cap_us || (last && now - last >= SETTLE_IDLE_US))
                        break;
                uint64_t left = cap_us - (now - t0), idle = last ? SETTLE_IDLE_US - (now - last) : left;
                uint64_t wait_us = left < idle ? left : idle;
                struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(wait_us * 1000) };
                struct pollfd p = { .fd = o->wake_fd, .events = POLLIN };
                ppoll(&p, 1, &ts, NULL);
                if (o->tick)
                        o->tick(o->userdata); /* drains wake_fd */
        }
        te->res->group_ended += te->n_reaped - base;
        *waited_ms = (gr_now_us() - t0) / 1000;
        return gone;
}

/* The ladder rounds after the group's signal (and the settle): true once nothing is left */
static bool end_rest(struct tree_end *te)
{
        const gr_tree_end_options *o = te->o;
        gr_tree_end_result *res = te->res;
        group_term(te);
        if (o->group_signalled)
                o->group_signalled(res->group_termed, o->userdata);
        /* gpureap's own parent (or theirs) moved into the leaf by root is not of the tree: out
         * of it before the ladder lists anything or cgroup.kill is written, and left out of
         * every listing (one may be moved in meanwhile). After the group's signal, which never
         * reaches them (the command leads a process group of its own), so as not to delay it */
        gr_ancestors_read(&te->ancestors);
        if (o->cgroup && o->cgroup[0])
                gr_cgroup_evict(o->cgroup, &te->ancestors);
        uint64_t waited = 0;
        if (settle(te, &waited))
                return true;
        /* what the wait used is taken from the grace; it used at most half (and a little more
         * under load): the other half is left for the members outside the group */
        uint64_t used = waited < o->grace_ms / 2 ? waited : o->grace_ms / 2;
        ladder_round(te, o->grace_ms - used, NULL, 0, false, true);
        /* Return only when nothing is left: every child reaped (orphans of the tree come to us,
         * as a subreaper, some only as their parents finish exiting) and the cgroup empty. What
         * forked after the ladder's last look gets SIGKILL in a round of its own. */
        for (int round = 0; round < 1000; round++) {
                if (tree_gone(te))
                        return true;
                gr_tree_proc *t = NULL;
                size_t n = 0, alive = 0;
                bool listed = list_tree(te, true, &t, &n) == 0;
                for (size_t i = 0; listed && i < n; i++)
                        alive += t[i].state != 'Z' && !is_ancestor(te, &t[i]);
                if (alive > 0) {
                        ladder_round(te, 0, t, n, true, false); /* the same listing */
                        free(t);
                        continue;
                }
                free(t);
                if (round == 100 && o->cgroup && o->cgroup[0])
                        kill_cgroup(te); /* 100 ms and still members that no listing shows alive:
                                            whatever they are (gpureap's ancestors aside), ours to end */
                else
                        poll(NULL, 0, 1); /* zombies on their way to us */
        }
        if (tree_gone(te))
                return true;
        /* what is still there: members the kernel does not let go (state D) or that refused
         * every signal (another user's, a setuid program's) */
        gr_tree_proc *t = NULL;
        size_t n = 0;
        if (list_tree(te, true, &t, &n) == 0)
                for (size_t i = 0; i < n; i++)
                        if (t[i].state != 'Z' && !is_ancestor(te, &t[i])) {
                                if (res->n_left < GR_ELEMENTSOF(res->left))
                                        res->left[res->n_left] = t[i].pid;
                                res->n_left++;
                        }
        free(t);
        return false;
}

bool gr_tree_end(const gr_tree_end_options *o, gr_tree_end_result *res)
{
        memset(res, 0, sizeof(*res));
        struct tree_end te = { .o = o, .res = res, .pgid_held = o->pgid_held, .proc_root = gr_context_proc_root(o->ctx) };
        if (tree_gone(&te)) {
                gr_pidset_free(&te.ended);
                gr_ancestors_free(&te.ancestors);
                return true;
        }
        /* the settle leaves the tree to end by itself for up to 50 ms before it is listed: who
         * is in the group is taken before the signal (a member may leave it in its handler, or
         * join it meanwhile), from the caller's listing or from one of our own */
        gr_tree_proc *own_before = NULL;
        if (o->settle && o->group_fd >= 0) {
                if (o->before) {
                        te.before = o->before;
                        te.n_before = o->n_before;
                } else if (list_tree(&te, false, &own_before, &te.n_before) == 0) {
                        te.before = own_before;
                } else {
                        te.n_before = 0;
                }
        }
        bool gone = end_rest(&te);
        /* alive at the listing before the signal and nothing left now: each ended, also the
         * ones their own parents reaped */
        for (size_t i = 0; gone && i < te.n_before; i++)
                if (te.before[i].state != 'Z')
                        count_ended(&te, te.before[i].pid);
        free(own_before);
        gr_pidset_free(&te.ended);
        gr_ancestors_free(&te.ancestors);
        return gone;
}
