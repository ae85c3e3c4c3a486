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
        for (unsigned i = 0; i < u->rep->n_gpus; i++)
                if (gr_gpu_matches(&u->rep->gpus[i], sel))
                        return false;
        gr_strlcpy(u->buf, sel, u->size);
        return true;
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
