/* The plan's targets through the ladder: each is pinned and checked to still be the planned
 * process, started at the planned time and owned by the planned user, just before the first
 * signal (lib/proc/pidref.c). */
#include <errno.h>
#include <string.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"

int gr_kill_plan(const gr_plan *plan, const gr_kill_options *o, gr_kill_outcome **ret, size_t *ret_n)
{
        gr_ladder l;
        gr_ladder_options lo = { .proc_root = o->proc_root, .grace_ms = o->grace_ms, .deadline_ms = o->deadline_ms,
                                 .refresh = o->refresh, .userdata = o->userdata, .refuse_drm = o->refuse_drm,
                                 .dev_dir = o->dev_dir, .drm_plan = plan };
        gr_ladder_init(&l, &lo);
        int r = 0;
        for (size_t i = 0; r >= 0 && i < plan->n; i++) {
                const gr_target *t = &plan->targets[i];
                if (t->refused == GR_REFUSE_NONE && (r = gr_ladder_add(&l, t->pid, t->start_time, &t->uid)) > 0)
                        gr_strlcpy(l.m[l.n - 1].comm, t->comm, sizeof(l.m[l.n - 1].comm));
        }
        if (r >= 0)
                r = gr_ladder_run(&l);
        gr_kill_outcome *out = r >= 0 ? calloc(l.n ? l.n : 1, sizeof(*out)) : NULL;
        if (!out) {
                gr_ladder_done(&l);
                return r < 0 ? r : -ENOMEM;
        }
        for (size_t i = 0; i < l.n; i++)
        {
                out[i] = (gr_kill_outcome){ .pid = l.m[i].ref.pid, .start_time = l.m[i].ref.start_time,
                                            .result = l.m[i].result, .error = l.m[i].error };
                gr_strlcpy(out[i].comm, l.m[i].comm, sizeof(out[i].comm));
        }
        *ret = out;
        *ret_n = l.n;
        gr_ladder_done(&l);
        return 0;
}
