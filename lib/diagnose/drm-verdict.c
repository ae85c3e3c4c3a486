/* The AMD and Intel view judged (docs/drm.md), conservatively:
 * - every DRM or KFD holder by the lineage NVIDIA's holders are judged by (lineage.c);
 * - a client (one open file, shared by every fd and process that inherited it) is a leftover
 *   only when all its holders are: killing some of them frees nothing;
 * - the AMD ghost: KFD keeps the entry of a PID that is gone (or a zombie) while a process
 *   that inherited its /dev/kfd still holds it; that process is its hidden holder, sure when it
 *   was its child, or is in its process group or session with no live parent that holds
 *   /dev/kfd itself, likely when it is the only candidate of the only ghost, reparented. A live
 *   process with a KFD entry of its own opened /dev/kfd itself and keeps only its own, and a
 *   child of such a process holds its parent's (an adversary's wrong kills, 2026-12-07: a live
 *   job's worker tied to another pipeline member's ghost by their shared group). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpureap/basic.h"
#include "dx.h"

static int cmp_verdict(const void *a, const void *b)
{
        const gr_holder_verdict *x = a, *y = b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

const gr_holder_verdict *gr_diagnosis_drm_holder(const gr_diagnosis *d, pid_t pid)
{
        if (!d || !d->drm)
                return NULL;
        gr_holder_verdict key = { .pid = pid };
        return bsearch(&key, d->drm->holders, d->drm->n_holders, sizeof(key), cmp_verdict);
}

static bool has_kfd_entry(const gr_drm_report *r, pid_t pid)
{
        for (size_t i = 0; i < r->n_kfd; i++)
                if (r->kfd[i].pid == pid)
                        return true;
        return false;
}

/* May the holder h have its /dev/kfd from a live parent that opened it itself (one that holds
 * /dev/kfd, or has a KFD entry of its own: its file, not a dead PID's)? */
static bool kfd_of_live_parent(const struct dx *x, const gr_process *h)
{
        const gr_process *parent = h->ppid > 1 ? dx_find(x, h->ppid) : NULL;
        return parent && dx_alive(parent) &&
               ((parent->drm && parent->drm->n_kfd > 0) || has_kfd_entry(x->s->drm, parent->pid));
}

/* Is the holder h tied to the dead PID g: its child, or in its group or session while its own
 * parent is not a live /dev/kfd holder whose file it may as well keep? */
static bool tied_to(const struct dx *x, const gr_process *h, pid_t g)
{
        if (h->ppid == g)
                return true;
        return (h->pgrp == g || h->session == g) && !kfd_of_live_parent(x, h);
}

/* The ghosts: each KFD entry with VRAM of a PID that is gone or a zombie, with its holders */
static int find_ghosts(struct dx *x, gr_drm_diagnosis *dd)
{
        const gr_drm_report *r = x->s->drm;
        const gr_proc_table *t = x->s->procs;
        dd->ghosts = calloc(r->n_kfd ? r->n_kfd : 1, sizeof(*dd->ghosts));
        if (!dd->ghosts)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_kfd; i++) {
                const gr_kfd_usage *u = &r->kfd[i];
                const gr_process *p = dx_find(x, u->pid);
                bool zombie = p && (p->state == 'Z' || p->state == 'X');
                /* a PID this view cannot see (hidepid, a partial recording) may be alive */
                if ((p && !zombie) || (!p && (x->hidden || x->s->procs_partial)) || u->vram == 0)
                        continue;
                gr_kfd_ghost *g = &dd->ghosts[dd->n_ghosts++];
                *g = (gr_kfd_ghost){ .pid = u->pid, .zombie = zombie, .gpu_id = u->gpu_id, .gpu = u->gpu,
                                     .vram = u->vram, .confidence = GR_SURE };
        }
        /* the candidates: live holders of /dev/kfd without an entry of their own */
        pid_t untied[GR_KFD_GHOST_HOLDERS_MAX];
        unsigned n_untied = 0;
        for (size_t k = 0; t && k < t->n; k++) {
                const gr_process *h = &t->procs[k];
                if (!h->drm || h->drm->n_kfd == 0 || !dx_alive(h) || has_kfd_entry(r, h->pid))
                        continue;
                bool tied = false;
                for (size_t i = 0; i < dd->n_ghosts; i++) {
                        gr_kfd_ghost *g = &dd->ghosts[i];
                        if (!tied_to(x, h, g->pid) || g->n_holders == GR_KFD_GHOST_HOLDERS_MAX)
                                continue;
                        g->holders[g->n_holders++] = h->pid;
                        tied = true;
                }
                if (!tied && !kfd_of_live_parent(x, h) && h->ppid <= 1 && n_untied < GR_KFD_GHOST_HOLDERS_MAX)
                        untied[n_untied++] = h->pid;
        }
        /* one ghost that nobody is tied to, and reparented holders tied to nobody: they, likely
         * (never beside a tied one: a stranger does not make the tied ones less sure) */
        if (dd->n_ghosts == 1 && dd->ghosts[0].n_holders == 0 && n_untied > 0) {
                memcpy(dd->ghosts[0].holders, untied, n_untied * sizeof(*untied));
                dd->ghosts[0].n_holders = n_untied;
                dd->ghosts[0].confidence = GR_LIKELY;
        }
        return 0;
}

static gr_holder_verdict *drm_verdict(gr_drm_diagnosis *dd, pid_t pid)
{
        return (gr_holder_verdict *)gr_diagnosis_drm_holder(&(gr_diagnosis){ .drm = dd }, pid);
}

static int judge_holders(struct dx *x, gr_drm_diagnosis *dd)
{
        const gr_proc_table *t = x->s->procs;
        size_t n = t ? t->n_drm_holders : 0;
        dd->holders = calloc(n ? n : 1, sizeof(*dd->holders));
        if (!dd->holders)
                return -ENOMEM;
        for (size_t i = 0; t && i < t->n && dd->n_holders < n; i++) {
                const gr_process *p = &t->procs[i];
                if (!p->drm)
                        continue;
                gr_holder_verdict *v = &dd->holders[dd->n_holders++];
                v->pid = p->pid;
                v->process = p;
                v->role = GR_ROLE_HOLDER;
                if (p->state == 'Z')
                        v->conditions |= GR_COND_ZOMBIE;
                if (p->state == 'T' || p->state == 't')
                        v->conditions |= GR_COND_STOPPED;
                if (p->state == 'D')
                        v->conditions |= GR_COND_UNINTERRUPTIBLE;
                if (p->n_nspid > 1)
                        v->conditions |= GR_COND_OTHER_NS;
                if (p->has_uid && p->uid != x->d->uid)
                        v->conditions |= GR_COND_OTHER_USER;
                if (p->net && p->net->n_listen > 0)
                        v->conditions |= GR_COND_LISTENING;
        }
        /* the PIDs are in table order, sorted already; the ghosts' holders first */
        for (size_t i = 0; i < dd->n_ghosts; i++)
                for (unsigned k = 0; k < dd->ghosts[i].n_holders; k++) {
                        gr_holder_verdict *v = drm_verdict(dd, dd->ghosts[i].holders[k]);
                        if (v && !v->ghost) {
                                v->role = GR_ROLE_HIDDEN_HOLDER;
                                v->ghost = dd->ghosts[i].pid;
                                v->ghost_confidence = dd->ghosts[i].confidence;
                        }
                }
        for (size_t i = 0; i < dd->n_holders; i++)
                dx_judge_holder(x, &dd->holders[i]);
        return 0;
}

static gr_confidence least_sure(gr_confidence a, gr_confidence b)
{
        return a > b ? a : b; /* GR_SURE < GR_LIKELY < GR_UNSURE */
}

static void judge_client(gr_drm_diagnosis *dd, const gr_drm_client *c, gr_drm_client_verdict *cv)
{
        *cv = (gr_drm_client_verdict){ .judgement = GR_JUDGE_UNSURE, .confidence = GR_SURE };
        unsigned n = c->n_holders < GR_DRM_CLIENT_HOLDERS_MAX ? c->n_holders : GR_DRM_CLIENT_HOLDERS_MAX;
        pid_t last = 0;
        for (unsigned k = 0; k < n; k++) {
                if (c->holders[k].pid == last)
                        continue; /* one process, several fds of the client */
                last = c->holders[k].pid;
                const gr_holder_verdict *v = drm_verdict(dd, last);
                if (!v || v->judgement == GR_JUDGE_UNSURE) {
                        cv->n_unsure++;
                } else if (v->judgement == GR_JUDGE_LIVE) {
                        cv->n_live++;
                } else {
                        cv->n_leftover++;
                        cv->confidence = least_sure(cv->confidence, v->confidence);
                }
        }
        if (c->n_holders > GR_DRM_CLIENT_HOLDERS_MAX)
                cv->n_unsure++; /* holders past the table were not judged */
        if (cv->n_live > 0) {
                cv->judgement = GR_JUDGE_LIVE;
                cv->confidence = GR_SURE;
        } else if (cv->n_unsure > 0 || cv->n_leftover == 0) {
                cv->judgement = GR_JUDGE_UNSURE;
                cv->confidence = GR_UNSURE;
        } else {
                cv->judgement = GR_JUDGE_LEFTOVER;
        }
}

static void add_bytes(uint64_t *sum, uint64_t v)
{
        if (v != GR_UNKNOWN_U64)
                *sum += v;
}

int dx_judge_drm(struct dx *x)
{
        const gr_drm_report *r = x->s->drm;
        if (!r)
                return 0;
        gr_drm_diagnosis *dd = calloc(1, sizeof(*dd));
        if (!dd)
                return -ENOMEM;
        x->d->drm = dd;
        int q = find_ghosts(x, dd);
        if (q == 0)
                q = judge_holders(x, dd);
        if (q == 0 && !(dd->clients = calloc(r->n_clients ? r->n_clients : 1, sizeof(*dd->clients))))
                q = -ENOMEM;
        if (q < 0)
                return q;
        for (size_t i = 0; i < r->n_clients; i++) {
                const gr_drm_client *c = &r->clients[i];
                gr_drm_client_verdict *cv = &dd->clients[i];
                judge_client(dd, c, cv);
                if (c->gpu < 0)
                        continue;
                gr_drm_gpu_verdict *gv = &dd->gpus[c->gpu];
                if (cv->judgement == GR_JUDGE_LEFTOVER) {
                        gv->state = GR_GPU_DIRTY;
                        add_bytes(&gv->leftover_bytes, c->device_bytes);
                } else if (gv->state == GR_GPU_CLEAN) {
                        gv->state = GR_GPU_BUSY;
                }
        }
        /* a ghost's VRAM is also in the DRM file its KFD process acquired its VM through (the
         * render node it inherited: a leftover client above), so the two are not added: the
         * larger of them is what the GPU would get back */
        uint64_t ghost_bytes[GR_DRM_GPUS_MAX] = { 0 };
        for (size_t i = 0; i < dd->n_ghosts; i++) {
                const gr_kfd_ghost *g = &dd->ghosts[i];
                if (g->gpu < 0)
                        continue;
                dd->gpus[g->gpu].state = GR_GPU_DIRTY;
                add_bytes(&ghost_bytes[g->gpu], g->vram);
        }
        for (unsigned i = 0; i < r->n_gpus; i++)
                if (ghost_bytes[i] > dd->gpus[i].leftover_bytes)
                        dd->gpus[i].leftover_bytes = ghost_bytes[i];
        /* a live KFD user of its own (its entry, its PID alive) keeps its GPU busy */
        for (size_t i = 0; i < r->n_kfd; i++) {
                const gr_kfd_usage *u = &r->kfd[i];
                const gr_process *p = dx_find(x, u->pid);
                if (u->gpu >= 0 && u->vram > 0 && dx_alive(p) && dd->gpus[u->gpu].state == GR_GPU_CLEAN)
                        dd->gpus[u->gpu].state = GR_GPU_BUSY;
        }
        return 0;
}

void dx_drm_free(gr_drm_diagnosis *dd)
{
        if (!dd)
                return;
        free(dd->holders);
        free(dd->clients);
        free(dd->ghosts);
        free(dd);
}
