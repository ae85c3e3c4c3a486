#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/snapshot.h"
#include "gpureap/tree.h"
#include "basic/names.h"

/* inode of a "pid:[N]" namespace link, 0 when unreadable */
static uint64_t ns_inode(const char *proc_root, const char *pid)
{
        char path[1100], link[64];
        snprintf(path, sizeof(path), "%s/%s/ns/pid", proc_root, pid);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
                return 0;
        link[n] = '\0';
        unsigned long long ino;
        return sscanf(link, "pid:[%llu]", &ino) == 1 ? ino : 0;
}

/* The PID namespace the /proc mount shows (not ours: 'unshare --pid' without --mount-proc keeps
 * the host's /proc). Its PID 1 names it; without the right to look at PID 1, our own namespace
 * does when this /proc shows us with one PID only (the mount is of our namespace). */
static gr_pidns detect_pidns(const char *proc_root)
{
        uint64_t ino = ns_inode(proc_root, "1");
        if (ino)
                return ino == GR_PIDNS_INIT_INO ? GR_PIDNS_HOST : GR_PIDNS_OTHER;
        ino = ns_inode(proc_root, "self");
        if (!ino)
                return GR_PIDNS_UNKNOWN;
        if (ino == GR_PIDNS_INIT_INO)
                return GR_PIDNS_HOST;
        char path[1100], buf[4096];
        snprintf(path, sizeof(path), "%s/self", proc_root);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        size_t len = 0;
        gr_status st;
        int r = fd < 0 ? -errno : gr_read_file_at(fd, "status", buf, sizeof(buf), &len);
        if (fd >= 0)
                close(fd);
        if ((r < 0 && r != -EFBIG) || gr_parse_status(buf, len, &st) < 0)
                return GR_PIDNS_UNKNOWN;
        return st.n_nspid == 1 ? GR_PIDNS_OTHER : GR_PIDNS_UNKNOWN;
}

/* Does this /proc hide other users' processes (hidepid=1/2, subset=pid) from a non-root view? */
static bool detect_hidepid(const char *proc_root)
{
        if (geteuid() == 0)
                return false;
        char want[4096];
        if (!realpath(proc_root, want))
                return false;
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return false;
        char line[4096];
        bool hidden = false;
        while (fgets(line, sizeof(line), f)) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER */
                char *dash = strstr(line, " - proc ");
                char mp[4096];
                if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || strcmp(mp, want) != 0)
                        continue;
                hidden = strstr(dash, "hidepid=1") || strstr(dash, "hidepid=2") ||
                         strstr(dash, "hidepid=noaccess") || strstr(dash, "hidepid=invisible") ||
                         strstr(dash, "subset=pid");
        }
        fclose(f);
        return hidden;
}

/* The details of every holder's ancestors and of its group and session leaders: the diagnosis
 * judges a holder by its lineage (docs/verdicts.md), and a recording must carry it */
static void load_lineage(const gr_proc_options *po, gr_proc_table *t)
{
        for (size_t i = 0; i < t->n; i++) {
                gr_process *p = &t->procs[i];
                if (!p->hold && !p->drm)
                        continue;
                gr_process *q = p;
                for (int depth = 0; q && q->pid > 1 && depth < 32; depth++) {
                        gr_proc_load_details(po, q);
                        if (q != p)
                                gr_proc_load_net(po, q);
                        q = gr_proc_table_find(t, q->ppid);
                }
                if (q && q->pid == 1)
                        gr_proc_load_details(po, q); /* its comm and namespace: is it an init? */
                gr_process *l = gr_proc_table_find(t, p->pgrp);
                if (l)
                        gr_proc_load_details(po, l);
                l = gr_proc_table_find(t, p->session);
                if (l)
                        gr_proc_load_details(po, l);
                l = p->run_pid > 0 ? gr_proc_table_find(t, p->run_pid) : NULL;
                if (l)
                        gr_proc_load_details(po, l);
        }
}

/* The lock of the run leaf each process with details is in (lineage.c judges a gpureap-run
 * cgroup's run by it, not by what has its number now); only where /proc is the kernel's own,
 * whose cgroups and locks gpureap sees */
static bool in_run_leaf(const gr_process *p)
{
        return p->has_details && p->cgroup && strstr(p->cgroup, "/gpureap-run-");
}

static void load_leaf_locks(const gr_proc_options *po, gr_proc_table *t)
{
        const char *root = po->proc_root ? po->proc_root : gr_context_proc_root(NULL);
        if (!root || strcmp(root, "/proc") != 0)
                return;
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++)
                if (in_run_leaf(&t->procs[i]))
                        n++;
        if (n == 0)
                return;
        const char **cg = calloc(n, sizeof(*cg));
        gr_leaf_lock *lock = calloc(n, sizeof(*lock));
        if (cg && lock) {
                size_t k = 0;
                for (size_t i = 0; i < t->n; i++)
                        if (in_run_leaf(&t->procs[i]))
                                cg[k++] = t->procs[i].cgroup;
                gr_cgroup_run_leaf_locks(cg, n, lock);
                for (size_t i = 0, j = 0; i < t->n; i++)
                        if (in_run_leaf(&t->procs[i]))
                                t->procs[i].run_leaf = lock[j++];
        }
        free(cg);
        free(lock);
}

/* The kubelet's options for a call now: the snapshot's context, and its own timeout (1 s) cut
 * to what is left of the caller's deadline (at least 1 ms) */
static gr_kubelet_options kubelet_now(const gr_snapshot_options *opts)
{
        gr_kubelet_options ko = opts->kubelet;
        if (!ko.ctx)
                ko.ctx = opts->ctx;
        uint64_t timeout = ko.timeout_ms ? ko.timeout_ms : 1000, now = gr_now_ms();
        if (opts->gpu.deadline_ms) {
                uint64_t left = opts->gpu.deadline_ms > now ? opts->gpu.deadline_ms - now : 0;
                timeout = left < timeout ? left : timeout;
        }
        ko.timeout_ms = timeout ? timeout : 1;
        return ko;
}

/* The kubelet's List */
static int kubelet_ask(const gr_snapshot_options *opts, gr_kubelet_answer **ret)
{
        gr_kubelet_options ko = kubelet_now(opts);
        return gr_kubelet_ask(&ko, ret);
}

/* Does fd ref name a file of the view: a KFD file, or a DRM fd that is one of its clients' (or
 * whose fdinfo could not be read: kept, it may be)? */
static bool drm_fd_counts(const gr_drm_report *r, const gr_drm_fd_ref *ref)
{
        if (ref->node == GR_DRM_NODE_KFD)
                return true;
        for (size_t i = 0; r && i < r->n_clients; i++)
                for (unsigned k = 0; k < r->clients[i].n_holders && k < GR_DRM_CLIENT_HOLDERS_MAX; k++)
                        if (r->clients[i].holders[k].pid == ref->pid && r->clients[i].holders[k].fd == ref->fd)
                                return true;
        return r && r->n_unreadable > 0;
}

/* The AMD and Intel view (drm.h): the fdinfo of every DRM fd the scan found, sysfs's GPUs and
 * KFD; then each process keeps only the files of the view, so that a compositor on nvidia-drm
 * or a BMC's display is no holder and an NVIDIA machine's snapshot is as it was */
/* Every DRM fd of one process, its threads' own tables too, as refs */
#define DRM_VIEW_FDS_MAX 1024     /* a process's DRM fds read in full, at most */
struct all_refs {
        pid_t pid;
        gr_drm_fd_ref *refs;
        size_t n, cap;
        size_t of_pid;            /* this process's so far */
        bool cut;                 /* it had more than DRM_VIEW_FDS_MAX */
};

static int add_ref(int table_dir, pid_t table_tid, int fd, unsigned node, unsigned minor, void *userdata)
{
        (void)table_dir;
        struct all_refs *a = userdata;
        if (table_dir >= 0 && a->of_pid++ == DRM_VIEW_FDS_MAX) {
                a->cut = true;
                return 1; /* enough: the rest is not read (its holding stays truncated) */
        }
        if (a->n == a->cap) {
                size_t nc = a->cap ? a->cap * 2 : 64;
                gr_drm_fd_ref *nr = realloc(a->refs, nc * sizeof(*nr));
                if (!nr)
                        return -ENOMEM;
                a->refs = nr;
                a->cap = nc;
        }
        a->refs[a->n++] = (gr_drm_fd_ref){ .pid = a->pid, .fd = fd, .node = (uint8_t)node, .minor = minor,
                                           .tid = table_tid != a->pid ? table_tid : 0 };
        return 0;
}

/* The processes whose DRM files the scan's table does not all show, read again in full: one
 * with more DRM fds than a holding lists (GR_DRM_FDS_MAX), and a live process that KFD has an
 * entry for (a ROCm process: a thread's table of its own may hold its clients; its threads are
 * read only where it has more than one, and compared with kcmp); at most DRM_VIEW_FDS_MAX fds
 * of one (an adversary's process of 19,000 made every look take 2.4 s); and one whose main
 * thread has ended alone. reap's look before its plan reads every process so; the view reads
 * these, so that status and check see what reap sees (2026-12-07) */
static bool read_in_full(const char *proc_root, const gr_process *p, const pid_t *kfd_pids, size_t n_kfd)
{
        if (p->drm && p->drm->truncated)
                return true;
        /* a process whose main thread has ended alone: the scan found its files through a live
         * thread (and took that thread's state for the process's), and their fdinfo is that
         * thread's, the leader's being empty (or refused to a user); read through the threads,
         * they are not dropped. One stat read per DRM holder */
        if (p->drm && gr_proc_zombie_leader_alive(proc_root, p->pid))
                return true;
        return p->state != 'Z' && p->state != 'X' && n_kfd && bsearch(&p->pid, kfd_pids, n_kfd, sizeof(pid_t), gr_cmp_pid);
}

/* The PIDs KFD has entries for (its proc/ directory), sorted; none where there is no KFD */
static int kfd_pids(gr_context *ctx, pid_t **ret, size_t *ret_n)
{
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/class/kfd/kfd/proc", gr_context_sys_root(ctx));
        *ret = NULL;
        *ret_n = 0;
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        size_t n = 0, cap = 0;
        pid_t *p = NULL;
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                uint64_t v;
                if (gr_parse_u64(de->d_name, &v) < 0 || v == 0 || v > GR_PROC_PID_MAX)
                        continue;
                if (n == cap) {
                        size_t nc = cap ? cap * 2 : 16;
                        pid_t *np = realloc(p, nc * sizeof(*np));
                        if (!np) {
                                r = -ENOMEM;
                                break;
                        }
                        p = np;
                        cap = nc;
                }
                p[n++] = (pid_t)v;
        }
        closedir(d);
        if (r < 0) {
                free(p);
                return r;
        }
        if (n > 1)
                qsort(p, n, sizeof(*p), gr_cmp_pid);
        *ret = p;
        *ret_n = n;
        return 0;
}

static int take_drm(const gr_proc_options *po, gr_snapshot *s)
{
        pid_t *kfd = NULL;
        size_t n_kfd = 0;
        if (kfd_pids(po->ctx, &kfd, &n_kfd) < 0)
                return -ENOMEM;
        /* every process's refs in turn: its holding's, or all of them where read in full */
        struct all_refs all = { 0 };
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                gr_process *p = &s->procs->procs[i];
                if (!p->drm && !n_kfd)
                        continue;
                all.pid = p->pid;
                all.of_pid = 0;
                all.cut = false;
                size_t before = all.n;
                if (read_in_full(po->proc_root, p, kfd, n_kfd)) {
                        int q = gr_proc_each_drm_fd(po->proc_root, po->dev_dir, p->pid, add_ref, &all);
                        if (q == -ENOMEM) {
                                free(kfd);
                                free(all.refs);
                                return q;
                        }
                        if (!p->drm && all.n > before) {
                                /* its files are in a thread's table: a holder all the same */
                                p->drm = calloc(1, sizeof(*p->drm));
                                if (!p->drm) {
                                        free(kfd);
                                        free(all.refs);
                                        return -ENOMEM;
                                }
                                for (size_t k = before; k < all.n; k++) {
                                        p->drm->n_fds++;
                                        p->drm->n_kfd += all.refs[k].node == GR_DRM_NODE_KFD;
                                        if (p->drm->n < GR_DRM_FDS_MAX) {
                                                p->drm->fds[p->drm->n].fd = all.refs[k].fd;
                                                p->drm->fds[p->drm->n].node = all.refs[k].node;
                                                p->drm->fds[p->drm->n++].minor = all.refs[k].minor;
                                        } else {
                                                p->drm->truncated = true;
                                        }
                                }
                                s->procs->n_drm_holders++;
                        }
                        if (p->drm && all.cut)
                                p->drm->truncated = true;
                        if (all.n > before)
                                continue; /* read in full */
                }
                for (unsigned k = 0; p->drm && k < p->drm->n; k++)
                        if (add_ref(-1, p->pid, p->drm->fds[k].fd, p->drm->fds[k].node, p->drm->fds[k].minor, &all) < 0) {
                                free(kfd);
                                free(all.refs);
                                return -ENOMEM;
                        }
        }
        free(kfd);
        gr_drm_fd_ref *refs = all.refs;
        size_t n = all.n;
        gr_drm_input in = { .ctx = po->ctx, .proc_root = po->proc_root, .fds = refs, .n_fds = n };
        int r = gr_drm_report_read(&in, &s->drm);
        for (size_t i = 0; r == 0 && s->procs && i < s->procs->n; i++) {
                gr_process *p = &s->procs->procs[i];
                if (!p->drm)
                        continue;
                unsigned kept = 0;
                for (unsigned k = 0; k < p->drm->n; k++) {
                        gr_drm_fd_ref ref = { p->pid, p->drm->fds[k].fd, 0, p->drm->fds[k].node, p->drm->fds[k].minor };
                        if (drm_fd_counts(s->drm, &ref))
                                p->drm->fds[kept++] = p->drm->fds[k];
                }
                if (kept == 0 && !p->drm->truncated) {
                        free(p->drm);
                        p->drm = NULL;
                        s->procs->n_drm_holders--;
                } else {
                        p->drm->n_fds -= p->drm->n - kept;
                        p->drm->n = kept;
                }
        }
        free(refs);
        return r;
}

int gr_snapshot_take(const gr_snapshot_options *opts, gr_snapshot **ret)
{
        gr_snapshot *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->taken_at_ms = gr_wall_ms();
        if (gethostname(s->hostname, sizeof(s->hostname) - 1) < 0)
                s->hostname[0] = '\0';
        gr_text_sanitize(s->hostname); /* a container's root names its own host */
        s->self = getpid();
        s->uid = getuid();

        gr_proc_options po = opts ? opts->proc : (gr_proc_options){ 0 };
        gr_gpu_options go = opts ? opts->gpu : (gr_gpu_options){ 0 };
        if (!po.ctx)
                po.ctx = opts ? opts->ctx : NULL;
        if (!go.ctx)
                go.ctx = opts ? opts->ctx : NULL;
        if (!po.proc_root)
                po.proc_root = gr_context_proc_root(po.ctx);
        if (!po.dev_dir)
                po.dev_dir = gr_context_dev_dir(po.ctx);
        gr_strlcpy(s->proc_root, po.proc_root, sizeof(s->proc_root));
        gr_strlcpy(s->dev_dir, po.dev_dir, sizeof(s->dev_dir));

        /* the driver is read in a helper while we scan /proc: the two waits overlap */
        gr_gpu_query *q = NULL;
        pid_t helper = 0;
        int r = opts && opts->gpu_down ? 0 : gr_gpu_query_start(&go, &q, &helper);
        if (r < 0) {
                free(s);
                return r;
        }
        pid_t skip[1] = { helper };
        po.skip = skip;
        po.n_skip = helper > 0;
        uint64_t t0 = gr_now_ms();
        s->proc_error = gr_proc_scan(&po, &s->procs);
        s->proc_elapsed_ms = gr_now_ms() - t0;
        uint64_t bound = opts && opts->proc_slow_ms ? opts->proc_slow_ms
                         : opts && opts->gpu.timeout_ms ? opts->gpu.timeout_ms : 5000;
        s->proc_slow = s->proc_elapsed_ms > bound;
        /* the kubelet while the driver's helper still works: its wait overlaps the driver's */
        gr_kubelet_answer *asked = NULL;
        if (opts && opts->kubelet_ask && !opts->kubelet_answer && (r = kubelet_ask(opts, &asked)) < 0) {
                if (q)
                        gr_gpu_query_finish(q, &s->gpu);
                gr_snapshot_free(s);
                return r;
        }

        if (q) {
                r = gr_gpu_query_finish(q, &s->gpu);
        } else if ((s->gpu = calloc(1, sizeof(*s->gpu)))) {
                s->gpu->status = GR_GPU_TIMEOUT;
                s->gpu->stuck_gpu = -1;
                gr_strlcpy(s->gpu->error, opts->gpu_down, sizeof(s->gpu->error));
                r = 0;
        } else {
                r = -ENOMEM;
        }
        if (r < 0) {
                gr_kubelet_answer_free(asked);
                gr_snapshot_free(s);
                return r;
        }
        r = take_drm(&po, s);
        if (r < 0) {
                gr_snapshot_free(s);
                return r;
        }
        s->pidns = detect_pidns(po.proc_root);
        s->hidepid = detect_hidepid(po.proc_root);
        if (s->procs)
                load_lineage(&po, s->procs);
        /* context owners that hold no device file in their own table: a live one may hold
         * them in a thread's (unshare(CLONE_FILES)); the others (ghosts' zombies, other
         * namespaces) still get their details read */
        for (unsigned i = 0; s->procs && i < s->gpu->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                for (unsigned j = 0; j < g->n_procs; j++) {
                        gr_process *p = gr_proc_table_find(s->procs, (pid_t)g->procs[j].pid);
                        if (p && !p->hold && gr_proc_read_thread_files(&po, s->procs, p) == -ENOMEM) {
                                gr_snapshot_free(s);
                                return -ENOMEM;
                        }
                        if (p && !p->has_details)
                                gr_proc_load_details(&po, p);
                }
        }
        if (s->procs)
                load_leaf_locks(&po, s->procs);
        r = gr_snapshot_name_pods(s, asked ? asked : opts ? opts->kubelet_answer : NULL);
        gr_kubelet_answer_free(asked);
        if (r == 0 && opts && (opts->kubelet_ask || opts->kubelet_answer)) {
                gr_kubelet_options ko = kubelet_now(opts);
                r = gr_snapshot_confirm_gone(s, &ko, opts->pod_memory, gr_now_ms() + ko.timeout_ms);
        }
        if (r < 0) {
                gr_snapshot_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void gr_snapshot_free(gr_snapshot *s)
{
        if (!s)
                return;
        gr_gpu_report_free(s->gpu);
        gr_proc_table_free(s->procs);
        gr_drm_report_free(s->drm);
        free(s->gpu_state_since_ms);
        free(s);
}

GR_NAME_TABLE(gr_pidns_name, gr_pidns, GR_PIDNS_OTHER, "unknown",
              [GR_PIDNS_HOST] = "host", [GR_PIDNS_OTHER] = "other")

GR_NAME_TABLE(gr_owner_state_name, gr_owner_state, GR_OWNER_UNMAPPED, "unknown",
              [GR_OWNER_ALIVE] = "alive", [GR_OWNER_ZOMBIE] = "zombie", [GR_OWNER_NOT_FOUND] = "not_found", [GR_OWNER_UNMAPPED] = "unmapped")

gr_owner_state gr_snapshot_owner_state(const gr_snapshot *s, pid_t pid)
{
        const gr_process *p = gr_proc_table_find(s->procs, pid);
        if (!p)
                return GR_OWNER_NOT_FOUND;
        if (p->state == 'Z' || p->state == 'X')
                return GR_OWNER_ZOMBIE;
        return GR_OWNER_ALIVE;
}

unsigned gr_process_fds_on_minor(const gr_process *p, int minor)
{
        if (!p->hold || minor < 0)
                return 0;
        for (unsigned i = 0; i < p->hold->n_gpus; i++)
                if (p->hold->gpus[i].minor == (unsigned)minor)
                        return p->hold->gpus[i].n_fds;
        return 0;
}

/* A PCI address: [DOMAIN:]BUS:DEVICE.FUNCTION in hex, either case. NVML writes the domain with 8
 * digits (00000000:1A:00.0), lspci and sysfs with 4 (0000:1a:00.0); without it (1a:00.0) it is
 * any domain's. false when s is not one */
/* 1 to max hex digits of *p, either case, moved past; false when none */
static bool hex_field(const char **p, int max, unsigned long *ret)
{
        unsigned long v = 0;
        int n = 0;
        for (; n < max && isxdigit((unsigned char)(*p)[n]); n++) {
                int c = tolower((unsigned char)(*p)[n]);
                v = v * 16 + (unsigned long)(isdigit(c) ? c - '0' : c - 'a' + 10);
        }
        *p += n;
        *ret = v;
        return n > 0;
}

static bool pci_address(const char *s, bool *ret_has_domain, unsigned long ret[4])
{
        unsigned long f[3], fn;
        unsigned n = 0;
        const char *p = s;
        if (!hex_field(&p, 8, &f[n++]))
                return false;
        while (*p == ':' && n < 3) {
                p++;
                if (!hex_field(&p, 8, &f[n++]))
                        return false;
        }
        if (n < 2 || *p++ != '.' || !hex_field(&p, 1, &fn) || *p || fn > 7)
                return false;
        unsigned long bus = f[n - 2], dev = f[n - 1];
        if (bus > 0xff || dev > 0x1f)
                return false;
        *ret_has_domain = n == 3;
        ret[0] = n == 3 ? f[0] : 0;
        ret[1] = bus;
        ret[2] = dev;
        ret[3] = fn;
        return true;
}

static bool pci_matches(const char *gpu_bus_id, const char *sel)
{
        bool sel_domain, gpu_domain;
        unsigned long a[4], b[4];
        if (!pci_address(sel, &sel_domain, a) || !pci_address(gpu_bus_id, &gpu_domain, b))
                return false;
        return (!sel_domain || a[0] == b[0]) && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

bool gr_gpu_matches(const gr_gpu *g, const char *sel)
{
        uint64_t v;
        if (gr_parse_u64(sel, &v) == 0)
                return v == g->index;
        /* its device file's name: what Slurm's gres.conf and a container's --device give */
        if (strncmp(sel, "nvidia", 6) == 0 && gr_parse_u64(sel + 6, &v) == 0)
                return g->minor >= 0 && v == (uint64_t)g->minor;
        if (g->uuid[0] && strncasecmp(sel, g->uuid, strlen(sel)) == 0 && strlen(sel) >= 8)
                return true;
        if (g->pci_bus_id[0] && (strcasecmp(sel, g->pci_bus_id) == 0 || pci_matches(g->pci_bus_id, sel)))
                return true;
        return false;
}

bool gr_gpu_list_each(const char *list, bool (*cb)(const char *selector, void *userdata), void *userdata)
{
        char item[128];
        const char *p = list;
        while (p && *p) {
                const char *e = strchr(p, ',');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                if (n >= sizeof(item))
                        n = sizeof(item) - 1;
                memcpy(item, p, n);
                item[n] = '\0';
                if (n > 0 && cb(item, userdata))
                        return true;
                if (!e)
                        break;
                p = e + 1;
        }
        return false;
}

static bool matches_cb(const char *selector, void *userdata)
{
        return gr_gpu_matches(userdata, selector);
}

bool gr_gpu_matches_list(const gr_gpu *g, const char *list)
{
        return !list || gr_gpu_list_each(list, matches_cb, (void *)g);
}

bool gr_drm_gpu_matches(const gr_drm_gpu *g, const char *sel)
{
        if (!g->pdev[0] || !sel[0])
                return false;
        if (strcasecmp(g->pdev, sel) == 0)
                return true;
        const char *colon = strchr(g->pdev, ':');
        return strchr(sel, ':') == strrchr(sel, ':') && colon && strcasecmp(colon + 1, sel) == 0;
}

static bool drm_matches_cb(const char *selector, void *userdata)
{
        return gr_drm_gpu_matches(userdata, selector);
}

bool gr_drm_gpu_matches_list(const gr_drm_gpu *g, const char *list)
{
        return !list || gr_gpu_list_each(list, drm_matches_cb, (void *)g);
}

bool gr_nvidia_device_file(const char *dev_dir, char *buf, size_t size)
{
        DIR *d = opendir(dev_dir && dev_dir[0] ? dev_dir : "/dev");
        if (!d)
                return false;
        bool found = false;
        struct dirent *e;
        while (!found && (e = readdir(d))) {
                uint64_t v;
                if (strncmp(e->d_name, "nvidia", 6) == 0 && gr_parse_u64(e->d_name + 6, &v) == 0) {
                        if (buf)
                                snprintf(buf, size, "%s/%s", dev_dir && dev_dir[0] ? dev_dir : "/dev", e->d_name);
                        found = true;
                }
        }
        closedir(d);
        return found;
}

bool gr_snapshot_drm_only(const gr_snapshot *s)
{
        if (!s || !s->gpu || !s->drm || s->drm->n_gpus == 0)
                return false;
        gr_gpu_status st = s->gpu->status;
        bool none = st == GR_GPU_NO_LIBRARY || (st == GR_GPU_OK && s->gpu->n_gpus == 0) ||
                    (st == GR_GPU_INIT_FAILED && !s->replayed);
        /* a GPU's device file here is an NVIDIA GPU that cannot be read: a driver failure */
        return none && (s->replayed || !gr_nvidia_device_file(s->dev_dir, NULL, 0));
}
