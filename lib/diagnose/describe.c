/* Findings about jobs, in words. The diagnosis finds facts GPU by GPU (diagnose.c); a job
 * that spans GPUs (a tensor-parallel job of 8 ranks, a dead launcher's workers on 2 GPUs), a
 * dead PID listed on several GPUs, a monitor that holds them all, is one subject: its pieces
 * are merged here into one finding that names its GPUs, with one next step. Then every finding
 * gets its explanation, reason, next step and advice, written once from the merged facts. */
#include <stdio.h>
#include <string.h>

#include "diagnose/dx.h"
#include "gpureap/basic.h"

static const char *plural(unsigned n, const char *one, const char *many)
{
        return n == 1 ? one : many;
}

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

/* ---- words ---- */

struct words {
        char gpus[160]; /* "GPU 3", "GPUs 0-7" */
        char arg[200];  /* "3", "0,1,2,3,4,5,6,7" */
        char pids[600]; /* "555 556" */
        char pids_arg[600]; /* "555,556" */
        char mem[32];
        char who[96];   /* "555 (python3)" */
        char job[96];   /* "process group 700" */
        const char *the_gpu; /* "the GPU", "the GPUs" */
};

static const char *pid_list_sep(const gr_finding *f, const char *sep, char *buf, size_t size)
{
        size_t o = 0;
        buf[0] = '\0';
        for (unsigned i = 0; i < f->n_pids && o < size; i++)
                o += (size_t)snprintf(buf + o, size - o, "%s%d", i ? sep : "", (int)f->pids[i]);
        return buf;
}

static void finding_reason(const struct dx *x, gr_finding *f)
{
        const gr_holder_verdict *v = f->n_pids ? gr_diagnosis_holder(x->d, f->pids[0]) : NULL;
        if (v && v->reason[0])
                gr_strlcpy(f->reason, v->reason, sizeof(f->reason));
}

/* the next step for leftovers: reap kills exactly them, waits for their GPUs' memory, verifies */
static void reap_step(gr_finding *f, const struct words *w)
{
        snprintf(f->next_step, sizeof(f->next_step), "gpureap reap --gpu %s --pid %s", w->arg, w->pids_arg);
}

static void describe_ghost(const struct dx *x, gr_finding *f, const struct words *w)
{
        /* a zombie ghost is still in the table; a ghost that is gone is not; one alive is a
         * listed owner that holds none of the GPU's files */
        const gr_process *gp = dx_find(x, f->related);
        const char *what = !gp ? "gone" : gp->state == 'Z' || gp->state == 'X' ? "a zombie"
                                             : "alive but holds no file of the GPU (its PID may be another process's now, or an MPS client's)";
        const char *how = f->confidence == GR_SURE ? "" :
                          f->confidence == GR_LIKELY ? " (likely, by lineage)" :
                          " (unsure: several ghosts share these holders)";
        snprintf(f->explanation, sizeof(f->explanation),
                 "%s: the driver lists PID %d with %s but it is %s; the memory is kept by %s %s%s, %s that inherited its GPU files and that nvidia-smi cannot name",
                 w->gpus, (int)f->related, w->mem, what, plural(f->n_pids, "process", "processes"), w->pids, how,
                 plural(f->n_pids, "a child", "children"));
        finding_reason(x, f);
        reap_step(f, w);
        if (f->confidence != GR_SURE)
                snprintf(f->advice, sizeof(f->advice), "%s",
                         f->confidence == GR_LIKELY ? "a plain 'gpureap reap' kills only sure leftovers: name them with --pid, or add --likely"
                                                    : "check each with 'gpureap status --why' before naming it with --pid");
}

static void describe_teardown(const struct dx *x, gr_finding *f, const struct words *w)
{
        const char *what = dx_find(x, f->related) ? "a zombie" : "gone";
        snprintf(f->explanation, sizeof(f->explanation),
                 "%s: the driver still lists PID %d with %s, but that process is %s and nothing %s%s %s: its memory is being torn down, or kept by the driver",
                 w->gpus, (int)f->related, w->mem, what, x->partial_view ? "that gpureap could inspect " : "",
                 "holds", w->the_gpu);
        if (x->partial_view) {
                snprintf(f->reason, sizeof(f->reason), "%s", x->d->view);
                snprintf(f->next_step, sizeof(f->next_step), "sudo gpureap status --gpu %s", w->arg);
                snprintf(f->advice, sizeof(f->advice),
                         "run it as root first: a process gpureap could not inspect may hold the memory");
        } else {
                snprintf(f->next_step, sizeof(f->next_step), "gpureap wait --gpu %s --timeout 30s", w->arg);
                if (f->n_gpus > 1)
                        snprintf(f->advice, sizeof(f->advice),
                                 "teardown usually ends within seconds; if the memory stays, each GPU needs a reset (gpureap reset --gpu N) or a reboot");
                else
                        snprintf(f->advice, sizeof(f->advice),
                                 "teardown usually ends within seconds; if the memory stays, the GPU needs a reset (gpureap reset --gpu %s) or a reboot",
                                 w->arg);
        }
}

static void describe_orphan(const struct dx *x, gr_finding *f, const struct words *w)
{
        if (f->job.kind == GR_JOB_RUN)
                snprintf(f->explanation, sizeof(f->explanation),
                         "%s: %u %s holding %s %s left by 'gpureap run' (PID %d), which was killed before it could end %s",
                         w->gpus, f->n_pids, plural(f->n_pids, "process", "processes"), w->mem,
                         plural(f->n_pids, "was", "were"), (int)f->job.pid, plural(f->n_pids, "it", "them"));
        else
                snprintf(f->explanation, sizeof(f->explanation),
                         "%s: %u %s of %s holding %s: leftovers (%s), nothing will use %s again",
                         w->gpus, f->n_pids, plural(f->n_pids, "process", "processes"), w->job, w->mem, w->pids,
                         plural(f->n_pids, "it", "them"));
        finding_reason(x, f);
        reap_step(f, w);
        if (f->confidence != GR_SURE)
                snprintf(f->advice, sizeof(f->advice),
                         "likely, not sure: a plain 'gpureap reap' spares them; name them with --pid, or add --likely");
}

static void describe_suspect(const struct dx *x, gr_finding *f, const struct words *w)
{
        if (f->unlisted) {
                uint64_t un = 0;
                for (unsigned i = 0; i < x->d->n_gpus; i++)
                        if (gr_finding_on_gpu(f, i) && x->d->gpus[i].unaccounted != GR_UNKNOWN_U64)
                                un += x->d->gpus[i].unaccounted;
                char mem[32];
                gr_format_bytes(un, mem, sizeof(mem));
                snprintf(f->explanation, sizeof(f->explanation),
                         "%s: %s holds %s like a CUDA process but the driver does not list it; %s used is accounted for by no listed process",
                         w->gpus, w->who, w->the_gpu, mem);
        } else {
                snprintf(f->explanation, sizeof(f->explanation),
                         "%s: %s%s of %s%s%s: cannot tell a live job from a leftover", w->gpus, w->who,
                         f->n_pids > 1 ? " and others" : "", w->job, f->memory ? ", holding " : "",
                         f->memory ? w->mem : "");
        }
        finding_reason(x, f);
        bool limited = x->hidden || x->partial_view;
        snprintf(f->advice, sizeof(f->advice), "spared unless named: if it is a leftover, gpureap reap --gpu %s --pid %s%s",
                 w->arg, w->pids_arg, limited ? "; as root gpureap sees what this view cannot" : "");
        snprintf(f->next_step, sizeof(f->next_step), "%sgpureap status --why --gpu %s",
                 limited && x->s->uid != 0 ? "sudo " : "", w->arg);
}

static void describe_zombie(const struct dx *x, gr_finding *f, const struct words *w)
{
        char parent[96];
        dx_describe_cmd(x, f->related, parent, sizeof(parent));
        snprintf(f->explanation, sizeof(f->explanation),
                 "%s: PID %d is a zombie: it has already released everything it held; its parent %s has not reaped it",
                 w->gpus, (int)f->pids[0], parent);
        snprintf(f->advice, sizeof(f->advice), "nothing to kill: the zombie goes when PID %d waits for it or exits",
                 (int)f->related);
}

static void describe_busy(const struct dx *x, gr_finding *f, const struct words *w)
{
        bool listed = false, uninspected = false;
        for (unsigned i = 0; i < f->n_pids; i++) {
                listed |= dx_listed_anywhere(x, f->pids[i]);
                uninspected |= !gr_diagnosis_holder(x->d, f->pids[i]);
        }
        if (uninspected && x->partial_view) {
                snprintf(f->reason, sizeof(f->reason), "%s: a process the driver lists could not be judged", x->d->view);
                snprintf(f->next_step, sizeof(f->next_step), "sudo gpureap status --why --gpu %s", w->arg);
        }
        char others[160] = "";
        if (f->n_pids > 1)
                snprintf(others, sizeof(others), " and %u %s of %s", f->n_pids - 1, plural(f->n_pids - 1, "other", "others"),
                         w->job);
        if (listed)
                snprintf(f->explanation, sizeof(f->explanation), "%s: in use by %s%s with %s: a live job", w->gpus,
                         w->who, others, w->mem);
        else
                snprintf(f->explanation, sizeof(f->explanation), "%s: held by %s%s, a live job (no memory of its own)",
                         w->gpus, w->who, others);
        finding_reason(x, f);
        snprintf(f->advice, sizeof(f->advice), "none if this is expected; to stop it: gpureap reap --gpu %s --pid %s",
                 w->arg, w->pids_arg);
}

static void describe_unmapped(const struct dx *x, gr_finding *f, const struct words *w)
{
        snprintf(f->explanation, sizeof(f->explanation),
                 "%s: the driver lists PID %s with %s, which this view cannot see: they may be alive", w->gpus, w->pids,
                 w->mem);
        snprintf(f->reason, sizeof(f->reason), "%s", x->d->view);
        if (x->foreign_pids) {
                snprintf(f->advice, sizeof(f->advice),
                         "gpureap runs in a container's PID namespace, where the driver's (host) PIDs name nothing: run it on the host, or in a container with the host's PID namespace (docker --pid=host, hostPID: true)");
        } else {
                snprintf(f->next_step, sizeof(f->next_step), "sudo gpureap status --gpu %s", w->arg);
                snprintf(f->advice, sizeof(f->advice), "run it as root: this /proc hides other users' processes");
        }
}

static void describe_state(const struct dx *x, gr_finding *f, const struct words *w)
{
        (void)x;
        pid_t pid = f->pids[0];
        if (f->kind == GR_FIND_STOPPED) {
                snprintf(f->explanation, sizeof(f->explanation),
                         "%s: %s is stopped (state T): it acts on SIGTERM only once it gets SIGCONT (reap sends both)",
                         w->gpus, w->who);
                snprintf(f->next_step, sizeof(f->next_step), "kill -CONT %d", (int)pid);
                snprintf(f->advice, sizeof(f->advice), "to resume it: kill -CONT %d", (int)pid);
        } else {
                snprintf(f->explanation, sizeof(f->explanation),
                         "%s: %s is in state D (waiting in the kernel or the driver): usually brief; a signal takes effect when the call returns",
                         w->gpus, w->who);
                snprintf(f->next_step, sizeof(f->next_step), "cat /proc/%d/stack", (int)pid);
                snprintf(f->advice, sizeof(f->advice),
                         "if it stays in D after a SIGKILL, only a reboot ends it (a GPU reset needs the GPU free)");
        }
}

static void describe_monitor(const struct dx *x, gr_finding *f, const struct words *w)
{
        (void)x;
        snprintf(f->explanation, sizeof(f->explanation),
                 "%s: %s %s only the driver's management interface (NVML: nvidia-smi, DCGM, exporters): no GPU memory, not a leftover",
                 w->gpus, w->pids, plural(f->n_pids, "uses", "use"));
}

static void describe_stale(const struct dx *x, gr_finding *f, const struct words *w)
{
        snprintf(f->explanation, sizeof(f->explanation),
                 "%s: %s used and no process %s%s %s: memory still being torn down after a process ended, or kept by the driver",
                 w->gpus, w->mem, x->partial_view ? "that gpureap could inspect " : "", "holds", w->the_gpu);
        if (x->partial_view) {
                snprintf(f->reason, sizeof(f->reason), "%s", x->d->view);
                snprintf(f->next_step, sizeof(f->next_step), "sudo gpureap status --gpu %s", w->arg);
                snprintf(f->advice, sizeof(f->advice),
                         "run it as root first: a process gpureap could not inspect may hold the memory");
        } else {
                snprintf(f->next_step, sizeof(f->next_step), "gpureap wait --gpu %s --timeout 30s", w->arg);
                if (f->n_gpus > 1)
                        snprintf(f->advice, sizeof(f->advice),
                                 "if it stays, each GPU needs a reset (gpureap reset --gpu N) or a reboot");
                else
                        snprintf(f->advice, sizeof(f->advice),
                                 "if it stays, the GPU needs a reset (gpureap reset --gpu %s) or a reboot", w->arg);
        }
}

void dx_describe_findings(struct dx *x)
{
        typedef void (*describe_fn)(const struct dx *, gr_finding *, const struct words *);
        static const describe_fn fns[GR_FIND_KIND_COUNT] = {
                [GR_FIND_GHOST] = describe_ghost,
                [GR_FIND_TEARDOWN] = describe_teardown,
                [GR_FIND_ORPHAN] = describe_orphan,
                [GR_FIND_ZOMBIE] = describe_zombie,
                [GR_FIND_STOPPED] = describe_state,
                [GR_FIND_UNINTERRUPTIBLE] = describe_state,
                [GR_FIND_STALE] = describe_stale,
                [GR_FIND_BUSY] = describe_busy,
                [GR_FIND_MONITOR] = describe_monitor,
                [GR_FIND_SUSPECT] = describe_suspect,
                [GR_FIND_UNMAPPED] = describe_unmapped,
                /* foreign findings are about one process and no GPU: worded where found */
        };
        struct words w;
        for (size_t i = 0; i < x->d->n_findings; i++) {
                gr_finding *f = &x->d->findings[i];
                if ((unsigned)f->kind >= GR_FIND_KIND_COUNT || !fns[f->kind] || f->n_gpus == 0)
                        continue;
                gr_finding_gpus_text(x->s, f, w.gpus, sizeof(w.gpus));
                gr_finding_gpus_arg(x->s, f, w.arg, sizeof(w.arg));
                pid_list_sep(f, " ", w.pids, sizeof(w.pids));
                pid_list_sep(f, ",", w.pids_arg, sizeof(w.pids_arg));
                gr_format_bytes(f->memory, w.mem, sizeof(w.mem));
                if (f->n_pids)
                        dx_describe_cmd(x, f->pids[0], w.who, sizeof(w.who));
                else
                        snprintf(w.who, sizeof(w.who), "-");
                gr_job_text(&f->job, w.job, sizeof(w.job));
                w.the_gpu = f->n_gpus > 1 ? "the GPUs" : "the GPU";
                fns[f->kind](x, f, &w);
        }
}
