#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gpureap/basic.h"
#include "gpureap.h"

bool gpu_selected(const struct gpu_selection *sel, const gr_gpu *g)
{
        if (sel && sel->scope && sel->scope->kind != GR_SCOPE_NONE && !sel->list)
                return g->index < 64 && (sel->scope_mask >> g->index & 1);
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
        if (n > 1 && strchr(bad, ':'))
                error_msg("'%s' matches %u GPUs (in different PCI domains): give the domain too, or the index", QUOTED(bad), n);
        else if (n > 1)
                error_msg("'%s' matches %u GPUs: give more of the UUID, or the index", QUOTED(bad), n);
        else
                error_msg("no GPU matches '%s' (this machine has %u)", QUOTED(bad), rep->n_gpus);
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
        if (f->n_gpus == 0)
                return true;
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                if (gr_finding_on_gpu(f, i) && gpu_selected(sel, &s->gpu->gpus[i]))
                        return true;
        return false;
}

int scope_option(const char *option, const char *value, gr_scope *sc)
{
        static const struct { const char *name; gr_scope_kind kind; const char *hint; } kinds[] = {
                { "job", GR_SCOPE_SLURM_JOB, "a Slurm job id: digits" },
                { "cgroup", GR_SCOPE_CGROUP, "a cgroup path from the hierarchy's root, starting with '/'" },
                { "container", GR_SCOPE_CONTAINER, "a container id: at least 12 hex digits" },
                { "pod", GR_SCOPE_POD, "a pod UID" },
        };
        for (size_t i = 0; i < GR_ELEMENTSOF(kinds); i++) {
                if (strcmp(option, kinds[i].name) != 0)
                        continue;
                if (sc->kind != GR_SCOPE_NONE) {
                        error_msg("one scope at a time: --%s and --%s", gr_scope_kind_name(sc->kind), option);
                        return -1;
                }
                if (gr_scope_parse(kinds[i].kind, value, sc) < 0) {
                        error_msg("invalid --%s '%s': %s", option, QUOTED(value), kinds[i].hint);
                        return -1;
                }
                return 0;
        }
        return -1;
}

uint64_t scope_gpus(const gr_snapshot *s, const gr_scope *sc)
{
        return gr_scope_gpus(s, sc);
}

const char *scope_option_name(int code)
{
        switch (code) {
        case OPT_JOB: return "job";
        case OPT_CGROUP: return "cgroup";
        case OPT_CONTAINER: return "container";
        case OPT_POD: return "pod";
        }
        return "?";
}

const char *scope_arg(const gr_scope *sc, char *buf, size_t size)
{
        static const char *const opt[] = { "", "job", "cgroup", "container", "pod" };
        if (!sc || sc->kind == GR_SCOPE_NONE || (unsigned)sc->kind >= GR_ELEMENTSOF(opt))
                snprintf(buf, size, "%s", "");
        else
                snprintf(buf, size, " --%s %s", opt[sc->kind], sc->id);
        return buf;
}

struct drm_sel {
        const gr_drm_gpu *g;
        const gr_drm_report *r;
        char *buf;
        size_t size;
        bool hit;
};

static bool drm_hit_cb(const char *sel, void *ud)
{
        struct drm_sel *ds = ud;
        ds->hit = ds->hit || gr_drm_gpu_matches(ds->g, sel);
        return false;
}

bool drm_gpu_selected(const struct gpu_selection *sel, const gr_drm_gpu *g)
{
        if (!sel || !sel->list)
                return true;
        struct drm_sel ds = { .g = g };
        gr_gpu_list_each(sel->list, drm_hit_cb, &ds);
        return ds.hit;
}

static bool drm_unmatched_cb(const char *sel, void *ud)
{
        struct drm_sel *ds = ud;
        unsigned n = 0;
        for (unsigned i = 0; i < ds->r->n_gpus && i < GR_DRM_GPUS_MAX; i++)
                n += gr_drm_gpu_matches(&ds->r->gpus[i], sel);
        if (n == 1)
                return false;
        gr_strlcpy(ds->buf, sel, ds->size);
        return true;
}

const char *drm_selection_unmatched(const struct gpu_selection *sel, const gr_drm_report *r, char *buf, size_t size)
{
        if (!sel || !sel->list)
                return NULL;
        struct drm_sel ds = { .r = r, .buf = buf, .size = size };
        return gr_gpu_list_each(sel->list, drm_unmatched_cb, &ds) ? buf : NULL;
}

bool selection_rejected(const struct gpu_selection *sel, const gr_snapshot *s)
{
        char bad[128];
        if (gr_snapshot_drm_only(s)) {
                if (!drm_selection_unmatched(sel, s->drm, bad, sizeof(bad)))
                        return false;
                error_msg("no AMD or Intel GPU matches '%s' (give its PCI address, as 'gpureap status' shows it)",
                          QUOTED(bad));
                return true;
        }
        if (s->gpu->status != GR_GPU_OK || !gpu_selection_unmatched(sel, s->gpu, bad, sizeof(bad)))
                return false;
        gpu_selection_error(sel, s->gpu);
        return true;
}
