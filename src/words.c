/* The words of a finding: its explanation, the decisive evidence, the next step as a command to
 * paste, and advice. The diagnosis (lib) hands facts (the finding, its action, the verdicts);
 * the renderers word them here, each finding as it is printed. */
#include <stdio.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap.h"

struct wctx {
        const gr_snapshot *s;
        const gr_diagnosis *d;
};

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

static const char *plural(unsigned n, const char *one, const char *many)
{
        return n == 1 ? one : many;
}

static const gr_process *find(const struct wctx *x, pid_t pid)
{
        return pid > 0 ? gr_proc_table_find(x->s->procs, pid) : NULL;
}

/* Does the driver list this PID on any GPU? */
static bool listed_anywhere(const struct wctx *x, pid_t pid)
{
        for (unsigned i = 0; x->s->gpu && i < x->s->gpu->n_gpus; i++)
                for (unsigned j = 0; j < x->s->gpu->gpus[i].n_procs; j++)
                        if ((pid_t)x->s->gpu->gpus[i].procs[j].pid == pid)
                                return true;
        return false;
}

/* "812 (torchrun)", "812 (gone)" */
static void describe_cmd(const struct wctx *x, pid_t pid, char *buf, size_t size)
{
        const gr_process *p = find(x, pid);
        snprintf(buf, size, "%d (%s)", (int)pid, p ? p->comm : "gone");
}

static const char *pid_list_sep(const gr_finding *f, const char *sep, char *buf, size_t size)
{
        size_t o = 0;
        buf[0] = '\0';
        for (unsigned i = 0; i < f->n_pids && o < size; i++)
                o += (size_t)snprintf(buf + o, size - o, "%s%d", i ? sep : "", (int)f->pids[i]);
        return buf;
}

static void finding_reason(const struct wctx *x, const gr_finding *f, struct finding_words *o)
{
        const gr_holder_verdict *v = f->n_pids ? gr_diagnosis_holder(x->d, f->pids[0]) : NULL;
        if (v && v->reason[0])
                gr_strlcpy(o->reason, v->reason, sizeof(o->reason));
}

static void describe_ghost(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        /* a zombie ghost is still in the table; a ghost that is gone is not; one alive is a
         * listed owner that holds none of the GPU's files */
        const gr_process *gp = find(x, f->related);
        const char *what = !gp ? "gone" : gp->state == 'Z' || gp->state == 'X' ? "a zombie"
                                             : "alive but holds no file of the GPU (its PID may be another process's now, or an MPS client's)";
        const char *how = f->confidence == GR_SURE ? "" :
                          f->confidence == GR_LIKELY ? " (likely, by lineage)" :
                          " (unsure: several ghosts share these holders)";
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: the driver lists PID %d with %s but it is %s; the memory is kept by %s %s%s, %s that inherited its GPU files and that nvidia-smi cannot name",
                 w->gpus, (int)f->related, w->mem, what, plural(f->n_pids, "process", "processes"), w->pids, how,
                 plural(f->n_pids, "a child", "children"));
        finding_reason(x, f, o);
        if (f->confidence != GR_SURE)
                snprintf(o->advice, sizeof(o->advice), "%s",
                         f->confidence == GR_LIKELY ? "a plain 'gpureap reap' kills only sure leftovers: name them with --pid, or add --likely"
                                                    : "check each with 'gpureap status --why' before naming it with --pid");
}

static void describe_teardown(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        const char *what = find(x, f->related) ? "a zombie" : "gone";
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: the driver still lists PID %d with %s, but that process is %s and nothing %s%s %s: its memory is being torn down, or kept by the driver",
                 w->gpus, (int)f->related, w->mem, what, x->d->partial_view ? "that gpureap could inspect " : "",
                 "holds", w->the_gpu);
        if (x->d->partial_view) {
                snprintf(o->reason, sizeof(o->reason), "%s", x->d->view);
                snprintf(o->advice, sizeof(o->advice),
                         "run it as root first: a process gpureap could not inspect may hold the memory");
        } else {
                if (f->n_gpus > 1)
                        snprintf(o->advice, sizeof(o->advice),
                                 "teardown usually ends within seconds; if the memory stays, each GPU needs a reset (gpureap reset --gpu N) or a reboot");
                else
                        snprintf(o->advice, sizeof(o->advice),
                                 "teardown usually ends within seconds; if the memory stays, the GPU needs a reset (gpureap reset --gpu %s) or a reboot",
                                 w->arg);
        }
}

static void describe_orphan(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        if (f->job.kind == GR_JOB_RUN)
                snprintf(o->explanation, sizeof(o->explanation),
                         "%s: %u %s holding %s %s left by 'gpureap run' (PID %d), which was killed before it could end %s",
                         w->gpus, f->n_pids, plural(f->n_pids, "process", "processes"), w->mem,
                         plural(f->n_pids, "was", "were"), (int)f->job.pid, plural(f->n_pids, "it", "them"));
        else
                snprintf(o->explanation, sizeof(o->explanation),
                         "%s: %u %s of %s holding %s: leftovers (%s), nothing will use %s again",
                         w->gpus, f->n_pids, plural(f->n_pids, "process", "processes"), w->job, w->mem, w->pids,
                         plural(f->n_pids, "it", "them"));
        finding_reason(x, f, o);
        if (f->confidence != GR_SURE)
                snprintf(o->advice, sizeof(o->advice),
                         "likely, not sure: a plain 'gpureap reap' spares them; name them with --pid, or add --likely");
}

static void describe_suspect(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        if (f->unlisted) {
                uint64_t un = 0;
                for (unsigned i = 0; i < x->d->n_gpus; i++)
                        if (gr_finding_on_gpu(f, i) && x->d->gpus[i].unaccounted != GR_UNKNOWN_U64)
                                un += x->d->gpus[i].unaccounted;
                char mem[32];
                gr_format_bytes(un, mem, sizeof(mem));
                snprintf(o->explanation, sizeof(o->explanation),
                         "%s: %s holds %s like a CUDA process but the driver does not list it; %s used is accounted for by no listed process",
                         w->gpus, w->who, w->the_gpu, mem);
        } else {
                snprintf(o->explanation, sizeof(o->explanation),
                         "%s: %s%s of %s%s%s: cannot tell a live job from a leftover", w->gpus, w->who,
                         f->n_pids > 1 ? " and others" : "", w->job, f->memory ? ", holding " : "",
                         f->memory ? w->mem : "");
        }
        finding_reason(x, f, o);
        bool limited = x->d->hidden || x->d->partial_view;
        snprintf(o->advice, sizeof(o->advice), "spared unless named: if it is a leftover, gpureap reap --gpu %s --pid %s%s",
                 w->arg, w->pids_arg, limited ? "; as root gpureap sees what this view cannot" : "");
}

static void describe_zombie(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        char parent[96];
        describe_cmd(x, f->related, parent, sizeof(parent));
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: PID %d is a zombie: it has already released everything it held; its parent %s has not reaped it",
                 w->gpus, (int)f->pids[0], parent);
        snprintf(o->advice, sizeof(o->advice), "nothing to kill: the zombie goes when PID %d waits for it or exits",
                 (int)f->related);
}

static void describe_busy(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        bool listed = false, uninspected = false;
        for (unsigned i = 0; i < f->n_pids; i++) {
                listed |= listed_anywhere(x, f->pids[i]);
                uninspected |= !gr_diagnosis_holder(x->d, f->pids[i]);
        }
        if (uninspected && x->d->partial_view) {
                snprintf(o->reason, sizeof(o->reason), "%s: a process the driver lists could not be judged", x->d->view);
        }
        char others[160] = "";
        if (f->n_pids > 1)
                snprintf(others, sizeof(others), " and %u %s of %s", f->n_pids - 1, plural(f->n_pids - 1, "other", "others"),
                         w->job);
        if (listed)
                snprintf(o->explanation, sizeof(o->explanation), "%s: in use by %s%s with %s: a live job", w->gpus,
                         w->who, others, w->mem);
        else
                snprintf(o->explanation, sizeof(o->explanation), "%s: held by %s%s, a live job (no memory of its own)",
                         w->gpus, w->who, others);
        finding_reason(x, f, o);
        snprintf(o->advice, sizeof(o->advice), "none if this is expected; to stop it: gpureap reap --gpu %s --pid %s",
                 w->arg, w->pids_arg);
}

static void describe_unmapped(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: the driver lists PID %s with %s, which this view cannot see: they may be alive", w->gpus, w->pids,
                 w->mem);
        snprintf(o->reason, sizeof(o->reason), "%s", x->d->view);
        if (x->d->foreign_pids) {
                snprintf(o->advice, sizeof(o->advice),
                         "gpureap runs in a container's PID namespace, where the driver's (host) PIDs name nothing: run it on the host, or in a container with the host's PID namespace (docker --pid=host, hostPID: true)");
        } else {
                snprintf(o->advice, sizeof(o->advice), "run it as root: this /proc hides other users' processes");
        }
}

static void describe_state(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        (void)x;
        pid_t pid = f->pids[0];
        if (f->kind == GR_FIND_STOPPED) {
                snprintf(o->explanation, sizeof(o->explanation),
                         "%s: %s is stopped (state T): it acts on SIGTERM only once it gets SIGCONT (reap sends both)",
                         w->gpus, w->who);
                snprintf(o->advice, sizeof(o->advice), "to resume it: kill -CONT %d", (int)pid);
        } else {
                snprintf(o->explanation, sizeof(o->explanation),
                         "%s: %s is in state D (waiting in the kernel or the driver): usually brief; a signal takes effect when the call returns",
                         w->gpus, w->who);
                snprintf(o->advice, sizeof(o->advice),
                         "if it stays in D after a SIGKILL, only a reboot ends it (a GPU reset needs the GPU free)");
        }
}

static void describe_monitor(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        (void)x;
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: %s %s only the driver's management interface (NVML: nvidia-smi, DCGM, exporters): no GPU memory, not a leftover",
                 w->gpus, w->pids, plural(f->n_pids, "uses", "use"));
}

static void describe_stale(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: %s used and no process %s%s %s: memory still being torn down after a process ended, or kept by the driver",
                 w->gpus, w->mem, x->d->partial_view ? "that gpureap could inspect " : "", "holds", w->the_gpu);
        if (x->d->partial_view) {
                snprintf(o->reason, sizeof(o->reason), "%s", x->d->view);
                snprintf(o->advice, sizeof(o->advice),
                         "run it as root first: a process gpureap could not inspect may hold the memory");
        } else {
                if (f->n_gpus > 1)
                        snprintf(o->advice, sizeof(o->advice),
                                 "if it stays, each GPU needs a reset (gpureap reset --gpu N) or a reboot");
                else
                        snprintf(o->advice, sizeof(o->advice),
                                 "if it stays, the GPU needs a reset (gpureap reset --gpu %s) or a reboot", w->arg);
        }
}

/* On a Kubernetes node: a GPU in use that the kubelet assigned to no listed pod */
static void describe_no_pod(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        (void)x;
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: in use (%s%s%s) but assigned to no pod the kubelet lists: the scheduler takes %s for free",
                 w->gpus, w->mem, f->n_pids ? ", by " : ", no process", f->n_pids ? w->who : "",
                 f->n_gpus > 1 ? "them" : "it");
        snprintf(o->reason, sizeof(o->reason), "the kubelet's List answered: %u pods, none assigned %s",
                 x->s->kubelet.n_pods, f->n_gpus > 1 ? "these GPUs" : "this GPU");
        snprintf(o->advice, sizeof(o->advice),
                 "a process outside Kubernetes, or a pod's leftover after the pod was deleted: see its holders above; cordon the node until the GPU is free");
}

static void describe_not_assigned(const struct wctx *x, const gr_finding *f, const struct words *w,
                                  struct finding_words *o)
{
        (void)x;
        snprintf(o->explanation, sizeof(o->explanation),
                 "%s: held by %s, in a pod that the kubelet did not assign %s: the scheduler counts %s as another pod's or free",
                 w->gpus, w->who, f->n_gpus > 1 ? "them" : "it", f->n_gpus > 1 ? "them" : "it");
        snprintf(o->reason, sizeof(o->reason), "the device manager's checkpoint lists the devices of each pod UID, and not %s for %s",
                 f->n_gpus > 1 ? "these GPUs" : "this GPU", f->n_pids > 1 ? "theirs" : "its");
        snprintf(o->advice, sizeof(o->advice),
                 "a privileged pod, or one started with NVIDIA_VISIBLE_DEVICES=all, opened GPUs it was not given: its pod is named above; fix its spec");
}

/* A process of another PID namespace or another user: where it runs and whose it is */
static void describe_foreign(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        (void)w;
        const gr_process *p = f->n_pids ? find(x, f->pids[0]) : NULL;
        const gr_holder_verdict *v = f->n_pids ? gr_diagnosis_holder(x->d, f->pids[0]) : NULL;
        if (!p || !v)
                return;
        char where[240] = "", who[96], id[80];
        describe_cmd(x, p->pid, who, sizeof(who));
        size_t n = 0;
        if (p->n_nspid > 1)
                n += (size_t)snprintf(where + n, sizeof(where) - n, " runs in another PID namespace as PID %d",
                                      (int)p->nspid[p->n_nspid - 1]);
        if (p->cgroup && gr_cgroup_manager(p->cgroup, id, sizeof(id)) == GR_CG_POD && n < sizeof(where))
                n += (size_t)snprintf(where + n, sizeof(where) - n, "%s Kubernetes pod %s", n ? "," : "", id);
        if (p->cgroup && gr_cgroup_container_id(p->cgroup, id, sizeof(id)) == 0 && n < sizeof(where))
                n += (size_t)snprintf(where + n, sizeof(where) - n, "%s container %s", n ? "," : "", id);
        if (p->cgroup && gr_cgroup_slurm_job(p->cgroup, id, sizeof(id)) == 0 && n < sizeof(where))
                n += (size_t)snprintf(where + n, sizeof(where) - n, "%s Slurm job %s", n ? "," : "", id);
        if ((v->conditions & GR_COND_OTHER_USER) && n < sizeof(where))
                snprintf(where + n, sizeof(where) - n, "%s belongs to uid %u", n ? "," : "", (unsigned)p->uid);
        snprintf(o->explanation, sizeof(o->explanation), "%s%s", who, where);
        snprintf(o->advice, sizeof(o->advice), "%s",
                 (v->conditions & GR_COND_OTHER_USER) ? "ask its owner, or act as root with --all-users" : "act on it from the host");
}

/* The action as a command to paste */
static void action_command(const struct wctx *x, const gr_finding *f, const struct words *w, struct finding_words *o)
{
        const gr_action *a = &f->action;
        const char *sudo = a->as_root ? "sudo " : "";
        pid_t pid = f->n_pids ? f->pids[0] : 0;
        (void)x;
        switch (a->kind) {
        case GR_ACTION_REAP:
                snprintf(o->next_step, sizeof(o->next_step), "gpureap reap --gpu %s --pid %s", w->arg, w->pids_arg);
                break;
        case GR_ACTION_WAIT:
                snprintf(o->next_step, sizeof(o->next_step), "gpureap wait --gpu %s --timeout 30s", w->arg);
                break;
        case GR_ACTION_WHY:
                snprintf(o->next_step, sizeof(o->next_step), "%sgpureap status --why --gpu %s", sudo, w->arg);
                break;
        case GR_ACTION_LOOK_AS_ROOT:
                snprintf(o->next_step, sizeof(o->next_step), "sudo gpureap status --gpu %s", w->arg);
                break;
        case GR_ACTION_RESUME:
                snprintf(o->next_step, sizeof(o->next_step), "kill -CONT %d", (int)pid);
                break;
        case GR_ACTION_KERNEL_STACK:
                snprintf(o->next_step, sizeof(o->next_step), "cat /proc/%d/stack", (int)pid);
                break;
        case GR_ACTION_FROM_HOST: /* no command: where to run it is the advice */
        case GR_ACTION_NONE:
        case GR_ACTION_KIND_COUNT:
                break;
        }
}

void finding_words(const gr_snapshot *s, const gr_diagnosis *d, const gr_finding *f, struct finding_words *o)
{
        typedef void (*describe_fn)(const struct wctx *, const gr_finding *, const struct words *, struct finding_words *);
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
                [GR_FIND_FOREIGN] = describe_foreign,
                [GR_FIND_SUSPECT] = describe_suspect,
                [GR_FIND_UNMAPPED] = describe_unmapped,
                [GR_FIND_NO_POD] = describe_no_pod,
                [GR_FIND_NOT_ASSIGNED] = describe_not_assigned,
        };
        memset(o, 0, sizeof(*o));
        struct wctx x = { s, d };
        struct words w;
        if ((unsigned)f->kind >= GR_FIND_KIND_COUNT || !fns[f->kind] || (f->n_gpus == 0 && f->kind != GR_FIND_FOREIGN))
                return;
        gr_finding_gpus_text(s, f, w.gpus, sizeof(w.gpus));
        gr_finding_gpus_arg(s, f, w.arg, sizeof(w.arg));
        pid_list_sep(f, " ", w.pids, sizeof(w.pids));
        pid_list_sep(f, ",", w.pids_arg, sizeof(w.pids_arg));
        gr_format_bytes(f->memory, w.mem, sizeof(w.mem));
        if (f->n_pids)
                describe_cmd(&x, f->pids[0], w.who, sizeof(w.who));
        else
                snprintf(w.who, sizeof(w.who), "-");
        gr_job_text(&f->job, w.job, sizeof(w.job));
        w.the_gpu = f->n_gpus > 1 ? "the GPUs" : "the GPU";
        fns[f->kind](&x, f, &w, o);
        action_command(&x, f, &w, o);
}

const char *pod_naming_words(gr_pod_naming n)
{
        switch (n) {
        case GR_POD_NAMED: return "named";
        case GR_POD_NOT_ASKED: return "the kubelet was not asked";
        case GR_POD_NO_GPU: return "its processes hold no GPU to join the kubelet's devices on";
        case GR_POD_UNASSIGNED: return "no pod the kubelet lists was assigned the GPUs it holds";
        case GR_POD_AMBIGUOUS: return "the kubelet's devices fit more than one";
        case GR_POD_UNMAPPED: return "the kubelet assigned MIG devices, which are not joined to a GPU yet";
        case GR_POD_NO_CONTAINER: return "its cgroup is the pod's, not a container's";
        }
        return "unknown";
}
