/* Findings about jobs. The diagnosis finds facts GPU by GPU (diagnose.c); a job that spans GPUs
 * (a tensor-parallel job of 8 ranks, a dead launcher's workers on 2 GPUs), a dead PID listed on
 * several GPUs, a monitor that holds them all, is one subject: its pieces are merged here into
 * one finding that names its GPUs, with one next step, a fact (gr_action). The words are the
 * faces' (src/words.c). */
#include <stdio.h>
#include <string.h>

#include "diagnose/dx.h"
#include "gpureap/basic.h"

bool gr_finding_on_gpu(const gr_finding *f, unsigned gi)
{
        if (gi < GR_FINDING_GPUS_MAX)
                return f->gpus >> gi & 1;
        return f->gpu >= 0 && (unsigned)f->gpu == gi;
}

uint64_t gr_finding_memory_on(const gr_finding *f, unsigned gi)
{
        if (!gr_finding_on_gpu(f, gi))
                return 0;
        return gi < GR_FINDING_GPUS_MAX ? f->gpu_memory[gi] : f->memory;
}

unsigned gr_finding_pids_on(const gr_diagnosis *d, const gr_finding *f, const gr_gpu *g)
{
        unsigned n = 0;
        for (unsigned i = 0; i < f->n_pids; i++) {
                const gr_holder_verdict *v = gr_diagnosis_holder(d, f->pids[i]);
                n += v && g->minor >= 0 && gr_process_fds_on_minor(v->process, g->minor) > 0;
        }
        return n;
}

/* The NVML indexes of f's GPUs, ascending */
static unsigned gpu_indexes(const gr_snapshot *s, const gr_finding *f, unsigned *out, unsigned max)
{
        unsigned n = 0;
        for (unsigned i = 0; s->gpu && i < s->gpu->n_gpus && n < max; i++)
                if (gr_finding_on_gpu(f, i))
                        out[n++] = s->gpu->gpus[i].index;
        for (unsigned i = 1; i < n; i++) /* the driver's order is nearly always its indexes' */
                for (unsigned k = i; k > 0 && out[k - 1] > out[k]; k--) {
                        unsigned t = out[k];
                        out[k] = out[k - 1];
                        out[k - 1] = t;
                }
        return n;
}

const char *gr_index_list_text(const unsigned *idx, unsigned n, char *buf, size_t size)
{
        size_t o = 0;
        buf[0] = '\0';
        /* runs of three or more as "0-7", the rest one by one: "0,2,5", "0-3,6" */
        for (unsigned i = 0; i < n && o < size;) {
                unsigned k = i;
                while (k + 1 < n && idx[k + 1] == idx[k] + 1)
                        k++;
                if (k - i >= 2) {
                        o += (size_t)snprintf(buf + o, size - o, "%s%u-%u", i ? "," : "", idx[i], idx[k]);
                        i = k + 1;
                } else {
                        o += (size_t)snprintf(buf + o, size - o, "%s%u", i ? "," : "", idx[i]);
                        i++;
                }
        }
        return buf;
}

const char *gr_finding_gpus_text(const gr_snapshot *s, const gr_finding *f, char *buf, size_t size)
{
        unsigned idx[GR_FINDING_GPUS_MAX + 1];
        unsigned n = gpu_indexes(s, f, idx, GR_ELEMENTSOF(idx));
        char list[GR_FINDING_GPUS_MAX * 4];
        snprintf(buf, size, "%s %s", n == 1 ? "GPU" : "GPUs", gr_index_list_text(idx, n, list, sizeof(list)));
        return buf;
}

const char *gr_finding_gpus_arg(const gr_snapshot *s, const gr_finding *f, char *buf, size_t size)
{
        unsigned idx[GR_FINDING_GPUS_MAX + 1];
        unsigned n = gpu_indexes(s, f, idx, GR_ELEMENTSOF(idx));
        size_t o = 0;
        buf[0] = '\0';
        for (unsigned i = 0; i < n && o < size; i++)
                o += (size_t)snprintf(buf + o, size - o, "%s%u", i ? "," : "", idx[i]);
        return buf;
}

/* ---- one finding per subject ---- */

static bool same_pids(const gr_finding *a, const gr_finding *b)
{
        if (a->n_pids != b->n_pids)
                return false;
        for (unsigned i = 0; i < a->n_pids; i++) {
                bool found = false;
                for (unsigned k = 0; k < b->n_pids && !found; k++)
                        found = a->pids[i] == b->pids[k];
                if (!found)
                        return false;
        }
        return true;
}

/* Are a and b the same subject on two GPUs? */
static bool same_subject(const gr_finding *a, const gr_finding *b)
{
        if (a->kind != b->kind || a->leftover != b->leftover || !a->gpus || !b->gpus || (a->gpus & b->gpus))
                return false;
        switch (a->kind) {
        case GR_FIND_ORPHAN:
        case GR_FIND_SUSPECT:
        case GR_FIND_BUSY:
                return gr_job_equal(&a->job, &b->job) && a->unlisted == b->unlisted;
        case GR_FIND_GHOST: /* one dead PID listed on several GPUs, kept by the same processes */
                return a->related == b->related && a->confidence == b->confidence && same_pids(a, b);
        case GR_FIND_TEARDOWN:
                return a->related == b->related;
        case GR_FIND_ZOMBIE:
        case GR_FIND_STOPPED:
        case GR_FIND_UNINTERRUPTIBLE:
        case GR_FIND_MONITOR:
                return a->related == b->related && same_pids(a, b);
        case GR_FIND_STALE:    /* memory nobody holds, and PIDs this view cannot see: one */
        case GR_FIND_UNMAPPED: /* finding each, whatever GPUs they are on */
        case GR_FIND_NO_POD:   /* and the GPUs in use that no pod was assigned */
        case GR_FIND_NOT_ASSIGNED: /* and the holders of GPUs their pods were not assigned */
                return true;
        case GR_FIND_FOREIGN:
        case GR_FIND_KIND_COUNT:
                break;
        }
        return false;
}

static void absorb(gr_finding *a, const gr_finding *b)
{
        for (unsigned i = 0; i < GR_FINDING_GPUS_MAX; i++)
                if (b->gpus >> i & 1)
                        a->gpu_memory[i] = b->gpu_memory[i];
        a->gpus |= b->gpus;
        a->n_gpus = (unsigned)__builtin_popcountll(a->gpus);
        if (b->gpu < a->gpu)
                a->gpu = b->gpu;
        if (a->memory == GR_UNKNOWN_U64 || b->memory == GR_UNKNOWN_U64)
                a->memory = GR_UNKNOWN_U64;
        else
                a->memory += b->memory;
        for (unsigned i = 0; i < b->n_pids; i++)
                dx_add_pid(a, b->pids[i]);
        if (b->confidence > a->confidence)
                a->confidence = b->confidence; /* the least sure of its parts */
}

void dx_merge_findings(struct dx *x)
{
        gr_diagnosis *d = x->d;
        for (size_t i = 0; i < d->n_findings; i++) {
                gr_finding *f = &d->findings[i];
                if (f->gpu >= 0 && f->gpu < GR_FINDING_GPUS_MAX)
                        f->gpu_memory[f->gpu] = f->memory;
        }
        size_t n = 0;
        for (size_t i = 0; i < d->n_findings; i++) {
                gr_finding *f = &d->findings[i];
                size_t k = 0;
                while (k < n && !same_subject(&d->findings[k], f))
                        k++;
                if (k < n)
                        absorb(&d->findings[k], f);
                else if (n++ != i)
                        d->findings[n - 1] = *f;
        }
        d->n_findings = n;
}

/* ---- the next step of each finding, as a fact (its words are the faces': src/words.c) ---- */

static gr_action action_of(const struct dx *x, const gr_finding *f)
{
        gr_action a = { GR_ACTION_NONE, false, false, false };
        bool limited = x->hidden || x->partial_view;
        switch (f->kind) {
        case GR_FIND_GHOST:
        case GR_FIND_ORPHAN:
                a.kind = GR_ACTION_REAP;
                a.likely = f->confidence == GR_LIKELY;
                a.unsure = f->confidence == GR_UNSURE;
                break;
        case GR_FIND_TEARDOWN:
        case GR_FIND_STALE:
                a.kind = x->partial_view ? GR_ACTION_LOOK_AS_ROOT : GR_ACTION_WAIT;
                a.as_root = x->partial_view;
                break;
        case GR_FIND_SUSPECT:
                a.kind = GR_ACTION_WHY;
                a.as_root = limited && x->s->uid != 0;
                break;
        case GR_FIND_BUSY:
                for (unsigned i = 0; i < f->n_pids && x->partial_view; i++)
                        if (!gr_diagnosis_holder(x->d, f->pids[i])) {
                                a.kind = GR_ACTION_WHY; /* a listed process that could not be judged */
                                a.as_root = true;
                        }
                break;
        case GR_FIND_UNMAPPED:
                a.kind = x->foreign_pids ? GR_ACTION_FROM_HOST : GR_ACTION_LOOK_AS_ROOT;
                a.as_root = !x->foreign_pids;
                break;
        case GR_FIND_STOPPED:
                a.kind = GR_ACTION_RESUME;
                break;
        case GR_FIND_UNINTERRUPTIBLE:
                a.kind = GR_ACTION_KERNEL_STACK;
                break;
        default:
                break;
        }
        return a;
}

void dx_plan_actions(struct dx *x)
{
        for (size_t i = 0; i < x->d->n_findings; i++) {
                gr_finding *f = &x->d->findings[i];
                f->action = f->n_gpus == 0 && f->kind != GR_FIND_FOREIGN ? (gr_action){ 0 } : action_of(x, f);
        }
}
