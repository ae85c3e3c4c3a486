/* The signal ladder, the one way gpureap ends processes (reap, reset, run): each member pinned
 * and re-verified (lib/proc/pidref.c), SIGTERM and SIGCONT (a stopped process acts on SIGTERM
 * only once continued), a grace period waiting on the pidfds, SIGKILL for what is left, then a
 * wait with a deadline. The set may grow while it runs: a refresh callback adds what forked
 * meanwhile (a process group, a supervised tree), and a newcomer gets the current rung. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap/drm.h"
#include "basic/names.h"

GR_NAME_TABLE(gr_kill_result_name, gr_kill_result, GR_KILL_SPARED, "?",
              [GR_KILL_ENDED] = "ended", [GR_KILL_KILLED] = "killed", [GR_KILL_GONE] = "gone", [GR_KILL_CHANGED] = "changed", [GR_KILL_SURVIVED] = "survived", [GR_KILL_DENIED] = "denied", [GR_KILL_ERROR] = "error",
              [GR_KILL_SPARED] = "spared")

bool gr_kill_result_failed(gr_kill_result r)
{
        /* spared: it is still there, holding what it held */
        return r == GR_KILL_SURVIVED || r == GR_KILL_DENIED || r == GR_KILL_ERROR || r == GR_KILL_SPARED;
}

int gr_ladder_init(gr_ladder *l, const gr_ladder_options *o)
{
        memset(l, 0, sizeof(*l));
        l->o = *o;
        /* one pidfd per member while they last; the rest go through /proc checks */
        l->fds_left = gr_fd_headroom();
        return 0;
}

static void settle(gr_ladder_member *m, gr_kill_result result, int error)
{
        m->result = result;
        m->error = error;
        m->done = true;
        gr_pidref_done(&m->ref);
}

struct drm_allow {
        const gr_plan *plan;
        bool kfd_ok;
};

int gr_drm_fd_client(int table_dir, int fd, gr_drm_key *ret)
{
        char path[32], buf[8192];
        size_t len;
        snprintf(path, sizeof(path), "fdinfo/%d", fd);
        int r = gr_read_file_at(table_dir, path, buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        gr_drm_fdinfo fi;
        if (gr_drm_fdinfo_parse(buf, len, &fi) < 0 || !fi.has_client_id || !fi.pdev[0])
                return 0;
        gr_strlcpy(ret->pdev, fi.pdev, sizeof(ret->pdev));
        ret->client_id = fi.client_id;
        return 1;
}

/* 1 where this fd is not one the plan lets its holder keep at the signal */
static int drm_fd_refused(int table_dir, pid_t table_tid, int fd, unsigned node, unsigned minor, void *userdata)
{
        (void)table_tid, (void)minor;
        const struct drm_allow *a = userdata;
        if (node == GR_DRM_NODE_KFD)
                return a->kfd_ok ? 0 : 1;
        gr_drm_key c;
        int r = gr_drm_fd_client(table_dir, fd, &c);
        if (r < 0)
                return r;
        /* a client that cannot be named is none the plan knows */
        return r > 0 && a->plan && gr_plan_ends_client(a->plan, c.pdev, c.client_id) ? 0 : 1;
}

int gr_plan_drm_allows(const gr_plan *plan, const char *proc_root, const char *dev_dir, pid_t pid, uint64_t start_time)
{
        struct drm_allow a = { plan, false };
        for (size_t i = 0; plan && i < plan->n_drm_kfd && !a.kfd_ok; i++)
                a.kfd_ok = plan->drm_kfd[i] == pid;
        /* the PID's KFD entry is the target's own only while it is the planned process */
        bool target = false;
        for (size_t i = 0; plan && i < plan->n && !target; i++)
                target = plan->targets[i].pid == pid && plan->targets[i].start_time == start_time &&
                         plan->targets[i].refused == GR_REFUSE_NONE;
        a.kfd_ok = a.kfd_ok && target;
        return gr_proc_each_drm_fd(proc_root, dev_dir, pid, drm_fd_refused, &a);
}

/* Send the current rung to one member */
static void hit(gr_ladder *l, gr_ladder_member *m)
{
        if (m->done)
                return;
        int sig = l->rung >= 2 ? SIGKILL : SIGTERM;
        if (sig == SIGTERM && m->signalled)
                return; /* it had its SIGTERM and SIGCONT already (a group's): one each */
        if (l->o.refuse_drm && !gr_pidref_gone(&m->ref, l->o.proc_root) &&
            gr_plan_drm_allows(l->o.drm_plan, l->o.proc_root, l->o.dev_dir, m->ref.pid, m->ref.start_time) != 0) {
                settle(m, GR_KILL_SPARED, 0);
                return;
        }
        int r = gr_pidref_kill(&m->ref, l->o.proc_root, sig);
        if (r == -ESRCH) {
                settle(m, m->signalled ? (m->result == GR_KILL_KILLED ? GR_KILL_KILLED : GR_KILL_ENDED) : GR_KILL_GONE, 0);
                return;
        }
        if (r == -EPERM) {
                settle(m, GR_KILL_DENIED, r);
                return;
        }
        if (r < 0) {
                settle(m, GR_KILL_ERROR, r);
                return;
        }
        if (sig == SIGTERM)
                gr_pidref_kill(&m->ref, l->o.proc_root, SIGCONT);
        m->signalled = true;
        m->result = sig == SIGKILL ? GR_KILL_KILLED : GR_KILL_ENDED;
}

static int add(gr_ladder *l, pid_t pid, uint64_t start_time, const uid_t *uid, bool had_term)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->m[i].ref.pid == pid && l->m[i].ref.start_time == start_time)
                        return 0;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                gr_ladder_member *nm = realloc(l->m, cap * sizeof(*nm));
                if (!nm)
                        return -ENOMEM;
                l->m = nm;
                l->cap = cap;
        }
        gr_ladder_member *m = &l->m[l->n++];
        memset(m, 0, sizeof(*m));
        m->ref.pid = pid;
        m->ref.start_time = start_time;
        m->ref.fd = -1;
        int r = gr_pidref_pin(&m->ref, l->o.proc_root, pid, start_time, uid, l->fds_left > 0);
        if (r == -EMFILE || r == -ENFILE) {
                /* no pidfd left: go on without one rather than take the error for an outcome */
                l->fds_left = 0;
                r = gr_pidref_pin(&m->ref, l->o.proc_root, pid, start_time, uid, false);
        }
        if (r == -ESRCH)
                settle(m, GR_KILL_GONE, 0);
        else if (r == -ESTALE)
                settle(m, GR_KILL_CHANGED, 0);
        else if (r < 0)
                settle(m, GR_KILL_ERROR, r);
        else if (m->ref.fd >= 0)
                l->fds_left--;
        if (had_term) { /* gone since: it ended after its SIGTERM */
                m->signalled = true;
                if (m->result == GR_KILL_GONE)
                        m->result = GR_KILL_ENDED;
        }
        if (!m->done && l->rung > 0)
                hit(l, m);
        return 1;
}

int gr_ladder_add(gr_ladder *l, pid_t pid, uint64_t start_time, const uid_t *uid)
{
        return add(l, pid, start_time, uid, false);
}

int gr_ladder_add_signalled(gr_ladder *l, pid_t pid, uint64_t start_time, const uid_t *uid)
{
        return add(l, pid, start_time, uid, true);
}

/* Mark the members that have ended; true when none is left. The pidfds are polled in batches:
 * one system call for a thousand members, not one each */
static bool sweep(gr_ladder *l)
{
        struct pollfd p[1024];
        size_t idx[1024];
        bool all = true;
        for (size_t i = 0; i < l->n;) {
                nfds_t k = 0;
                for (; i < l->n && k < GR_ELEMENTSOF(p); i++) {
                        gr_ladder_member *m = &l->m[i];
                        if (m->done)
                                continue;
                        if (m->ref.fd < 0) {
                                if (gr_pidref_gone(&m->ref, l->o.proc_root))
                                        settle(m, m->result, 0);
                                else
                                        all = false;
                                continue;
                        }
                        idx[k] = i;
                        p[k++] = (struct pollfd){ .fd = m->ref.fd, .events = POLLIN };
                }
                if (k == 0)
                        continue;
                if (poll(p, k, 0) < 0) {
                        all = false;
                        continue;
                }
                for (nfds_t j = 0; j < k; j++) {
                        if (p[j].revents)
                                settle(&l->m[idx[j]], l->m[idx[j]].result, 0);
                        else
                                all = false;
                }
        }
        return all;
}

/* Wait until every member ended or the deadline; refresh and tick each round */
static bool wait_until(gr_ladder *l, uint64_t deadline)
{
        struct pollfd p[256];
        for (;;) {
                if (l->o.tick)
                        l->o.tick(l, l->o.userdata);
                if (l->o.refresh)
                        l->o.refresh(l, l->o.userdata);
                if (sweep(l)) {
                        /* a last look for what they forked just before they ended */
                        if (!l->o.refresh)
                                return true;
                        size_t n = l->n;
                        l->final_look = true;
                        l->o.refresh(l, l->o.userdata);
                        l->final_look = false;
                        if (l->n == n && sweep(l))
                                return true;
                        continue;
                }
                uint64_t now = gr_now_ms();
                if (now >= deadline)
                        return false;
                nfds_t k = 0;
                bool unwatched = false;
                for (size_t i = 0; i < l->n; i++) {
                        const gr_ladder_member *m = &l->m[i];
                        if (m->done)
                                continue;
                        if (m->ref.fd >= 0 && k < GR_ELEMENTSOF(p))
                                p[k++] = (struct pollfd){ .fd = m->ref.fd, .events = POLLIN };
                        else
                                unwatched = true;
                }
                /* members without a pidfd, forks to find, zombies to reap: look again soon */
                uint64_t step = deadline - now;
                if ((unwatched || l->o.refresh || l->o.tick) && step > 10)
                        step = 10;
                poll(p, k, (int)step);
        }
}

int gr_ladder_run(gr_ladder *l)
{
        l->rung = 1;
        uint64_t start = gr_now_ms();
        for (size_t i = 0; i < l->n; i++)
                hit(l, &l->m[i]);
        if (!wait_until(l, start + l->o.grace_ms)) {
                if (l->o.before_kill)
                        l->o.before_kill(l->o.userdata);
                l->rung = 2;
                for (size_t i = 0; i < l->n; i++)
                        hit(l, &l->m[i]);
                uint64_t deadline = start + (l->o.deadline_ms > l->o.grace_ms ? l->o.deadline_ms : l->o.grace_ms + 100);
                if (!wait_until(l, deadline))
                        for (size_t i = 0; i < l->n; i++)
                                if (!l->m[i].done)
                                        settle(&l->m[i], GR_KILL_SURVIVED, 0);
        }
        return 0;
}

void gr_ladder_done(gr_ladder *l)
{
        for (size_t i = 0; i < l->n; i++)
                gr_pidref_done(&l->m[i].ref);
        free(l->m);
        l->m = NULL;
        l->n = l->cap = 0;
}
