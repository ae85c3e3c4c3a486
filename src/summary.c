/* What is wrong with the selected GPUs, in one line: for check, and for the reasons the Slurm
 * prolog and epilog give when they refuse a node (sinfo -R shows them). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap.h"

/* A GPU a hint is about: NVML's index, or (drm >= 0) the AMD or Intel GPU s->drm->gpus[drm],
 * which reap takes without --gpu (docs/drm.md) */
struct hint_gpu {
        unsigned index;
        int drm;
};

/* How many of the GPU's holders 'gpureap reap --gpu INDEX' (an AMD or Intel GPU's: 'gpureap
 * reap') with these flags would end, as this user: the count a hint gives is the plan of the
 * command it names */
static size_t reap_would_end(const gr_snapshot *s, const gr_diagnosis *d, const gr_scope *sc, const struct hint_gpu *g,
                             bool likely, bool all_users)
{
        char gpu[16];
        snprintf(gpu, sizeof(gpu), "%u", g->index);
        gr_plan_options po = { .gpus = g->drm < 0 ? gpu : NULL, .likely = likely, .all_users = all_users,
                               .scope = sc && sc->kind != GR_SCOPE_NONE ? sc : NULL };
        if (self_plan_options(&po) < 0)
                return 0;
        gr_plan *p = NULL;
        size_t n = 0;
        if (gr_plan_make(s, d, &po, &p) == 0)
                for (size_t i = 0; i < p->n; i++)
                        n += p->targets[i].refused == GR_REFUSE_NONE &&
                             (g->drm < 0 || gr_drm_holder_on(s, d, p->targets[i].pid, 1ULL << g->drm));
        gr_plan_free(p);
        self_plan_options_release(&po);
        return n;
}

/* The leftovers of a dirty GPU (named as 'label') and the command that ends exactly them: the
 * default plan takes the sure ones; --likely the likely ones too; as root, --all-users other
 * users' as well */
static void say_leftovers(struct summary *m, const gr_snapshot *s, const gr_diagnosis *d, const struct hint_gpu *g,
                          const char *label, unsigned leftovers, uint64_t bytes)
{
        char mem[32];
        gr_format_bytes(bytes, mem, sizeof(mem));
        size_t sure = reap_would_end(s, d, m->scope, g, false, false);
        size_t with_likely = reap_would_end(s, d, m->scope, g, true, false);
        bool root = getuid() == 0;
        size_t all = root ? reap_would_end(s, d, m->scope, g, true, true) : with_likely;
        bool need_likely = with_likely > sure, need_all = all > with_likely;
        if (need_all && reap_would_end(s, d, m->scope, g, false, true) == all)
                need_likely = false; /* the others' were all sure */
        size_t n = need_all ? all : need_likely ? with_likely : sure;
        char gpu_arg[24] = "";
        if (g->drm < 0)
                snprintf(gpu_arg, sizeof(gpu_arg), " --gpu %u", g->index);
        if (n == 0) {
                summary_say(m, SUMMARY_CRITICAL, "%s: %u leftover%s hold %s, none that this user may end (gpureap status%s)",
                            label, leftovers, leftovers == 1 ? "" : "s", mem, gpu_arg);
                return;
        }
        char split[64] = "";
        if (need_likely && sure > 0)
                snprintf(split, sizeof(split), " (%zu sure, %zu likely)", sure, with_likely - sure);
        char scope[sizeof(m->scope->id) + 16];
        summary_say(m, SUMMARY_CRITICAL, "%s: %zu %sleftover%s%s hold %s (gpureap reap%s%s%s%s)", label, n,
                    need_likely && sure == 0 ? "likely " : "", n == 1 ? "" : "s", split, mem,
                    scope_arg(m->scope, scope, sizeof(scope)), gpu_arg, need_likely ? " --likely" : "",
                    need_all ? " --all-users" : "");
}

/* Items in the order said, but the critical and unknown ones before the others: the start of
 * the line is what a framework shows (node-problem-detector keeps 80 characters) */
__attribute__((format(printf, 3, 4)))
void summary_say(struct summary *m, enum summary_level l, const char *fmt, ...)
{
        if (l > m->level)
                m->level = l;
        char item[sizeof(m->text)], text[sizeof(m->text)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(item, sizeof(item), fmt, ap);
        va_end(ap);
        bool severe = l >= SUMMARY_CRITICAL;
        size_t at = severe ? m->o_severe : m->o;
        if (at > m->o)
                at = m->o;
        /* what follows a severe part begins with its "; " already */
        int n = snprintf(text, sizeof(text), "%.*s%s%s%s%s", (int)at, m->text, at ? "; " : "", item,
                         at == 0 && m->o > 0 ? "; " : "", m->text + at);
        size_t item_end = at + (at ? 2 : 0) + strlen(item);
        gr_strlcpy(m->text, text, sizeof(m->text));
        m->o = n < 0 ? 0 : (size_t)n < sizeof(m->text) ? (size_t)n : sizeof(m->text) - 1;
        if (severe)
                m->o_severe = item_end < m->o ? item_end : m->o;
}

void summary_gpu(struct summary *m, const gr_snapshot *s, const gr_diagnosis *d, unsigned i)
{
        const gr_gpu *g = &s->gpu->gpus[i];
        unsigned leftovers = 0, suspects = 0;
        bool no_pod = false;
        unsigned not_assigned = 0;
        uint64_t bytes = 0;
        char mem[32];
        for (size_t k = 0; k < d->n_findings; k++) {
                const gr_finding *f = &d->findings[k];
                if (!gr_finding_on_gpu(f, i))
                        continue;
                /* a finding is about a job on all its GPUs: count what is on this one */
                if (f->kind == GR_FIND_GHOST || f->kind == GR_FIND_ORPHAN) {
                        leftovers += gr_finding_pids_on(d, f, g);
                        if (gr_finding_memory_on(f, i) != GR_UNKNOWN_U64)
                                bytes += gr_finding_memory_on(f, i);
                }
                suspects += f->kind == GR_FIND_SUSPECT ? gr_finding_pids_on(d, f, g) : 0;
                no_pod |= f->kind == GR_FIND_NO_POD;
                not_assigned += f->kind == GR_FIND_NOT_ASSIGNED ? gr_finding_pids_on(d, f, g) : 0;
        }
        switch (d->gpus[i].state) {
        case GR_GPU_CLEAN:
        case GR_GPU_BUSY:
                if (suspects)
                        summary_say(m, SUMMARY_WARNING, "GPU %u: %u holder%s gpureap cannot judge", g->index, suspects,
                                    suspects == 1 ? "" : "s");
                if (no_pod) /* the scheduler takes it for free */
                        summary_say(m, SUMMARY_WARNING, "GPU %u: in use, assigned to no pod by the kubelet", g->index);
                if (not_assigned)
                        summary_say(m, SUMMARY_WARNING, "GPU %u: held by %u process%s of a pod not assigned it", g->index,
                                    not_assigned, not_assigned == 1 ? "" : "es");
                break;
        case GR_GPU_DIRTY: {
                char label[24];
                snprintf(label, sizeof(label), "GPU %u", g->index);
                say_leftovers(m, s, d, &(struct hint_gpu){ g->index, -1 }, label, leftovers, bytes);
                break;
        }
        case GR_GPU_STALE:
                summary_say(m, SUMMARY_CRITICAL, "GPU %u: %s stale, no holder", g->index,
                            gr_format_bytes(d->gpus[i].unaccounted, mem, sizeof(mem)));
                break;
        case GR_GPU_UNKNOWN:
                summary_say(m, SUMMARY_CRITICAL, "GPU %u: cannot be read%s%s", g->index, g->error[0] ? ": " : "", g->error);
                break;
        }
}

/* The AMD and Intel GPUs (docs/drm.md) that sel selects, for check. A dirty one (a leftover
 * client, a KFD ghost) is critical, with the reap that ends its leftovers (without --gpu, which
 * names NVML's GPUs: the count is what that plan takes on this GPU). Without an NVIDIA driver
 * they are the node's GPUs; beside one only a dirty one is said (a workstation's desktop keeps
 * its integrated GPU busy, as status counts it). Returns how many are selected; *ret_busy, the
 * busy ones among them */
unsigned summary_drm(struct summary *m, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel,
                     unsigned *ret_busy)
{
        unsigned n = 0, busy = 0;
        for (unsigned i = 0; s->drm && d && d->drm && i < s->drm->n_gpus && i < GR_DRM_GPUS_MAX; i++) {
                const gr_drm_gpu *g = &s->drm->gpus[i];
                if (!drm_gpu_selected(sel, g))
                        continue;
                n++;
                busy += d->drm->gpus[i].state == GR_GPU_BUSY;
                if (d->drm->gpus[i].state != GR_GPU_DIRTY)
                        continue;
                /* the processes it takes: every holder of a leftover client, every ghost's */
                unsigned leftovers = 0;
                for (size_t k = 0; k < d->drm->n_holders; k++) {
                        const gr_holder_verdict *v = &d->drm->holders[k];
                        leftovers += v->judgement == GR_JUDGE_LEFTOVER && gr_drm_holder_on(s, d, v->pid, 1ULL << i);
                }
                char label[GR_DRM_NAME_MAX + 24];
                snprintf(label, sizeof(label), "GPU %s (%s)", g->pdev, gr_vendor_name(g->vendor));
                say_leftovers(m, s, d, &(struct hint_gpu){ 0, (int)i }, label, leftovers, d->drm->gpus[i].leftover_bytes);
        }
        if (ret_busy)
                *ret_busy = busy;
        return n;
}
