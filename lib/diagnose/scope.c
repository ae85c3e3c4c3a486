/* A diagnosis narrowed to a scope (--job, --cgroup, --container, --pod): its findings, their
 * processes and the GPU states made from them are the scope's only. The snapshot and every
 * holder's verdict stay whole: a verdict is a fact about a process, judged with the whole
 * machine in view (its launcher may be outside the scope), and the plan spares what is out
 * of the scope on its own (lib/act/plan.c). Pure: a function of the diagnosis, the snapshot
 * and the scope.
 *
 * A finding names processes (its PIDs; a teardown names its dead PID, which the table still
 * has when it is a zombie). Those the table has decide: one of the scope's, and the finding is
 * the scope's, with only the scope's processes left in it; none, and it is another's. A finding
 * that names no process the table has (memory being torn down under a PID that is gone, stale
 * memory that nobody holds, PIDs this view cannot see) is a fact about the GPU: nothing ties it
 * to another scope, and it may be this scope's own (the memory of its process that just ended
 * is torn down under that process's PID), so it stays in the scope's report of that GPU and in
 * its state. Its next step is a wait or a look, never a signal: a scope never adds a process to
 * what reap may end. */
#include "gpureap/basic.h"
#include "gpureap/diagnose.h"
#include "basic/names.h"

GR_NAME_TABLE(gr_finding_scope_name, gr_finding_scope, GR_FINDING_GPU, "gpu",
              [GR_FINDING_OUT] = "out", [GR_FINDING_IN] = "in", [GR_FINDING_GPU] = "gpu")

static bool scoped(const gr_scope *sc)
{
        return sc && sc->kind != GR_SCOPE_NONE;
}

/* 1 the scope's, 0 another's, -1 not known: not in the table, or where it runs not read */
static int pid_in_scope(const gr_snapshot *s, const gr_scope *sc, pid_t pid)
{
        const gr_process *p = pid > 0 ? gr_proc_table_find(s->procs, pid) : NULL;
        if (!p || !p->has_details)
                return -1;
        return gr_scope_contains(sc, p) != GR_SCOPE_OUT;
}

gr_finding_scope gr_finding_in_scope(const gr_snapshot *s, const gr_scope *sc, const gr_finding *f)
{
        if (!scoped(sc))
                return GR_FINDING_IN;
        bool known = false;
        for (unsigned i = 0; i < f->n_pids; i++) {
                int m = pid_in_scope(s, sc, f->pids[i]);
                if (m == 1)
                        return GR_FINDING_IN;
                known |= m == 0;
        }
        if (f->n_pids == 0 && f->related > 0 && (f->kind == GR_FIND_TEARDOWN || f->kind == GR_FIND_GHOST)) {
                int m = pid_in_scope(s, sc, f->related); /* a zombie's memory, torn down */
                if (m >= 0)
                        return m ? GR_FINDING_IN : GR_FINDING_OUT;
        }
        return known ? GR_FINDING_OUT : GR_FINDING_GPU;
}

/* A job's finding (its memory is its processes' listed memory) with some processes left out:
 * its GPUs and memory are those of the processes kept */
static void recount_job(const gr_snapshot *s, gr_finding *f)
{
        uint64_t gpus = 0, total = 0;
        for (unsigned gi = 0; gi < s->gpu->n_gpus && gi < GR_FINDING_GPUS_MAX; gi++) {
                if (!gr_finding_on_gpu(f, gi))
                        continue;
                const gr_gpu *g = &s->gpu->gpus[gi];
                uint64_t mem = 0;
                bool on = false;
                for (unsigned k = 0; k < f->n_pids; k++) {
                        const gr_process *p = gr_proc_table_find(s->procs, f->pids[k]);
                        on |= p && g->minor >= 0 && gr_process_fds_on_minor(p, g->minor) > 0;
                        for (unsigned j = 0; j < g->n_procs; j++)
                                if ((pid_t)g->procs[j].pid == f->pids[k] && g->procs[j].used_bytes != GR_UNKNOWN_U64) {
                                        mem += g->procs[j].used_bytes;
                                        on = true;
                                }
                }
                f->gpu_memory[gi] = on ? mem : 0;
                if (on) {
                        gpus |= 1ULL << gi;
                        total += mem;
                }
        }
        if (!gpus)
                return; /* past the 64th GPU, or held through no GPU file: left as it was */
        f->gpus = gpus;
        f->n_gpus = (unsigned)__builtin_popcountll(gpus);
        f->gpu = __builtin_ctzll(gpus);
        f->memory = total;
}

/* Only the scope's processes in a finding of the scope */
static void keep_scope_pids(const gr_snapshot *s, const gr_scope *sc, gr_finding *f)
{
        unsigned n = 0;
        for (unsigned i = 0; i < f->n_pids; i++)
                if (pid_in_scope(s, sc, f->pids[i]) != 0)
                        f->pids[n++] = f->pids[i];
        if (n == f->n_pids)
                return;
        f->n_pids = n;
        if (f->kind == GR_FIND_ORPHAN || f->kind == GR_FIND_SUSPECT || f->kind == GR_FIND_BUSY)
                recount_job(s, f);
}

/* What a finding makes of its GPUs' state, as the diagnosis decides it (diagnose.c) */
static gr_gpu_state state_of(const gr_finding *f)
{
        switch (f->kind) {
        case GR_FIND_GHOST:
        case GR_FIND_ORPHAN:
                return GR_GPU_DIRTY;
        case GR_FIND_TEARDOWN:
        case GR_FIND_STALE:
                return GR_GPU_STALE;
        case GR_FIND_BUSY:
        case GR_FIND_SUSPECT:
        case GR_FIND_UNMAPPED:
                return GR_GPU_BUSY;
        default:
                return GR_GPU_CLEAN;
        }
}

/* dirty before stale before busy before clean, as judge_gpu orders them */
static int rank(gr_gpu_state st)
{
        static const int r[] = { [GR_GPU_CLEAN] = 0, [GR_GPU_BUSY] = 1, [GR_GPU_STALE] = 2, [GR_GPU_DIRTY] = 3 };
        return (unsigned)st < GR_ELEMENTSOF(r) ? r[st] : 0;
}

void gr_diagnosis_narrow(gr_diagnosis *d, const gr_snapshot *s, const gr_scope *sc)
{
        if (!d || !s || !scoped(sc))
                return;
        size_t n = 0;
        for (size_t i = 0; i < d->n_findings; i++) {
                gr_finding f = d->findings[i];
                gr_finding_scope fs = gr_finding_in_scope(s, sc, &f);
                if (fs == GR_FINDING_OUT)
                        continue;
                if (fs == GR_FINDING_IN)
                        keep_scope_pids(s, sc, &f);
                d->findings[n++] = f;
        }
        d->n_findings = n;
        for (unsigned gi = 0; s->gpu && gi < d->n_gpus && gi < s->gpu->n_gpus; gi++) {
                gr_gpu_verdict *gv = &d->gpus[gi];
                if (gv->state == GR_GPU_UNKNOWN)
                        continue; /* the driver's failure is every scope's */
                gr_gpu_state st = GR_GPU_CLEAN;
                for (size_t i = 0; i < d->n_findings; i++)
                        if (gr_finding_on_gpu(&d->findings[i], gi) && rank(state_of(&d->findings[i])) > rank(st))
                                st = state_of(&d->findings[i]);
                gv->state = st;
        }
}
