/* The one view every face judges from (issue 20): status, check, metrics, the Slurm hooks and
 * reap get their snapshot, and serve's memory, from view_take, so that on the same node at the
 * same moment they agree on each GPU's state and each holder's verdict; wait takes each of its
 * looks here too. */
#include <errno.h>
#include <stdlib.h>

#include "gpureap.h"
#include "gpureap/basic.h"

/* A serve that gave nothing once in this command is not asked again: wait looks many times,
 * and a hung serve would cost each look 500 ms */
static bool serve_silent;

int view_take(const gr_snapshot_options *so, enum view_want want, gr_snapshot **ret)
{
        gr_snapshot *s = want == VIEW_SERVED_OK ? serve_fetch_fresh() : NULL;
        if (s) {
                s->replayed = false; /* read from JSON, but this machine's, now */
        } else {
                int r = gr_snapshot_take(so, &s);
                if (r < 0)
                        return r;
                /* a look of its own, and what serve remembers of the processes it sees; a
                 * serve that was just asked and gave nothing would give nothing again (and a
                 * hung one would cost its 500 ms twice, out of check's 4 s) */
                if (want == VIEW_OWN_LOOK && !serve_silent)
                        serve_silent = !serve_history_into(s);
        }
        *ret = s;
        return 0;
}
