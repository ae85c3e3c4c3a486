/* The verify layer: the wait loop shared by 'wait', 'reap', 'reset' and 'run' (take a snapshot,
 * diagnose it, test a condition; if it does not hold, sleep until a holder exits or a backoff
 * delay passes, never a fixed sleep), the drain targets, and what "free of leftovers" means. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/verify.h"

static void wait_holders(const gr_snapshot *s, uint64_t ms)
{
        struct pollfd fds[64];
        nfds_t n = 0;
        for (size_t i = 0; s->procs && i < s->procs->n && n < 64; i++) {
                const gr_process *p = &s->procs->procs[i];
                if (!p->hold || p->state == 'Z')
                        continue;
                int fd = gr_pidfd_open(p->pid);
                if (fd >= 0)
                        fds[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
        }
        poll(fds, n, (int)ms); /* wakes when any holder exits, or after ms */
        for (nfds_t i = 0; i < n; i++)
                close(fds[i].fd);
}

/* The time a look that begins as the wait ends still has to read the driver: NVML's start and
 * a read of eight GPUs take 20-60 ms; twice the last look's where that took longer (a driver
 * without persistence mode starts slowly at every look) */
#define LOOK_AFTER_END_MS 1000

int gr_wait_until(const gr_wait_options *w, gr_wait_cond_fn cond, void *userdata, gr_snapshot **ret_s,
                  gr_diagnosis **ret_d, bool *ret_met)
{
        uint64_t start = gr_now_ms(), delay = 5, last_cost = 0;
        for (;;) {
                uint64_t look = gr_now_ms();
                gr_snapshot *s = NULL;
                gr_diagnosis *d = NULL;
                /* each look's driver read ends with the wait, or LOOK_AFTER_END_MS after it
                 * began where it began at the end: a helper that never starts held a 1 s wait
                 * for its 10 s start limit (GR_HELPER_START_MS) */
                gr_snapshot_options so = *w->so;
                uint64_t after = 2 * last_cost > LOOK_AFTER_END_MS ? 2 * last_cost : LOOK_AFTER_END_MS;
                uint64_t end = start + w->timeout_ms, until = end > look + after ? end : look + after;
                if (w->timeout_ms && (!so.gpu.deadline_ms || so.gpu.deadline_ms > until))
                        so.gpu.deadline_ms = until;
                int r = w->take ? w->take(&so, &s, w->take_userdata) : gr_snapshot_take(&so, &s);
                if (r < 0)
                        return r;
                r = gr_diagnose(s, getuid(), &d);
                if (r < 0) {
                        gr_snapshot_free(s);
                        return r;
                }
                gr_diagnosis_narrow(d, s, w->scope);
                uint64_t now = gr_now_ms();
                bool readable = s->gpu->status == GR_GPU_OK ||
                                (w->drm && gr_snapshot_drm_only(s));
                bool met = readable && cond(s, d, userdata);
                bool last = met || now - start >= w->timeout_ms || !readable;
                if (w->progress && !last)
                        w->progress(s, d, now - start, userdata);
                if (last) {
                        *ret_s = s;
                        *ret_d = d;
                        *ret_met = met;
                        return 0;
                }
                uint64_t left = w->timeout_ms - (now - start);
                wait_holders(s, delay < left ? delay : left);
                /* back off, and never spend more than a third of the time looking: a look costs
                 * a /proc scan and a start of the driver */
                uint64_t cost = last_cost = now - look;
                delay = delay * 3 / 2;
                if (delay < 2 * cost)
                        delay = 2 * cost;
                if (delay > 1000)
                        delay = 1000;
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

void gr_drain_targets(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan *plan, uint64_t *targets,
                      size_t n)
{
        for (size_t i = 0; i < n; i++) {
                targets[i] = GR_UNKNOWN_U64;
                if (i >= s->gpu->n_gpus || i >= 64 || !(plan->gpus >> i & 1))
                        continue;
                const gr_gpu *g = &s->gpu->gpus[i];
                targets[i] = d && i < d->n_gpus ? d->gpus[i].allowance : GR_BASELINE_SLACK;
                for (unsigned j = 0; j < g->n_procs; j++) {
                        const gr_process *op = gr_proc_table_find(s->procs, (pid_t)g->procs[j].pid);
                        bool planned = false;
                        for (size_t k = 0; k < plan->n && !planned; k++)
                                planned = plan->targets[k].pid == (pid_t)g->procs[j].pid &&
                                          plan->targets[k].refused == GR_REFUSE_NONE;
                        if (op && op->state != 'Z' && !planned && g->procs[j].used_bytes != GR_UNKNOWN_U64)
                                targets[i] += g->procs[j].used_bytes;
                }
        }
}

bool gr_gpus_free_of_leftovers(const gr_snapshot *s, const gr_diagnosis *d, uint64_t gpus, bool *ret_unknown)
{
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64 && i < d->n_gpus; i++)
                if ((gpus >> i & 1) && d->gpus[i].state == GR_GPU_UNKNOWN) {
                        if (ret_unknown)
                                *ret_unknown = true;
                        return true;
                }
        for (unsigned i = 0; i < s->gpu->n_gpus && i < 64 && i < d->n_gpus; i++)
                if ((gpus >> i & 1) && d->gpus[i].state != GR_GPU_CLEAN && d->gpus[i].state != GR_GPU_BUSY)
                        return false;
        return true;
}

bool gr_drm_gpus_free(const gr_snapshot *s, const gr_diagnosis *d, uint64_t gpus, bool busy_ok)
{
        for (unsigned i = 0; s->drm && d->drm && i < s->drm->n_gpus && i < GR_DRM_GPUS_MAX; i++) {
                if (!(gpus >> i & 1))
                        continue;
                gr_gpu_state st = d->drm->gpus[i].state;
                if (st != GR_GPU_CLEAN && !(busy_ok && st == GR_GPU_BUSY))
                        return false;
        }
        return true;
}

/* The VRAM on GPU pdev that the view's clients hold: the ended ones' (less the part they share
 * with other clients, which stays) into *ret_ended, the others' into *ret_others */
static void client_bytes(const gr_snapshot *s, const gr_drm_key *ended, size_t n_ended, const char *pdev,
                         uint64_t *ret_ended, uint64_t *ret_others)
{
        *ret_ended = *ret_others = 0;
        for (size_t i = 0; s->drm && i < s->drm->n_clients; i++) {
                const gr_drm_client *c = &s->drm->clients[i];
                if (strcmp(c->pdev, pdev) != 0 || c->device_bytes == GR_UNKNOWN_U64)
                        continue;
                if (!gr_drm_key_listed(ended, n_ended, c->pdev, c->client_id))
                        *ret_others += c->device_bytes;
                else if (c->shared_bytes == GR_UNKNOWN_U64 || c->shared_bytes < c->device_bytes)
                        *ret_ended += c->device_bytes - (c->shared_bytes == GR_UNKNOWN_U64 ? 0 : c->shared_bytes);
        }
}

#define DRM_USAGE_SLACK (64ULL << 20)

bool gr_drm_usage_back(const gr_snapshot *before, const gr_snapshot *s, const gr_drm_key *ended, size_t n_ended,
                       const pid_t *kfd_pids, size_t n_kfd_pids)
{
        for (unsigned i = 0; s->drm && before->drm && i < s->drm->n_gpus && i < GR_DRM_GPUS_MAX; i++) {
                const gr_drm_gpu *g = &s->drm->gpus[i];
                const gr_drm_gpu *b = NULL;
                for (unsigned k = 0; k < before->drm->n_gpus && !b; k++)
                        if (strcmp(before->drm->gpus[k].pdev, g->pdev) == 0)
                                b = &before->drm->gpus[k];
                if (!b || b->vram_used == GR_UNKNOWN_U64 || g->vram_used == GR_UNKNOWN_U64)
                        continue;
                bool on = false;
                for (size_t k = 0; k < n_ended && !on; k++)
                        on = strcmp(ended[k].pdev, g->pdev) == 0;
                uint64_t kfd = 0;
                for (size_t k = 0; k < before->drm->n_kfd; k++) {
                        const gr_kfd_usage *u = &before->drm->kfd[k];
                        for (size_t j = 0; j < n_kfd_pids; j++)
                                if (u->pid == kfd_pids[j] && u->gpu >= 0 && (unsigned)u->gpu < before->drm->n_gpus &&
                                    strcmp(before->drm->gpus[u->gpu].pdev, g->pdev) == 0) {
                                        kfd += u->vram;
                                        on = true;
                                }
                }
                if (!on)
                        continue;
                uint64_t freed, others_before, ignored, others_now;
                client_bytes(before, ended, n_ended, g->pdev, &freed, &others_before);
                client_bytes(s, ended, n_ended, g->pdev, &ignored, &others_now);
                /* the clients' count and KFD's count the same memory: the larger of the two */
                uint64_t expected = freed > kfd ? freed : kfd;
                uint64_t grown = others_now > others_before ? others_now - others_before : 0;
                uint64_t target = (b->vram_used > expected ? b->vram_used - expected : 0) + grown + DRM_USAGE_SLACK;
                if (g->vram_used > target)
                        return false;
        }
        return true;
}
