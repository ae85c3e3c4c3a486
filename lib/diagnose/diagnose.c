/* Diagnosis: a pure function of a snapshot. It decides, for every GPU, whether it is clean,
 * busy, dirty, stale or unknown, and for every holder its role and condition, and writes the
 * findings a person needs: what, who, how much memory, and the next command to type.
 *
 * The sure sign of a leftover is memory: unlisted holders hold memory only when the GPU's used
 * memory exceeds what the live listed contexts account for (measured on an H200, DESIGN.md).
 * Lineage (parent, process group, session) and the device-file footprint say who is who. A name
 * is never evidence: a process called nvidia-smi with a CUDA footprint is not a monitor. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap/diagnose.h"

bool gr_holding_has_cuda_footprint(const gr_holding *h)
{
        if (!h)
                return false;
        unsigned gpu_fds = 0;
        for (unsigned i = 0; i < h->n_gpus; i++)
                gpu_fds += h->gpus[i].n_fds;
        return (h->maps_read && h->n_maps >= GR_CUDA_MAPS_MIN) || gpu_fds >= GR_CUDA_GPU_FDS_MIN;
}

const char *gr_gpu_state_name(gr_gpu_state s)
{
        static const char *const n[] = { "clean", "busy", "dirty", "stale", "unknown" };
        return (unsigned)s < GR_ELEMENTSOF(n) ? n[s] : "unknown";
}

const char *gr_role_name(gr_role r)
{
        static const char *const n[] = { "owner", "hidden_holder", "monitor", "holder" };
        return (unsigned)r < GR_ELEMENTSOF(n) ? n[r] : "holder";
}

const char *gr_finding_kind_name(gr_finding_kind k)
{
        static const char *const n[] = { "ghost", "teardown", "orphan", "zombie", "stopped",
                                         "uninterruptible", "stale", "busy", "monitor", "foreign" };
        return (unsigned)k < GR_ELEMENTSOF(n) ? n[k] : "unknown";
}

const char *gr_confidence_name(gr_confidence c)
{
        static const char *const n[] = { "sure", "likely", "ambiguous" };
        return (unsigned)c < GR_ELEMENTSOF(n) ? n[c] : "ambiguous";
}

struct owner_ix {
        pid_t pid;
        unsigned gpu, idx;
};

struct dx {
        const gr_snapshot *s;
        gr_diagnosis *d;
        size_t cap_findings;
        struct owner_ix *owners;  /* every NVML-listed PID, sorted: lookups stay O(log n) */
        size_t n_owners;
        const gr_holder_verdict **scratch; /* room for every holder */
        int32_t *slots;           /* open-addressing index pid -> table position, -1 empty */
        size_t slot_mask;
};

/* An O(1) index of the process table, so the diagnosis stays linear in its size */
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

static const gr_process *find(const struct dx *x, pid_t pid)
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

static bool alive(const gr_process *p)
{
        return p && p->state != 'Z' && p->state != 'X';
}

/* Is the leader or parent pid alive? In a partial table a missing PID is not evidence. */
static bool leader_alive(const struct dx *x, pid_t pid)
{
        const gr_snapshot *s = x->s;
        const gr_process *p = find(x, pid);
        return p ? alive(p) : s->procs_partial;
}

/* Was the process handed to an init or a subreaper? PID 1, the init of a PID namespace, and
 * systemd (user managers are subreapers) take in orphans. */
static bool reparented(const struct dx *x, const gr_process *p)
{
        const gr_snapshot *s = x->s;
        if (p->ppid == 1)
                return true;
        const gr_process *parent = find(x, p->ppid);
        if (!parent)
                return p->ppid != 0 && !s->procs_partial; /* its parent is gone from this /proc */
        if (parent->n_nspid > 1 && parent->nspid[parent->n_nspid - 1] == 1 &&
            !(p->n_nspid > 1 && p->nspid[p->n_nspid - 1] == 1))
                return false; /* children of a container's init are the container's own */
        return strcmp(parent->comm, "systemd") == 0;
}

static bool is_orphan(const struct dx *x, const gr_process *p)
{
        if (p->run_pid > 0 && !leader_alive(x, p->run_pid))
                return true; /* its 'gpureap run' supervisor was killed */
        bool own_session = p->session == p->pid;
        if (reparented(x, p) && !own_session)
                return true; /* a daemon makes itself a session leader; a leftover worker does not */
        if (p->pgrp != p->pid && p->pgrp > 0 && !leader_alive(x, p->pgrp))
                return true; /* the launcher led the group and is gone */
        if (!own_session && p->session > 0 && !leader_alive(x, p->session) && reparented(x, p))
                return true;
        return false;
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
        qsort(x->owners, x->n_owners, sizeof(*x->owners), cmp_owner);
        return 0;
}

/* the first index entry of pid, or NULL */
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

static gr_finding *add_finding(struct dx *x, gr_finding_kind kind, int gpu, bool leftover)
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
        return f;
}

static void add_pid(gr_finding *f, pid_t pid)
{
        for (unsigned i = 0; i < f->n_pids; i++)
                if (f->pids[i] == pid)
                        return;
        if (f->n_pids < GR_FINDING_PIDS_MAX)
                f->pids[f->n_pids++] = pid;
}

/* "555 556 557", or with sep "," "555,556,557" */
static const char *pid_list_sep(const gr_finding *f, const char *sep, char *buf, size_t size)
{
        size_t o = 0;
        buf[0] = '\0';
        for (unsigned i = 0; i < f->n_pids && o < size; i++)
                o += (size_t)snprintf(buf + o, size - o, "%s%d", i ? sep : "", (int)f->pids[i]);
        return buf;
}

static const char *pid_list(const gr_finding *f, char *buf, size_t size)
{
        return pid_list_sep(f, " ", buf, size);
}

/* the next step for leftovers: reap kills them, waits for this GPU's memory and verifies it */
static void reap_step(gr_finding *f, unsigned gpu_index)
{
        char pids[200];
        snprintf(f->next_step, sizeof(f->next_step), "gpureap reap --gpu %u --pid %s", gpu_index,
                 pid_list_sep(f, ",", pids, sizeof(pids)));
}

static gr_holder_verdict *verdict_of(gr_diagnosis *d, pid_t pid)
{
        return (gr_holder_verdict *)gr_diagnosis_holder(d, pid);
}

static const gr_gpu_proc *listed(const struct dx *x, unsigned gi, pid_t pid)
{
        const struct owner_ix *o = owner_first(x, pid);
        for (; o && o < x->owners + x->n_owners && o->pid == pid; o++)
                if (o->gpu == gi)
                        return &x->s->gpu->gpus[gi].procs[o->idx];
        return NULL;
}

static int cmp_launcher(const void *a, const void *b)
{
        const gr_holder_verdict *x = *(const gr_holder_verdict *const *)a;
        const gr_holder_verdict *y = *(const gr_holder_verdict *const *)b;
        if (x->launcher != y->launcher)
                return (x->launcher > y->launcher) - (x->launcher < y->launcher);
        return (x->pid > y->pid) - (x->pid < y->pid);
}

static int judge_holders(struct dx *x)
{
        const gr_snapshot *s = x->s;
        gr_diagnosis *d = x->d;
        size_t n = s->procs ? s->procs->n_holders : 0;
        d->holders = calloc(n ? n : 1, sizeof(*d->holders));
        if (!d->holders)
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
                v->launcher = p->pgrp > 0 ? p->pgrp : p->session;
                v->launcher_alive = leader_alive(x, v->launcher);
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
                if (p->hold->n_listen > 0)
                        v->conditions |= GR_COND_LISTENING;
                if (is_orphan(x, p))
                        v->conditions |= GR_COND_ORPHAN;
                if (owner_first(x, p->pid) && alive(p))
                        v->role = GR_ROLE_OWNER;
                else if (p->hold->n_gpus == 0)
                        v->role = GR_ROLE_HOLDER;
                else if (gr_holding_has_cuda_footprint(p->hold))
                        v->role = GR_ROLE_HIDDEN_HOLDER;
                else
                        v->role = GR_ROLE_MONITOR;
        }
        /* A reparented process whose group still has a member holding the GPU that was not
         * reparented belongs to a running job (a launcher that double-forks one worker while
         * its other workers stay its children): not a leftover. */
        x->scratch = calloc(d->n_holders ? d->n_holders : 1, sizeof(*x->scratch));
        if (!x->scratch)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_holders; i++)
                x->scratch[i] = &d->holders[i];
        qsort(x->scratch, d->n_holders, sizeof(*x->scratch), cmp_launcher);
        for (size_t i = 0; i < d->n_holders;) {
                size_t j = i;
                bool runs = false;
                for (; j < d->n_holders && x->scratch[j]->launcher == x->scratch[i]->launcher; j++)
                        runs = runs || (!(x->scratch[j]->conditions & GR_COND_ORPHAN) &&
                                        x->scratch[j]->role != GR_ROLE_MONITOR && alive(x->scratch[j]->process));
                for (size_t k = i; runs && k < j; k++)
                        ((gr_holder_verdict *)x->scratch[k])->conditions &= ~(unsigned)GR_COND_ORPHAN;
                i = j;
        }
        return 0;
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

/* Is holder h tied to the ghost by lineage? */
static bool lineage(const struct dx *x, const gr_process *h, pid_t ghost)
{
        if (!h)
                return false;
        if (h->ppid == ghost || h->pgrp == ghost || h->session == ghost)
                return true;
        const gr_process *g = find(x, ghost); /* a zombie ghost is still in the table */
        return g && g->pgrp == h->pgrp && g->pgrp > 1;
}

static void describe_cmd(const struct dx *x, pid_t pid, char *buf, size_t size)
{
        const gr_process *p = find(x, pid);
        snprintf(buf, size, "%d (%s)", (int)pid, p ? p->comm : "gone");
}

static int judge_gpu(struct dx *x, unsigned gi)
{
        const gr_snapshot *s = x->s;
        gr_diagnosis *d = x->d;
        const gr_gpu *g = &s->gpu->gpus[gi];
        gr_gpu_verdict *gv = &d->gpus[gi];
        char mem[32], pids[160], who[96];

        if (!g->procs_ok || g->mem_api == 0) {
                gv->state = GR_GPU_UNKNOWN;
                gv->unaccounted = GR_UNKNOWN_U64;
                return 0;
        }
        /* memory above baseline: v2 reports the reserve apart; v1 counts it in used, and its
         * size is not known, so v1 GPUs are judged with the v2 H200 reserve as the allowance */
        uint64_t used = g->mem_used;
        uint64_t allowance = GR_BASELINE_SLACK + (g->mem_api == 1 ? (640ULL << 20) : 0);
        uint64_t live_owned = 0;
        unsigned n_live = 0, n_ghosts = 0;
        for (unsigned i = 0; i < g->n_procs; i++) {
                const gr_gpu_proc *o = &g->procs[i];
                if (alive(find(x, (pid_t)o->pid))) {
                        n_live++;
                        if (o->used_bytes != GR_UNKNOWN_U64)
                                live_owned += o->used_bytes;
                } else {
                        n_ghosts++;
                }
        }
        gv->unaccounted = used > live_owned ? used - live_owned : 0;

        /* the holders of this GPU's device file, by role */
        pid_t hidden[64], monitors[64];
        unsigned n_hidden = 0, n_monitors = 0;
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                const gr_process *p = v->process;
                if (!holds_minor(v, g->minor))
                        continue;
                if (v->role == GR_ROLE_HIDDEN_HOLDER && n_hidden < GR_ELEMENTSOF(hidden))
                        hidden[n_hidden++] = p->pid;
                if (v->role == GR_ROLE_MONITOR && n_monitors < GR_ELEMENTSOF(monitors))
                        monitors[n_monitors++] = p->pid;
        }

        bool dirty = false, stale = false, busy = false;

        /* ghosts and their hidden holders */
        for (unsigned i = 0; i < g->n_procs; i++) {
                const gr_gpu_proc *o = &g->procs[i];
                pid_t ghost = (pid_t)o->pid;
                const gr_process *gp = find(x, ghost);
                if (alive(gp))
                        continue;
                unsigned n_tied = 0;
                for (unsigned k = 0; k < n_hidden; k++)
                        n_tied += lineage(x, find(x, hidden[k]), ghost);
                gr_format_bytes(o->used_bytes, mem, sizeof(mem));
                if (n_hidden == 0) {
                        gr_finding *f = add_finding(x, GR_FIND_TEARDOWN, (int)gi, true);
                        if (!f)
                                return -ENOMEM;
                        f->related = ghost;
                        f->memory = o->used_bytes;
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: the driver still lists PID %d with %s, but that process is %s and nothing holds the GPU: its memory is being torn down, or kept by the driver",
                                 g->index, (int)ghost, mem, gp ? "a zombie" : "gone");
                        snprintf(f->next_step, sizeof(f->next_step),
                                 "run 'gpureap status --gpu %u' again in a few seconds; if it stays, the GPU needs a reset (nvidia-smi --gpu-reset -i %u) or a reboot",
                                 g->index, g->index);
                        stale = true;
                        continue;
                }
                gr_finding *f = add_finding(x, GR_FIND_GHOST, (int)gi, true);
                if (!f)
                        return -ENOMEM;
                f->related = ghost;
                f->memory = o->used_bytes;
                for (unsigned k = 0; k < n_hidden; k++) {
                        const gr_process *h = find(x, hidden[k]);
                        if (n_tied > 0 && !lineage(x, h, ghost))
                                continue;
                        add_pid(f, hidden[k]);
                        gr_holder_verdict *v = verdict_of(d, hidden[k]);
                        if (v && (!v->ghost || n_tied > 0))
                                v->ghost = ghost;
                }
                if (n_ghosts == 1 && f->n_pids == 1)
                        f->confidence = GR_SURE;
                else if (n_tied > 0 && n_tied < n_hidden)
                        f->confidence = GR_LIKELY;
                else if (n_ghosts == 1)
                        f->confidence = GR_LIKELY; /* one ghost, its memory shared by several */
                else
                        f->confidence = GR_AMBIGUOUS;
                pid_list(f, pids, sizeof(pids));
                const char *how = f->confidence == GR_SURE ? "" :
                                  f->confidence == GR_LIKELY ? " (likely, by lineage)" :
                                  " (ambiguous: several ghosts share these holders)";
                snprintf(f->explanation, sizeof(f->explanation),
                         "GPU %u: the driver lists PID %d with %s but it is %s; the memory is kept by %s %s%s, %s that inherited its GPU files and that nvidia-smi cannot name",
                         g->index, (int)ghost, mem, gp ? "a zombie" : "gone",
                         f->n_pids == 1 ? "process" : "processes", pids, how,
                         f->n_pids == 1 ? "a child" : "children");
                reap_step(f, g->index);
                dirty = true;
        }

        /* hidden holders with no ghost: memory that no listed process accounts for */
        for (unsigned k = 0; k < n_hidden; k++) {
                gr_holder_verdict *v = verdict_of(d, hidden[k]);
                if (!v || v->ghost || n_ghosts > 0)
                        continue;
                if (gv->unaccounted <= allowance)
                        continue; /* holds the device with no memory of its own: nothing to say */
                gr_finding *f = add_finding(x, GR_FIND_GHOST, (int)gi, true);
                if (!f)
                        return -ENOMEM;
                add_pid(f, hidden[k]);
                f->memory = gv->unaccounted;
                f->confidence = n_hidden == 1 ? GR_LIKELY : GR_AMBIGUOUS;
                gr_format_bytes(gv->unaccounted, mem, sizeof(mem));
                describe_cmd(x, hidden[k], who, sizeof(who));
                snprintf(f->explanation, sizeof(f->explanation),
                         "GPU %u: %s holds the GPU like a CUDA process but the driver does not list it; %s used is accounted for by no listed process",
                         g->index, who, mem);
                reap_step(f, g->index);
                dirty = true;
        }

        /* zombie owners: they hold nothing; the parent does not reap them */
        for (unsigned i = 0; i < g->n_procs; i++) {
                const gr_process *z = find(x, (pid_t)g->procs[i].pid);
                if (!z || alive(z))
                        continue;
                gr_finding *f = add_finding(x, GR_FIND_ZOMBIE, (int)gi, false);
                if (!f)
                        return -ENOMEM;
                add_pid(f, z->pid);
                f->related = z->ppid;
                describe_cmd(x, z->ppid, who, sizeof(who));
                snprintf(f->explanation, sizeof(f->explanation),
                         "GPU %u: PID %d is a zombie: it has already released everything it held; its parent %s has not reaped it",
                         g->index, (int)z->pid, who);
                snprintf(f->next_step, sizeof(f->next_step),
                         "nothing to kill: the zombie goes when PID %d waits for it or exits", (int)z->ppid);
        }

        /* orphans, one finding per launcher: the candidates sorted by launcher, then grouped */
        size_t n_orph = 0;
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                if (!(v->conditions & GR_COND_ORPHAN) || !holds_minor(v, g->minor) ||
                    v->role == GR_ROLE_MONITOR || v->ghost)
                        continue; /* a ghost's hidden holders are in the ghost's finding */
                x->scratch[n_orph++] = v;
        }
        qsort(x->scratch, n_orph, sizeof(*x->scratch), cmp_launcher);
        for (size_t i = 0; i < n_orph;) {
                pid_t launcher = x->scratch[i]->launcher;
                gr_finding *f = add_finding(x, GR_FIND_ORPHAN, (int)gi, true);
                if (!f)
                        return -ENOMEM;
                uint64_t total = 0;
                for (; i < n_orph && x->scratch[i]->launcher == launcher; i++) {
                        add_pid(f, x->scratch[i]->pid);
                        const gr_gpu_proc *o = listed(x, gi, x->scratch[i]->pid);
                        if (o && o->used_bytes != GR_UNKNOWN_U64)
                                total += o->used_bytes;
                }
                f->related = launcher;
                f->memory = total;
                gr_format_bytes(total, mem, sizeof(mem));
                pid_list(f, pids, sizeof(pids));
                const gr_process *lp = find(x, launcher);
                pid_t run_pid = x->scratch[i - 1]->process->run_pid;
                if (run_pid > 0 && !leader_alive(x, run_pid))
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: %u %s holding %s %s left by 'gpureap run' (PID %d), which was killed before it could end %s",
                                 g->index, f->n_pids, f->n_pids == 1 ? "process" : "processes", mem,
                                 f->n_pids == 1 ? "was" : "were", (int)run_pid, f->n_pids == 1 ? "it" : "them");
                else if (lp && alive(lp))
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: %u %s of process group %d holding %s %s reparented to %s after %s parent ended: leftovers of a killed run",
                                 g->index, f->n_pids, f->n_pids == 1 ? "process" : "processes", (int)launcher, mem,
                                 f->n_pids == 1 ? "was" : "were", x->scratch[i - 1]->process->ppid == 1 ? "PID 1" : "a subreaper",
                                 f->n_pids == 1 ? "its" : "their");
                else
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: %u %s of process group %d (%s) %s on with %s after the launcher ended: leftovers of a killed run",
                                 g->index, f->n_pids, f->n_pids == 1 ? "process" : "processes", (int)launcher,
                                 lp ? lp->comm : s->procs_partial ? "not recorded" : "its leader is gone",
                                 f->n_pids == 1 ? "lives" : "live", mem);
                reap_step(f, g->index);
                dirty = true;
        }

        /* live owners whose launcher is alive: busy */
        {
                gr_finding *f = NULL;
                uint64_t total = 0;
                for (unsigned i = 0; i < g->n_procs; i++) {
                        const gr_gpu_proc *o = &g->procs[i];
                        const gr_process *p = find(x, (pid_t)o->pid);
                        const gr_holder_verdict *v = gr_diagnosis_holder(d, (pid_t)o->pid);
                        if (!alive(p) || (v && (v->conditions & GR_COND_ORPHAN)))
                                continue;
                        if (!f && !(f = add_finding(x, GR_FIND_BUSY, (int)gi, false)))
                                return -ENOMEM;
                        add_pid(f, p->pid);
                        if (o->used_bytes != GR_UNKNOWN_U64)
                                total += o->used_bytes;
                }
                if (f) {
                        f->memory = total;
                        gr_format_bytes(total, mem, sizeof(mem));
                        pid_list(f, pids, sizeof(pids));
                        describe_cmd(x, f->pids[0], who, sizeof(who));
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: in use by %s%s with %s; %s launcher is alive",
                                 g->index, who, f->n_pids > 1 ? " and others" : "", mem,
                                 f->n_pids > 1 ? "their" : "its");
                        snprintf(f->next_step, sizeof(f->next_step),
                                 "none if this is expected; to stop it: gpureap reap --gpu %u --pid %s",
                                 g->index, pid_list_sep(f, ",", pids, sizeof(pids)));
                        busy = true;
                }
        }

        /* stopped and uninterruptible holders */
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                const gr_process *p = v->process;
                if (!holds_minor(v, g->minor))
                        continue;
                if (v->conditions & GR_COND_STOPPED) {
                        gr_finding *f = add_finding(x, GR_FIND_STOPPED, (int)gi, false);
                        if (!f)
                                return -ENOMEM;
                        add_pid(f, p->pid);
                        describe_cmd(x, p->pid, who, sizeof(who));
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: %s is stopped (state T): it ignores SIGTERM until it gets SIGCONT",
                                 g->index, who);
                        snprintf(f->next_step, sizeof(f->next_step),
                                 "to resume it: kill -CONT %d; to end it: kill -CONT %d; kill %d",
                                 (int)p->pid, (int)p->pid, (int)p->pid);
                }
                if (v->conditions & GR_COND_UNINTERRUPTIBLE) {
                        gr_finding *f = add_finding(x, GR_FIND_UNINTERRUPTIBLE, (int)gi, true);
                        if (!f)
                                return -ENOMEM;
                        add_pid(f, p->pid);
                        describe_cmd(x, p->pid, who, sizeof(who));
                        snprintf(f->explanation, sizeof(f->explanation),
                                 "GPU %u: %s is in state D (waiting inside the kernel or the driver): no signal can end it while it stays so",
                                 g->index, who);
                        snprintf(f->next_step, sizeof(f->next_step),
                                 "see where it waits: cat /proc/%d/stack; if it stays in D, reboot required (a GPU reset needs the GPU free)",
                                 (int)p->pid);
                        dirty = true;
                }
        }

        /* monitors: never leftovers */
        if (n_monitors > 0) {
                gr_finding *f = add_finding(x, GR_FIND_MONITOR, (int)gi, false);
                if (!f)
                        return -ENOMEM;
                for (unsigned k = 0; k < n_monitors; k++)
                        add_pid(f, monitors[k]);
                pid_list(f, pids, sizeof(pids));
                snprintf(f->explanation, sizeof(f->explanation),
                         "GPU %u: %s %s only the driver's management interface (NVML: nvidia-smi, DCGM, exporters): no GPU memory, not a leftover",
                         g->index, pids, n_monitors == 1 ? "uses" : "use");
                snprintf(f->next_step, sizeof(f->next_step), "none");
        }

        /* memory with no holder at all */
        if (!dirty && !busy && n_ghosts == 0 && n_hidden == 0 && gv->unaccounted > allowance) {
                gr_finding *f = add_finding(x, GR_FIND_STALE, (int)gi, true);
                if (!f)
                        return -ENOMEM;
                f->memory = gv->unaccounted;
                gr_format_bytes(gv->unaccounted, mem, sizeof(mem));
                snprintf(f->explanation, sizeof(f->explanation),
                         "GPU %u: %s used and no process holds the GPU: memory still being torn down after a process ended, or kept by the driver",
                         g->index, mem);
                snprintf(f->next_step, sizeof(f->next_step),
                         "run 'gpureap status --gpu %u' again in a few seconds; if it stays, the GPU needs a reset (nvidia-smi --gpu-reset -i %u) or a reboot",
                         g->index, g->index);
                stale = true;
        }

        gv->state = dirty ? GR_GPU_DIRTY : stale ? GR_GPU_STALE : busy ? GR_GPU_BUSY : GR_GPU_CLEAN;
        return 0;
}

static int judge_foreign(struct dx *x)
{
        gr_diagnosis *d = x->d;
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                if (!(v->conditions & (GR_COND_OTHER_NS | GR_COND_OTHER_USER)))
                        continue;
                const gr_process *p = find(x, v->pid);
                if (!p)
                        continue;
                gr_finding *f = add_finding(x, GR_FIND_FOREIGN, -1, false);
                if (!f)
                        return -ENOMEM;
                add_pid(f, p->pid);
                char where[200] = "", who[96];
                describe_cmd(x, p->pid, who, sizeof(who));
                size_t o = 0;
                if (p->n_nspid > 1)
                        o += (size_t)snprintf(where + o, sizeof(where) - o,
                                              " runs in another PID namespace as PID %d", (int)p->nspid[p->n_nspid - 1]);
                char id[80];
                if (p->cgroup && gr_cgroup_container_id(p->cgroup, id, sizeof(id)) == 0 && o < sizeof(where))
                        o += (size_t)snprintf(where + o, sizeof(where) - o, "%s container %s", o ? "," : "", id);
                if (p->cgroup && gr_cgroup_slurm_job(p->cgroup, id, sizeof(id)) == 0 && o < sizeof(where))
                        o += (size_t)snprintf(where + o, sizeof(where) - o, "%s Slurm job %s", o ? "," : "", id);
                if ((v->conditions & GR_COND_OTHER_USER) && o < sizeof(where))
                        snprintf(where + o, sizeof(where) - o, "%s belongs to uid %u", o ? "," : "", (unsigned)p->uid);
                snprintf(f->explanation, sizeof(f->explanation), "%s%s", who, where);
                snprintf(f->next_step, sizeof(f->next_step), "%s",
                         (v->conditions & GR_COND_OTHER_USER) ? "ask its owner, or act as root" : "none: act on it from the host");
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

int gr_diagnose(const gr_snapshot *s, uid_t uid, gr_diagnosis **ret)
{
        gr_diagnosis *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->uid = uid;
        struct dx x = { .s = s, .d = d };
        d->n_gpus = s->gpu ? s->gpu->n_gpus : 0;
        d->gpus = calloc(d->n_gpus ? d->n_gpus : 1, sizeof(*d->gpus));
        int r = d->gpus ? index_owners(&x) : -ENOMEM;
        if (r == 0)
                r = index_procs(&x);
        if (r == 0)
                r = judge_holders(&x);
        for (unsigned i = 0; r == 0 && i < d->n_gpus; i++) {
                if (s->gpu->status != GR_GPU_OK)
                        d->gpus[i].state = GR_GPU_UNKNOWN;
                else
                        r = judge_gpu(&x, i);
        }
        if (r == 0)
                r = judge_foreign(&x);
        free(x.owners);
        free(x.scratch);
        free(x.slots);
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
        free(d->gpus);
        free(d->holders);
        free(d->findings);
        free(d);
}
