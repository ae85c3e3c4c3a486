/* What is wrong with the selected GPUs, in one line: for check, and for the reasons the Slurm
 * prolog and epilog give when they refuse a node (sinfo -R shows them). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap.h"

__attribute__((format(printf, 3, 4)))
void summary_say(struct summary *m, enum summary_level l, const char *fmt, ...)
{
        if (l > m->level)
                m->level = l;
        if (m->o >= sizeof(m->text))
                return;
        if (m->o)
                m->o += (size_t)snprintf(m->text + m->o, sizeof(m->text) - m->o, "; ");
        va_list ap;
        va_start(ap, fmt);
        if (m->o < sizeof(m->text))
                m->o += (size_t)vsnprintf(m->text + m->o, sizeof(m->text) - m->o, fmt, ap);
        va_end(ap);
}

void summary_gpu(struct summary *m, const gr_snapshot *s, const gr_diagnosis *d, unsigned i)
{
        const gr_gpu *g = &s->gpu->gpus[i];
        unsigned leftovers = 0, suspects = 0;
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
        }
        switch (d->gpus[i].state) {
        case GR_GPU_CLEAN:
        case GR_GPU_BUSY:
                if (suspects)
                        summary_say(m, SUMMARY_WARNING, "GPU %u: %u holder%s gpureap cannot judge", g->index, suspects,
                                    suspects == 1 ? "" : "s");
                break;
        case GR_GPU_DIRTY:
                summary_say(m, SUMMARY_CRITICAL, "GPU %u: %u leftover%s hold %s (gpureap reap --gpu %u)", g->index,
                            leftovers, leftovers == 1 ? "" : "s", gr_format_bytes(bytes, mem, sizeof(mem)), g->index);
                break;
        case GR_GPU_STALE:
                summary_say(m, SUMMARY_CRITICAL, "GPU %u: %s stale, no holder", g->index,
                            gr_format_bytes(d->gpus[i].unaccounted, mem, sizeof(mem)));
                break;
        case GR_GPU_UNKNOWN:
                summary_say(m, SUMMARY_CRITICAL, "GPU %u: cannot be read%s%s", g->index, g->error[0] ? ": " : "", g->error);
                break;
        }
}
