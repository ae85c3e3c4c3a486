/* The client side of 'gpureap serve' (docs/serve.md): the served snapshot, fetched over its Unix
 * socket (serve-fetch.c), and serve's memory merged into a fresh look */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpureap.h"
#include "gpureap/basic.h"

void serve_merge_history(gr_snapshot *fresh, const gr_snapshot *served)
{
        if (!fresh->procs || !served->procs || !served->history_since_ms)
                return;
        for (size_t i = 0; i < fresh->procs->n; i++) {
                gr_process *p = &fresh->procs->procs[i];
                const gr_process *q = gr_proc_table_find(served->procs, p->pid);
                if (!p->hold || !q || !q->seen || q->start_time != p->start_time || p->seen)
                        continue;
                gr_seen *h = malloc(sizeof(*h));
                if (!h)
                        return;
                *h = *q->seen;
                if (h->launcher > 0 && h->end == GR_END_ALIVE) {
                        const gr_process *l = gr_proc_table_find(fresh->procs, h->launcher);
                        if (!l || l->start_time != h->launcher_start || l->state == 'Z' || l->state == 'X') {
                                h->end = GR_END_UNKNOWN; /* ended after serve's last look */
                                h->end_ms = fresh->taken_at_ms;
                        }
                }
                p->seen = h;
        }
        fresh->history_since_ms = served->history_since_ms;
        fresh->history_events = served->history_events;
        fresh->history_events_lost = served->history_events_lost;
        fresh->served_by = served->served_by;
}

gr_snapshot *serve_fetch_fresh(void)
{
        char *buf = NULL, err[256], req[128] = "status\n";
        size_t len = 0;
        /* the structs where serve is this very build, which it decides; JSON otherwise */
        if (serve_structs_wanted() && wire_build_id()[0])
                snprintf(req, sizeof(req), "status-wire %s\n", wire_build_id());
        if (serve_fetch(serve_socket_path(NULL), req, 500, &buf, &len) < 0)
                return NULL;
        gr_snapshot *s = NULL;
        int r = len >= sizeof(WIRE_MAGIC) - 1 && memcmp(buf, WIRE_MAGIC, sizeof(WIRE_MAGIC) - 1) == 0
                        ? snapshot_from_wire(buf, len, &s)
                        : snapshot_from_json_buffer(buf, len, "gpureap serve", &s, err, sizeof(err));
        free(buf);
        if (r < 0)
                return NULL;
        uint64_t now = gr_wall_ms();
        if (!s->served_by || !s->history_since_ms || s->taken_at_ms + 5000 < now || s->taken_at_ms > now + 5000) {
                gr_snapshot_free(s);
                return NULL;
        }
        return s;
}

bool serve_history_into(gr_snapshot *s)
{
        gr_snapshot *served = serve_fetch_fresh();
        if (served)
                serve_merge_history(s, served);
        gr_snapshot_free(served);
        return served != NULL;
}
