/* The signal ladder. Each target is opened as a pidfd first and only then checked to still be
 * the planned process (PID + start time): from then on the pidfd names that process and no
 * other, whatever PID reuse happens. SIGTERM, then SIGCONT (a stopped process acts on SIGTERM
 * only once continued), a grace period waiting on the pidfds, then SIGKILL. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"

const char *gr_kill_result_name(gr_kill_result r)
{
        switch (r) {
        case GR_KILL_ENDED: return "ended";
        case GR_KILL_KILLED: return "killed";
        case GR_KILL_GONE: return "gone";
        case GR_KILL_CHANGED: return "changed";
        case GR_KILL_SURVIVED: return "survived";
        case GR_KILL_DENIED: return "denied";
        }
        return "?";
}

static int pidfd_open_(pid_t pid)
{
        return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int fd, int sig)
{
        return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

static bool exited(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

struct victim {
        int fd;
        pid_t pid;
        gr_kill_result result;
        bool done;
};

/* Wait until every victim has exited or the deadline passes; true when all did. */
static bool wait_all(struct victim *v, size_t n, uint64_t deadline)
{
        struct pollfd *p = calloc(n ? n : 1, sizeof(*p));
        if (!p)
                return false;
        for (;;) {
                size_t k = 0;
                for (size_t i = 0; i < n; i++) {
                        if (v[i].done || v[i].fd < 0)
                                continue;
                        if (exited(v[i].fd)) {
                                v[i].done = true;
                                continue;
                        }
                        p[k].fd = v[i].fd;
                        p[k].events = POLLIN;
                        k++;
                }
                uint64_t now = gr_now_ms();
                if (k == 0 || now >= deadline) {
                        free(p);
                        return k == 0;
                }
                poll(p, k, (int)(deadline - now));
        }
}

int gr_kill_plan(const gr_plan *plan, const gr_kill_options *o, gr_kill_outcome **ret, size_t *ret_n)
{
        size_t n = gr_plan_count(plan);
        struct victim *v = calloc(n ? n : 1, sizeof(*v));
        gr_kill_outcome *out = calloc(n ? n : 1, sizeof(*out));
        if (!v || !out) {
                free(v);
                free(out);
                return -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = 0; i < plan->n; i++) {
                const gr_target *t = &plan->targets[i];
                if (t->refused != GR_REFUSE_NONE)
                        continue;
                struct victim *x = &v[k++];
                x->pid = t->pid;
                x->fd = pidfd_open_(t->pid);
                if (x->fd < 0) {
                        x->result = errno == ESRCH ? GR_KILL_GONE : GR_KILL_DENIED;
                        x->done = true;
                        continue;
                }
                /* the pidfd now pins a process: is it still the one in the plan? */
                if (gr_proc_same_process(o->proc_root, t->pid, t->start_time) != 1) {
                        x->result = exited(x->fd) ? GR_KILL_GONE : GR_KILL_CHANGED;
                        close(x->fd);
                        x->fd = -1;
                        x->done = true;
                        continue;
                }
                if (pidfd_signal(x->fd, SIGTERM) < 0) {
                        x->result = errno == ESRCH ? GR_KILL_GONE : GR_KILL_DENIED;
                        x->done = true;
                        continue;
                }
                pidfd_signal(x->fd, SIGCONT);
                x->result = GR_KILL_ENDED;
        }
        uint64_t start = gr_now_ms();
        if (!wait_all(v, k, start + o->grace_ms)) {
                for (size_t i = 0; i < k; i++)
                        if (!v[i].done && v[i].fd >= 0) {
                                v[i].result = GR_KILL_KILLED;
                                pidfd_signal(v[i].fd, SIGKILL);
                        }
                uint64_t deadline = start + (o->deadline_ms > o->grace_ms ? o->deadline_ms : o->grace_ms + 1000);
                wait_all(v, k, deadline);
                for (size_t i = 0; i < k; i++)
                        if (!v[i].done)
                                v[i].result = GR_KILL_SURVIVED;
        }
        for (size_t i = 0; i < k; i++) {
                out[i].pid = v[i].pid;
                out[i].result = v[i].result;
                if (v[i].fd >= 0)
                        close(v[i].fd);
        }
        free(v);
        *ret = out;
        *ret_n = k;
        return 0;
}
