#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/snapshot.h"

int gr_snapshot_take(const gr_snapshot_options *opts, gr_snapshot **ret)
{
        gr_snapshot *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        struct timeval tv;
        gettimeofday(&tv, NULL);
        s->taken_at_ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
        if (gethostname(s->hostname, sizeof(s->hostname) - 1) < 0)
                s->hostname[0] = '\0';
        s->self = getpid();

        gr_proc_options po = opts ? opts->proc : (gr_proc_options){ 0 };
        if (!po.proc_root)
                po.proc_root = gr_proc_root_default();
        if (!po.dev_dir)
                po.dev_dir = gr_dev_dir_default();
        gr_strlcpy(s->proc_root, po.proc_root, sizeof(s->proc_root));
        gr_strlcpy(s->dev_dir, po.dev_dir, sizeof(s->dev_dir));

        /* the driver is read in a helper while we scan /proc: the two waits overlap */
        gr_gpu_query *q = NULL;
        pid_t helper = 0;
        int r = gr_gpu_query_start(opts ? &opts->gpu : NULL, &q, &helper);
        if (r < 0) {
                free(s);
                return r;
        }
        pid_t skip[1] = { helper };
        po.skip = skip;
        po.n_skip = 1;
        s->proc_error = gr_proc_scan(&po, &s->procs);

        r = gr_gpu_query_finish(q, &s->gpu);
        if (r < 0) {
                gr_snapshot_free(s);
                return r;
        }
        /* context owners that hold no device file themselves (ghosts' zombies, other
         * namespaces) still get their details read */
        for (unsigned i = 0; s->procs && i < s->gpu->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                for (unsigned j = 0; j < g->n_procs; j++) {
                        gr_process *p = gr_proc_table_find(s->procs, (pid_t)g->procs[j].pid);
                        if (p && !p->has_details)
                                gr_proc_load_details(&po, p);
                }
        }
        *ret = s;
        return 0;
}

void gr_snapshot_free(gr_snapshot *s)
{
        if (!s)
                return;
        gr_gpu_report_free(s->gpu);
        gr_proc_table_free(s->procs);
        free(s);
}

const char *gr_owner_state_name(gr_owner_state st)
{
        switch (st) {
        case GR_OWNER_ALIVE: return "alive";
        case GR_OWNER_ZOMBIE: return "zombie";
        case GR_OWNER_NOT_FOUND: return "not_found";
        }
        return "unknown";
}

gr_owner_state gr_snapshot_owner_state(const gr_snapshot *s, pid_t pid)
{
        const gr_process *p = gr_proc_table_find(s->procs, pid);
        if (!p)
                return GR_OWNER_NOT_FOUND;
        if (p->state == 'Z' || p->state == 'X')
                return GR_OWNER_ZOMBIE;
        return GR_OWNER_ALIVE;
}

unsigned gr_process_fds_on_minor(const gr_process *p, int minor)
{
        if (!p->hold || minor < 0)
                return 0;
        for (unsigned i = 0; i < p->hold->n_gpus; i++)
                if (p->hold->gpus[i].minor == (unsigned)minor)
                        return p->hold->gpus[i].n_fds;
        return 0;
}

bool gr_gpu_matches(const gr_gpu *g, const char *sel)
{
        uint64_t v;
        if (gr_parse_u64(sel, &v) == 0)
                return v == g->index;
        if (g->uuid[0] && strncasecmp(sel, g->uuid, strlen(sel)) == 0 && strlen(sel) >= 8)
                return true;
        if (g->pci_bus_id[0] && strcasecmp(sel, g->pci_bus_id) == 0)
                return true;
        return false;
}

bool gr_gpu_list_each(const char *list, bool (*cb)(const char *selector, void *userdata), void *userdata)
{
        char item[128];
        const char *p = list;
        while (p && *p) {
                const char *e = strchr(p, ',');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                if (n >= sizeof(item))
                        n = sizeof(item) - 1;
                memcpy(item, p, n);
                item[n] = '\0';
                if (n > 0 && cb(item, userdata))
                        return true;
                if (!e)
                        break;
                p = e + 1;
        }
        return false;
}

static bool matches_cb(const char *selector, void *userdata)
{
        return gr_gpu_matches(userdata, selector);
}

bool gr_gpu_matches_list(const gr_gpu *g, const char *list)
{
        return !list || gr_gpu_list_each(list, matches_cb, (void *)g);
}
