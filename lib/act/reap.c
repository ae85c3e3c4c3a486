/* The whole cycle in one call: see, judge, plan, act, verify (gpureap/reap.h) */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/reap.h"
#include "basic/names.h"

static uint64_t left_ms(uint64_t deadline)
{
        uint64_t now = gr_now_ms();
        return now < deadline ? deadline - now : 0;
}

GR_NAME_TABLE(gr_reap_status_name, gr_reap_status, GR_REAP_FAILED, "?",
              [GR_REAP_VERIFIED] = "verified", [GR_REAP_NOT_CLEAN] = "not-clean", [GR_REAP_DRIVER] = "driver", [GR_REAP_BLIND] = "blind", [GR_REAP_PLANNED] = "planned", [GR_REAP_DECLINED] = "declined", [GR_REAP_FAILED] = "failed")

static void failed(gr_reap_result *r, gr_reap_stage stage, int error)
{
        r->status = GR_REAP_FAILED;
        r->stage = stage;
        r->error = error;
}

struct drm_audit {
        const gr_plan *p;
        gr_drm_key *held;
        size_t n_held, cap;
        bool all;                /* a process whose DRM files could not all be read */
};

/* One DRM fd of a process the plan does not signal: a client of the plan's, held outside it */
static int audit_fd(int table_dir, pid_t table_tid, int fd, unsigned node, unsigned minor, void *userdata)
{
        (void)table_tid, (void)minor;
        struct drm_audit *a = userdata;
        if (node == GR_DRM_NODE_KFD)
                return 0; /* no client of its own: the ghosts' holders are judged by the view */
        gr_drm_key c;
        int r = gr_drm_fd_client(table_dir, fd, &c);
        if (r == -ENOENT || r == -ESRCH)
                return 0; /* closed, or the process ended, since its fds were listed */
        if (r <= 0) {
                a->all = a->all || r < 0; /* not a client (no drm-client-id): none of the plan's */
                return 0;
        }
        if (!gr_plan_ends_client(a->p, c.pdev, c.client_id))
                return 0;
        if (a->n_held == a->cap) {
                size_t nc = a->cap ? a->cap * 2 : 8;
                gr_drm_key *nh = realloc(a->held, nc * sizeof(*nh));
                if (!nh)
                        return -ENOMEM;
                a->held = nh;
                a->cap = nc;
        }
        a->held[a->n_held++] = c;
        return 0;
}

/* Every process's DRM files, threads' own tables and all, for the plan's clients: the
 * snapshot's scan reads a thread's table only for NVIDIA's context owners and lists at most
 * GR_DRM_FDS_MAX of a process's DRM fds, so a live job that holds a client there was not seen,
 * and the leftover sharing it with the live job was ended (an adversary's wrong kills,
 * 2026-12-07). Only where the plan ends a client; another user's files that this user may not
 * read are not looked at (docs/drm.md) */
static int drm_audit(gr_reap_result *r)
{
        const gr_snapshot *s = r->before;
        if (!r->plan->n_drm_clients)
                return 0;
        DIR *dir = opendir(s->proc_root);
        if (!dir)
                return gr_plan_drm_held_outside(s, r->before_d, r->plan, NULL, 0, true);
        struct drm_audit a = { .p = r->plan };
        uid_t me = geteuid();
        struct dirent *de;
        pid_t unread = 0;
        int q = 0;
        while (q >= 0 && (de = readdir(dir))) {
                uint64_t v;
                if (gr_parse_u64(de->d_name, &v) < 0 || v == 0 || v > GR_PROC_PID_MAX)
                        continue;
                pid_t pid = (pid_t)v;
                if (gr_plan_signals(r->plan, pid))
                        continue;
                q = gr_proc_each_drm_fd(s->proc_root, s->dev_dir[0] ? s->dev_dir : NULL, pid, audit_fd, &a);
                if (q == -ESRCH || q == -ENOENT) {
                        q = 0; /* ended meanwhile */
                } else if (q == -EACCES || q == -EPERM) {
                        struct stat st;
                        gr_stat ps;
                        char p[64];
                        snprintf(p, sizeof(p), "%d", (int)pid);
                        /* a zombie holds no file (the kernel makes its fd directory root's: one
                         * of ours, gpureap's own helper, made every target spared), nor does a
                         * process that is ending (PF_EXITING: its memory goes before its files,
                         * and with it the directory is root's) or one gone since (another user's
                         * that ended meanwhile, under load, made every target spared); a leader
                         * that ended alone, its threads alive with its files, is not known; nor
                         * is another user's live one, not ours to read (said in docs/drm.md) */
                        int sr = gr_proc_read_stat(s->proc_root, pid, &ps);
                        bool ending = sr == 0 && (ps.state == 'Z' || ps.state == 'X' || ps.exiting) &&
                                      !gr_proc_zombie_threads_alive(s->proc_root, pid, &ps);
                        bool unknown = !(sr == -ESRCH || ending);
                        if (unknown && me != 0) {
                                if (fstatat(dirfd(dir), p, &st, 0) < 0)
                                        unknown = errno != ENOENT;
                                else
                                        unknown = st.st_uid == me;
                        }
                        if (unknown && !a.all)
                                unread = pid;
                        a.all = a.all || unknown;
                        q = 0;
                } else if (q < 0 && q != -ENOMEM) {
                        /* more DRM fds than listed, a table that cannot be read */
                        if (!a.all)
                                unread = pid;
                        a.all = true;
                        q = 0;
                }
        }
        closedir(dir);
        if (q == 0 && (a.n_held > 0 || a.all))
                q = gr_plan_drm_held_outside(s, r->before_d, r->plan, a.held, a.n_held, a.all);
        /* the spared say whose files could not be read: the first such process */
        for (size_t i = 0; q == 0 && i < r->plan->n; i++)
                if (r->plan->targets[i].refused == GR_REFUSE_DRM_UNREAD)
                        r->plan->targets[i].related = unread;
        free(a.held);
        return q;
}

/* The plan, and with --tree the plan again once the groups' members have their owners read */
static int plan(const gr_reap_options *o, gr_reap_result *r)
{
        gr_snapshot *s = r->before;
        int q = gr_diagnose(s, o->uid, &r->before_d);
        if (q < 0)
                return q;
        /* the scope's findings and states (the verdicts, which the plan reads, stay whole) */
        gr_diagnosis_narrow(r->before_d, s, o->po->scope);
        if ((q = gr_plan_make(s, r->before_d, o->po, &r->plan)) < 0)
                return q;
        if (!o->po->tree)
                return drm_audit(r);
        bool loaded = false;
        for (size_t i = 0; i < r->plan->n; i++) {
                gr_process *tp = gr_proc_table_find(s->procs, r->plan->targets[i].pid);
                if (tp && !tp->has_details)
                        loaded |= gr_proc_load_details(&o->so->proc, tp) == 0;
        }
        if (!loaded)
                return drm_audit(r);
        gr_plan_free(r->plan);
        r->plan = NULL;
        if ((q = gr_plan_make(s, r->before_d, o->po, &r->plan)) < 0)
                return q;
        return drm_audit(r);
}

/* The ladder over the plan, following forks; the outcomes in r */
static int act(const gr_reap_options *o, gr_reap_result *r, int events_fd)
{
        gr_follow *f = NULL;
        int q = gr_follow_new(r->before, r->plan, o->po, events_fd, &f);
        if (q < 0)
                return q;
        /* the deadline bounds the whole: the SIGKILL comes early enough to take effect */
        uint64_t budget = left_ms(o->deadline_ms), reserve = budget / 5 < 1000 ? budget / 5 : 1000;
        gr_kill_options ko = { .proc_root = r->before->proc_root,
                               .grace_ms = o->grace_ms < budget - reserve ? o->grace_ms : budget - reserve,
                               .deadline_ms = budget, .refresh = gr_follow_refresh, .userdata = f,
                               .refuse_drm = true, .dev_dir = r->before->dev_dir[0] ? r->before->dev_dir : NULL };
        gr_kill_outcome *res = NULL;
        size_t n = 0;
        q = gr_kill_plan(r->plan, &ko, &res, &n);
        gr_follow_free(f);
        if (q < 0)
                return q;
        r->outcomes = calloc(n ? n : 1, sizeof(*r->outcomes));
        if (!r->outcomes) {
                free(res);
                return -ENOMEM;
        }
        r->all_ended = true;
        for (size_t i = 0; i < n; i++) {
                gr_reap_outcome *e = &r->outcomes[i];
                e->pid = res[i].pid;
                e->start_time = res[i].start_time;
                gr_strlcpy(e->comm, res[i].comm, sizeof(e->comm));
                e->result = res[i].result;
                e->error = res[i].error;
                e->forked = true;
                for (size_t k = 0; k < r->plan->n && e->forked; k++)
                        e->forked = r->plan->targets[k].pid != e->pid;
                r->all_ended = r->all_ended && !gr_kill_result_failed(e->result);
        }
        r->n_outcomes = n;
        free(res);
        return 0;
}

/* --gpu, or the GPUs the targets held; with nothing signalled, every selected GPU (of the
 * scope, without --gpu), looked at once (nothing can change) */
static uint64_t gpus_to_verify(const gr_reap_options *o, const gr_snapshot *s, const gr_plan *p, size_t n)
{
        const gr_scope *sc = o->po->scope;
        uint64_t scoped = sc && sc->kind != GR_SCOPE_NONE && !o->po->gpus ? gr_scope_gpus(s, sc) : ~0ULL;
        uint64_t m = 0;
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                bool selected = o->po->gpus ? gr_gpu_matches_list(g, o->po->gpus) : g->index < 64 && (scoped >> g->index & 1);
                if (selected && (o->po->gpus || n == 0 || (p->gpus >> i & 1)))
                        m |= 1ULL << i;
        }
        return m;
}


/* The AMD and Intel ends of the plan (docs/drm.md): none of its clients held any more, none of
 * its KFD entries left, the GPUs they were on free of leftovers (with nothing signalled, every
 * one --gpu names, or every one: as NVIDIA's selected GPUs are looked at once), and their VRAM
 * back */
static bool drm_ended(const gr_snapshot *before, const gr_snapshot *s, const gr_diagnosis *d, const gr_plan *p,
                      bool none_signalled, const char *gpus)
{
        if (!p || !s->drm)
                return true;
        for (size_t i = 0; i < s->drm->n_clients; i++)
                if (gr_plan_ends_client(p, s->drm->clients[i].pdev, s->drm->clients[i].client_id))
                        return false;
        for (size_t i = 0; i < s->drm->n_kfd; i++)
                for (size_t k = 0; k < p->n_drm_kfd; k++)
                        if (s->drm->kfd[i].pid == p->drm_kfd[k])
                                return false;
        uint64_t look = gr_plan_drm_gpus(p, s);
        for (unsigned i = 0; none_signalled && i < s->drm->n_gpus && i < 64; i++)
                if (gr_drm_gpu_matches_list(&s->drm->gpus[i], gpus))
                        look |= 1ULL << i;
        return gr_drm_gpus_free(s, d, look, true) &&
               gr_drm_usage_back(before, s, p->drm_clients, p->n_drm_clients, p->drm_kfd, p->n_drm_kfd);
}

static bool free_of_leftovers(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        gr_reap_result *r = userdata;
        bool nvidia = r->drm_only || gr_gpus_free_of_leftovers(s, d, r->gpus, &r->unknown);
        return nvidia && drm_ended(r->before, s, d, r->plan, r->n_signalled == 0, r->drm_gpus);
}

int gr_reap(const gr_reap_options *o, gr_reap_result *r)
{
        memset(r, 0, sizeof(*r));
        gr_drain *drain = NULL;
        int events_fd = -1;
        /* the drain watcher starts NVML while the snapshot is taken; who forks whom is followed
         * from before it (the events name processes as the initial PID namespace does) */
        gr_gpu_options dro = o->so->gpu;
        if (!dro.ctx)
                dro.ctx = o->so->ctx;
        if (!o->dry && gr_drain_start(&dro, &drain) < 0)
                drain = NULL;
        if (!o->dry && o->follow_events && gr_proc_in_init_pidns() && (events_fd = gr_procev_open()) < 0)
                events_fd = -1;
        int q = o->take ? o->take(o->so, &r->before, o->userdata) : gr_snapshot_take(o->so, &r->before);
        if (q < 0) {
                r->before = NULL;
                failed(r, GR_REAP_AT_LOOK, q);
                goto out;
        }
        gr_snapshot *s = r->before;
        /* a driver that cannot be read: the processes named by PID (an epilog names the ended
         * job's holders from /proc) are still ended, each verified as ever; GPUs cannot be */
        r->drm_only = gr_snapshot_drm_only(s);
        bool blind = s->gpu->status != GR_GPU_OK && !r->drm_only;
        if (blind && (o->po->n_pids == 0 || o->po->gpus)) {
                r->status = GR_REAP_DRIVER;
                goto out;
        }
        /* whoever is named gets its owner read, holder or not: the plan refuses what it cannot
         * attribute to a user, and the ladder checks the owner again before the signal */
        for (size_t i = 0; i < o->po->n_pids; i++) {
                gr_process *np = gr_proc_table_find(s->procs, o->po->pids[i]);
                if (np)
                        gr_proc_load_details(&o->so->proc, np);
        }
        if ((q = plan(o, r)) < 0) {
                failed(r, GR_REAP_AT_PLAN, q);
                goto out;
        }
        size_t n = r->n_signalled = gr_plan_count(r->plan);
        for (unsigned i = 0; i < GR_GPUS_MAX; i++)
                r->mem_before[i] = i < s->gpu->n_gpus ? s->gpu->gpus[i].mem_used : GR_UNKNOWN_U64;
        bool go = !o->review || o->review(s, r->before_d, r->plan, o->userdata);
        if (o->dry || !go) {
                /* a review that refuses refuses a dry run too (a --gpu that matches nothing) */
                r->status = go ? GR_REAP_PLANNED : GR_REAP_DECLINED;
                goto out;
        }
        /* the look at every process's DRM files again, now that the plan was shown (a terminal's
         * question may have taken a while): a client taken by a live process since spares its
         * targets (an adversary's, 2026-12-07: pidfd_getfd in that window) */
        if ((q = drm_audit(r)) < 0) {
                failed(r, GR_REAP_AT_PLAN, q);
                goto out;
        }
        n = r->n_signalled = gr_plan_count(r->plan);
        uint64_t targets[GR_GPUS_MAX];
        gr_drain_targets(s, r->before_d, r->plan, targets, GR_GPUS_MAX);
        uint64_t arm_by = gr_now_ms() + (o->so->gpu.timeout_ms ? o->so->gpu.timeout_ms : 5000);
        r->drain_watched = !blind && drain && n > 0 &&
                           gr_drain_arm(drain, targets, GR_GPUS_MAX, arm_by < o->deadline_ms ? arm_by : o->deadline_ms);
        uint64_t t_sig = gr_now_us();
        r->all_ended = true;
        if (n > 0 && (q = act(o, r, events_fd)) < 0) {
                failed(r, GR_REAP_AT_SIGNAL, q);
                goto out;
        }
        if (events_fd >= 0) {
                close(events_fd);
                events_fd = -1;
        }
        /* the outcomes told at once: a reap cut short in the drain (an epilog's deadline, a
         * Ctrl-C) has its trail */
        if (o->acted)
                o->acted(r, o->userdata);
        /* the drain: until the driver has the memory back, seen by the watcher within 0.2 ms */
        uint64_t drained_at = 0;
        r->drained = r->drain_watched && gr_drain_wait(drain, o->deadline_ms, &drained_at);
        r->drain_us = r->drained ? drained_at - t_sig : 0;
        gr_drain_free(drain);
        drain = NULL;
        if (blind) {
                r->status = GR_REAP_BLIND;
                goto out;
        }
        r->gpus = r->drm_only ? 0 : gpus_to_verify(o, s, r->plan, n);
        r->drm_gpus = o->po->gpus;
        /* the verifying looks do not ask the kubelet: its answer can only make an unsure holder
         * likely, which the states "free of leftovers" takes the same as unsure, and a hanging
         * kubelet took a second of the deadline at each look (sixth adversarial round) */
        gr_snapshot_options vso = *o->so;
        vso.kubelet_ask = false;
        gr_wait_options w = { .so = &vso, .timeout_ms = n > 0 ? left_ms(o->deadline_ms) : 0, .progress = o->progress,
                                .scope = o->po->scope, .drm = r->drm_only };
        bool met = false;
        q = gr_wait_until(&w, free_of_leftovers, r, &r->after, &r->after_d, &met);
        if (q < 0) {
                r->after = NULL;
                r->after_d = NULL;
                failed(r, GR_REAP_AT_VERIFY, q);
                goto out;
        }
        r->met = met && !r->unknown;
        if ((r->after->gpu->status != GR_GPU_OK && !(r->drm_only && gr_snapshot_drm_only(r->after))) || r->unknown)
                r->status = GR_REAP_DRIVER;
        else
                r->status = r->met && r->all_ended ? GR_REAP_VERIFIED : GR_REAP_NOT_CLEAN;
out:
        if (events_fd >= 0)
                close(events_fd);
        gr_drain_free(drain);
        return r->status == GR_REAP_FAILED ? r->error : 0;
}

void gr_reap_result_release(gr_reap_result *r)
{
        if (!r)
                return;
        free(r->outcomes);
        gr_plan_free(r->plan);
        gr_diagnosis_free(r->before_d);
        gr_snapshot_free(r->before);
        gr_diagnosis_free(r->after_d);
        gr_snapshot_free(r->after);
        memset(r, 0, sizeof(*r));
}
