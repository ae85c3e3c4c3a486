#include <string.h>

#include "gpureap/basic.h"
#include "gpureap.h"

bool gpu_selected(const struct gpu_selection *sel, const gr_gpu *g)
{
        return gr_gpu_matches_list(g, sel ? sel->list : NULL);
}

struct unmatched {
        const gr_gpu_report *rep;
        char *buf;
        size_t size;
};

static bool unmatched_cb(const char *sel, void *ud)
{
        struct unmatched *u = ud;
        unsigned n = 0;
        for (unsigned i = 0; i < u->rep->n_gpus; i++)
                n += gr_gpu_matches(&u->rep->gpus[i], sel);
        if (n == 1)
                return false;
        gr_strlcpy(u->buf, sel, u->size);
        return true;
}

void gpu_selection_error(const struct gpu_selection *sel, const gr_gpu_report *rep)
{
        char bad[128];
        if (!gpu_selection_unmatched(sel, rep, bad, sizeof(bad)))
                return;
        unsigned n = 0;
        for (unsigned i = 0; i < rep->n_gpus; i++)
                n += gr_gpu_matches(&rep->gpus[i], bad);
        if (n > 1)
                error_msg("'%s' matches %u GPUs: give more of the UUID, or the index", bad, n);
        else
                error_msg("no GPU matches '%s' (this machine has %u)", bad, rep->n_gpus);
}

const char *gpu_selection_unmatched(const struct gpu_selection *sel, const gr_gpu_report *rep,
                                    char *buf, size_t size)
{
        if (!sel || !sel->list)
                return NULL;
        struct unmatched u = { rep, buf, size };
        return gr_gpu_list_each(sel->list, unmatched_cb, &u) ? buf : NULL;
}

bool finding_selected(const struct gpu_selection *sel, const gr_snapshot *s, const gr_finding *f)
{
        if (f->gpu < 0 || (unsigned)f->gpu >= s->gpu->n_gpus)
                return true;
        return gpu_selected(sel, &s->gpu->gpus[f->gpu]);
}
