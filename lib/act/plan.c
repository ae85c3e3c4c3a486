/* The plan: who would be signalled and why, and who is refused and why. A pure function of the
 * snapshot, its diagnosis and the options, so it is shown by --dry-run exactly as it would run. */
#include <errno.h>
#include <string.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"

const char *gr_refusal_text(gr_refusal r)
{
        switch (r) {
        case GR_REFUSE_NONE: return "";
        case GR_REFUSE_INIT: return "PID 1 is never signalled";
        case GR_REFUSE_SELF: return "gpureap itself or one of its ancestors";
        case GR_REFUSE_KERNEL: return "a kernel thread";
        case GR_REFUSE_MONITOR: return "a monitor (NVML-only client), not a leftover";
        case GR_REFUSE_OTHER_USER: return "another user's process (as root, add --all-users)";
        case GR_REFUSE_ZOMBIE: return "a zombie: it holds nothing; its parent must reap it";
        case GR_REFUSE_GONE: return "no such process";
        case GR_REFUSE_LIVE: return "a live job";
        case GR_REFUSE_UNSURE: return "unsure: name it with --pid if it is a leftover";
        case GR_REFUSE_LIKELY: return "a likely leftover: add --likely, or name it with --pid";
        case GR_REFUSE_NO_UID: return "its owner could not be read";
        case GR_REFUSE_OUT_OF_SCOPE: return "not a process of the given job, cgroup, container or pod";
        case GR_REFUSE_NOT_ON_GPU: return "it holds none of the GPUs given with --gpu (a PID reused since?)";
        case GR_REFUSE_NOT_HOLDING: return "the driver lists its PID but it holds no GPU file: perhaps another process with a dead one's PID";
        case GR_REFUSE_NOT_ONLY: return "not among the processes given with --only";
        case GR_REFUSE_DRM: return "it holds an AMD or Intel GPU's file whose client cannot be read (its fdinfo), or "
                                   "an NVIDIA GPU's besides: not reaped (docs/drm.md)";
        case GR_REFUSE_DRM_SHARED: return "it shares an AMD or Intel GPU's open file with a process this reap does not end: "
                                          "ending it would free nothing (gpureap status names the client's holders)";
        case GR_REFUSE_DRM_UNREAD: return "it holds an AMD or Intel GPU's file, and another process's files could not all "
                                          "be read just before the plan: that it shares none of them is not known";
        }
        return "?";
}

size_t gr_plan_count(const gr_plan *p)
{
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++)
                n += p->targets[i].refused == GR_REFUSE_NONE;
        return n;
}

struct builder {
        const gr_snapshot *s;
        const gr_diagnosis *d;
        const gr_plan_options *o;
        gr_plan *p;
        size_t cap;
};

static uint64_t gpus_of(const gr_snapshot *s, const gr_process *proc)
{
        uint64_t m = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64; i++)
                if (gr_process_fds_on_minor(proc, s->gpu->gpus[i].minor) > 0)
                        m |= 1ULL << i;
                else
                        for (unsigned j = 0; j < s->gpu->gpus[i].n_procs; j++)
                                if ((pid_t)s->gpu->gpus[i].procs[j].pid == proc->pid)
                                        m |= 1ULL << i;
        return m;
}

/* A kernel thread: the flag, where the kernel gave it. A recording does not carry the flag:
 * there kthreadd is PID 2 of the initial PID namespace and its children are kernel threads. In
 * any other PID namespace PID 2 is an ordinary process (the application under a container's
 * init), whose children are the ones to reap. */
static bool kernel_thread(const gr_snapshot *s, const gr_process *p)
{
        if (p->kthread)
                return true;
        return s && s->replayed && s->pidns == GR_PIDNS_HOST && ((p->pid == 2 && p->ppid == 0) || p->ppid == 2);
}

/* Each client (one open file, docs/drm.md) that p holds through a render or card fd, until fn
 * answers non-zero; -1 when one of those fds is in no client of the view (its fdinfo unread) */
static int each_client_of(const gr_snapshot *s, const gr_process *p, int (*fn)(const gr_snapshot *s, size_t k, void *ud),
                          void *ud)
{
        for (unsigned i = 0; i < p->drm->n; i++) {
                if (p->drm->fds[i].node == GR_DRM_NODE_KFD)
                        continue;
                bool found = false;
                for (size_t k = 0; !found && s->drm && k < s->drm->n_clients; k++) {
                        const gr_drm_client *c = &s->drm->clients[k];
                        unsigned n = c->n_holders < GR_DRM_CLIENT_HOLDERS_MAX ? c->n_holders : GR_DRM_CLIENT_HOLDERS_MAX;
                        for (unsigned h = 0; !found && h < n; h++)
                                found = c->holders[h].pid == p->pid && c->holders[h].fd == p->drm->fds[i].fd;
                        if (found) {
                                int r = fn(s, k, ud);
                                if (r)
                                        return r;
                        }
                }
                if (!found)
                        return -1;
        }
        return 0;
}

static int no_client(const gr_snapshot *s, size_t k, void *ud)
{
        (void)s, (void)k, (void)ud;
        return 0;
}

/* An AMD or Intel holder (docs/drm.md): its own verdict decides, as an NVIDIA holder's does,
 * but only where every client it holds is known (each render or card fd in a client of the
 * view: its fdinfo read), and never one that holds an NVIDIA GPU besides. Whether the other
 * holders of its clients end too, the whole plan says (drm_shared) */
static gr_refusal drm_refusal(const gr_snapshot *s, const gr_diagnosis *d, const gr_process *p)
{
        if (p->hold || p->drm->truncated || !s || !s->drm || !d || !d->drm)
                return GR_REFUSE_DRM;
        return each_client_of(s, p, no_client, NULL) < 0 ? GR_REFUSE_DRM : GR_REFUSE_NONE;
}

static gr_refusal refuse_with(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan_options *o,
                              const gr_process *p)
{
        if (p->pid == 1)
                return GR_REFUSE_INIT;
        if (p->pid == o->self || (o->self > 0 && p->ppid == o->self))
                return GR_REFUSE_SELF; /* gpureap, or its own helpers */
        for (size_t i = 0; i < o->n_ancestors; i++)
                if (o->ancestors[i] == p->pid)
                        return GR_REFUSE_SELF;
        if (kernel_thread(s, p))
                return GR_REFUSE_KERNEL;
        if (p->state == 'Z' || p->state == 'X')
                return GR_REFUSE_ZOMBIE;
        gr_refusal dr = p->drm ? drm_refusal(s, d, p) : GR_REFUSE_NONE;
        if (dr != GR_REFUSE_NONE)
                return dr;
        const gr_holder_verdict *v = d ? gr_diagnosis_holder(d, p->pid) : NULL;
        if (v && v->role == GR_ROLE_MONITOR && !o->monitors_ok)
                return GR_REFUSE_MONITOR;
        if (!p->has_uid)
                return GR_REFUSE_NO_UID;
        if (p->uid != o->my_uid && !(o->my_uid == 0 && o->all_users))
                return GR_REFUSE_OTHER_USER;
        return GR_REFUSE_NONE;
}

bool gr_plan_ended_scope_takes(gr_scope_match m, const gr_holder_verdict *v)
{
        return m == GR_SCOPE_IN || (m == GR_SCOPE_ESCAPED && v && v->judgement != GR_JUDGE_LIVE);
}

static gr_refusal refuse(const struct builder *b, const gr_process *p)
{
        return refuse_with(b->s, b->d, b->o, p);
}

gr_refusal gr_plan_refusal(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan_options *o,
                           const gr_process *p)
{
        return refuse_with(s, d, o, p);
}

/* A holder the default plan does not take: why, in the words of the diagnosis */
static gr_refusal judged_refusal(const gr_holder_verdict *v, bool likely_ok)
{
        if (v->role == GR_ROLE_MONITOR)
                return GR_REFUSE_MONITOR;
        if (v->judgement == GR_JUDGE_LIVE)
                return GR_REFUSE_LIVE;
        if (v->judgement == GR_JUDGE_UNSURE || v->confidence == GR_UNSURE)
                return GR_REFUSE_UNSURE;
        if (v->confidence == GR_LIKELY && !likely_ok)
                return GR_REFUSE_LIKELY;
        return GR_REFUSE_NONE;
}

static int add(struct builder *b, pid_t pid, gr_plan_why why, gr_refusal judged)
{
        gr_plan *p = b->p;
        for (size_t i = 0; i < p->n; i++)
                if (p->targets[i].pid == pid)
                        return 0;
        const gr_process *proc = gr_proc_table_find(b->s->procs, pid);
        if (b->o->user_set && proc && (!proc->has_uid || proc->uid != b->o->user))
                return 0;
        if (proc && judged == GR_REFUSE_NONE && why != GR_WHY_ENDED && b->o->scope &&
            gr_scope_contains(b->o->scope, proc) == GR_SCOPE_OUT)
                judged = GR_REFUSE_OUT_OF_SCOPE;
        if (p->n == b->cap) {
                if (b->cap >= GR_PLAN_MAX)
                        return -E2BIG;
                size_t cap = b->cap ? b->cap * 2 : 16;
                gr_target *nt = realloc(p->targets, cap * sizeof(*nt));
                if (!nt)
                        return -ENOMEM;
                p->targets = nt;
                b->cap = cap;
        }
        gr_target *t = &p->targets[p->n++];
        memset(t, 0, sizeof(*t));
        t->pid = pid;
        t->why = why;
        if (!proc) {
                t->refused = GR_REFUSE_GONE;
                return 0;
        }
        t->start_time = proc->start_time;
        t->uid = proc->uid;
        memcpy(t->comm, proc->comm, sizeof(t->comm));
        t->gpus = gpus_of(b->s, proc);
        t->refused = refuse(b, proc);
        if (t->refused == GR_REFUSE_NONE)
                t->refused = judged;
        if (t->refused == GR_REFUSE_NONE && b->o->n_only > 0) {
                bool among = false;
                for (size_t i = 0; i < b->o->n_only && !among; i++)
                        among = b->o->only[i].pid == pid && b->o->only[i].start_time == proc->start_time;
                if (!among)
                        t->refused = GR_REFUSE_NOT_ONLY;
        }
        if (t->refused == GR_REFUSE_ZOMBIE)
                t->related = proc->ppid;
        const gr_holder_verdict *v = gr_diagnosis_holder(b->d, pid);
        if (!v)
                v = gr_diagnosis_drm_holder(b->d, pid);
        if (v) {
                t->judged = true;
                t->judgement = v->judgement;
                t->confidence = v->confidence;
                gr_strlcpy(t->reason, v->reason, sizeof(t->reason));
                gr_job_text(&v->job, t->job, sizeof(t->job));
        } else {
                snprintf(t->job, sizeof(t->job), "process group %d", (int)proc->pgrp);
        }
        return 0;
}

/* The group of gpureap or of one of its callers (the shell that runs it, timeout(1), which
 * makes a group of its own, a script without job control, whose group holds the pipe reading
 * gpureap's output): never extended into */
static bool callers_group(const gr_snapshot *s, const gr_plan_options *o, pid_t pgrp)
{
        if (o->self_pgrp > 0 && pgrp == o->self_pgrp)
                return true;
        for (size_t i = 0; i < o->n_ancestors; i++) {
                const gr_process *a = gr_proc_table_find(s->procs, o->ancestors[i]);
                if (a && a->pgrp == pgrp)
                        return true;
        }
        return false;
}

/* Is pid among the first n targets of the plan, one that will be signalled? */
static bool signalled_target(const gr_plan *plan, size_t n, pid_t pid)
{
        for (size_t j = 0; j < n; j++)
                if (plan->targets[j].pid == pid && plan->targets[j].refused == GR_REFUSE_NONE)
                        return true;
        return false;
}

bool gr_plan_signals(const gr_plan *p, pid_t pid)
{
        return signalled_target(p, p->n, pid);
}

bool gr_plan_group_targets_alone(const gr_snapshot *s, const gr_plan *plan, const gr_plan_options *o, pid_t pgrp)
{
        if (pgrp <= 1 || !s->procs || callers_group(s, o, pgrp))
                return false;
        for (size_t k = 0; k < s->procs->n; k++) {
                const gr_process *q = &s->procs->procs[k];
                if (q->pgrp != pgrp || q->state == 'Z' || q->state == 'X')
                        continue;
                if (!signalled_target(plan, plan->n, q->pid))
                        return false;
        }
        return true;
}

static int cmp_target(const void *a, const void *b)
{
        pid_t x = ((const gr_target *)a)->pid, y = ((const gr_target *)b)->pid;
        return (x > y) - (x < y);
}

bool gr_drm_key_listed(const gr_drm_key *keys, size_t n, const char *pdev, uint64_t client_id)
{
        for (size_t i = 0; i < n; i++)
                if (keys[i].client_id == client_id && strcmp(keys[i].pdev, pdev) == 0)
                        return true;
        return false;
}

bool gr_plan_ends_client(const gr_plan *p, const char *pdev, uint64_t client_id)
{
        return gr_drm_key_listed(p->drm_clients, p->n_drm_clients, pdev, client_id);
}

uint64_t gr_plan_drm_gpus(const gr_plan *p, const gr_snapshot *s)
{
        uint64_t m = 0;
        for (unsigned i = 0; p && s->drm && i < s->drm->n_gpus && i < 64; i++)
                for (size_t k = 0; k < p->n_drm_clients && !(m >> i & 1); k++)
                        if (strcmp(s->drm->gpus[i].pdev, p->drm_clients[k].pdev) == 0)
                                m |= 1ULL << i;
        return m;
}

static int add_client(const gr_snapshot *s, size_t k, void *ud)
{
        gr_plan *p = ud;
        const gr_drm_client *c = &s->drm->clients[k];
        if (gr_plan_ends_client(p, c->pdev, c->client_id))
                return 0;
        gr_drm_key *e = &p->drm_clients[p->n_drm_clients++];
        gr_strlcpy(e->pdev, c->pdev, sizeof(e->pdev));
        e->client_id = c->client_id;
        return 0;
}

/* 1 when a holder of client k is not a target that will be signalled */
static int holder_stays(const gr_snapshot *s, size_t k, void *ud)
{
        const gr_plan *p = ud;
        const gr_drm_client *c = &s->drm->clients[k];
        if (c->n_holders > GR_DRM_CLIENT_HOLDERS_MAX)
                return 1; /* holders past the table are not known */
        for (unsigned h = 0; h < c->n_holders; h++)
                if (!gr_plan_signals(p, c->holders[h].pid))
                        return 1;
        return 0;
}

/* An AMD ghost (a dead PID's KFD entry): its VRAM goes only when every process
 * that keeps it ends. true when one of the ghost's that the target keeps stays */
static bool ghost_stays(const gr_diagnosis *d, const gr_plan *p, pid_t pid)
{
        const gr_holder_verdict *v = gr_diagnosis_drm_holder(d, pid);
        for (size_t k = 0; v && v->ghost && k < d->drm->n_ghosts; k++) {
                const gr_kfd_ghost *g = &d->drm->ghosts[k];
                if (g->pid != v->ghost)
                        continue;
                if (g->n_holders >= GR_KFD_GHOST_HOLDERS_MAX)
                        return true; /* more may keep it than are listed */
                for (unsigned h = 0; h < g->n_holders; h++)
                        if (!gr_plan_signals(p, g->holders[h]))
                                return true;
        }
        return false;
}

/* A client (one open file, shared by every process that inherited it or was passed it) is
 * freed only when all its holders end, and sharing one ties its holders together: an AMD or
 * Intel target one of whose clients (or whose ghost) keeps a holder that will not be signalled
 * (a live job, an unsure or likely one, one refused) is spared, and so on until no more is (a
 * leftover's fork that shares its parent's client with a live job is spared with it) */
static void drm_shared(const gr_snapshot *s, const gr_diagnosis *d, gr_plan *p)
{
        for (bool changed = true; changed && s->drm && s->procs && d && d->drm;) {
                changed = false;
                for (size_t i = 0; i < p->n; i++) {
                        gr_target *t = &p->targets[i];
                        const gr_process *proc = t->refused == GR_REFUSE_NONE ? gr_proc_table_find(s->procs, t->pid) : NULL;
                        if (proc && proc->drm && (each_client_of(s, proc, holder_stays, p) != 0 || ghost_stays(d, p, t->pid))) {
                                t->refused = GR_REFUSE_DRM_SHARED;
                                changed = true;
                        }
                }
        }
}

static void add_kfd(gr_plan *p, pid_t pid)
{
        for (size_t i = 0; i < p->n_drm_kfd; i++)
                if (p->drm_kfd[i] == pid)
                        return;
        p->drm_kfd[p->n_drm_kfd++] = pid;
}

/* What the AMD and Intel targets that will be signalled take with them: their clients, their
 * KFD entries, and those of the ghosts they keep */
static int drm_ends(const gr_snapshot *s, const gr_diagnosis *d, gr_plan *p)
{
        if (!s->drm || !s->procs)
                return 0;
        p->drm_clients = calloc(s->drm->n_clients + 1, sizeof(*p->drm_clients));
        p->drm_kfd = calloc(2 * p->n + 1, sizeof(*p->drm_kfd));
        if (!p->drm_clients || !p->drm_kfd)
                return -ENOMEM;
        for (size_t i = 0; i < p->n; i++) {
                const gr_target *t = &p->targets[i];
                const gr_process *proc = gr_proc_table_find(s->procs, t->pid);
                if (t->refused != GR_REFUSE_NONE || !proc || !proc->drm)
                        continue;
                each_client_of(s, proc, add_client, p);
                if (proc->drm->n_kfd == 0)
                        continue;
                add_kfd(p, t->pid);
                const gr_holder_verdict *v = gr_diagnosis_drm_holder(d, t->pid);
                if (v && v->ghost)
                        add_kfd(p, v->ghost);
        }
        return 0;
}

bool gr_drm_holder_on(const gr_snapshot *s, const gr_diagnosis *d, pid_t pid, uint64_t gpus)
{
        for (size_t k = 0; s->drm && k < s->drm->n_clients; k++) {
                const gr_drm_client *c = &s->drm->clients[k];
                if (c->gpu < 0 || c->gpu >= 64 || !(gpus >> c->gpu & 1))
                        continue;
                for (unsigned h = 0; h < c->n_holders && h < GR_DRM_CLIENT_HOLDERS_MAX; h++)
                        if (c->holders[h].pid == pid)
                                return true;
        }
        const gr_holder_verdict *v = gr_diagnosis_drm_holder(d, pid);
        for (size_t k = 0; v && v->ghost && k < d->drm->n_ghosts; k++) {
                const gr_kfd_ghost *g = &d->drm->ghosts[k];
                if (g->pid == v->ghost && g->gpu >= 0 && g->gpu < 64 && (gpus >> g->gpu & 1))
                        return true;
        }
        return false;
}

/* Does the AMD or Intel holder hold a client on one of the GPUs --gpu names (by PCI address),
 * or keep a ghost's memory there? */
static bool drm_on_selected(const gr_snapshot *s, const gr_diagnosis *d, const gr_process *p, const char *gpus)
{
        uint64_t m = 0;
        for (unsigned i = 0; p->drm && s->drm && i < s->drm->n_gpus && i < 64; i++)
                if (gr_drm_gpu_matches_list(&s->drm->gpus[i], gpus))
                        m |= 1ULL << i;
        return m && gr_drm_holder_on(s, d, p->pid, m);
}

int gr_plan_make(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan_options *o,
                 gr_plan **ret)
{
        gr_plan *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        struct builder b = { s, d, o, p, 0 };
        uint64_t chosen = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64; i++)
                if (gr_gpu_matches_list(&s->gpu->gpus[i], o->gpus))
                        chosen |= 1ULL << i;
        int r = 0;
        if (o->n_pids > 0) {
                /* with --gpu, a named process must hold or own one of those GPUs: a pasted next
                 * step whose PID has since gone to another process kills nothing */
                for (size_t i = 0; r == 0 && i < o->n_pids; i++) {
                        const gr_process *proc = gr_proc_table_find(s->procs, o->pids[i]);
                        bool off = o->gpus && proc && !(gpus_of(s, proc) & chosen) && !drm_on_selected(s, d, proc, o->gpus);
                        r = add(&b, o->pids[i], GR_WHY_ASKED_PID, off ? GR_REFUSE_NOT_ON_GPU : GR_REFUSE_NONE);
                }
        } else if (o->all) {
                for (size_t i = 0; r == 0 && i < d->n_holders; i++) {
                        const gr_process *proc = d->holders[i].process;
                        if (proc && (gpus_of(s, proc) & chosen))
                                r = add(&b, proc->pid, GR_WHY_ASKED_ALL, GR_REFUSE_NONE);
                }
                /* listed owners that hold no device file here: zombies, or a live process that
                 * has a dead owner's PID (or an MPS client): named, refused */
                for (unsigned i = 0; r == 0 && i < s->gpu->n_gpus && i < 64; i++)
                        for (unsigned j = 0; r == 0 && (chosen >> i & 1) && j < s->gpu->gpus[i].n_procs; j++) {
                                const gr_process *proc = gr_proc_table_find(s->procs, (pid_t)s->gpu->gpus[i].procs[j].pid);
                                if (proc)
                                        r = add(&b, proc->pid, GR_WHY_ASKED_ALL, proc->hold ? GR_REFUSE_NONE : GR_REFUSE_NOT_HOLDING);
                        }
        } else {
                /* every holder of the chosen GPUs: the leftovers the confidence allows become
                 * targets, the others are listed as spared, with the diagnosis' reason. In a
                 * scope that has ended (a job's epilog) every holder of the scope is a leftover by
                 * definition: nothing of the job may use the GPU any more */
                for (size_t i = 0; r == 0 && i < d->n_holders; i++) {
                        const gr_holder_verdict *v = &d->holders[i];
                        if (!v->process || !(gpus_of(s, v->process) & chosen))
                                continue;
                        gr_scope_match m = gr_scope_contains(o->scope, v->process);
                        if (m == GR_SCOPE_OUT)
                                continue; /* the plan is the scope's: another's is not named */
                        if (o->scope_ended && gr_plan_ended_scope_takes(m, v))
                                r = add(&b, v->pid, GR_WHY_ENDED, GR_REFUSE_NONE);
                        else if (o->scope_ended)
                                /* of the job only by its environment (out of the job's cgroup: a
                                 * shell salloc gave, a daemon it started): judged live, spared */
                                r = add(&b, v->pid, GR_WHY_LEFTOVER, judged_refusal(v, true));
                        else
                                r = add(&b, v->pid, GR_WHY_LEFTOVER, judged_refusal(v, o->likely));
                }
                /* AMD and Intel leftovers, on the GPUs --gpu names by their PCI addresses (or
                 * every one): by their own verdicts, as NVIDIA's (sure ones; likely with
                 * --likely), and their clients' */
                for (size_t i = 0; r == 0 && d->drm && i < d->drm->n_holders; i++) {
                        const gr_holder_verdict *v = &d->drm->holders[i];
                        if (v->process && v->judgement == GR_JUDGE_LEFTOVER &&
                            (!o->gpus || drm_on_selected(s, d, v->process, o->gpus)) &&
                            gr_scope_contains(o->scope, v->process) != GR_SCOPE_OUT)
                                r = add(&b, v->pid, GR_WHY_LEFTOVER, judged_refusal(v, o->likely));
                }
        }
        if (r == 0 && o->tree) {
                /* the whole process group of every target that will be signalled */
                size_t n = p->n;
                for (size_t i = 0; r == 0 && i < n; i++) {
                        if (p->targets[i].refused != GR_REFUSE_NONE)
                                continue;
                        const gr_process *t = gr_proc_table_find(s->procs, p->targets[i].pid);
                        /* never gpureap's own group nor its callers': the pipe reading its
                         * output, the shell or timeout(1) that runs it */
                        if (t && callers_group(s, o, t->pgrp))
                                continue;
                        /* never into a group that runs a live job: a batch script without job
                         * control keeps every job it starts in its own group; such a group's
                         * live or unsure holders are named as spared, and nobody else of it is
                         * signalled */
                        bool live_group = false;
                        for (size_t k = 0; t && t->pgrp > 1 && s->procs && k < s->procs->n; k++) {
                                const gr_process *q = &s->procs->procs[k];
                                const gr_holder_verdict *v = q->pgrp == t->pgrp ? gr_diagnosis_holder(d, q->pid) : NULL;
                                if (!v && q->pgrp == t->pgrp) /* an AMD or Intel holder's verdict */
                                        v = gr_diagnosis_drm_holder(d, q->pid);
                                /* the targets themselves were chosen */
                                if (v && !signalled_target(p, n, q->pid) && v->role != GR_ROLE_MONITOR && v->judgement != GR_JUDGE_LEFTOVER) {
                                        live_group = true;
                                        r = add(&b, q->pid, GR_WHY_TREE, judged_refusal(v, false));
                                }
                        }
                        for (size_t k = 0; r == 0 && !live_group && t && t->pgrp > 1 && s->procs && k < s->procs->n; k++)
                                if (s->procs->procs[k].pgrp == t->pgrp)
                                        r = add(&b, s->procs->procs[k].pid, GR_WHY_TREE, GR_REFUSE_NONE);
                }
        }
        if (r < 0) {
                gr_plan_free(p);
                return r;
        }
        for (size_t i = 0; i < p->n; i++)
                if (p->targets[i].refused == GR_REFUSE_NONE)
                        p->gpus |= p->targets[i].gpus & chosen;
        drm_shared(s, d, p);
        if ((r = drm_ends(s, d, p)) < 0) {
                gr_plan_free(p);
                return r;
        }
        if (p->n > 0) /* qsort wants a valid pointer even for no elements */
                qsort(p->targets, p->n, sizeof(*p->targets), cmp_target);
        *ret = p;
        return 0;
}

struct held_check {
        const gr_drm_key *held;
        size_t n_held;
};

/* 1 when client k is one held outside the plan */
static int held_outside(const gr_snapshot *s, size_t k, void *ud)
{
        const struct held_check *hc = ud;
        const gr_drm_client *c = &s->drm->clients[k];
        return gr_drm_key_listed(hc->held, hc->n_held, c->pdev, c->client_id);
}

int gr_plan_drm_held_outside(const gr_snapshot *s, const gr_diagnosis *d, gr_plan *p, const gr_drm_key *held,
                             size_t n_held, bool all)
{
        struct held_check hc = { held, n_held };
        for (size_t i = 0; s->procs && i < p->n; i++) {
                gr_target *t = &p->targets[i];
                const gr_process *proc = t->refused == GR_REFUSE_NONE ? gr_proc_table_find(s->procs, t->pid) : NULL;
                if (proc && proc->drm && all)
                        t->refused = GR_REFUSE_DRM_UNREAD;
                else if (proc && proc->drm && each_client_of(s, proc, held_outside, &hc) != 0)
                        t->refused = GR_REFUSE_DRM_SHARED;
        }
        drm_shared(s, d, p);
        free(p->drm_clients);
        free(p->drm_kfd);
        p->drm_clients = NULL;
        p->drm_kfd = NULL;
        p->n_drm_clients = p->n_drm_kfd = 0;
        return drm_ends(s, d, p);
}

void gr_plan_free(gr_plan *p)
{
        if (!p)
                return;
        free(p->drm_clients);
        free(p->drm_kfd);
        free(p->targets);
        free(p);
}
