/* The status report, for a person at a terminal: GPUs with a state badge, holders grouped under
 * their launcher with their role, and the findings with the next step to type. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap-config.h"
#include "gpureap.h"

struct out {
        FILE *f;
        bool color, why;
        int role_w; /* the ROLE column: as wide as the widest role of the report, 28 to 48 */
};

static const char *c_on(const struct out *o, const char *code)
{
        return o->color ? code : "";
}

static const char *c_off(const struct out *o)
{
        return o->color ? "\033[0m" : "";
}

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

static void role_text(const gr_diagnosis *d, const gr_process *p, char *buf, size_t size)
{
        const gr_holder_verdict *v = d ? gr_diagnosis_holder(d, p->pid) : NULL;
        if (!v) {
                snprintf(buf, size, "-");
                return;
        }
        size_t o = 0;
        if (v->role == GR_ROLE_HIDDEN_HOLDER && v->ghost)
                o += (size_t)snprintf(buf + o, size - o, "hidden holder of %d", (int)v->ghost);
        else
                o += (size_t)snprintf(buf + o, size - o, "%s", v->role == GR_ROLE_HIDDEN_HOLDER ? "hidden holder" :
                                      v->role == GR_ROLE_OWNER ? "owner" :
                                      v->role == GR_ROLE_MONITOR ? "monitor" : "holder");
        if (v->role != GR_ROLE_MONITOR && o < size)
                o += (size_t)snprintf(buf + o, size - o, ", %s%s%s", gr_judgement_name(v->judgement),
                                      v->judgement == GR_JUDGE_UNSURE ? "" : " ",
                                      v->judgement == GR_JUDGE_UNSURE ? "" : gr_confidence_name(v->confidence));
        static const struct { unsigned bit; const char *word; } conds[] = {
                { GR_COND_STOPPED, "stopped" }, { GR_COND_UNINTERRUPTIBLE, "state D" },
                { GR_COND_ZOMBIE, "zombie" }, { GR_COND_OTHER_NS, "container" },
                { GR_COND_OTHER_USER, "other user" },
        };
        for (size_t i = 0; i < GR_ELEMENTSOF(conds) && o < size; i++)
                if (v->conditions & conds[i].bit)
                        o += (size_t)snprintf(buf + o, size - o, ", %s", conds[i].word);
}

static void print_process_row(const struct out *o, const gr_snapshot *s, const gr_diagnosis *d,
                              const gr_process *p, unsigned fds_here, const char *indent)
{
        char nspid[64] = "-";
        if (p->n_nspid > 1) {
                size_t n = 0;
                for (unsigned i = 1; i < p->n_nspid && n < sizeof(nspid); i++)
                        n += (size_t)snprintf(nspid + n, sizeof(nspid) - n, "%s%d", i > 1 ? "," : "", (int)p->nspid[i]);
        }
        char uid[16] = "?";
        if (p->has_uid)
                snprintf(uid, sizeof(uid), "%u", (unsigned)p->uid);
        char role[128], ports[64] = "";
        role_text(d, p, role, sizeof(role));
        if (p->net && p->net->n_listen > 0) {
                size_t n = 0;
                for (unsigned i = 0; i < p->net->n_listen && n < sizeof(ports); i++)
                        n += (size_t)snprintf(ports + n, sizeof(ports) - n, " :%u", p->net->listen_ports[i]);
        }
        const char *cmd = p->cmdline ? p->cmdline : p->comm;
        /* where it runs: a Slurm job, a pod, a container, a service */
        char name[128], id[80], where[160] = "";
        gr_cgroup_kind k = p->cgroup ? gr_cgroup_manager(p->cgroup, name, sizeof(name)) : GR_CG_NONE;
        if (p->cgroup && gr_cgroup_slurm_job(p->cgroup, id, sizeof(id)) == 0)
                snprintf(where, sizeof(where), "  job %s", id);
        else if (p->env_read && p->env.slurm_job_id[0])
                snprintf(where, sizeof(where), "  job %s (escaped its cgroup)", p->env.slurm_job_id);
        else if (k == GR_CG_POD)
                snprintf(where, sizeof(where), "  pod %s", name);
        else if (k == GR_CG_CONTAINER)
                snprintf(where, sizeof(where), "  container %s", name);
        else if (k == GR_CG_SERVICE)
                snprintf(where, sizeof(where), "  %s", name);
        char maps[16] = "-";
        if (p->hold && p->hold->maps_read)
                snprintf(maps, sizeof(maps), "%u", p->hold->n_maps);
        fprintf(o->f, "%s%-8d %-7d %-6s %-2c %4u %4u %5s  %-7s %-*s %.60s%s%s%s\n", indent, (int)p->pid,
                (int)p->ppid, uid, p->state, fds_here, p->hold ? p->hold->n_uvm : 0,
                maps, nspid, o->role_w, role, cmd[0] ? cmd : p->comm,
                ports[0] ? "  listening" : "", ports, where);
}

static void print_memory(const struct out *o, const gr_gpu *g, const gr_gpu_verdict *v)
{
        char used[32], res[32], total[32], fr[32], un[32];
        if (g->mem_api == 0) {
                fprintf(o->f, "  memory   unknown\n");
                return;
        }
        gr_format_bytes(g->mem_used, used, sizeof(used));
        gr_format_bytes(g->mem_total, total, sizeof(total));
        gr_format_bytes(g->mem_free, fr, sizeof(fr));
        if (g->mem_api == 2) {
                gr_format_bytes(g->mem_reserved, res, sizeof(res));
                fprintf(o->f, "  memory   %s used of %s, %s free, %s reserved by the driver", used,
                        total, fr, res);
        } else {
                fprintf(o->f, "  memory   %s used of %s (driver reserve included), %s free", used,
                        total, fr);
        }
        if (g->mem_inconsistent)
                fprintf(o->f, "; inconsistent: not used for any decision");
        else if (v && v->unaccounted != GR_UNKNOWN_U64 && v->unaccounted > GR_BASELINE_SLACK)
                fprintf(o->f, "; %s not accounted for by a live process",
                        gr_format_bytes(v->unaccounted, un, sizeof(un)));
        fputc('\n', o->f);
}

static void print_holder_header(const struct out *o)
{
        fprintf(o->f, "      PID      PPID    UID    ST  FDS  UVM  MAPS  NSPID   %-*s COMMAND\n", o->role_w, "ROLE");
}

static int role_width(const gr_snapshot *s, const gr_diagnosis *d)
{
        int w = 28;
        for (size_t i = 0; d && s->procs && i < s->procs->n; i++) {
                char role[128];
                role_text(d, &s->procs->procs[i], role, sizeof(role));
                int n = (int)strlen(role);
                w = n > w ? n : w;
        }
        return w > 48 ? 48 : w;
}

/* Holders of GPU g (or, with g NULL, of no listed GPU), grouped under their launcher */
static void print_holders(const struct out *o, const gr_snapshot *s, const gr_diagnosis *d,
                          const gr_gpu *g, const struct gpu_selection *sel)
{
        const gr_proc_table *t = s->procs;
        pid_t seen[256];
        unsigned n_seen = 0;
        for (size_t i = 0; t && i < t->n; i++) {
                const gr_process *p = &t->procs[i];
                unsigned k;
                if (g) {
                        k = gr_process_fds_on_minor(p, g->minor);
                } else {
                        bool shown = false;
                        for (unsigned j = 0; p->hold && j < s->gpu->n_gpus && !shown; j++)
                                shown = gr_process_fds_on_minor(p, s->gpu->gpus[j].minor) > 0 &&
                                        (gpu_selected(sel, &s->gpu->gpus[j]) || (sel && sel->list));
                        k = p->hold && !shown ? p->hold->n_fds : 0;
                }
                if (k == 0)
                        continue;
                pid_t launcher = p->pgrp > 0 ? p->pgrp : p->session;
                unsigned j = 0;
                while (j < n_seen && seen[j] != launcher)
                        j++;
                if (j < n_seen)
                        continue; /* its group was printed with the first member */
                if (n_seen < GR_ELEMENTSOF(seen))
                        seen[n_seen++] = launcher;
                const gr_process *lp = gr_proc_table_find(t, launcher);
                bool lalive = lp && lp->state != 'Z';
                fprintf(o->f, "    launcher: process group %d (%s%s)\n", (int)launcher,
                        lp ? lp->comm : s->procs_partial ? "not recorded" : "gone",
                        lp ? (lalive ? ", alive" : ", zombie") : "");
                print_holder_header(o);
                for (size_t m = i; m < t->n; m++) {
                        const gr_process *q = &t->procs[m];
                        pid_t ql = q->pgrp > 0 ? q->pgrp : q->session;
                        if (ql != launcher)
                                continue;
                        unsigned kq;
                        if (g) {
                                kq = gr_process_fds_on_minor(q, g->minor);
                        } else {
                                bool shown = false;
                                for (unsigned x = 0; q->hold && x < s->gpu->n_gpus && !shown; x++)
                                        shown = gr_process_fds_on_minor(q, s->gpu->gpus[x].minor) > 0 &&
                                                (gpu_selected(sel, &s->gpu->gpus[x]) || (sel && sel->list));
                                kq = q->hold && !shown ? q->hold->n_fds : 0;
                        }
                        if (kq > 0)
                                print_process_row(o, s, d, q, kq, "      ");
                }
        }
}

static unsigned count_holders(const gr_snapshot *s, int minor)
{
        unsigned n = 0;
        for (size_t i = 0; s->procs && i < s->procs->n; i++)
                n += gr_process_fds_on_minor(&s->procs->procs[i], minor) > 0;
        return n;
}

static void print_gpu(const struct out *o, const gr_snapshot *s, const gr_diagnosis *d, unsigned gi)
{
        const gr_gpu *g = &s->gpu->gpus[gi];
        const gr_gpu_verdict *v = d && gi < d->n_gpus ? &d->gpus[gi] : NULL;
        fprintf(o->f, "GPU %u  ", g->index);
        if (v) {
                char badge[16];
                snprintf(badge, sizeof(badge), "%s", gr_gpu_state_name(v->state));
                for (char *c = badge; *c; c++)
                        *c = (char)(*c - 32 * (*c >= 'a' && *c <= 'z'));
                fprintf(o->f, "%s%s%s  ", c_on(o, state_color(v->state)), badge, c_off(o));
        }
        fprintf(o->f, "%s  %s  %s", g->name[0] ? g->name : "(no name)",
                g->pci_bus_id[0] ? g->pci_bus_id : "(bus ?)", g->uuid[0] ? g->uuid : "(uuid ?)");
        if (g->minor >= 0)
                fprintf(o->f, "  %s/nvidia%d", s->dev_dir, g->minor);
        fputc('\n', o->f);
        print_memory(o, g, v);
        if (g->error[0])
                fprintf(o->f, "  error    %s\n", g->error);

        if (!g->procs_ok)
                fprintf(o->f, "  context owners (NVML): unknown\n");
        else if (g->n_procs == 0)
                fprintf(o->f, "  context owners (NVML): none\n");
        else {
                fprintf(o->f, "  context owners (NVML):\n");
                fprintf(o->f, "    PID      TYPE      MEMORY      PROCESS     COMMAND\n");
                for (unsigned i = 0; i < g->n_procs; i++) {
                        const gr_gpu_proc *op = &g->procs[i];
                        char mem[32];
                        gr_format_bytes(op->used_bytes, mem, sizeof(mem));
                        gr_owner_state st = gr_diagnosis_owner_state(s, gi, (pid_t)op->pid);
                        const gr_process *p = st == GR_OWNER_UNMAPPED ? NULL : gr_proc_table_find(s->procs, (pid_t)op->pid);
                        const char *state = st == GR_OWNER_ALIVE ? "alive" : st == GR_OWNER_ZOMBIE ? "zombie"
                                            : st == GR_OWNER_UNMAPPED ? "not visible" : "not found";
                        const char *cmd = p ? (p->cmdline ? p->cmdline : p->comm) : "-";
                        fprintf(o->f, "    %-8u %-9s %-11s %-11s %.72s\n", op->pid,
                                gr_ctx_kind_name((gr_ctx_kind)op->kind), mem, state, cmd);
                }
        }
        if (g->minor < 0)
                fprintf(o->f, "  holders: unknown (the driver gave no minor number)\n");
        else if (count_holders(s, g->minor) == 0)
                fprintf(o->f, "  holders (open %s/nvidia%d): none\n", s->dev_dir, g->minor);
        else {
                fprintf(o->f, "  holders (open %s/nvidia%d):\n", s->dev_dir, g->minor);
                print_holders(o, s, d, g, NULL);
        }
}

static void print_evidence(const struct out *o, const gr_snapshot *s, const gr_diagnosis *d,
                           const struct gpu_selection *sel)
{
        unsigned n = 0;
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                bool shown = false;
                for (unsigned j = 0; j < s->gpu->n_gpus && !shown; j++)
                        shown = gpu_selected(sel, &s->gpu->gpus[j]) &&
                                gr_process_fds_on_minor(v->process, s->gpu->gpus[j].minor) > 0;
                if (!shown && sel && sel->list)
                        continue;
                if (n++ == 0)
                        fprintf(o->f, "\nevidence:\n");
                char reason[sizeof(v->reason)], value[GR_EVIDENCE_TEXT];
                gr_strlcpy(reason, v->reason, sizeof(reason));
                gr_text_sanitize(reason); /* texts cut at a fixed size may end mid-character */
                fprintf(o->f, "  %d (%s)  %s, %s: %s\n", (int)v->pid, v->process->comm,
                        gr_judgement_name(v->judgement), gr_confidence_name(v->confidence), reason);
                for (unsigned k = 0; k < v->evidence.n; k++) {
                        const gr_evidence *e = &v->evidence.items[k];
                        gr_strlcpy(value, e->value, sizeof(value));
                        gr_text_sanitize(value);
                        fprintf(o->f, "      %-15s %-60s %s\n", gr_evidence_key_name(e->key), value,
                                e->lean == GR_LEAN_NEUTRAL ? "" : e->lean == GR_LEAN_LIVE ? "(live)" : "(leftover)");
                }
        }
}

static void print_findings(const struct out *o, const gr_snapshot *s, const gr_diagnosis *d,
                           const struct gpu_selection *sel)
{
        unsigned n = 0;
        /* leftovers first, then the rest */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < d->n_findings; i++) {
                        const gr_finding *f = &d->findings[i];
                        if (f->leftover != (pass == 0) || !finding_selected(sel, s, f))
                                continue;
                        if (n++ == 0)
                                fprintf(o->f, "\nfindings:\n");
                        /* cut at a fixed size, an explanation may end mid-character */
                        char expl[sizeof(f->explanation)], next[sizeof(f->next_step)], why[sizeof(f->reason)],
                                advice[sizeof(f->advice)];
                        gr_strlcpy(expl, f->explanation, sizeof(expl));
                        gr_strlcpy(next, f->next_step, sizeof(next));
                        gr_strlcpy(why, f->reason, sizeof(why));
                        gr_strlcpy(advice, f->advice, sizeof(advice));
                        gr_text_sanitize(expl);
                        gr_text_sanitize(next);
                        gr_text_sanitize(why);
                        gr_text_sanitize(advice);
                        int w = (int)strlen(gr_finding_kind_name(f->kind));
                        fprintf(o->f, "  %s%s%s  %s\n", c_on(o, f->leftover ? "\033[1;31m" : "\033[1;36m"),
                                gr_finding_kind_name(f->kind), c_off(o), expl);
                        if (why[0])
                                fprintf(o->f, "  %*s  why: %s [%s]\n", w, "", why, gr_confidence_name(f->confidence));
                        if (next[0])
                                fprintf(o->f, "  %*s  next: %s%s%s\n", w, "", c_on(o, "\033[1m"), next, c_off(o));
                        if (advice[0])
                                fprintf(o->f, "  %*s  %s\n", w, "", advice);
                }
        if (o->why)
                print_evidence(o, s, d, sel);
}

int render_status_table(FILE *f, const gr_snapshot *s, const gr_diagnosis *d,
                        const struct gpu_selection *sel, unsigned flags)
{
        struct out o = { f, flags & RENDER_COLOR, flags & RENDER_WHY, role_width(s, d) };
        const gr_gpu_report *rep = s->gpu;
        fprintf(f, "gpureap %s  host %s", GPUREAP_VERSION, s->hostname);
        if (rep->status == GR_GPU_OK)
                fprintf(f, "  driver %s  %u GPU%s\n", rep->driver_version[0] ? rep->driver_version : "?",
                        rep->n_gpus, rep->n_gpus == 1 ? "" : "s");
        else
                fprintf(f, "  driver: %s\n", rep->status == GR_GPU_NO_LIBRARY ? "not found" :
                                           rep->status == GR_GPU_TIMEOUT ? "did not answer" : "failed");
        if (s->served_by > 0 && !s->replayed) {
                uint64_t now = gr_wall_ms(), age = now > s->taken_at_ms ? now - s->taken_at_ms : 0;
                fprintf(f, "as seen by gpureap serve (PID %d) %.1f s ago, watching for %llu s%s\n", (int)s->served_by,
                        (double)age / 1000, (unsigned long long)(s->taken_at_ms > s->history_since_ms
                                                                         ? (s->taken_at_ms - s->history_since_ms) / 1000 : 0),
                        s->history_events ? "" : " (without process events: how launchers ended is not known)");
        }
        for (unsigned i = 0; i < rep->n_gpus; i++) {
                if (!gpu_selected(sel, &rep->gpus[i]))
                        continue;
                fputc('\n', f);
                print_gpu(&o, s, d, i);
        }

        /* Holders that no selected GPU shows: control files only, filtered-out GPUs, or every
         * holder when the driver could not be read */
        bool any = false;
        for (size_t i = 0; s->procs && i < s->procs->n && !any; i++) {
                const gr_process *p = &s->procs->procs[i];
                bool shown = false;
                for (unsigned j = 0; p->hold && j < rep->n_gpus && !shown; j++)
                        shown = gr_process_fds_on_minor(p, rep->gpus[j].minor) > 0 &&
                                (gpu_selected(sel, &rep->gpus[j]) || (sel && sel->list));
                any = p->hold && !shown;
        }
        if (any) {
                fprintf(f, "\nother holders of %s/nvidia* files:\n", s->dev_dir);
                print_holders(&o, s, d, NULL, sel);
        }
        if (rep->status == GR_GPU_OK && rep->n_gpus == 0)
                fprintf(f, "\nno GPU found by the driver\n");
        if (d)
                print_findings(&o, s, d, sel);
        if (d && d->view[0])
                fprintf(f, "\nnote: this view is limited (%s): verdicts that depend on what it cannot see are capped%s\n",
                        d->view, s->uid != 0 ? "; run as root to see all holders" : "");
        if (s->proc_slow)
                fprintf(f, "\nnote: reading %s took %llu ms (%zu processes): a slow host, not a driver failure\n",
                        s->proc_root, (unsigned long long)s->proc_elapsed_ms, s->procs ? s->procs->n : (size_t)0);
        return 0;
}
