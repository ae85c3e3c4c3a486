/* The status report, for a person at a terminal. The first screen answers for every GPU in one
 * line: its state, its memory, and who is on it (the job, the leftover, with the short reason).
 * Details follow only for what is not clean (for everything with --why): the GPUs that need
 * explaining, the holders grouped by job across GPUs, the findings (one per job, naming its
 * GPUs) with the next step to type, and with --why the evidence. Lines fit the terminal; a pipe
 * gets them whole. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap-config.h"
#include "gpureap.h"

struct out {
        struct term t;
        bool why;
        const gr_snapshot *s;
        const gr_diagnosis *d;
        const struct gpu_selection *sel;
};

static const char *state_color(gr_gpu_state st)
{
        switch (st) {
        case GR_GPU_CLEAN: return "\033[1;32m";
        case GR_GPU_BUSY: return "\033[1;33m";
        case GR_GPU_DIRTY: return "\033[1;31m";
        case GR_GPU_STALE: return "\033[1;35m";
        case GR_GPU_UNKNOWN: return "\033[1;31m";
        }
        return "";
}

static void state_badge(gr_gpu_state st, char *buf, size_t size)
{
        snprintf(buf, size, "%s", gr_gpu_state_name(st));
        for (char *c = buf; *c; c++)
                *c = (char)(*c - 32 * (*c >= 'a' && *c <= 'z'));
}

static const gr_gpu_verdict *gpu_verdict(const struct out *o, unsigned gi)
{
        return o->d && gi < o->d->n_gpus ? &o->d->gpus[gi] : NULL;
}

/* What the diagnosis found of context i of GPU gi (without one: read off the snapshot) */
static gr_owner_state owner_of(const struct out *o, unsigned gi, unsigned i)
{
        const gr_gpu *g = &o->s->gpu->gpus[gi];
        const gr_gpu_verdict *v = gpu_verdict(o, gi);
        return v ? gr_gpu_verdict_owner(v, g->n_procs, i) : gr_diagnosis_owner_state(o->s, gi, (pid_t)g->procs[i].pid);
}

/* texts cut at a fixed size may end mid-character */
static const char *safe(const char *in, char *buf, size_t size)
{
        gr_strlcpy(buf, in, size);
        gr_text_sanitize(buf);
        return buf;
}

static const char *comm_of(const struct out *o, pid_t pid)
{
        const gr_process *p = gr_proc_table_find(o->s->procs, pid);
        return p ? p->comm : NULL;
}

/* Add the NVML indexes of the GPUs whose device file p holds to idx (a set, ascending) */
static void add_held_gpus(const struct out *o, const gr_process *p, unsigned *idx, unsigned *n, unsigned max)
{
        for (unsigned i = 0; p->hold && i < o->s->gpu->n_gpus; i++) {
                unsigned gx = o->s->gpu->gpus[i].index, k = 0;
                if (gr_process_fds_on_minor(p, o->s->gpu->gpus[i].minor) == 0)
                        continue;
                while (k < *n && idx[k] < gx)
                        k++;
                if ((k < *n && idx[k] == gx) || *n == max)
                        continue;
                memmove(idx + k + 1, idx + k, (*n - k) * sizeof(*idx));
                idx[k] = gx;
                (*n)++;
        }
}

/* The GPUs whose device file p holds: "0-7", "3", "-" */
static const char *held_gpus(const struct out *o, const gr_process *p, char *buf, size_t size)
{
        unsigned idx[256], n = 0;
        add_held_gpus(o, p, idx, &n, GR_ELEMENTSOF(idx));
        if (n == 0)
                snprintf(buf, size, "-");
        else
                gr_index_list_text(idx, n, buf, size);
        return buf;
}

/* ---- the job a holder belongs to, and its launcher ---- */

static gr_job job_of(const struct out *o, const gr_process *p)
{
        const gr_holder_verdict *v = o->d ? gr_diagnosis_holder(o->d, p->pid) : NULL;
        if (v)
                return v->job;
        gr_job j = { .kind = GR_JOB_GROUP, .pid = p->pgrp > 0 ? p->pgrp : p->session };
        return j;
}

/* "process group 700 (bash, alive)", "torchelastic run r1 (agent 812 torchrun, alive)" */
static void launcher_text(const struct out *o, const gr_process *member, const gr_job *j, char *buf, size_t size)
{
        char job[96];
        gr_job_text(j, job, sizeof(job));
        const gr_holder_verdict *v = o->d ? gr_diagnosis_holder(o->d, member->pid) : NULL;
        pid_t lpid = j->kind == GR_JOB_TORCHELASTIC ? (v ? v->launcher : 0) : j->pid;
        const gr_process *lp = lpid > 0 ? gr_proc_table_find(o->s->procs, lpid) : NULL;
        bool alive = lp && lp->state != 'Z' && lp->state != 'X';
        const char *gone = o->s->procs_partial ? "not recorded" : "gone";
        switch (j->kind) {
        case GR_JOB_TORCHELASTIC:
                if (lp)
                        snprintf(buf, size, "%s (agent %d %s, %s)", job, (int)lpid, lp->comm, alive ? "alive" : "zombie");
                else
                        snprintf(buf, size, "%s (agent %s)", job, gone);
                break;
        case GR_JOB_RUN:
                snprintf(buf, size, "%s (%s)", job, lp ? (alive ? "alive" : "zombie") : gone);
                break;
        case GR_JOB_PROCESS:
                snprintf(buf, size, "%s (%s)", job, lp ? lp->comm : gone);
                break;
        case GR_JOB_GROUP:
                if (lp)
                        snprintf(buf, size, "%s (%s, %s)", job, lp->comm, alive ? "alive" : "zombie");
                else
                        snprintf(buf, size, "%s (%s)", job, gone);
                break;
        case GR_JOB_LAUNCHER: {
                /* what serve saw of it: its name, and how it ended */
                const gr_seen *h = member->seen;
                const char *sig = h && h->end == GR_END_SIGNAL ? sigabbrev_np(h->end_status) : NULL;
                if (lp && alive && h && lp->start_time == h->launcher_start)
                        snprintf(buf, size, "%s (%s, alive)", job, lp->comm);
                else if (h && h->end == GR_END_SIGNAL)
                        snprintf(buf, size, "%s (%s, killed by SIG%s)", job, h->launcher_comm, sig ? sig : "?");
                else if (h && h->end == GR_END_EXIT)
                        snprintf(buf, size, "%s (%s, exited with status %d)", job, h->launcher_comm, h->end_status);
                else
                        snprintf(buf, size, "%s (%s, gone)", job, h ? h->launcher_comm : "?");
                break;
        }
        }
}

/* "process group 700 (python3)", "torchelastic run r1", "gpureap run 900", "process 812 (x)" */
static void job_label(const struct out *o, const gr_job *j, char *buf, size_t size)
{
        char job[96];
        gr_job_text(j, job, sizeof(job));
        const char *c = j->kind == GR_JOB_GROUP || j->kind == GR_JOB_PROCESS ? comm_of(o, j->pid) : NULL;
        if (c)
                snprintf(buf, size, "%s (%s)", job, c);
        else
                snprintf(buf, size, "%s", job);
}

/* ---- the first screen: one line per GPU ---- */

static int finding_rank(const gr_finding *f)
{
        static const int rank[GR_FIND_KIND_COUNT] = {
                [GR_FIND_GHOST] = 0, [GR_FIND_ORPHAN] = 1, [GR_FIND_TEARDOWN] = 2, [GR_FIND_STALE] = 3,
                [GR_FIND_SUSPECT] = 4, [GR_FIND_UNMAPPED] = 5, [GR_FIND_ZOMBIE] = 6, [GR_FIND_STOPPED] = 7,
                [GR_FIND_UNINTERRUPTIBLE] = 8, [GR_FIND_BUSY] = 9, [GR_FIND_MONITOR] = 10, [GR_FIND_FOREIGN] = 11,
                [GR_FIND_NO_POD] = 12, [GR_FIND_NOT_ASSIGNED] = 13,
        };
        return (unsigned)f->kind < GR_FIND_KIND_COUNT ? rank[f->kind] : 14;
}

/* Who a finding is about, in a few words: "ghost of PID 459, kept by 597 (python3)",
 * "leftover 720 (python3)", "process group 700 (torchrun), live" */
static void finding_label(const struct out *o, const gr_finding *f, char *buf, size_t size)
{
        char lead[160] = "", job[200];
        if (f->n_pids > 0) {
                const char *c = comm_of(o, f->pids[0]);
                snprintf(lead, sizeof(lead), "%d (%s)%s", (int)f->pids[0], c ? c : "gone",
                         f->n_pids > 1 ? " and others" : "");
        }
        job_label(o, &f->job, job, sizeof(job));
        switch (f->kind) {
        case GR_FIND_GHOST:
                snprintf(buf, size, "ghost of PID %d, kept by %s", (int)f->related, lead);
                break;
        case GR_FIND_TEARDOWN:
                snprintf(buf, size, "PID %d ended, memory being torn down", (int)f->related);
                break;
        case GR_FIND_ORPHAN:
                if (f->n_pids == 1) /* (its reason names what it was left by) */
                        snprintf(buf, size, "leftover %s", lead);
                else
                        snprintf(buf, size, "%u leftovers of %s", f->n_pids, job);
                break;
        case GR_FIND_SUSPECT:
                snprintf(buf, size, "unsure: %s of %s", lead, job);
                break;
        case GR_FIND_BUSY:
                snprintf(buf, size, "%s, live", job);
                break;
        case GR_FIND_STALE:
                snprintf(buf, size, "no holder: memory not given back");
                break;
        case GR_FIND_UNMAPPED:
                snprintf(buf, size, "PID %d%s not visible here", (int)f->pids[0], f->n_pids > 1 ? " and others" : "");
                break;
        case GR_FIND_ZOMBIE:
                snprintf(buf, size, "zombie %d, its parent %d does not reap it", (int)f->pids[0], (int)f->related);
                break;
        case GR_FIND_STOPPED:
                snprintf(buf, size, "%s, stopped", lead);
                break;
        case GR_FIND_UNINTERRUPTIBLE:
                snprintf(buf, size, "%s, in state D", lead);
                break;
        case GR_FIND_MONITOR:
                snprintf(buf, size, "monitor %s", lead);
                break;
        case GR_FIND_NO_POD:
                snprintf(buf, size, "in use, assigned to no pod");
                break;
        case GR_FIND_NOT_ASSIGNED:
                snprintf(buf, size, "held by %s, whose pod was not assigned it", lead);
                break;
        case GR_FIND_FOREIGN:
        case GR_FIND_KIND_COUNT:
                snprintf(buf, size, "%s", lead);
                break;
        }
}

/* Who is on GPU gi, from its most telling finding, with how sure and why: "ghost of PID 459,
 * kept by 597 (python3) [sure]: it keeps the GPU memory of PID 459, ..." */
static void who_text(const struct out *o, unsigned gi, char *buf, size_t size)
{
        const gr_gpu *g = &o->s->gpu->gpus[gi];
        const gr_gpu_verdict *v = gpu_verdict(o, gi);
        const gr_finding *best = NULL;
        unsigned n = 0;
        for (size_t i = 0; o->d && i < o->d->n_findings; i++) {
                const gr_finding *f = &o->d->findings[i];
                if (!gr_finding_on_gpu(f, gi))
                        continue;
                n++;
                if (!best || finding_rank(f) < finding_rank(best))
                        best = f;
        }
        if (v && v->state == GR_GPU_UNKNOWN) {
                snprintf(buf, size, "cannot be read%s%s", g->error[0] ? ": " : "", g->error);
                return;
        }
        if (!best) {
                snprintf(buf, size, "-");
                return;
        }
        struct finding_words fw;
        finding_words(o->s, o->d, best, &fw);
        char who[400], reason[sizeof(fw.reason)];
        finding_label(o, best, who, sizeof(who));
        safe(fw.reason, reason, sizeof(reason));
        bool judged = best->leftover || best->kind == GR_FIND_SUSPECT;
        /* the confidence before the reason: a narrow terminal cuts the reason first */
        size_t w = (size_t)snprintf(buf, size, "%s", who);
        if (judged && w < size)
                w += (size_t)snprintf(buf + w, size - w, " [%s]", gr_confidence_name(best->confidence));
        if (reason[0] && w < size)
                w += (size_t)snprintf(buf + w, size - w, ": %s", reason);
        if (n > 1 && w < size)
                snprintf(buf + w, size - w, " (+%u more)", n - 1);
}

static void memory_cell(const gr_gpu *g, char *buf, size_t size)
{
        if (g->mem_api == 0) {
                snprintf(buf, size, "unknown");
                return;
        }
        char used[32], total[32];
        gr_format_bytes(g->mem_used, used, sizeof(used));
        gr_format_bytes(g->mem_total, total, sizeof(total));
        const char *uu = strrchr(used, ' '), *tu = strrchr(total, ' ');
        if (uu && tu && strcmp(uu, tu) == 0) /* "68.4/140.4 GiB" */
                snprintf(buf, size, "%.*s/%s", (int)(uu - used), used, total);
        else
                snprintf(buf, size, "%s/%s", used, total);
}

static void print_gpu_lines(const struct out *o)
{
        static const struct table_col cols[] = {
                { .head = "GPU" }, { .head = "STATE" }, { .head = "MEMORY" }, { .head = "WHO", .min = 20 },
        };
        struct table tb;
        table_init(&tb, cols, GR_ELEMENTSOF(cols));
        for (unsigned i = 0; i < o->s->gpu->n_gpus; i++) {
                const gr_gpu *g = &o->s->gpu->gpus[i];
                if (!gpu_selected(o->sel, g))
                        continue;
                const gr_gpu_verdict *v = gpu_verdict(o, i);
                char idx[16], badge[16] = "-", mem[64], who[1024];
                snprintf(idx, sizeof(idx), "%u", g->index);
                if (v)
                        state_badge(v->state, badge, sizeof(badge));
                memory_cell(g, mem, sizeof(mem));
                who_text(o, i, who, sizeof(who));
                const char *cells[] = { idx, badge, mem, who };
                table_add(&tb, cells, 1, v ? state_color(v->state) : NULL);
        }
        table_print(&tb, &o->t, 0);
        table_release(&tb);
}

/* ---- a GPU that needs explaining ---- */

static bool gpu_detailed(const struct out *o, unsigned gi)
{
        const gr_gpu *g = &o->s->gpu->gpus[gi];
        const gr_gpu_verdict *v = gpu_verdict(o, gi);
        if (!gpu_selected(o->sel, g))
                return false;
        if (o->why || !v)
                return true;
        if (v->state == GR_GPU_CLEAN)
                return false;
        if (v->state != GR_GPU_BUSY || g->error[0] || g->mem_inconsistent || g->minor < 0 ||
            (v->unaccounted != GR_UNKNOWN_U64 && v->unaccounted > GR_BASELINE_SLACK))
                return true;
        /* busy with live jobs alone: the line above and the job's holders say it all */
        for (size_t i = 0; i < o->d->n_findings; i++) {
                const gr_finding *f = &o->d->findings[i];
                if (gr_finding_on_gpu(f, gi) && f->kind != GR_FIND_BUSY && f->kind != GR_FIND_MONITOR)
                        return true;
        }
        for (unsigned i = 0; i < g->n_procs; i++)
                if (owner_of(o, gi, i) != GR_OWNER_ALIVE)
                        return true;
        return false;
}

static void print_memory(const struct out *o, const gr_gpu *g, const gr_gpu_verdict *v)
{
        char used[32], res[32], total[32], fr[32], un[32], line[512];
        if (g->mem_api == 0) {
                out_linef(&o->t, "  memory   unknown");
                return;
        }
        gr_format_bytes(g->mem_used, used, sizeof(used));
        gr_format_bytes(g->mem_total, total, sizeof(total));
        gr_format_bytes(g->mem_free, fr, sizeof(fr));
        size_t n;
        if (g->mem_api == 2)
                n = (size_t)snprintf(line, sizeof(line), "%s used of %s, %s free, %s reserved by the driver", used, total,
                                     fr, gr_format_bytes(g->mem_reserved, res, sizeof(res)));
        else
                n = (size_t)snprintf(line, sizeof(line), "%s used of %s (driver reserve included), %s free", used,
                                     total, fr);
        if (n < sizeof(line) && g->mem_inconsistent)
                snprintf(line + n, sizeof(line) - n, "; inconsistent: not used for any decision");
        else if (n < sizeof(line) && v && v->unaccounted != GR_UNKNOWN_U64 && v->unaccounted > GR_BASELINE_SLACK)
                snprintf(line + n, sizeof(line) - n, "; %s not accounted for by a live process",
                         gr_format_bytes(v->unaccounted, un, sizeof(un)));
        fputs("  memory   ", o->t.f);
        out_wrap(&o->t, 11, 11, line);
}

static void print_owners(const struct out *o, unsigned gi)
{
        const gr_gpu *g = &o->s->gpu->gpus[gi];
        if (!g->procs_ok || g->n_procs == 0) {
                out_linef(&o->t, "  context owners (NVML): %s", g->procs_ok ? "none" : "unknown");
                return;
        }
        out_linef(&o->t, "  context owners (NVML):");
        static const struct table_col cols[] = {
                { .head = "PID" }, { .head = "TYPE" }, { .head = "MEMORY" }, { .head = "PROCESS" },
                { .head = "COMMAND", .min = 10 },
        };
        struct table tb;
        table_init(&tb, cols, GR_ELEMENTSOF(cols));
        for (unsigned i = 0; i < g->n_procs; i++) {
                const gr_gpu_proc *op = &g->procs[i];
                char pid[16], mem[32];
                snprintf(pid, sizeof(pid), "%u", op->pid);
                gr_format_bytes(op->used_bytes, mem, sizeof(mem));
                gr_owner_state st = owner_of(o, gi, i);
                const gr_process *p = st == GR_OWNER_UNMAPPED ? NULL : gr_proc_table_find(o->s->procs, (pid_t)op->pid);
                const char *state = st == GR_OWNER_ALIVE ? "alive" : st == GR_OWNER_ZOMBIE ? "zombie"
                                    : st == GR_OWNER_UNMAPPED ? "not visible" : "not found";
                const char *cmd = p ? (p->cmdline ? p->cmdline : p->comm) : "-";
                const char *cells[] = { pid, gr_ctx_kind_name((gr_ctx_kind)op->kind), mem, state, cmd[0] ? cmd : "-" };
                table_add(&tb, cells, -1, NULL);
        }
        table_print(&tb, &o->t, 4);
        table_release(&tb);
}

static void print_gpu(const struct out *o, unsigned gi)
{
        const gr_gpu *g = &o->s->gpu->gpus[gi];
        const gr_gpu_verdict *v = gpu_verdict(o, gi);
        char head[32], badge[16] = "", dev[1100] = "";
        snprintf(head, sizeof(head), "GPU %u", g->index);
        if (v)
                state_badge(v->state, badge, sizeof(badge));
        if (g->minor >= 0)
                snprintf(dev, sizeof(dev), "%s/nvidia%d", o->s->dev_dir, g->minor);
        fputc('\n', o->t.f);
        fputs(head, o->t.f);
        if (v) {
                fputs("  ", o->t.f);
                out_color(&o->t, state_color(v->state));
                fputs(badge, o->t.f);
                out_reset(&o->t);
        }
        /* the rest of the heading, on more lines between fields where it does not fit */
        const char *fields[] = { g->name[0] ? g->name : "(no name)", g->pci_bus_id[0] ? g->pci_bus_id : "(bus ?)",
                                 g->uuid[0] ? g->uuid : "(uuid ?)", dev };
        out_fields(&o->t, text_width(head) + (v ? 2 + text_width(badge) : 0), 2, fields, GR_ELEMENTSOF(fields));
        print_memory(o, g, v);
        if (g->error[0]) {
                fputs("  error    ", o->t.f);
                out_wrap(&o->t, 11, 11, g->error);
        }
        print_owners(o, gi);
        if (g->minor < 0) {
                out_linef(&o->t, "  holders: unknown (the driver gave no minor number)");
                return;
        }
        char pids[512] = "";
        size_t n = 0;
        unsigned k = 0;
        for (size_t i = 0; o->s->procs && i < o->s->procs->n && n < sizeof(pids); i++)
                if (gr_process_fds_on_minor(&o->s->procs->procs[i], g->minor) > 0)
                        n += (size_t)snprintf(pids + n, sizeof(pids) - n, "%s%d", k++ ? " " : "",
                                              (int)o->s->procs->procs[i].pid);
        out_linef(&o->t, "  holders (open %s): %s", dev, k ? pids : "none");
}

/* ---- holders, grouped by job across GPUs ---- */

/* With a scope, only its processes are shown (their findings are the scope's: the diagnosis
 * was narrowed to it) */
static bool in_scope(const struct out *o, const gr_process *p)
{
        return !o->sel || !o->sel->scope || gr_scope_contains(o->sel->scope, p) != GR_SCOPE_OUT;
}

/* Does p belong in the holder tables: it holds a GPU shown in detail, or (other) no GPU of the
 * selection at all (control files only, GPUs filtered out, every holder when the driver could
 * not be read) */
static bool shown_holder(const struct out *o, const gr_process *p, bool other)
{
        if (!p->hold || !in_scope(o, p))
                return false;
        const gr_gpu_report *rep = o->s->gpu;
        bool on_selected = false;
        for (unsigned j = 0; j < rep->n_gpus && !on_selected; j++)
                on_selected = gr_process_fds_on_minor(p, rep->gpus[j].minor) > 0 &&
                              (gpu_selected(o->sel, &rep->gpus[j]) || (o->sel && o->sel->list));
        if (other)
                return !on_selected;
        for (unsigned j = 0; j < rep->n_gpus; j++)
                if (gr_process_fds_on_minor(p, rep->gpus[j].minor) > 0 && gpu_selected(o->sel, &rep->gpus[j]) &&
                    (o->why || (gpu_verdict(o, j) && gpu_verdict(o, j)->state != GR_GPU_CLEAN)))
                        return true;
        return false;
}

static void role_text(const struct out *o, const gr_process *p, char *buf, size_t size)
{
        const gr_holder_verdict *v = o->d ? gr_diagnosis_holder(o->d, p->pid) : NULL;
        if (!v) {
                snprintf(buf, size, "-");
                return;
        }
        size_t n = 0;
        if (v->role == GR_ROLE_HIDDEN_HOLDER && v->ghost)
                n += (size_t)snprintf(buf + n, size - n, "hidden holder of %d", (int)v->ghost);
        else
                n += (size_t)snprintf(buf + n, size - n, "%s", v->role == GR_ROLE_HIDDEN_HOLDER ? "hidden holder" :
                                      v->role == GR_ROLE_OWNER ? "owner" :
                                      v->role == GR_ROLE_MONITOR ? "monitor" : "holder");
        if (v->role != GR_ROLE_MONITOR && n < size)
                n += (size_t)snprintf(buf + n, size - n, ", %s%s%s", gr_judgement_name(v->judgement),
                                      v->judgement == GR_JUDGE_UNSURE ? "" : " ",
                                      v->judgement == GR_JUDGE_UNSURE ? "" : gr_confidence_name(v->confidence));
        static const struct { unsigned bit; const char *word; } conds[] = {
                { GR_COND_STOPPED, "stopped" }, { GR_COND_UNINTERRUPTIBLE, "state D" },
                { GR_COND_ZOMBIE, "zombie" }, { GR_COND_OTHER_NS, "container" },
                { GR_COND_OTHER_USER, "other user" },
        };
        for (size_t i = 0; i < GR_ELEMENTSOF(conds) && n < size; i++)
                if (v->conditions & conds[i].bit)
                        n += (size_t)snprintf(buf + n, size - n, ", %s", conds[i].word);
}

/* its pod as the kubelet (or the runtime) names it, else its UID and why it is not named */
static void pod_text(const gr_process *p, const char *cgroup_name, char *buf, size_t size)
{
        const gr_pod *pod = p->pod;
        if (pod && pod->gone == GR_POD_GONE_CONFIRMED) {
                snprintf(buf, size, "  pod %s/%s %s (gone: the kubelet knows no such pod)", pod->gone_ns, pod->gone_name,
                         pod->uid);
        } else if (pod && pod->runtime_named) {
                snprintf(buf, size, "  pod %s/%s%s%s (named by the container runtime: %s)", pod->ns, pod->name,
                         pod->container[0] ? " container " : "", pod->container, pod_naming_words(pod->naming));
        } else if (!pod || pod->naming != GR_POD_NAMED) {
                bool why = pod && pod->naming != GR_POD_NOT_ASKED;
                snprintf(buf, size, "  pod %s%s%s%s", pod && pod->uid[0] ? pod->uid : cgroup_name, why ? " (not named: " : "",
                         why ? pod_naming_words(pod->naming) : "", why ? ")" : "");
        } else if (pod->container_naming == GR_POD_NAMED) {
                snprintf(buf, size, "  pod %s/%s container %s", pod->ns, pod->name, pod->container);
        } else {
                snprintf(buf, size, "  pod %s/%s (container not named: %s)", pod->ns, pod->name,
                         pod_naming_words(pod->container_naming));
        }
}

/* the command, then where it listens and runs: a Slurm job, a pod, a container, a service */
static void command_text(const gr_process *p, char *buf, size_t size)
{
        char ports[64] = "", name[128], id[80], where[512] = "";
        if (p->net && p->net->n_listen > 0) {
                size_t n = (size_t)snprintf(ports, sizeof(ports), "  listening");
                for (unsigned i = 0; i < p->net->n_listen && n < sizeof(ports); i++)
                        n += (size_t)snprintf(ports + n, sizeof(ports) - n, " :%u", p->net->listen_ports[i]);
        }
        gr_cgroup_kind k = p->cgroup ? gr_cgroup_manager(p->cgroup, name, sizeof(name)) : GR_CG_NONE;
        if (p->cgroup && gr_cgroup_slurm_job(p->cgroup, id, sizeof(id)) == 0)
                snprintf(where, sizeof(where), "  job %s", id);
        else if (p->env_read && p->env.slurm_job_id[0])
                snprintf(where, sizeof(where), "  job %s (escaped its cgroup)", p->env.slurm_job_id);
        else if (k == GR_CG_POD)
                pod_text(p, name, where, sizeof(where));
        else if (k == GR_CG_CONTAINER)
                snprintf(where, sizeof(where), "  container %s", name);
        else if (k == GR_CG_SERVICE)
                snprintf(where, sizeof(where), "  %s", name);
        snprintf(buf, size, "%s%s%s", p->cmdline && p->cmdline[0] ? p->cmdline : p->comm, ports, where);
}

static uint64_t listed_memory(const struct out *o, pid_t pid)
{
        uint64_t total = 0;
        bool listed = false;
        for (unsigned i = 0; i < o->s->gpu->n_gpus; i++) {
                const gr_gpu *g = &o->s->gpu->gpus[i];
                for (unsigned k = 0; k < g->n_procs; k++)
                        if ((pid_t)g->procs[k].pid == pid && g->procs[k].used_bytes != GR_UNKNOWN_U64) {
                                total += g->procs[k].used_bytes;
                                listed = true;
                        }
        }
        return listed ? total : GR_UNKNOWN_U64;
}

/* A user's name as this machine's user database gives it, looked up once per uid (a table of
 * hundreds of one user's workers asks once); the number when it has none. A recording's uids are
 * another machine's: its numbers are shown as they are. */
static const char *user_text(const struct out *o, const gr_process *p, char *buf, size_t size)
{
        static struct { uid_t uid; char name[33]; } cache[32];
        static unsigned n_cache;
        if (!p->has_uid)
                return "?";
        snprintf(buf, size, "%u", (unsigned)p->uid);
        if (o->s->replayed)
                return buf;
        for (unsigned i = 0; i < n_cache; i++)
                if (cache[i].uid == p->uid)
                        return cache[i].name[0] ? cache[i].name : buf;
        unsigned slot = n_cache < GR_ELEMENTSOF(cache) ? n_cache++ : p->uid % GR_ELEMENTSOF(cache);
        cache[slot].uid = p->uid;
        cache[slot].name[0] = '\0';
        if (user_name(p->uid, cache[slot].name, sizeof(cache[slot].name)))
                gr_text_sanitize(cache[slot].name); /* a name is text from a file: no control byte */
        return cache[slot].name[0] ? cache[slot].name : buf;
}

static void holder_row(const struct out *o, struct table *tb, const gr_process *p)
{
        char pid[16], ppid[16], uidn[16], st[4], gpus[256], mem[32] = "-", fds[16], uvm[16], maps[16] = "-",
             nspid[64] = "-", role[160], cmd[4096];
        snprintf(pid, sizeof(pid), "%d", (int)p->pid);
        snprintf(ppid, sizeof(ppid), "%d", (int)p->ppid);
        const char *uid = user_text(o, p, uidn, sizeof(uidn));
        snprintf(st, sizeof(st), "%c", p->state);
        held_gpus(o, p, gpus, sizeof(gpus));
        uint64_t m = listed_memory(o, p->pid);
        if (m != GR_UNKNOWN_U64)
                gr_format_bytes(m, mem, sizeof(mem));
        snprintf(fds, sizeof(fds), "%u", p->hold ? p->hold->n_fds : 0);
        snprintf(uvm, sizeof(uvm), "%u", p->hold ? p->hold->n_uvm : 0);
        if (p->hold && p->hold->maps_read)
                snprintf(maps, sizeof(maps), "%u", p->hold->n_maps);
        if (p->n_nspid > 1) {
                size_t n = 0;
                for (unsigned i = 1; i < p->n_nspid && n < sizeof(nspid); i++)
                        n += (size_t)snprintf(nspid + n, sizeof(nspid) - n, "%s%d", i > 1 ? "," : "", (int)p->nspid[i]);
        }
        role_text(o, p, role, sizeof(role));
        command_text(p, cmd, sizeof(cmd));
        const char *cells[] = { pid, ppid, uid, st, gpus, mem, fds, uvm, maps, nspid, role, cmd };
        table_add(tb, cells, -1, NULL);
}

/* every holder of a GPU shown (or, with other, of none), one table per job */
static void print_holders(const struct out *o, bool other)
{
        /* what goes first on a narrow terminal: the device counts, then the owner, then the
         * memory; the PID, state, GPUs, role and command stay */
        static const struct table_col cols[] = {
                { .head = "PID" }, { .head = "PPID", .drop = 6 }, { .head = "USER", .drop = 4 }, { .head = "ST" },
                { .head = "GPU" }, { .head = "MEMORY", .right = true, .drop = 5 },
                { .head = "FDS", .right = true, .drop = 3 }, { .head = "UVM", .right = true, .drop = 1 },
                { .head = "MAPS", .right = true, .drop = 2 }, { .head = "NSPID", .hide_empty = true, .drop = 7 },
                { .head = "ROLE" }, { .head = "COMMAND", .min = 12 },
        };
        const gr_proc_table *t = o->s->procs;
        size_t n = t ? t->n : 0;
        bool *done = calloc(n ? n : 1, sizeof(bool));
        if (!done)
                return;
        /* one table, so that the columns of every job line up; a heading row per job */
        struct table tb;
        table_init(&tb, cols, GR_ELEMENTSOF(cols));
        for (size_t i = 0; i < n; i++) {
                const gr_process *p = &t->procs[i];
                if (done[i] || !shown_holder(o, p, other))
                        continue;
                gr_job job = job_of(o, p);
                size_t heading = tb.n_rows;
                if (table_add_heading(&tb, "") < 0)
                        break;
                unsigned idx[256], n_idx = 0;
                for (size_t k = i; k < n; k++) {
                        const gr_process *q = &t->procs[k];
                        if (done[k] || !shown_holder(o, q, other))
                                continue;
                        gr_job jq = job_of(o, q);
                        if (!gr_job_equal(&jq, &job))
                                continue;
                        done[k] = true;
                        holder_row(o, &tb, q);
                        add_held_gpus(o, q, idx, &n_idx, GR_ELEMENTSOF(idx));
                }
                char launcher[300], list[512], line[900];
                launcher_text(o, p, &job, launcher, sizeof(launcher));
                if (n_idx)
                        snprintf(line, sizeof(line), "  launcher: %s, on %s %s", launcher, n_idx == 1 ? "GPU" : "GPUs",
                                 gr_index_list_text(idx, n_idx, list, sizeof(list)));
                else
                        snprintf(line, sizeof(line), "  launcher: %s", launcher);
                table_set_heading(&tb, heading, line);
        }
        table_print(&tb, &o->t, 4);
        table_release(&tb);
        free(done);
}

static bool any_holder(const struct out *o, bool other)
{
        for (size_t i = 0; o->s->procs && i < o->s->procs->n; i++)
                if (shown_holder(o, &o->s->procs->procs[i], other))
                        return true;
        return false;
}

/* ---- findings and evidence ---- */

static void print_evidence(const struct out *o)
{
        const gr_diagnosis *d = o->d;
        unsigned n = 0;
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                bool shown = false;
                for (unsigned j = 0; j < o->s->gpu->n_gpus && !shown; j++)
                        shown = gpu_selected(o->sel, &o->s->gpu->gpus[j]) &&
                                gr_process_fds_on_minor(v->process, o->s->gpu->gpus[j].minor) > 0;
                if ((!shown && o->sel && o->sel->list) || !in_scope(o, v->process))
                        continue;
                if (n++ == 0)
                        out_linef(&o->t, "\nevidence:");
                char reason[sizeof(v->reason)], value[GR_EVIDENCE_TEXT + 16], head[512];
                snprintf(head, sizeof(head), "  %d (%s)  %s, %s: %s", (int)v->pid, v->process->comm,
                         gr_judgement_name(v->judgement), gr_confidence_name(v->confidence),
                         safe(v->reason, reason, sizeof(reason)));
                out_wrap(&o->t, 0, 6, head);
                for (unsigned k = 0; k < v->evidence.n; k++) {
                        const gr_evidence *e = &v->evidence.items[k];
                        char item[GR_EVIDENCE_TEXT + 32];
                        safe(e->value, value, sizeof(value));
                        snprintf(item, sizeof(item), "%s%s", value,
                                 e->lean == GR_LEAN_NEUTRAL ? "" : e->lean == GR_LEAN_LIVE ? "  (live)" : "  (leftover)");
                        fprintf(o->t.f, "      %-15s ", gr_evidence_key_name(e->key));
                        out_wrap(&o->t, 22, 22, item);
                }
        }
}

static void print_finding(const struct out *o, const gr_finding *f)
{
        struct finding_words fw;
        finding_words(o->s, o->d, f, &fw);
        char expl[sizeof(fw.explanation)], next[sizeof(fw.next_step)], why[sizeof(fw.reason) + 32],
                advice[sizeof(fw.advice)];
        const char *kind = gr_finding_kind_name(f->kind);
        int w = text_width(kind), ind = 2 + w + 2;
        if (o->t.width > 0 && ind > o->t.width / 2)
                ind = o->t.width / 2; /* a narrow terminal */
        fputs("  ", o->t.f);
        out_color(&o->t, f->leftover ? "\033[1;31m" : "\033[1;36m");
        fputs(kind, o->t.f);
        out_reset(&o->t);
        fputs("  ", o->t.f);
        out_wrap(&o->t, ind, ind, safe(fw.explanation, expl, sizeof(expl)));
        safe(fw.reason, why, sizeof(why));
        if (why[0]) {
                size_t n = strlen(why);
                snprintf(why + n, sizeof(why) - n, " [%s]", gr_confidence_name(f->confidence));
                fprintf(o->t.f, "%*swhy: ", ind, "");
                out_wrap(&o->t, ind + 5, ind + 5, why);
        }
        safe(fw.next_step, next, sizeof(next));
        if (next[0]) {
                fprintf(o->t.f, "%*snext: ", ind, "");
                /* a command to paste: broken with line continuations, never cut */
                out_command(&o->t, ind + 6, ind + 8, next, "\033[1m");
        }
        safe(fw.advice, advice, sizeof(advice));
        if (advice[0]) {
                fprintf(o->t.f, "%*s", ind, "");
                out_wrap(&o->t, ind, ind, advice);
        }
}

static void print_findings(const struct out *o)
{
        const gr_diagnosis *d = o->d;
        unsigned n = 0;
        /* leftovers first, then the rest */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < d->n_findings; i++) {
                        const gr_finding *f = &d->findings[i];
                        if (f->leftover != (pass == 0) || !finding_selected(o->sel, o->s, f))
                                continue;
                        if (n++ == 0)
                                out_linef(&o->t, "\nfindings:");
                        print_finding(o, f);
                }
        if (o->why)
                print_evidence(o);
}

/* ---- the report ---- */

static void print_title(const struct out *o, const struct table_options *opt)
{
        const gr_snapshot *s = o->s;
        const gr_gpu_report *rep = s->gpu;
        char version[64], host[300], driver[160], count[GR_GPU_TEXT_MAX + 32];
        snprintf(version, sizeof(version), "gpureap %s", GPUREAP_VERSION);
        snprintf(host, sizeof(host), "host %s", s->hostname);
        count[0] = '\0';
        if (rep->status == GR_GPU_OK) {
                snprintf(driver, sizeof(driver), "driver %s", rep->driver_version[0] ? rep->driver_version : "?");
                /* the model when they are all one: "8 GPUs (NVIDIA H200)" */
                bool one_model = rep->n_gpus > 0 && rep->gpus[0].name[0];
                for (unsigned i = 1; i < rep->n_gpus && one_model; i++)
                        one_model = strcmp(rep->gpus[i].name, rep->gpus[0].name) == 0;
                size_t n = (size_t)snprintf(count, sizeof(count), "%u GPU%s", rep->n_gpus, rep->n_gpus == 1 ? "" : "s");
                if (one_model && n < sizeof(count))
                        snprintf(count + n, sizeof(count) - n, " (%s)", rep->gpus[0].name);
        } else if (gr_snapshot_drm_only(s)) {
                snprintf(driver, sizeof(driver), "no NVIDIA driver");
                snprintf(count, sizeof(count), "%u AMD/Intel GPU%s", s->drm->n_gpus, s->drm->n_gpus == 1 ? "" : "s");
        } else {
                snprintf(driver, sizeof(driver), "driver: %s", rep->status == GR_GPU_NO_LIBRARY ? "not found" :
                                                            rep->status == GR_GPU_TIMEOUT ? "did not answer" : "failed");
        }
        const char *fields[] = { version, host, driver, count };
        out_fields(&o->t, 0, 2, fields, GR_ELEMENTSOF(fields));
        if (s->served_by > 0 && !s->replayed) {
                uint64_t now = gr_wall_ms(), age = now > s->taken_at_ms ? now - s->taken_at_ms : 0;
                char line[300];
                snprintf(line, sizeof(line), "as seen by gpureap serve (PID %d) %.1f s ago, watching for %llu s%s",
                         (int)s->served_by, (double)age / 1000,
                         (unsigned long long)(s->taken_at_ms > s->history_since_ms ? (s->taken_at_ms - s->history_since_ms) / 1000 : 0),
                         s->history_events ? "" : " (without process events: how launchers ended is not known)");
                out_wrap(&o->t, 0, 2, line);
        }
        if (!s->replayed)
                return;
        char when[64] = "at an unknown time", line[1400];
        if (s->taken_at_ms > 0) {
                time_t t = (time_t)(s->taken_at_ms / 1000);
                struct tm tm;
                if (gmtime_r(&t, &tm))
                        strftime(when, sizeof(when), "at %Y-%m-%d %H:%M:%S UTC", &tm);
        }
        snprintf(line, sizeof(line), "replay: recorded on host %s %s%s%s%s, not this machine now",
                 s->hostname[0] ? s->hostname : "(unknown)", when, opt && opt->replay ? " (" : "",
                 opt && opt->replay ? QUOTED(opt->replay) : "", opt && opt->replay ? ")" : "");
        out_wrap(&o->t, 0, 2, line);
}

/* Why the pods are named by their UIDs only: said where the kubelet was looked for and did not
 * answer (a socket, no module), or where a process runs in a pod's cgroup and there is no
 * kubelet to ask; nothing on a machine without Kubernetes, nor where it answered */
static bool kubelet_note(const gr_snapshot *s, char *buf, size_t size)
{
        const gr_snapshot_kubelet *k = &s->kubelet;
        bool in_pod = false;
        for (size_t i = 0; s->procs && i < s->procs->n && !in_pod; i++)
                in_pod = s->procs->procs[i].pod != NULL;
        if (k->state == GR_KUBELET_OK || k->state == GR_KUBELET_OFF || (k->state == GR_KUBELET_NO_SOCKET && !in_pod))
                return false;
        bool asked = k->state == GR_KUBELET_TIMEOUT || k->state == GR_KUBELET_ERROR;
        snprintf(buf, size, "note: pods are shown by their UIDs only: %s (%s)",
                 asked ? "the kubelet did not answer" : "the kubelet was not asked", k->error[0] ? k->error : gr_kubelet_state_name(k->state));
        return true;
}

int render_status_table(FILE *f, const gr_snapshot *s, const gr_diagnosis *d,
                        const struct gpu_selection *sel, const struct table_options *opt)
{
        struct out o = {
                .t = { .f = f, .width = opt ? opt->width : 0, .color = opt && opt->color },
                .why = opt && opt->why, .s = s, .d = d, .sel = sel,
        };
        const gr_gpu_report *rep = s->gpu;
        print_title(&o, opt);
        if (rep->status == GR_GPU_OK && rep->n_gpus > 0) {
                fputc('\n', f);
                print_gpu_lines(&o);
        }
        for (unsigned i = 0; i < rep->n_gpus; i++)
                if (gpu_detailed(&o, i))
                        print_gpu(&o, i);
        if (any_holder(&o, false)) {
                out_linef(&o.t, "\nholders:");
                print_holders(&o, false);
        }
        if (any_holder(&o, true)) {
                out_linef(&o.t, "\nother holders of %s/nvidia* files:", s->dev_dir);
                print_holders(&o, true);
        }
        if (rep->status == GR_GPU_OK && rep->n_gpus == 0)
                out_linef(&o.t, "\nno GPU found by the driver");
        if (d)
                print_findings(&o);
        render_drm_table(&o.t, s, d);
        char line[512];
        if (d && d->view[0]) {
                snprintf(line, sizeof(line), "note: this view is limited (%s): verdicts that depend on what it cannot see are capped%s",
                         d->view, s->uid != 0 ? "; run as root to see all holders" : "");
                fputc('\n', f);
                out_wrap(&o.t, 0, 6, line);
        }
        if (kubelet_note(s, line, sizeof(line))) {
                fputc('\n', f);
                out_wrap(&o.t, 0, 6, line);
        }
        if (s->proc_slow) {
                snprintf(line, sizeof(line), "note: reading %s took %llu ms (%zu processes): a slow host, not a driver failure",
                         s->proc_root, (unsigned long long)s->proc_elapsed_ms, s->procs ? s->procs->n : (size_t)0);
                fputc('\n', f);
                out_wrap(&o.t, 0, 6, line);
        }
        return 0;
}
