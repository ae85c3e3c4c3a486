#include <string.h>

#include "gpureap/basic.h"
#include "gpureap.h"

/* Walk the comma-separated list; cb returns true to stop. */
static bool each_selector(const char *list, bool (*cb)(const char *sel, void *ud), void *ud)
{
        char item[128];
        const char *p = list;
        while (*p) {
                const char *e = strchr(p, ',');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                if (n >= sizeof(item))
                        n = sizeof(item) - 1;
                memcpy(item, p, n);
                item[n] = '\0';
                if (n > 0 && cb(item, ud))
                        return true;
                if (!e)
                        break;
                p = e + 1;
        }
        return false;
}

static bool matches_cb(const char *sel, void *ud)
{
        return gr_gpu_matches(ud, sel);
}

bool gpu_selected(const struct gpu_selection *sel, const gr_gpu *g)
{
        if (!sel || !sel->list)
                return true;
        return each_selector(sel->list, matches_cb, (void *)g);
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
        return each_selector(sel->list, unmatched_cb, &u) ? buf : NULL;
}

bool finding_selected(const struct gpu_selection *sel, const gr_snapshot *s, const gr_finding *f)
{
        if (f->gpu < 0 || (unsigned)f->gpu >= s->gpu->n_gpus)
                return true;
        return gpu_selected(sel, &s->gpu->gpus[f->gpu]);
}
