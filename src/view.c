/* The one view every face judges from (issue 20): status, check, metrics, wait, the Slurm
 * hooks and reap all get their snapshot, and serve's memory, from view_take, so that on the
 * same node at the same moment they agree on each GPU's state and each holder's verdict. */
#include <errno.h>
#include <stdlib.h>

#include "gpureap.h"
#include "gpureap/basic.h"

/* The snapshot a running 'gpureap serve' holds, with its memory; NULL when there is none, it
 * did not answer within 500 ms, or its snapshot is more than 5 s old */
static gr_snapshot *served_snapshot(void)
{
        char *buf = NULL, err[256];
        size_t len = 0;
        if (serve_fetch(serve_socket_path(NULL), 500, &buf, &len) < 0)
                return NULL;
        gr_snapshot *s = NULL;
        int r = snapshot_from_json_buffer(buf, len, "gpureap serve", &s, err, sizeof(err));
        free(buf);
        if (r < 0)
                return NULL;
        uint64_t now = gr_wall_ms();
        if (!s->served_by || !s->history_since_ms || s->taken_at_ms + 5000 < now || s->taken_at_ms > now + 5000) {
                gr_snapshot_free(s);
                return NULL;
        }
        s->replayed = false;
        return s;
}

int view_take(const gr_snapshot_options *so, enum view_want want, gr_snapshot **ret)
{
        gr_snapshot *s = want == VIEW_SERVED_OK ? served_snapshot() : NULL;
        if (!s) {
                int r = gr_snapshot_take(so, &s);
                if (r < 0)
                        return r;
                /* a look of its own, and what serve remembers of the processes it sees */
                if (want != VIEW_DIRECT)
                        serve_history_into(s);
        }
        *ret = s;
        return 0;
}
