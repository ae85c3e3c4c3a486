/* Diagnosis: a pure function of a snapshot. It decides, for every GPU, whether it is clean,
 * busy, dirty, stale or unknown, and for every holder its role, its facts and its judgement
 * (lineage.c), and writes the findings a person needs: what, who, how much memory, why, and the
 * next command to type.
 *
 * The sure sign of a leftover's memory is the driver's own list: memory the driver lists for a
 * dead PID (a ghost) is kept by whoever inherited its files. Unlisted holders hold memory only
 * when the GPU's used memory exceeds what the live listed contexts account for (measured on an
 * H200, DESIGN.md). A name is never evidence: a process called nvidia-smi with a CUDA footprint
 * is not a monitor. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "diagnose/dx.h"
#include "gpureap/basic.h"
#include "basic/names.h"

bool gr_holding_has_cuda_footprint(const gr_holding *h)
{
        if (!h)
                return false;
        unsigned gpu_fds = 0;
        for (unsigned i = 0; i < h->n_gpus; i++)
                gpu_fds += h->gpus[i].n_fds;
        return (h->maps_read && h->n_maps >= GR_CUDA_MAPS_MIN) || gpu_fds >= GR_CUDA_GPU_FDS_MIN;
}

/* ---- names: one table beside each enum ---- */

GR_NAME_TABLE(gr_gpu_state_name, gr_gpu_state, GR_GPU_UNKNOWN, "unknown",
              [GR_GPU_CLEAN] = "clean", [GR_GPU_BUSY] = "busy", [GR_GPU_DIRTY] = "dirty", [GR_GPU_STALE] = "stale", [GR_GPU_UNKNOWN] = "unknown")

GR_NAME_TABLE(gr_role_name, gr_role, GR_ROLE_HOLDER, "holder",
              [GR_ROLE_OWNER] = "owner", [GR_ROLE_HIDDEN_HOLDER] = "hidden_holder", [GR_ROLE_MONITOR] = "monitor", [GR_ROLE_HOLDER] = "holder")

GR_NAME_TABLE(gr_finding_kind_name, gr_finding_kind, GR_FIND_NOT_ASSIGNED, "unknown",
              [GR_FIND_GHOST] = "ghost", [GR_FIND_TEARDOWN] = "teardown", [GR_FIND_ORPHAN] = "orphan", [GR_FIND_ZOMBIE] = "zombie", [GR_FIND_STOPPED] = "stopped", [GR_FIND_UNINTERRUPTIBLE] = "uninterruptible", [GR_FIND_STALE] = "stale", [GR_FIND_BUSY] = "busy", [GR_FIND_MONITOR] = "monitor", [GR_FIND_FOREIGN] = "foreign", [GR_FIND_SUSPECT] = "suspect", [GR_FIND_UNMAPPED] = "unmapped", [GR_FIND_NO_POD] = "no_pod", [GR_FIND_NOT_ASSIGNED] = "not_assigned")

GR_NAME_TABLE(gr_confidence_name, gr_confidence, GR_UNSURE, "unsure",
              [GR_SURE] = "sure", [GR_LIKELY] = "likely", [GR_UNSURE] = "unsure")

GR_NAME_TABLE(gr_judgement_name, gr_judgement, GR_JUDGE_LEFTOVER, "unsure",
              [GR_JUDGE_LIVE] = "live", [GR_JUDGE_UNSURE] = "unsure", [GR_JUDGE_LEFTOVER] = "leftover")

GR_NAME_TABLE(gr_action_kind_name, gr_action_kind, GR_ACTION_KERNEL_STACK, "none",
              [GR_ACTION_NONE] = "none", [GR_ACTION_REAP] = "reap", [GR_ACTION_WAIT] = "wait", [GR_ACTION_WHY] = "why", [GR_ACTION_LOOK_AS_ROOT] = "look_as_root", [GR_ACTION_FROM_HOST] = "from_host", [GR_ACTION_RESUME] = "resume", [GR_ACTION_KERNEL_STACK] = "kernel_stack")

GR_NAME_TABLE(gr_lean_name, gr_lean, GR_LEAN_LEFTOVER, "neutral",
              [GR_LEAN_NEUTRAL] = "neutral", [GR_LEAN_LIVE] = "live", [GR_LEAN_LEFTOVER] = "leftover")

GR_NAME_TABLE(gr_evidence_key_name, gr_evidence_key, GR_EV_KUBELET, "unknown",
              [GR_EV_RUN_SUPERVISOR] = "run_supervisor", [GR_EV_GHOST] = "ghost", [GR_EV_PARENT] = "parent", [GR_EV_REPARENTED] = "reparented", [GR_EV_ANCESTOR] = "ancestor", [GR_EV_WORKER] = "worker", [GR_EV_GROUP_LEADER] = "group_leader", [GR_EV_SESSION_LEADER] = "session_leader", [GR_EV_LISTENING] = "listening", [GR_EV_SERVING] = "serving", [GR_EV_TERMINAL] = "terminal", [GR_EV_CGROUP] = "cgroup", [GR_EV_SIGNALS] = "signals", [GR_EV_STATE] = "state", [GR_EV_VIEW] = "view", [GR_EV_SEEN] = "seen", [GR_EV_KUBELET] = "kubelet")

const char *gr_job_text(const gr_job *j, char *buf, size_t size)
{
        switch (j->kind) {
        case GR_JOB_GROUP: snprintf(buf, size, "process group %d", (int)j->pid); break;
        case GR_JOB_TORCHELASTIC: snprintf(buf, size, "torchelastic run %s", j->id); break;
        case GR_JOB_RUN: snprintf(buf, size, "gpureap run %d", (int)j->pid); break;
        case GR_JOB_PROCESS: snprintf(buf, size, "process %d", (int)j->pid); break;
        case GR_JOB_LAUNCHER: snprintf(buf, size, "launcher %d", (int)j->pid); break;
        }
        return buf;
}

bool gr_job_equal(const gr_job *a, const gr_job *b)
{
        return a->kind == b->kind && a->pid == b->pid && strcmp(a->id, b->id) == 0;
}

/* ---- indexes: the diagnosis stays linear in the size of the snapshot ---- */

static int index_procs(struct dx *x)
{
        size_t n = x->s->procs ? x->s->procs->n : 0, cap = 16;
        while (cap < n * 2)
                cap *= 2;
        x->slots = malloc(cap * sizeof(*x->slots));
        if (!x->slots)
                return -ENOMEM;
        memset(x->slots, 0xff, cap * sizeof(*x->slots));
        x->slot_mask = cap - 1;
        for (size_t i = 0; i < n; i++) {
                size_t h = ((uint32_t)x->s->procs->procs[i].pid * 2654435761u) & x->slot_mask;
                while (x->slots[h] >= 0)
                        h = (h + 1) & x->slot_mask;
                x->slots[h] = (int32_t)i;
        }
        return 0;
}

const gr_process *dx_find(const struct dx *x, pid_t pid)
{
        if (pid <= 0 || !x->slots)
                return NULL;
        for (size_t h = ((uint32_t)pid * 2654435761u) & x->slot_mask; x->slots[h] >= 0;
             h = (h + 1) & x->slot_mask) {
                const gr_process *p = &x->s->procs->procs[x->slots[h]];
                if (p->pid == pid)
                        return p;
        }
        return NULL;
}

bool dx_alive(const gr_process *p)
{
        return p && p->state != 'Z' && p->state != 'X';
}

bool dx_leader_alive(const struct dx *x, pid_t pid)
{
        return dx_leader_state(x, pid) != 0;
}

int dx_leader_state(const struct dx *x, pid_t pid)
{
        const gr_process *p = dx_find(x, pid);
        if (p)
                return dx_alive(p) ? 1 : 0;
        return x->s->procs_partial || x->hidden ? -1 : 0;
}

static int cmp_owner(const void *a, const void *b)
{
        const struct owner_ix *x = a, *y = b;
        if (x->pid != y->pid)
                return (x->pid > y->pid) - (x->pid < y->pid);
        return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

static int index_owners(struct dx *x)
{
        const gr_gpu_report *rep = x->s->gpu;
        size_t n = 0;
        for (unsigned i = 0; rep && i < rep->n_gpus; i++)
                n += rep->gpus[i].n_procs;
        x->owners = calloc(n ? n : 1, sizeof(*x->owners));
        if (!x->owners)
                return -ENOMEM;
        for (unsigned i = 0; rep && i < rep->n_gpus; i++)
                for (unsigned j = 0; j < rep->gpus[i].n_procs; j++)
                        x->owners[x->n_owners++] = (struct owner_ix){ (pid_t)rep->gpus[i].procs[j].pid, i, j };
        if (x->n_owners > 0)
                qsort(x->owners, x->n_owners, sizeof(*x->owners), cmp_owner);
        return 0;
}

static const struct owner_ix *owner_first(const struct dx *x, pid_t pid)
{
        size_t lo = 0, hi = x->n_owners;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (x->owners[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < x->n_owners && x->owners[lo].pid == pid ? &x->owners[lo] : NULL;
}

const gr_gpu_proc *dx_listed(const struct dx *x, unsigned gi, pid_t pid)
{
        const struct owner_ix *o = owner_first(x, pid);
        for (; o && o < x->owners + x->n_owners && o->pid == pid; o++)
                if (o->gpu == gi)
                        return &x->s->gpu->gpus[gi].procs[o->idx];
        return NULL;
}

bool dx_listed_anywhere(const struct dx *x, pid_t pid)
{
        return owner_first(x, pid) != NULL;
}

/* ---- owners as this view sees them ---- */

static gr_owner_state owner_state(const gr_snapshot *s, const gr_process *p, int minor, bool foreign_pids,
                                  bool hidden)
{
        if (foreign_pids) /* the driver's PID names the local process only if it holds the GPU */
                return p && dx_alive(p) && gr_process_fds_on_minor(p, minor) > 0 ? GR_OWNER_ALIVE
                                                                                : GR_OWNER_UNMAPPED;
        if (!p) /* a recording keeps every owner it found: one it lacks was gone */
                return hidden ? GR_OWNER_UNMAPPED : GR_OWNER_NOT_FOUND;
        return dx_alive(p) ? GR_OWNER_ALIVE : GR_OWNER_ZOMBIE;
}

static bool view_hides(const gr_snapshot *s)
{
        return s->hidepid;
}

gr_owner_state gr_diagnosis_owner_state(const gr_snapshot *s, unsigned gi, pid_t pid)
{
        const gr_process *p = gr_proc_table_find(s->procs, pid);
        int minor = gi < s->gpu->n_gpus ? s->gpu->gpus[gi].minor : -1;
        return owner_state(s, p, minor, s->pidns == GR_PIDNS_OTHER, view_hides(s));
}

static gr_owner_state owner_state_x(const struct dx *x, unsigned gi, pid_t pid)
{
        return owner_state(x->s, dx_find(x, pid), x->s->gpu->gpus[gi].minor, x->foreign_pids, x->hidden);
}

/* A listed owner that is alive but holds no file of the GPU, in a view that sees every fd: its
 * PID may now be another process's (the owner died and the PID was reused), or it is an MPS
 * client. A ghost only where a hidden holder may keep its memory, and never more than likely */
static bool phantom_owner(const struct dx *x, unsigned gi, pid_t pid)
{
        if (x->partial_view || x->hidden || x->foreign_pids || x->s->procs_partial)
                return false;
        const gr_process *p = dx_find(x, pid);
        return owner_state_x(x, gi, pid) == GR_OWNER_ALIVE && p && !p->kthread &&
               gr_process_fds_on_minor(p, x->s->gpu->gpus[gi].minor) == 0;
}

static bool ghostlike(const struct dx *x, unsigned gi, pid_t pid, bool *ret_phantom)
{
        gr_owner_state st = owner_state_x(x, gi, pid);
        *ret_phantom = false;
        if (st == GR_OWNER_NOT_FOUND || st == GR_OWNER_ZOMBIE)
                return true;
        return (*ret_phantom = phantom_owner(x, gi, pid));
}

/* ---- findings: facts per GPU here; grouped by job and put in words in describe.c ---- */

gr_finding *dx_add_finding(struct dx *x, gr_finding_kind kind, int gpu, bool leftover)
{
        gr_diagnosis *d = x->d;
        if (d->n_findings == x->cap_findings) {
                size_t cap = x->cap_findings ? x->cap_findings * 2 : 16;
                gr_finding *nf = realloc(d->findings, cap * sizeof(*nf));
                if (!nf)
                        return NULL;
                d->findings = nf;
                x->cap_findings = cap;
        }
        gr_finding *f = &d->findings[d->n_findings++];
        memset(f, 0, sizeof(*f));
        f->kind = kind;
        f->gpu = gpu;
        f->leftover = leftover;
        f->memory = GR_UNKNOWN_U64;
        f->confidence = GR_SURE;
        if (gpu >= 0) {
                f->n_gpus = 1;
                if (gpu < GR_FINDING_GPUS_MAX)
                        f->gpus = 1ULL << gpu;
        }
        return f;
}

void dx_add_pid(gr_finding *f, pid_t pid)
{
        for (unsigned i = 0; i < f->n_pids; i++)
                if (f->pids[i] == pid)
                        return;
        if (f->n_pids < GR_FINDING_PIDS_MAX)
                f->pids[f->n_pids++] = pid;
}

#define add_finding dx_add_finding
#define add_pid dx_add_pid

static gr_holder_verdict *verdict_of(gr_diagnosis *d, pid_t pid)
{
        return (gr_holder_verdict *)gr_diagnosis_holder(d, pid);
}

/* Does the holder have this GPU's device file open? */
static bool holds_minor(const gr_holder_verdict *v, int minor)
{
        if (minor < 0)
                return false;
        if (minor < 64)
                return v->minors & (1ULL << minor);
        return gr_process_fds_on_minor(v->process, minor) > 0;
}

static int judge_roles(struct dx *x)
{
        const gr_snapshot *s = x->s;
        gr_diagnosis *d = x->d;
        size_t n = s->procs ? s->procs->n_holders : 0;
        d->holders = calloc(n ? n : 1, sizeof(*d->holders));
        x->scratch = calloc(n ? n : 1, sizeof(*x->scratch));
        if (!d->holders || !x->scratch)
                return -ENOMEM;
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                const gr_process *p = &s->procs->procs[i];
                if (!p->hold || d->n_holders == n)
                        continue;
                gr_holder_verdict *v = &d->holders[d->n_holders++];
                v->pid = p->pid;
                v->process = p;
                for (unsigned k = 0; k < p->hold->n_gpus; k++)
                        if (p->hold->gpus[k].minor < 64 && p->hold->gpus[k].n_fds > 0)
                                v->minors |= 1ULL << p->hold->gpus[k].minor;
                if (p->state == 'Z')
                        v->conditions |= GR_COND_ZOMBIE;
                if (p->state == 'T' || p->state == 't')
                        v->conditions |= GR_COND_STOPPED;
                if (p->state == 'D')
                        v->conditions |= GR_COND_UNINTERRUPTIBLE;
                if (p->n_nspid > 1)
                        v->conditions |= GR_COND_OTHER_NS;
                if (p->has_uid && p->uid != d->uid)
                        v->conditions |= GR_COND_OTHER_USER;
                if (p->net && p->net->n_listen > 0)
                        v->conditions |= GR_COND_LISTENING;
                bool owner = false;
                for (unsigned g = 0; g < s->gpu->n_gpus && !owner; g++)
                        owner = dx_listed(x, g, p->pid) && owner_state_x(x, g, p->pid) == GR_OWNER_ALIVE;
                if (owner)
                        v->role = GR_ROLE_OWNER;
                else if (p->hold->n_gpus == 0)
                        v->role = GR_ROLE_HOLDER;
                else if (gr_holding_has_cuda_footprint(p->hold))
                        v->role = GR_ROLE_HIDDEN_HOLDER;
                else
                        v->role = GR_ROLE_MONITOR;
        }
        return 0;
}

/* Is holder h tied to the ghost by lineage? */
static bool ghost_lineage(const struct dx *x, const gr_process *h, pid_t ghost)
{
        if (!h)
                return false;
        if (h->ppid == ghost || h->pgrp == ghost || h->session == ghost)
                return true;
        const gr_process *g = dx_find(x, ghost); /* a zombie ghost is still in the table */
        return g && g->pgrp == h->pgrp && g->pgrp > 1;
}

struct gpu_view {
        unsigned gi;
        uint64_t allowance;       /* memory above baseline that is still noise */
        pid_t hidden[64], monitors[64];
        unsigned n_hidden, n_monitors, n_ghosts;
};

/* A hidden holder whose live ancestor is a live context owner of this GPU: the family of a
 * running job (a DataLoader worker forked from its trainer), not a keeper of some ghost's
 * memory, whatever other process of the GPU has just died */
static bool family_of_live_owner(const struct dx *x, unsigned gi, const gr_process *p)
{
        for (int depth = 0; p && p->ppid > 1 && depth < 64; depth++) {
                const gr_process *parent = dx_find(x, p->ppid);
                if (!dx_alive(parent))
                        return false;
                if (dx_listed(x, gi, parent->pid))
                        return true;
                p = parent;
        }
        return false;
}

/* v2 reports the reserve apart; v1 counts it in used, and its size is not known, so v1 GPUs
 * are judged with the v2 H200 reserve as the allowance */
static uint64_t gpu_allowance(const gr_gpu *g)
{
        return GR_BASELINE_SLACK + (g->mem_api == 1 ? (640ULL << 20) : 0);
}

static void gpu_view_init(const struct dx *x, unsigned gi, struct gpu_view *gv)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        memset(gv, 0, sizeof(*gv));
        gv->gi = gi;
        gv->allowance = gpu_allowance(g);
        for (size_t i = 0; i < x->d->n_holders; i++) {
                const gr_holder_verdict *v = &x->d->holders[i];
                if (!holds_minor(v, g->minor))
                        continue;
                if (v->role == GR_ROLE_HIDDEN_HOLDER && gv->n_hidden < GR_ELEMENTSOF(gv->hidden) &&
                    !family_of_live_owner(x, gi, v->process))
                        gv->hidden[gv->n_hidden++] = v->pid;
                if (v->role == GR_ROLE_MONITOR && gv->n_monitors < GR_ELEMENTSOF(gv->monitors))
                        gv->monitors[gv->n_monitors++] = v->pid;
        }
        for (unsigned i = 0; i < g->n_procs; i++) {
                bool phantom;
                gv->n_ghosts += ghostlike(x, gi, (pid_t)g->procs[i].pid, &phantom) && (!phantom || gv->n_hidden > 0);
        }
}

/* The hidden holders a ghost's memory is attributed to, and how sure that is */
static unsigned ghost_holders(const struct dx *x, const struct gpu_view *gv, pid_t ghost, pid_t *out,
                              gr_confidence *ret_conf)
{
        unsigned n_tied = 0, n = 0;
        for (unsigned k = 0; k < gv->n_hidden; k++)
                n_tied += ghost_lineage(x, dx_find(x, gv->hidden[k]), ghost);
        for (unsigned k = 0; k < gv->n_hidden; k++)
                if (n_tied == 0 || ghost_lineage(x, dx_find(x, gv->hidden[k]), ghost))
                        out[n++] = gv->hidden[k];
        gr_confidence c;
        /* one ghost: its one candidate, or its candidates all tied to it by lineage (children
         * that forked after CUDA init each hold a copy of its files: every one must go). One
         * candidate untied to it is sure only when it has no live parent but PID 1 (a ghost's
         * child is reparented when the ghost dies): one with a live parent may be the family
         * of something else that runs */
        bool lone_orphan = false, not_its_child = false;
        if (n == 1 && n_tied == 0) {
                const gr_process *h = dx_find(x, out[0]);
                const gr_process *parent = h ? dx_find(x, h->ppid) : NULL;
                lone_orphan = h && (h->ppid <= 1 || !dx_alive(parent));
                /* but not a process that leads a session of its own (a daemon: a child the
                 * ghost forked after CUDA init stays in its session), nor, where the ghost is
                 * still in the table (a zombie), one that started before it or runs as another
                 * user: it cannot have inherited the ghost's files */
                const gr_process *g = dx_find(x, ghost);
                if (lone_orphan && h->session == h->pid)
                        lone_orphan = false;
                if (h && g && (h->start_time < g->start_time || (h->has_uid && g->has_uid && h->uid != g->uid)))
                        not_its_child = true;
        }
        if (not_its_child) {
                *ret_conf = GR_UNSURE;
                return n;
        }
        if (gv->n_ghosts == 1 && ((n == 1 && (n_tied == 1 || lone_orphan)) || (n_tied > 0 && n_tied == n)))
                c = GR_SURE;
        else if ((n_tied > 0 && n_tied < gv->n_hidden) || gv->n_ghosts == 1)
                c = GR_LIKELY; /* tied by lineage, or one ghost whose memory several share */
        else
                c = GR_UNSURE;
        if (c == GR_SURE && x->partial_view)
                c = GR_LIKELY; /* a holder it could not inspect may be the one */
        *ret_conf = c;
        return n;
}

/* Before the lineage judgement: which hidden holders keep a ghost's memory */
static void attribute_ghosts(struct dx *x, unsigned gi)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        if (!g->procs_ok || g->mem_api == 0 || g->mem_inconsistent)
                return;
        struct gpu_view gv;
        gpu_view_init(x, gi, &gv);
        for (unsigned i = 0; i < g->n_procs; i++) {
                pid_t ghost = (pid_t)g->procs[i].pid;
                bool phantom;
                if (!ghostlike(x, gi, ghost, &phantom) || (phantom && gv.n_hidden == 0))
                        continue;
                pid_t out[64];
                gr_confidence conf;
                unsigned n = ghost_holders(x, &gv, ghost, out, &conf);
                if (phantom && conf == GR_SURE)
                        conf = GR_LIKELY;
                for (unsigned k = 0; k < n; k++) {
                        gr_holder_verdict *v = verdict_of(x->d, out[k]);
                        if (v && (!v->ghost || conf < v->ghost_confidence)) {
                                v->ghost = ghost;
                                v->ghost_confidence = conf;
                        }
                }
        }
}

static int ghost_findings(struct dx *x, const struct gpu_view *gv, bool *dirty, bool *stale)
{
        const gr_gpu *g = &x->s->gpu->gpus[gv->gi];
        for (unsigned i = 0; i < g->n_procs; i++) {
                const gr_gpu_proc *o = &g->procs[i];
                pid_t ghost = (pid_t)o->pid;
                bool phantom;
                if (!ghostlike(x, gv->gi, ghost, &phantom) || (phantom && gv->n_hidden == 0))
                        continue;
                bool torn_down = gv->n_hidden == 0;
                gr_finding *f = add_finding(x, torn_down ? GR_FIND_TEARDOWN : GR_FIND_GHOST, (int)gv->gi, true);
                if (!f)
                        return -ENOMEM;
                f->related = ghost;
                f->memory = o->used_bytes;
                if (torn_down) {
                        f->confidence = x->partial_view ? GR_UNSURE : GR_SURE;
                        *stale = true;
                        continue;
                }
                pid_t out[64];
                unsigned n = ghost_holders(x, gv, ghost, out, &f->confidence);
                if (phantom && f->confidence == GR_SURE)
                        f->confidence = GR_LIKELY;
                for (unsigned k = 0; k < n; k++)
                        add_pid(f, out[k]);
                *dirty = true;
        }
        return 0;
}

/* A live holder with a CUDA footprint that the driver does not list, while memory is used that
 * no listed process accounts for: it may be the one keeping it */
static bool unexplained(const struct dx *x, const struct gpu_view *gv, const gr_holder_verdict *v)
{
        return v->role == GR_ROLE_HIDDEN_HOLDER && !v->ghost && gv->n_ghosts == 0 &&
               !dx_listed_anywhere(x, v->pid) && x->d->gpus[gv->gi].unaccounted > gv->allowance;
}

static bool in_lineage_finding(const struct dx *x, const struct gpu_view *gv, const gr_holder_verdict *v,
                               gr_judgement which)
{
        const gr_gpu *g = &x->s->gpu->gpus[gv->gi];
        if (!holds_minor(v, g->minor) || v->role == GR_ROLE_MONITOR || v->role == GR_ROLE_HOLDER || v->ghost)
                return false; /* a ghost's holders are in the ghost's finding */
        if (which == GR_JUDGE_LEFTOVER)
                return v->judgement == GR_JUDGE_LEFTOVER;
        if (v->judgement == GR_JUDGE_LIVE)
                return unexplained(x, gv, v);
        if (v->judgement != GR_JUDGE_UNSURE)
                return false;
        /* an unsure holder with no memory of its own says nothing about this GPU */
        return v->role == GR_ROLE_OWNER || dx_listed_anywhere(x, v->pid) || unexplained(x, gv, v) ||
               gv->n_ghosts > 0;
}

/* Leftovers (orphan) or unsure holders (suspect) of this GPU, one finding per job */
static int lineage_findings(struct dx *x, const struct gpu_view *gv, gr_judgement which, bool *flag)
{
        gr_diagnosis *d = x->d;
        size_t n = 0;
        for (size_t i = 0; i < d->n_holders; i++)
                if (in_lineage_finding(x, gv, &d->holders[i], which))
                        x->scratch[n++] = &d->holders[i];
        for (size_t i = 0; i < n; i++) {
                const gr_holder_verdict *first = x->scratch[i];
                if (!first)
                        continue;
                bool leftover = which == GR_JUDGE_LEFTOVER;
                gr_finding *f = add_finding(x, leftover ? GR_FIND_ORPHAN : GR_FIND_SUSPECT, (int)gv->gi, leftover);
                if (!f)
                        return -ENOMEM;
                uint64_t total = 0;
                f->confidence = leftover ? GR_SURE : GR_UNSURE;
                for (size_t k = i; k < n; k++) {
                        const gr_holder_verdict *v = x->scratch[k];
                        if (!v || !gr_job_equal(&v->job, &first->job))
                                continue;
                        add_pid(f, v->pid);
                        if (leftover && v->confidence > f->confidence)
                                f->confidence = v->confidence;
                        const gr_gpu_proc *o = dx_listed(x, gv->gi, v->pid);
                        if (o && o->used_bytes != GR_UNKNOWN_U64)
                                total += o->used_bytes;
                        x->scratch[k] = NULL;
                }
                f->job = first->job;
                f->related = first->launcher;
                f->memory = total;
                f->unlisted = !leftover && unexplained(x, gv, first);
                *flag = true;
        }
        return 0;
}

static int zombie_findings(struct dx *x, unsigned gi)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        for (unsigned i = 0; i < g->n_procs; i++) {
                const gr_process *z = dx_find(x, (pid_t)g->procs[i].pid);
                if (!z || dx_alive(z) || owner_state_x(x, gi, z->pid) != GR_OWNER_ZOMBIE)
                        continue;
                gr_finding *f = add_finding(x, GR_FIND_ZOMBIE, (int)gi, false);
                if (!f)
                        return -ENOMEM;
                add_pid(f, z->pid);
                f->related = z->ppid;
        }
        return 0;
}

/* The job of a process the driver lists that has no verdict (its files could not be read) */
static gr_job job_of(const struct dx *x, pid_t pid)
{
        const gr_holder_verdict *v = gr_diagnosis_holder(x->d, pid);
        if (v)
                return v->job;
        const gr_process *p = dx_find(x, pid);
        gr_job j = { .kind = p && p->pgrp > 0 ? GR_JOB_GROUP : GR_JOB_PROCESS, .pid = p && p->pgrp > 0 ? p->pgrp : pid };
        return j;
}

/* Live owners, and live CUDA-like holders of theirs that keep nothing unexplained (a live
 * job's forked children), one finding per job */
static int busy_findings(struct dx *x, const struct gpu_view *gv, bool *busy)
{
        unsigned gi = gv->gi;
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        pid_t in[GR_GPU_PROCS_MAX + 64];
        unsigned n = 0;
        for (unsigned i = 0; i < g->n_procs && n < GR_ELEMENTSOF(in); i++) {
                const gr_gpu_proc *o = &g->procs[i];
                const gr_holder_verdict *v = gr_diagnosis_holder(x->d, (pid_t)o->pid);
                if (owner_state_x(x, gi, (pid_t)o->pid) != GR_OWNER_ALIVE)
                        continue;
                if (v && v->judgement != GR_JUDGE_LIVE)
                        continue; /* in an orphan or suspect finding */
                in[n++] = (pid_t)o->pid;
        }
        for (size_t i = 0; i < x->d->n_holders && n < GR_ELEMENTSOF(in); i++) {
                const gr_holder_verdict *v = &x->d->holders[i];
                if (v->role != GR_ROLE_HIDDEN_HOLDER || v->judgement != GR_JUDGE_LIVE || v->ghost ||
                    !holds_minor(v, g->minor) || unexplained(x, gv, v))
                        continue;
                in[n++] = v->pid;
        }
        if (n == 0)
                return 0;
        gr_job *jobs = malloc(n * sizeof(*jobs));
        if (!jobs)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                jobs[i] = job_of(x, in[i]);
        for (unsigned i = 0; i < n; i++) {
                if (!in[i])
                        continue;
                gr_finding *f = add_finding(x, GR_FIND_BUSY, (int)gi, false);
                if (!f) {
                        free(jobs);
                        return -ENOMEM;
                }
                f->job = jobs[i];
                f->memory = 0;
                bool uninspected = false;
                for (unsigned k = i; k < n; k++) {
                        if (!in[k] || !gr_job_equal(&jobs[k], &jobs[i]))
                                continue;
                        const gr_holder_verdict *v = gr_diagnosis_holder(x->d, in[k]);
                        const gr_gpu_proc *o = dx_listed(x, gi, in[k]);
                        add_pid(f, in[k]);
                        if (o && o->used_bytes != GR_UNKNOWN_U64)
                                f->memory += o->used_bytes;
                        if (v && v->confidence > f->confidence)
                                f->confidence = v->confidence;
                        uninspected |= !v; /* listed and alive, but its files could not be read */
                        in[k] = 0;
                }
                if (uninspected && x->partial_view)
                        f->confidence = GR_UNSURE;
                *busy = true;
        }
        free(jobs);
        return 0;
}

static int unmapped_finding(struct dx *x, unsigned gi, bool *busy)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        gr_finding *f = NULL;
        uint64_t total = 0;
        for (unsigned i = 0; i < g->n_procs; i++) {
                if (owner_state_x(x, gi, (pid_t)g->procs[i].pid) != GR_OWNER_UNMAPPED)
                        continue;
                if (!f && !(f = add_finding(x, GR_FIND_UNMAPPED, (int)gi, false)))
                        return -ENOMEM;
                add_pid(f, (pid_t)g->procs[i].pid);
                if (g->procs[i].used_bytes != GR_UNKNOWN_U64)
                        total += g->procs[i].used_bytes;
        }
        if (!f)
                return 0;
        f->memory = total;
        f->confidence = GR_UNSURE;
        *busy = true;
        return 0;
}

static int state_findings(struct dx *x, unsigned gi)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        for (size_t i = 0; i < x->d->n_holders; i++) {
                const gr_holder_verdict *v = &x->d->holders[i];
                if (!holds_minor(v, g->minor))
                        continue;
                static const struct { unsigned cond; gr_finding_kind kind; } st[] = {
                        { GR_COND_STOPPED, GR_FIND_STOPPED },
                        { GR_COND_UNINTERRUPTIBLE, GR_FIND_UNINTERRUPTIBLE },
                };
                for (size_t k = 0; k < GR_ELEMENTSOF(st); k++) {
                        if (!(v->conditions & st[k].cond))
                                continue;
                        gr_finding *f = add_finding(x, st[k].kind, (int)gi, false);
                        if (!f)
                                return -ENOMEM;
                        add_pid(f, v->pid);
                }
        }
        return 0;
}

static int monitor_finding(struct dx *x, const struct gpu_view *gv)
{
        if (gv->n_monitors == 0)
                return 0;
        gr_finding *f = add_finding(x, GR_FIND_MONITOR, (int)gv->gi, false);
        if (!f)
                return -ENOMEM;
        for (unsigned k = 0; k < gv->n_monitors; k++)
                add_pid(f, gv->monitors[k]);
        return 0;
}

static int stale_finding(struct dx *x, const struct gpu_view *gv, bool *stale)
{
        gr_finding *f = add_finding(x, GR_FIND_STALE, (int)gv->gi, true);
        if (!f)
                return -ENOMEM;
        f->memory = x->d->gpus[gv->gi].unaccounted;
        f->confidence = x->partial_view ? GR_UNSURE : GR_SURE;
        *stale = true;
        return 0;
}

/* A GPU in use (memory, holders) on a node whose kubelet answered, that no listed pod was
 * assigned: the device plugin reports it free, the scheduler places a pod on it. Not where a
 * device (MIG) does not name its GPU: then which GPUs are assigned is not known */
static int no_pod_finding(struct dx *x, unsigned gi)
{
        const gr_snapshot_kubelet *k = &x->s->kubelet;
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        gr_gpu_state st = x->d->gpus[gi].state;
        if (k->state != GR_KUBELET_OK || k->devices_unmapped || gi >= 64 || (k->gpus_assigned >> gi & 1) ||
            st == GR_GPU_CLEAN || st == GR_GPU_UNKNOWN)
                return 0;
        gr_finding *f = add_finding(x, GR_FIND_NO_POD, (int)gi, false);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < x->d->n_holders; i++) {
                const gr_holder_verdict *v = &x->d->holders[i];
                if (holds_minor(v, g->minor) && v->role != GR_ROLE_MONITOR)
                        add_pid(f, v->pid);
        }
        f->memory = g->mem_used;
        f->confidence = GR_SURE;
        return 0;
}

/* A process in a pod's cgroup that holds a GPU the device manager's checkpoint did not assign
 * to its pod UID (a privileged pod that opened every GPU, NVIDIA_VISIBLE_DEVICES=all): the
 * scheduler believes the GPU is another pod's or free. Information, no action: the process may
 * be a live job that merely opened the file. Only where the checkpoint was read and names each
 * of the pod's GPU devices' GPUs; at the pod's level, since the checkpoint names containers by
 * name and the cgroup by ID */
static int not_assigned_finding(struct dx *x, unsigned gi)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        if (x->s->kubelet.state != GR_KUBELET_OK || x->s->kubelet.checkpoint_state != GR_CHECKPOINT_OK || gi >= 64)
                return 0;
        gr_finding *f = NULL;
        for (size_t i = 0; i < x->d->n_holders; i++) {
                const gr_holder_verdict *v = &x->d->holders[i];
                const gr_pod *pod = v->process ? v->process->pod : NULL;
                if (!pod || !pod->assigned_known || (pod->gpus_assigned >> gi & 1) || !holds_minor(v, g->minor) ||
                    v->role == GR_ROLE_MONITOR)
                        continue;
                if (!f && !(f = add_finding(x, GR_FIND_NOT_ASSIGNED, (int)gi, false)))
                        return -ENOMEM;
                add_pid(f, v->pid);
        }
        if (f)
                f->confidence = GR_SURE;
        return 0;
}

static int judge_gpu(struct dx *x, unsigned gi)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        gr_gpu_verdict *gv = &x->d->gpus[gi];
        gv->allowance = gpu_allowance(g);
        if (!g->procs_ok || g->mem_api == 0 || g->mem_inconsistent) {
                gv->state = GR_GPU_UNKNOWN; /* numbers the driver cannot have meant */
                gv->unaccounted = GR_UNKNOWN_U64;
                return 0;
        }
        struct gpu_view view;
        gpu_view_init(x, gi, &view);
        /* what the live (or unseen) listed contexts account for */
        uint64_t owned = 0;
        for (unsigned i = 0; i < g->n_procs; i++) {
                gr_owner_state st = owner_state_x(x, gi, (pid_t)g->procs[i].pid);
                if ((st == GR_OWNER_ALIVE || st == GR_OWNER_UNMAPPED) && g->procs[i].used_bytes != GR_UNKNOWN_U64)
                        owned += g->procs[i].used_bytes;
        }
        gv->unaccounted = g->mem_used > owned ? g->mem_used - owned : 0;

        bool dirty = false, stale = false, busy = false;
        int r = ghost_findings(x, &view, &dirty, &stale);
        if (r == 0)
                r = lineage_findings(x, &view, GR_JUDGE_LEFTOVER, &dirty);
        if (r == 0)
                r = lineage_findings(x, &view, GR_JUDGE_UNSURE, &busy);
        if (r == 0)
                r = zombie_findings(x, gi);
        if (r == 0)
                r = busy_findings(x, &view, &busy);
        if (r == 0)
                r = unmapped_finding(x, gi, &busy);
        if (r == 0)
                r = state_findings(x, gi);
        if (r == 0)
                r = monitor_finding(x, &view);
        if (r < 0)
                return r;
        /* live hidden holders explain memory of their own only as suspects (above) */
        bool anyone = false;
        for (size_t i = 0; i < x->d->n_holders && !anyone; i++) {
                const gr_holder_verdict *v = &x->d->holders[i];
                anyone = holds_minor(v, g->minor) && v->role != GR_ROLE_MONITOR;
        }
        if (!dirty && !stale && !busy && !anyone && view.n_ghosts == 0 && gv->unaccounted > view.allowance &&
            (r = stale_finding(x, &view, &stale)) < 0)
                return r;
        gv->state = dirty ? GR_GPU_DIRTY : stale ? GR_GPU_STALE : busy ? GR_GPU_BUSY : GR_GPU_CLEAN;
        r = no_pod_finding(x, gi);
        return r < 0 ? r : not_assigned_finding(x, gi);
}

static int judge_foreign(struct dx *x)
{
        gr_diagnosis *d = x->d;
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                if (!(v->conditions & (GR_COND_OTHER_NS | GR_COND_OTHER_USER)))
                        continue;
                const gr_process *p = v->process;
                gr_finding *f = add_finding(x, GR_FIND_FOREIGN, -1, false);
                if (!f)
                        return -ENOMEM;
                add_pid(f, p->pid); /* where it runs and whose it is: the faces say (src/words.c) */
        }
        return 0;
}

const gr_holder_verdict *gr_diagnosis_holder(const gr_diagnosis *d, pid_t pid)
{
        size_t lo = 0, hi = d->n_holders;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (d->holders[mid].pid == pid)
                        return &d->holders[mid];
                if (d->holders[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* What this view cannot see; every verdict that depends on it is capped */
static void describe_view(struct dx *x)
{
        const gr_snapshot *s = x->s;
        gr_diagnosis *d = x->d;
        x->foreign_pids = s->pidns == GR_PIDNS_OTHER;
        x->hidden = view_hides(s);
        x->partial_view = s->procs && s->procs->n_unreadable > 0;
        d->foreign_pids = x->foreign_pids;
        d->hidden = x->hidden;
        d->partial_view = x->partial_view;
        size_t o = 0;
        if (x->foreign_pids)
                o += (size_t)snprintf(d->view + o, sizeof(d->view) - o,
                                      "a container's PID namespace: the driver's PIDs are not this /proc's");
        if (x->hidden && o < sizeof(d->view))
                o += (size_t)snprintf(d->view + o, sizeof(d->view) - o, "%sother users' processes are hidden (hidepid)",
                                      o ? "; " : "");
        if (x->partial_view && o < sizeof(d->view))
                o += (size_t)snprintf(d->view + o, sizeof(d->view) - o, "%snot root: %u processes could not be inspected",
                                      o ? "; " : "", s->procs->n_unreadable);
        if (s->procs_partial && o < sizeof(d->view))
                snprintf(d->view + o, sizeof(d->view) - o, "%srecorded without lineage", o ? "; " : "");
}

gr_owner_state gr_gpu_verdict_owner(const gr_gpu_verdict *v, unsigned n_procs, unsigned i)
{
        return v && v->owners && i < n_procs ? v->owners[i] : GR_OWNER_NOT_FOUND;
}

/* The state of each context's PID, for the renderers: facts handed over, not looked up again */
static int record_owners(struct dx *x, unsigned gi)
{
        const gr_gpu *g = &x->s->gpu->gpus[gi];
        if (!g->n_procs)
                return 0;
        gr_owner_state *o = calloc(g->n_procs, sizeof(*o));
        if (!o)
                return -ENOMEM;
        for (unsigned i = 0; i < g->n_procs; i++)
                o[i] = owner_state_x(x, gi, (pid_t)g->procs[i].pid);
        x->d->gpus[gi].owners = o;
        return 0;
}

int gr_diagnose(const gr_snapshot *s, uid_t uid, gr_diagnosis **ret)
{
        gr_diagnosis *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->uid = uid;
        struct dx x = { .s = s, .d = d };
        describe_view(&x);
        d->n_gpus = s->gpu ? s->gpu->n_gpus : 0;
        d->gpus = calloc(d->n_gpus ? d->n_gpus : 1, sizeof(*d->gpus));
        bool gpus_ok = s->gpu && s->gpu->status == GR_GPU_OK;
        int r = d->gpus ? index_owners(&x) : -ENOMEM;
        if (r == 0)
                r = index_procs(&x);
        if (r == 0)
                r = dx_index_listens(&x);
        if (r == 0)
                r = judge_roles(&x);
        for (unsigned i = 0; r == 0 && gpus_ok && i < d->n_gpus; i++)
                attribute_ghosts(&x, i);
        if (r == 0)
                r = dx_judge_lineage(&x);
        if (r == 0)
                r = dx_judge_drm(&x);
        for (unsigned i = 0; r == 0 && i < d->n_gpus; i++) {
                if (!gpus_ok)
                        d->gpus[i].state = GR_GPU_UNKNOWN;
                else
                        r = judge_gpu(&x, i);
                if (r == 0)
                        r = record_owners(&x, i);
        }
        if (r == 0) {
                dx_merge_findings(&x);
                dx_plan_actions(&x);
                r = judge_foreign(&x);
        }
        free(x.owners);
        free(x.scratch);
        free(x.slots);
        free(x.listens);
        if (r < 0) {
                gr_diagnosis_free(d);
                return r;
        }
        *ret = d;
        return 0;
}

void gr_diagnosis_free(gr_diagnosis *d)
{
        if (!d)
                return;
        for (unsigned i = 0; d->gpus && i < d->n_gpus; i++)
                free(d->gpus[i].owners);
        dx_drm_free(d->drm);
        free(d->gpus);
        free(d->holders);
        free(d->findings);
        free(d);
}
