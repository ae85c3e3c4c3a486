/* What 'gpureap serve' remembers between snapshots (history.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "gpureap.h"
#include "gpureap/basic.h"
#include "history.h"

#define EXIT_EVENT_LATE_MS 3000

struct history_holder {
        pid_t pid;
        uint64_t start;
        gr_seen seen;
        char state;
        uint64_t generation;      /* the last update that saw it */
};

void history_init(struct history *h, uint64_t now_ms, bool events, const char *proc_root)
{
        memset(h, 0, sizeof(*h));
        pthread_mutex_init(&h->lock, NULL);
        h->since_ms = now_ms;
        h->events = events;
        gr_strlcpy(h->proc_root, proc_root ? proc_root : gr_proc_root_default(), sizeof(h->proc_root));
}

void history_release(struct history *h)
{
        free(h->holders);
        h->holders = NULL;
        h->n = h->cap = 0;
        pthread_mutex_destroy(&h->lock);
}

bool history_note_exit(struct history *h, pid_t pid, int wait_status, uint64_t now_ms)
{
        bool watched = false;
        pthread_mutex_lock(&h->lock);
        /* the first exit of a watched launcher's PID after the watch began is the launcher's:
         * a later process with its PID cannot exit before it did. A refresh may have found it
         * gone (or a zombie) just before its event was read: that event still counts, if it
         * comes within EXIT_EVENT_LATE_MS */
        for (size_t i = 0; i < h->n; i++) {
                gr_seen *s = &h->holders[i].seen;
                if (s->launcher != pid)
                        continue;
                if (s->end != GR_END_ALIVE && !(s->end == GR_END_UNKNOWN && now_ms < s->end_ms + EXIT_EVENT_LATE_MS))
                        continue;
                if (WIFSIGNALED(wait_status)) {
                        s->end = GR_END_SIGNAL;
                        s->end_status = WTERMSIG(wait_status);
                } else {
                        s->end = GR_END_EXIT;
                        s->end_status = WEXITSTATUS(wait_status);
                }
                s->end_ms = now_ms;
                watched = true;
        }
        pthread_mutex_unlock(&h->lock);
        return watched;
}

void history_note_lost(struct history *h)
{
        pthread_mutex_lock(&h->lock);
        h->events_lost = true;
        pthread_mutex_unlock(&h->lock);
}

static struct history_holder *find(struct history *h, pid_t pid, uint64_t start)
{
        for (size_t i = 0; i < h->n; i++)
                if (h->holders[i].pid == pid && h->holders[i].start == start)
                        return &h->holders[i];
        return NULL;
}

/* the executable of a process, "" unreadable */
static void exe_of(const char *proc_root, pid_t pid, char *buf, size_t size)
{
        char path[1100];
        snprintf(path, sizeof(path), "%s/%d/exe", proc_root, (int)pid);
        ssize_t n = readlink(path, buf, size - 1);
        buf[n > 0 ? n : 0] = '\0';
}

static bool alive(const gr_process *p)
{
        return p && p->state != 'Z' && p->state != 'X';
}

/* The launcher of a holder seen for the first time: its parent, else the leader of its process
 * group or session, if that is alive and not the holder itself */
static const gr_process *launcher_of(const gr_snapshot *s, const gr_process *p)
{
        const pid_t cands[] = { p->ppid, p->pgrp, p->session };
        for (size_t i = 0; i < GR_ELEMENTSOF(cands); i++) {
                if (cands[i] <= 1 || cands[i] == p->pid)
                        continue;
                const gr_process *l = gr_proc_table_find(s->procs, cands[i]);
                if (alive(l) && !l->kthread)
                        return l;
        }
        return NULL;
}

int history_attach(struct history *h, gr_snapshot *s, uint64_t now_ms)
{
        int r = 0;
        pthread_mutex_lock(&h->lock);
        static uint64_t generation;
        generation++;
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                gr_process *p = &s->procs->procs[i];
                if (!p->hold || p->kthread)
                        continue;
                struct history_holder *e = find(h, p->pid, p->start_time);
                if (!e && h->n < HISTORY_HOLDERS_MAX) {
                        if (h->n == h->cap) {
                                size_t nc = h->cap ? h->cap * 2 : 64;
                                struct history_holder *a = realloc(h->holders, nc * sizeof(*a));
                                if (!a) {
                                        r = -ENOMEM;
                                        continue;
                                }
                                h->holders = a;
                                h->cap = nc;
                        }
                        e = &h->holders[h->n++];
                        memset(e, 0, sizeof(*e));
                        e->pid = p->pid;
                        e->start = p->start_time;
                        e->seen.since_ms = now_ms;
                        e->state = p->state;
                        e->seen.state_since_ms = now_ms;
                        const gr_process *l = launcher_of(s, p);
                        if (l) {
                                e->seen.launcher = l->pid;
                                e->seen.launcher_start = l->start_time;
                                gr_strlcpy(e->seen.launcher_comm, l->comm, sizeof(e->seen.launcher_comm));
                                char a[PATH_MAX], b[PATH_MAX];
                                exe_of(h->proc_root, p->pid, a, sizeof(a));
                                exe_of(h->proc_root, l->pid, b, sizeof(b));
                                e->seen.same_exe = a[0] && strcmp(a, b) == 0;
                                e->seen.end = GR_END_ALIVE;
                        }
                }
                if (!e)
                        continue;
                e->generation = generation;
                if (e->state != p->state) {
                        e->state = p->state;
                        e->seen.state_since_ms = now_ms;
                }
                gr_seen *sn = &e->seen;
                if (sn->launcher > 0 && sn->end == GR_END_ALIVE) {
                        const gr_process *l = gr_proc_table_find(s->procs, sn->launcher);
                        if (!alive(l) || l->start_time != sn->launcher_start) {
                                /* gone, and no exit event said how (none came, or they were lost) */
                                sn->end = GR_END_UNKNOWN;
                                sn->end_ms = now_ms;
                        }
                }
                free(p->seen);
                p->seen = malloc(sizeof(*p->seen));
                if (p->seen)
                        *p->seen = *sn;
                else
                        r = -ENOMEM;
        }
        /* forget the holders that are gone (or hold no GPU any more) */
        size_t k = 0;
        for (size_t i = 0; i < h->n; i++)
                if (h->holders[i].generation == generation)
                        h->holders[k++] = h->holders[i];
        h->n = k;
        s->history_since_ms = h->since_ms;
        s->history_events = h->events;
        s->history_events_lost = h->events_lost;
        pthread_mutex_unlock(&h->lock);
        return r;
}

void history_gpus(struct history *h, gr_snapshot *s, const gr_diagnosis *d, uint64_t now_ms)
{
        if (!d || s->gpu->status != GR_GPU_OK)
                return;
        free(s->gpu_state_since_ms);
        s->gpu_state_since_ms = calloc(s->gpu->n_gpus ? s->gpu->n_gpus : 1, sizeof(uint64_t));
        pthread_mutex_lock(&h->lock);
        for (unsigned i = 0; i < s->gpu->n_gpus && i < d->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                struct history_gpu *hg = NULL;
                for (unsigned k = 0; k < h->n_gpus && !hg; k++)
                        if (strcmp(h->gpus[k].uuid, g->uuid) == 0)
                                hg = &h->gpus[k];
                gr_gpu_state st = d->gpus[i].state;
                if (!hg && h->n_gpus < GR_GPUS_MAX) {
                        hg = &h->gpus[h->n_gpus++];
                        gr_strlcpy(hg->uuid, g->uuid, sizeof(hg->uuid));
                        hg->state = st;
                        hg->since_ms = now_ms;
                } else if (hg && hg->state != st) {
                        audit_log(st == GR_GPU_CLEAN ? LOG_INFO : LOG_NOTICE, "GPU %u (%s): %s, was %s for %llu s",
                                  g->index, g->uuid, gr_gpu_state_name(st), gr_gpu_state_name(hg->state),
                                  (unsigned long long)((now_ms - hg->since_ms) / 1000));
                        hg->state = st;
                        hg->since_ms = now_ms;
                }
                if (hg && s->gpu_state_since_ms)
                        s->gpu_state_since_ms[i] = hg->since_ms;
        }
        pthread_mutex_unlock(&h->lock);
}
