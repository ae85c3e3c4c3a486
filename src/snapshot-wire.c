/* serve's snapshot on the wire as the structs themselves (issue 25). A 'status' through serve
 * spent three quarters of its instructions parsing serve's JSON (2.3 M of 4.3 M for eight
 * holders); the structs are copied out instead. The JSON and the wire carry the same processes
 * (snapshot_wanted_processes), so a client judges from the same facts either way.
 *
 * Only a client of the very same build reads it: the header names the GNU build ID of the
 * program that wrote it, and the sizes of every struct it carries; anything else is -EPROTO and
 * the client asks for JSON. What is read is still checked as anything from another process is:
 * every count against its array, every string terminated inside its field, every enum in range,
 * the process table sorted by PID without duplicates. Pointers are never read from the wire.
 *
 * Layout: header, gr_snapshot, gr_gpu_report, then per GPU its gr_gpu and its n_procs
 * gr_gpu_proc, the GPUs' state-since times (if flagged), then (if flagged) gr_proc_table and per
 * process its gr_process, cmdline and cgroup (u32 length, ~0 for none, bytes), and a flag byte
 * each for hold, net, seen and pod, followed by that struct. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpureap.h"
#include "gpureap/basic.h"

#define WIRE_SIZES 10

struct wire_head {
        char magic[8];
        char build_id[48];        /* hex, NUL-terminated */
        uint32_t sizes[WIRE_SIZES];
        uint32_t flags;           /* bit 0: gpu_state_since_ms, bit 1: procs */
};

static void own_sizes(uint32_t *z)
{
        const uint32_t s[WIRE_SIZES] = { sizeof(gr_snapshot), sizeof(gr_gpu_report), sizeof(gr_gpu), sizeof(gr_gpu_proc),
                                         sizeof(gr_proc_table), sizeof(gr_process), sizeof(gr_holding), sizeof(gr_net),
                                         sizeof(gr_seen), sizeof(gr_pod) };
        memcpy(z, s, sizeof(s));
}

static char build_id[48];
static bool build_id_read;

static int note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
        (void)size;
        (void)data;
        if (info->dlpi_name && info->dlpi_name[0])
                return 0; /* the program itself has the empty name, and comes first */
        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type != PT_NOTE)
                        continue;
                if (elf_notes_build_id((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, build_id,
                                       sizeof(build_id)) == 0)
                        return 1;
        }
        return 1;
}

const char *wire_build_id(void)
{
        if (!__atomic_load_n(&build_id_read, __ATOMIC_ACQUIRE)) {
                static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
                pthread_mutex_lock(&lock);
                if (!build_id_read) {
                        dl_iterate_phdr(note_cb, NULL);
                        __atomic_store_n(&build_id_read, true, __ATOMIC_RELEASE);
                }
                pthread_mutex_unlock(&lock);
        }
        return build_id;
}

/* ---- writing ---- */

struct wbuf {
        char *p;
        size_t len, cap;
        bool failed;
};

static void put(struct wbuf *w, const void *data, size_t n)
{
        if (w->failed)
                return;
        if (w->len + n > w->cap) {
                size_t nc = w->cap ? w->cap : 16384;
                while (nc < w->len + n)
                        nc *= 2;
                char *q = realloc(w->p, nc);
                if (!q) {
                        w->failed = true;
                        return;
                }
                w->p = q;
                w->cap = nc;
        }
        memcpy(w->p + w->len, data, n);
        w->len += n;
}

static void put_str(struct wbuf *w, const char *s)
{
        uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;
        put(w, &n, sizeof(n));
        if (s)
                put(w, s, n);
}

static void put_opt(struct wbuf *w, const void *obj, size_t n)
{
        uint8_t has = obj != NULL;
        put(w, &has, 1);
        if (obj)
                put(w, obj, n);
}

int snapshot_to_wire(const gr_snapshot *s, char **ret, size_t *ret_len)
{
        const char *id = wire_build_id();
        if (!id[0])
                return -ENOTSUP;
        struct wbuf w = { 0 };
        struct wire_head h = { .flags = (s->gpu_state_since_ms ? 1u : 0u) | (s->procs ? 2u : 0u) | (s->drm ? 4u : 0u) };
        memcpy(h.magic, WIRE_MAGIC, sizeof(h.magic));
        gr_strlcpy(h.build_id, id, sizeof(h.build_id));
        own_sizes(h.sizes);
        put(&w, &h, sizeof(h));
        gr_snapshot sc = *s;
        sc.gpu = NULL;
        sc.procs = NULL;
        sc.gpu_state_since_ms = NULL;
        sc.drm = NULL;
        put(&w, &sc, sizeof(sc));
        gr_gpu_report rc = *s->gpu;
        rc.gpus = NULL;
        put(&w, &rc, sizeof(rc));
        for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                gr_gpu g = s->gpu->gpus[i];
                g.procs = NULL;
                put(&w, &g, sizeof(g));
                if (s->gpu->gpus[i].n_procs)
                        put(&w, s->gpu->gpus[i].procs, s->gpu->gpus[i].n_procs * sizeof(gr_gpu_proc));
        }
        if (s->gpu_state_since_ms && s->gpu->n_gpus)
                put(&w, s->gpu_state_since_ms, s->gpu->n_gpus * sizeof(uint64_t));
        if (s->procs) {
                bool *want = snapshot_wanted_processes(s);
                if (!want) {
                        free(w.p);
                        return -ENOMEM;
                }
                gr_proc_table t = *s->procs;
                t.procs = NULL;
                t.n = t.n_holders = t.n_drm_holders = 0;
                for (size_t i = 0; i < s->procs->n; i++)
                        if (want[i]) {
                                t.n++;
                                t.n_holders += s->procs->procs[i].hold != NULL;
                                t.n_drm_holders += s->procs->procs[i].drm != NULL;
                        }
                t.cap = t.n;
                put(&w, &t, sizeof(t));
                for (size_t i = 0; i < s->procs->n; i++) {
                        if (!want[i])
                                continue;
                        const gr_process *p = &s->procs->procs[i];
                        gr_process pc = *p;
                        pc.cmdline = pc.cgroup = NULL;
                        pc.hold = NULL;
                        pc.net = NULL;
                        pc.seen = NULL;
                        pc.pod = NULL;
                        pc.drm = NULL;
                        put(&w, &pc, sizeof(pc));
                        put_str(&w, p->cmdline);
                        put_str(&w, p->cgroup);
                        put_opt(&w, p->hold, sizeof(*p->hold));
                        put_opt(&w, p->net, sizeof(*p->net));
                        put_opt(&w, p->seen, sizeof(*p->seen));
                        put_opt(&w, p->pod, sizeof(*p->pod));
                        put_opt(&w, p->drm, sizeof(*p->drm));
                }
                free(want);
        }
        if (s->drm) {
                gr_drm_report dc = *s->drm;
                dc.clients = NULL;
                dc.kfd = NULL;
                put(&w, &dc, sizeof(dc));
                if (s->drm->n_clients)
                        put(&w, s->drm->clients, s->drm->n_clients * sizeof(gr_drm_client));
                if (s->drm->n_kfd)
                        put(&w, s->drm->kfd, s->drm->n_kfd * sizeof(gr_kfd_usage));
        }
        if (w.failed) {
                free(w.p);
                return -ENOMEM;
        }
        *ret = w.p;
        *ret_len = w.len;
        return 0;
}

/* ---- reading ---- */

struct rbuf {
        const char *p;
        size_t left;
};

static bool take(struct rbuf *r, void *out, size_t n)
{
        if (r->left < n)
                return false;
        memcpy(out, r->p, n);
        r->p += n;
        r->left -= n;
        return true;
}

/* A string of at most max bytes (NUL-free), or none; -EINVAL when malformed */
static int take_str(struct rbuf *r, size_t max, char **ret)
{
        uint32_t n;
        *ret = NULL;
        if (!take(r, &n, sizeof(n)))
                return -EINVAL;
        if (n == UINT32_MAX)
                return 0;
        if (n > max || r->left < n || memchr(r->p, '\0', n))
                return -EINVAL;
        char *s = malloc((size_t)n + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, r->p, n);
        s[n] = '\0';
        r->p += n;
        r->left -= n;
        *ret = s;
        return 0;
}

static int take_opt(struct rbuf *r, size_t n, void **ret)
{
        uint8_t has;
        *ret = NULL;
        if (!take(r, &has, 1) || has > 1)
                return -EINVAL;
        if (!has)
                return 0;
        void *o = malloc(n);
        if (!o)
                return -ENOMEM;
        if (!take(r, o, n)) {
                free(o);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

#define TERMINATE(field) ((field)[sizeof(field) - 1] = '\0')

static bool gpu_ok(gr_gpu *g)
{
        TERMINATE(g->uuid);
        TERMINATE(g->pci_bus_id);
        TERMINATE(g->name);
        TERMINATE(g->error);
        g->procs = NULL;
        return g->n_procs <= 3 * GR_GPU_PROCS_MAX && g->mem_api >= 0 && g->mem_api <= 2;
}

static bool process_ok(gr_process *p)
{
        TERMINATE(p->comm);
        TERMINATE(p->exe);
        TERMINATE(p->env.torchelastic_run_id);
        TERMINATE(p->env.slurm_job_id);
        p->cmdline = p->cgroup = NULL;
        p->hold = NULL;
        p->net = NULL;
        p->seen = NULL;
        p->pod = NULL;
        p->drm = NULL;
        return p->pid > 0 && p->pid <= GR_PROC_PID_MAX && p->n_nspid <= GR_NSPID_MAX && (unsigned)p->exe_state <= GR_EXE_UNREADABLE;
}

static bool pod_ok(gr_pod *pod)
{
        TERMINATE(pod->uid);
        TERMINATE(pod->container_id);
        TERMINATE(pod->name);
        TERMINATE(pod->ns);
        TERMINATE(pod->container);
        TERMINATE(pod->gone_name);
        TERMINATE(pod->gone_ns);
        TERMINATE(pod->gone_why);
        return (unsigned)pod->naming <= GR_POD_NO_CONTAINER && (unsigned)pod->container_naming <= GR_POD_NO_CONTAINER &&
               (unsigned)pod->gone <= GR_POD_GONE_RUNNING;
}

/* The AMD and Intel view: its counts and indexes checked, its strings ended */
static int read_drm(struct rbuf *r, gr_snapshot *s)
{
        gr_drm_report *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        if (!take(r, d, sizeof(*d))) {
                free(d);
                return -EINVAL;
        }
        size_t nc = d->n_clients, nk = d->n_kfd;
        d->clients = NULL;
        d->kfd = NULL;
        d->n_clients = d->n_kfd = 0;
        s->drm = d;
        if (d->n_gpus > GR_DRM_GPUS_MAX || nc > REPLAY_PROCESSES_MAX || nk > REPLAY_PROCESSES_MAX)
                return -EINVAL;
        for (unsigned i = 0; i < d->n_gpus; i++) {
                TERMINATE(d->gpus[i].pdev);
                TERMINATE(d->gpus[i].driver);
        }
        if (nc) {
                if (!(d->clients = calloc(nc, sizeof(gr_drm_client))))
                        return -ENOMEM;
                if (!take(r, d->clients, nc * sizeof(gr_drm_client)))
                        return -EINVAL;
                d->n_clients = nc;
        }
        for (size_t i = 0; i < nc; i++) {
                gr_drm_client *c = &d->clients[i];
                TERMINATE(c->pdev);
                TERMINATE(c->driver);
                if (c->gpu >= (int)d->n_gpus || c->gpu < -1 || c->n_regions > GR_DRM_REGIONS_MAX)
                        return -EINVAL;
                for (unsigned k = 0; k < c->n_regions; k++)
                        TERMINATE(c->regions[k].name);
        }
        if (nk) {
                if (!(d->kfd = calloc(nk, sizeof(gr_kfd_usage))))
                        return -ENOMEM;
                if (!take(r, d->kfd, nk * sizeof(gr_kfd_usage)))
                        return -EINVAL;
                d->n_kfd = nk;
        }
        for (size_t i = 0; i < nk; i++)
                if (d->kfd[i].gpu >= (int)d->n_gpus || d->kfd[i].gpu < -1)
                        return -EINVAL;
        return 0;
}

static int read_processes(struct rbuf *r, gr_proc_table *t, size_t n)
{
        if (n > REPLAY_PROCESSES_MAX)
                return -EINVAL;
        t->cap = n;
        t->procs = n ? calloc(n, sizeof(gr_process)) : NULL;
        if (n && !t->procs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                gr_process *p = &t->procs[i];
                if (!take(r, p, sizeof(*p)) || !process_ok(p)) {
                        memset(p, 0, sizeof(*p));
                        return -EINVAL;
                }
                t->n++; /* from here its strings are the table's to free */
                if (i > 0 && p->pid <= t->procs[i - 1].pid)
                        return -EINVAL; /* sorted by PID, each once: the table is searched */
                int e = take_str(r, 1 << 20, &p->cmdline);
                if (e == 0)
                        e = take_str(r, 1 << 16, &p->cgroup);
                if (e == 0)
                        e = take_opt(r, sizeof(*p->hold), (void **)&p->hold);
                if (e == 0)
                        e = take_opt(r, sizeof(*p->net), (void **)&p->net);
                if (e == 0)
                        e = take_opt(r, sizeof(*p->seen), (void **)&p->seen);
                if (e == 0)
                        e = take_opt(r, sizeof(*p->pod), (void **)&p->pod);
                if (e == 0)
                        e = take_opt(r, sizeof(*p->drm), (void **)&p->drm);
                if (e < 0)
                        return e;
                if (p->drm && p->drm->n > GR_DRM_FDS_MAX)
                        return -EINVAL;
                if (p->hold && (p->hold->n_gpus > GR_HOLD_GPUS_MAX))
                        return -EINVAL;
                if (p->net && p->net->n_listen > GR_LISTEN_MAX)
                        return -EINVAL;
                if (p->seen) {
                        TERMINATE(p->seen->launcher_comm);
                        if ((unsigned)p->seen->end > GR_END_UNKNOWN)
                                return -EINVAL;
                }
                if (p->pod && !pod_ok(p->pod))
                        return -EINVAL;
                t->n_holders += p->hold != NULL;
                t->n_drm_holders += p->drm != NULL;
        }
        return 0;
}

static int read_body(struct rbuf *r, const struct wire_head *h, gr_snapshot *s)
{
        gr_gpu_report *rep = s->gpu;
        TERMINATE(rep->error);
        TERMINATE(rep->stuck_call);
        TERMINATE(rep->library);
        TERMINATE(rep->driver_version);
        TERMINATE(rep->nvml_version);
        unsigned n_gpus = rep->n_gpus;
        rep->n_gpus = 0; /* the wire's count is not the report's until its GPUs are read */
        if (n_gpus > GR_GPUS_MAX || (unsigned)rep->status > GR_GPU_TIMEOUT)
                return -EINVAL;
        rep->gpus = n_gpus ? calloc(n_gpus, sizeof(gr_gpu)) : NULL;
        if (n_gpus && !rep->gpus)
                return -ENOMEM;
        for (unsigned i = 0; i < n_gpus; i++) {
                gr_gpu *g = &rep->gpus[i];
                if (!take(r, g, sizeof(*g)) || !gpu_ok(g)) {
                        memset(g, 0, sizeof(*g));
                        return -EINVAL;
                }
                rep->n_gpus++;
                unsigned np = g->n_procs;
                g->n_procs = 0;
                if (np) {
                        g->procs = calloc(np, sizeof(gr_gpu_proc));
                        if (!g->procs)
                                return -ENOMEM;
                        if (!take(r, g->procs, np * sizeof(gr_gpu_proc)))
                                return -EINVAL;
                        g->n_procs = np;
                }
        }
        if (h->flags & 1u && n_gpus) {
                s->gpu_state_since_ms = calloc(n_gpus, sizeof(uint64_t));
                if (!s->gpu_state_since_ms)
                        return -ENOMEM;
                if (!take(r, s->gpu_state_since_ms, n_gpus * sizeof(uint64_t)))
                        return -EINVAL;
        }
        if (h->flags & 2u) {
                gr_proc_table *t = calloc(1, sizeof(*t));
                if (!t)
                        return -ENOMEM;
                if (!take(r, t, sizeof(*t))) {
                        free(t);
                        return -EINVAL;
                }
                /* counts of the wire's are not the table's until read: a table freed now frees none */
                size_t n = t->n;
                t->procs = NULL;
                t->n = t->n_holders = t->n_drm_holders = t->cap = 0;
                TERMINATE(t->scan_fallback);
                s->procs = t;
                if ((unsigned)t->scan > GR_SCAN_BPF)
                        return -EINVAL;
                int e = read_processes(r, t, n);
                if (e < 0)
                        return e;
        }
        if (h->flags & 4u) {
                int e = read_drm(r, s);
                if (e < 0)
                        return e;
        }
        return r->left == 0 ? 0 : -EINVAL;
}

int snapshot_from_wire(const char *buf, size_t len, gr_snapshot **ret)
{
        struct rbuf r = { buf, len };
        struct wire_head h;
        uint32_t sizes[WIRE_SIZES];
        own_sizes(sizes);
        const char *id = wire_build_id();
        if (!take(&r, &h, sizeof(h)) || memcmp(h.magic, WIRE_MAGIC, sizeof(h.magic)) != 0 || !id[0] ||
            strncmp(h.build_id, id, sizeof(h.build_id)) != 0 || memcmp(h.sizes, sizes, sizeof(sizes)) != 0)
                return -EPROTO;
        if (h.flags & ~7u)
                return -EINVAL;
        gr_snapshot *s = calloc(1, sizeof(*s));
        gr_gpu_report *rep = calloc(1, sizeof(*rep));
        if (!s || !rep) {
                free(s);
                free(rep);
                return -ENOMEM;
        }
        int e = -EINVAL;
        bool got = take(&r, s, sizeof(*s));
        /* never a pointer of the wire's: what is freed on an error is what was read here */
        s->gpu = rep;
        s->procs = NULL;
        s->gpu_state_since_ms = NULL;
        s->drm = NULL;
        if (got && take(&r, rep, sizeof(*rep))) {
                rep->gpus = NULL;
                TERMINATE(s->hostname);
                TERMINATE(s->proc_root);
                TERMINATE(s->dev_dir);
                TERMINATE(s->kubelet.socket);
                TERMINATE(s->kubelet.error);
                TERMINATE(s->kubelet.checkpoint);
                TERMINATE(s->kubelet.checkpoint_error);
                e = (unsigned)s->pidns > GR_PIDNS_OTHER || (unsigned)s->kubelet.state > GR_KUBELET_ERROR ||
                    (unsigned)s->kubelet.checkpoint_state > GR_CHECKPOINT_ERROR ? -EINVAL
                    : read_body(&r, &h, s);
        } else {
                memset(rep, 0, sizeof(*rep));
        }
        if (e < 0) {
                gr_snapshot_free(s);
                return e;
        }
        *ret = s;
        return 0;
}
