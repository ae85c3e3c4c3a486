/* The /proc scan: one directory fd per PID, every file opened relative to it with O_NOFOLLOW.
 * A process that vanishes mid-read is dropped quietly; every buffer and count is bounded. */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/kcmp.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "netns.h"
#include "proc-bpf.h"
#include "basic/context.h"
#include "basic/names.h"

static const char *opt_proc_root(const gr_proc_options *o)
{
        return o && o->proc_root ? o->proc_root : gr_context_proc_root(o ? o->ctx : NULL);
}

static const char *opt_dev_dir(const gr_proc_options *o)
{
        return o && o->dev_dir ? o->dev_dir : gr_context_dev_dir(o ? o->ctx : NULL);
}

/* The device directory's length without its trailing slashes, as paths are compared to it */
static size_t dev_dir_len(const char *devdir)
{
        size_t n = strlen(devdir);
        while (n > 1 && devdir[n - 1] == '/')
                n--;
        return n;
}

static bool parse_pid_name(const char *name, pid_t *ret)
{
        uint64_t v;
        if (gr_parse_u64(name, &v) < 0 || v == 0 || v > INT32_MAX)
                return false;
        *ret = (pid_t)v;
        return true;
}

static bool skipped(const gr_proc_options *o, pid_t pid)
{
        for (size_t i = 0; o && i < o->n_skip; i++)
                if (o->skip[i] == pid)
                        return true;
        return false;
}

static void holding_add_gpu(gr_holding *h, unsigned minor)
{
        for (unsigned i = 0; i < h->n_gpus; i++)
                if (h->gpus[i].minor == minor) {
                        h->gpus[i].n_fds++;
                        return;
                }
        if (h->n_gpus == GR_HOLD_GPUS_MAX) {
                h->gpus_truncated = true;
                return;
        }
        h->gpus[h->n_gpus].minor = minor;
        h->gpus[h->n_gpus].n_fds = 1;
        h->n_gpus++;
}

#define SOCKS_MAX 256 /* sockets matched per process; a server with more is marked truncated */

struct sock_list {
        uint64_t inodes[SOCKS_MAX];
        unsigned n;
        bool truncated;
};

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

struct net_scan {
        const struct sock_list *socks;
        gr_net *net;
        uint16_t established_ports[64];  /* local ports of its established sockets */
        unsigned n_established_ports;
};

static void account_socket(struct net_scan *ns, unsigned state, unsigned port, uint64_t inode)
{
        if (!bsearch(&inode, ns->socks->inodes, ns->socks->n, sizeof(uint64_t), cmp_u64))
                return;
        gr_net *n = ns->net;
        if (state == GR_TCP_LISTEN) {
                for (unsigned k = 0; k < n->n_listen; k++)
                        if (n->listen_ports[k] == port)
                                return; /* the same port on IPv4 and IPv6 */
                if (n->n_listen < GR_LISTEN_MAX) {
                        n->listen_inodes[n->n_listen] = inode;
                        n->listen_ports[n->n_listen++] = (uint16_t)port;
                } else {
                        n->truncated = true;
                }
        } else if (state == GR_TCP_ESTABLISHED) {
                n->n_established++;
                if (ns->n_established_ports < GR_ELEMENTSOF(ns->established_ports))
                        ns->established_ports[ns->n_established_ports++] = (uint16_t)port;
        }
}

static int net_line(const char *line, size_t len, void *userdata)
{
        unsigned state, port;
        uint64_t inode;
        if (gr_parse_tcp_socket(line, len, &state, &port, &inode))
                account_socket(userdata, state, port, inode);
        return 0;
}

/* The TCP sockets of a process, from its network namespace's tables: the scan's copy of them
 * when there is one (netns.h), else its own /proc/PID/net/tcp{,6} */
static gr_net *read_net(int piddir, struct sock_list *socks, gr_netns_cache *cache)
{
        gr_net *n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;
        n->truncated = socks->truncated;
        if (socks->n == 0)
                return n;
        qsort(socks->inodes, socks->n, sizeof(uint64_t), cmp_u64);
        struct net_scan ns = { .socks = socks, .net = n };
        const gr_sock_table *t = gr_netns_table(cache, piddir);
        if (t) {
                for (size_t i = 0; i < t->n; i++)
                        account_socket(&ns, t->socks[i].state, t->socks[i].port, t->socks[i].inode);
                n->truncated |= t->truncated;
        } else {
                gr_read_lines_at(piddir, "net/tcp", net_line, &ns);
                gr_read_lines_at(piddir, "net/tcp6", net_line, &ns);
        }
        /* connections accepted on a port it listens on: it is serving someone */
        for (unsigned i = 0; i < ns.n_established_ports; i++)
                for (unsigned k = 0; k < n->n_listen; k++)
                        if (ns.established_ports[i] == n->listen_ports[k]) {
                                n->n_serving++;
                                break;
                        }
        return n;
}

/* The inode of an fd's link "socket:[INODE]" */
static uint64_t socket_inode(const char *target)
{
        uint64_t ino = 0;
        for (const char *c = target + 8; *c >= '0' && *c <= '9'; c++)
                ino = ino * 10 + (uint64_t)(*c - '0');
        return ino;
}

static void note_socket(struct sock_list *socks, const char *target)
{
        uint64_t ino = socket_inode(target);
        if (socks->n < SOCKS_MAX)
                socks->inodes[socks->n++] = ino;
        else
                socks->truncated = true;
}

/* Walk /proc/PID/fd; returns 1 and a new holding when any NVIDIA device file is open, 0 when
 * none, -errno when the directory could not be read. Socket inodes go to socks. With
 * sockets_only, device files are not classified (a lineage root's sockets). */
/* How DRM and KFD files are told (proc.h): by the device's number where the scan reads the
 * running system, by name in a recorded tree or a test's device directory */
struct drm_class {
        bool by_name;
        unsigned kfd_major;      /* the "kfd" character major of /proc/devices, 0 none */
};

GR_NAME_TABLE(gr_drm_node_name, gr_drm_node, GR_DRM_NODE_KFD, "unknown",
              [GR_DRM_NODE_CARD] = "card", [GR_DRM_NODE_RENDER] = "render", [GR_DRM_NODE_KFD] = "kfd")

/* The character major /proc/devices gives a name (kfd's is assigned at load), 0 when none */
static unsigned char_major(const char *name)
{
        char buf[8192];
        size_t len;
        int r = gr_read_file_at(AT_FDCWD, "/proc/devices", buf, sizeof(buf), &len);
        if (r < 0 && r != -EFBIG)
                return 0;
        buf[len < sizeof(buf) ? len : sizeof(buf) - 1] = '\0';
        size_t nlen = strlen(name);
        for (const char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                if (strncmp(l, "Block devices:", 14) == 0)
                        break;
                const char *c = l;
                while (*c == ' ')
                        c++;
                unsigned v = 0;
                const char *d = c;
                for (; *d >= '0' && *d <= '9' && v < 1u << 12; d++)
                        v = v * 10 + (unsigned)(*d - '0');
                if (d > c && *d == ' ' && strncmp(d + 1, name, nlen) == 0 && (d[1 + nlen] == '\n' || !d[1 + nlen]))
                        return v;
        }
        return 0;
}

/* DEVDIR/dri/renderD<N>, DEVDIR/dri/card<N>, DEVDIR/kfd: a recorded tree's names */
static bool drm_by_name(const char *devdir, size_t devdir_len, const char *target, uint8_t *ret_node,
                        unsigned *ret_minor)
{
        if (strncmp(target, devdir, devdir_len) != 0 || target[devdir_len] != '/')
                return false;
        const char *rest = target + devdir_len + 1;
        uint64_t v;
        if (strcmp(rest, "kfd") == 0) {
                *ret_node = GR_DRM_NODE_KFD;
                *ret_minor = 0;
                return true;
        }
        if (strncmp(rest, "dri/", 4) != 0)
                return false;
        rest += 4;
        if (strncmp(rest, "renderD", 7) == 0 && gr_parse_u64(rest + 7, &v) == 0 && v < 1u << 20)
                *ret_node = GR_DRM_NODE_RENDER;
        else if (strncmp(rest, "card", 4) == 0 && gr_parse_u64(rest + 4, &v) == 0 && v < 1u << 20)
                *ret_node = GR_DRM_NODE_CARD;
        else
                return false;
        *ret_minor = (unsigned)v;
        return true;
}

/* The running system: the fd's inode by a stat through its link (nothing is opened, so no KFD
 * process entry is made), for the links that can name a device file at all (/dev/..., the
 * terminals and /dev/null spared the call) */
static bool drm_by_number(int fdd, const char *name, const char *target, const struct drm_class *c,
                          uint8_t *ret_node, unsigned *ret_minor)
{
        if (strncmp(target, "/dev/", 5) != 0 || strncmp(target, "/dev/pts/", 9) == 0 ||
            strcmp(target, "/dev/null") == 0 || strncmp(target, "/dev/tty", 8) == 0)
                return false;
        struct stat st;
        if (fstatat(fdd, name, &st, 0) < 0 || !S_ISCHR(st.st_mode))
                return false;
        unsigned maj = major(st.st_rdev), min = minor(st.st_rdev);
        if (maj == GR_DRM_MAJOR) {
                *ret_node = min >= 128 ? GR_DRM_NODE_RENDER : GR_DRM_NODE_CARD;
                *ret_minor = min;
                return true;
        }
        if (c->kfd_major && maj == c->kfd_major) {
                *ret_node = GR_DRM_NODE_KFD;
                *ret_minor = 0;
                return true;
        }
        return false;
}

static int drm_add(gr_drm_holding **dh, int fd, uint8_t node, unsigned minor)
{
        if (!*dh && !(*dh = calloc(1, sizeof(**dh))))
                return -ENOMEM;
        gr_drm_holding *h = *dh;
        h->n_fds++;
        h->n_kfd += node == GR_DRM_NODE_KFD;
        if (h->n == GR_DRM_FDS_MAX) {
                h->truncated = true;
                return 0;
        }
        h->fds[h->n].fd = fd;
        h->fds[h->n].node = node;
        h->fds[h->n].minor = minor;
        h->n++;
        return 0;
}

static int cmp_drm_fd(const void *a, const void *b)
{
        const int x = *(const int *)a, y = *(const int *)b; /* fd is the first member */
        return (x > y) - (x < y);
}

/* The entries of a directory, read with getdents64 into a buffer of the caller's: the fd
 * directory of every process is read at each look, and fdopendir's fstat and two fcntl calls
 * were 3 of its 14 system calls (1-2 us each on a 16-core VM) */
struct dents {
        int fd;
        ssize_t n, off;
        char buf[8192] __attribute__((aligned(8)));
};

static struct dirent64 *dents_next(struct dents *d)
{
        if (d->off >= d->n) {
                d->n = getdents64(d->fd, d->buf, sizeof(d->buf));
                d->off = 0;
                if (d->n <= 0)
                        return NULL; /* the end, or an error: as readdir, the entries so far */
        }
        struct dirent64 *de = (struct dirent64 *)(d->buf + d->off);
        d->off += de->d_reclen;
        return de;
}

/* Each DRM or KFD fd of one table told to a caller as it is found (gr_proc_each_drm_fd): every
 * one, however many, not the first GR_DRM_FDS_MAX that a holding keeps */
struct drm_each {
        gr_drm_fd_fn fn;
        void *userdata;
        pid_t tid;                /* whose /proc/TID the table is */
        int r;                    /* the first non-zero answer */
};

static int scan_fds(int piddir, const char *devdir, size_t devdir_len, gr_holding **ret,
                    struct sock_list *socks, unsigned *ret_entries, const struct drm_class *drm_c,
                    gr_drm_holding **ret_drm, struct drm_each *each)
{
        int fdd = openat(piddir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fdd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        struct dents d;
        d.fd = fdd;
        d.n = d.off = 0;
        gr_holding *h = NULL;
        gr_drm_holding *dh = NULL;
        struct dirent64 *de;
        char target[512];
        unsigned entries = 0;
        while ((de = dents_next(&d))) {
                if (de->d_name[0] == '.')
                        continue;
                entries++;
                ssize_t n = readlinkat(fdd, de->d_name, target, sizeof(target) - 1);
                if (n < 0 && (errno == EACCES || errno == EPERM) && each && geteuid() != 0) {
                        /* a user's look at each DRM fd (the reap's audit, before a signal): the
                         * directory lists but its links are refused (reading them needs ptrace's
                         * access: a process of the user's whose gid differs, started through sg
                         * or a setgid wrapper): not known, never "holds nothing" (a user's reap
                         * ended a leftover that shared its client with such a job). Root's look
                         * passes over links refused to it, as before (docs/drm.md) */
                        free(h);
                        free(dh);
                        close(fdd);
                        return -EACCES;
                }
                if (n <= 0)
                        continue; /* closed between readdir and readlink */
                target[n] = '\0';
                if (strncmp(target, "socket:[", 8) == 0) {
                        note_socket(socks, target);
                        continue;
                }
                if (!ret)
                        continue;
                unsigned minor = 0;
                gr_dev_kind k = gr_classify_device_path(devdir, devdir_len, target, &minor);
                if (k == GR_DEV_NONE) {
                        uint8_t node;
                        uint64_t fd;
                        if (drm_c && (ret_drm || each) && gr_parse_u64(de->d_name, &fd) == 0 && fd <= INT32_MAX &&
                            (drm_c->by_name ? drm_by_name(devdir, devdir_len, target, &node, &minor)
                                            : drm_by_number(fdd, de->d_name, target, drm_c, &node, &minor))) {
                                if (each) {
                                        if (each->r == 0)
                                                each->r = each->fn(piddir, each->tid, (int)fd, node, minor, each->userdata);
                                        continue;
                                }
                                if (drm_add(&dh, (int)fd, node, minor) >= 0)
                                        continue;
                                free(h);
                                close(fdd);
                                return -ENOMEM;
                        }
                        continue;
                }
                if (!h) {
                        h = calloc(1, sizeof(*h));
                        if (!h) {
                                free(dh);
                                close(fdd);
                                return -ENOMEM;
                        }
                }
                h->n_fds++;
                switch (k) {
                case GR_DEV_GPU: holding_add_gpu(h, minor); break;
                case GR_DEV_CTL: h->n_ctl++; break;
                case GR_DEV_UVM: h->n_uvm++; break;
                case GR_DEV_CAPS: h->n_caps++; break;
                default: h->n_other++; break;
                }
        }
        close(fdd);
        /* GPUs in minor order, whatever order readdir gave the fds in */
        for (unsigned i = 1; h && i < h->n_gpus; i++)
                for (unsigned j = i; j > 0 && h->gpus[j - 1].minor > h->gpus[j].minor; j--) {
                        __typeof__(h->gpus[0]) tmp = h->gpus[j];
                        h->gpus[j] = h->gpus[j - 1];
                        h->gpus[j - 1] = tmp;
                }
        if (dh && dh->n > 1)
                qsort(dh->fds, dh->n, sizeof(dh->fds[0]), cmp_drm_fd);
        if (ret)
                *ret = h;
        if (ret_drm)
                *ret_drm = dh;
        if (ret_entries)
                *ret_entries = entries;
        return h || dh ? 1 : 0;
}

struct maps_count {
        const char *devdir;
        size_t devdir_len;
        unsigned n;
};

static int maps_line(const char *line, size_t len, void *userdata)
{
        struct maps_count *mc = userdata;
        if (gr_maps_line_is_nvidia(line, len, mc->devdir, mc->devdir_len) && mc->n < UINT32_MAX)
                mc->n++;
        return 0;
}

int gr_proc_read_exe_at(int piddir, char *buf, size_t size)
{
        char target[4096];
        ssize_t n = readlinkat(piddir, "exe", target, sizeof(target) - 1);
        if (n < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        target[n] = '\0';
        size_t len = (size_t)n;
        static const char deleted[] = " (deleted)"; /* replaced on disk since it started */
        if (len > sizeof(deleted) - 1 && strcmp(target + len - (sizeof(deleted) - 1), deleted) == 0)
                target[len - (sizeof(deleted) - 1)] = '\0';
        const char *base = strrchr(target, '/');
        gr_strlcpy(buf, base ? base + 1 : target, size);
        gr_text_sanitize(buf);
        return 0;
}

/* gr_proc_in_init_timens, asked once (threads may race to ask: the same answer) */
static bool init_timens(void)
{
        static int known; /* 0 not asked, 1 yes, 2 no */
        int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
        if (!k) {
                k = gr_proc_in_init_timens() ? 1 : 2;
                __atomic_store_n(&known, k, __ATOMIC_RELAXED);
        }
        return k == 1;
}

static int load_details_at(int piddir, gr_process *p)
{
        char buf[8192];
        size_t len;
        int r = gr_read_file_at(piddir, "status", buf, sizeof(buf), &len);
        if (r < 0 && r != -EFBIG)
                return r;
        gr_status st;
        gr_parse_status(buf, len, &st);
        p->has_uid = st.has_uid;
        p->uid = st.uid;
        p->sig_ignored = st.sig_ignored;
        memcpy(p->nspid, st.nspid, sizeof(p->nspid));
        p->n_nspid = st.n_nspid;

        char raw[GR_CMDLINE_MAX];
        r = gr_read_file_at(piddir, "cmdline", raw, sizeof(raw), &len);
        if ((r == 0 || r == -EFBIG) && len > 0) {
                free(p->cmdline);
                p->cmdline = malloc(GR_CMDLINE_MAX);
                if (!p->cmdline)
                        return -ENOMEM;
                gr_render_cmdline(raw, len, p->cmdline, GR_CMDLINE_MAX);
        }
        r = gr_read_file_at(piddir, "cgroup", buf, sizeof(buf), &len);
        if (r == 0 || r == -EFBIG) {
                char cg[GR_CGROUP_MAX];
                if (gr_parse_cgroup(buf, len, cg, sizeof(cg)) == 0) {
                        free(p->cgroup);
                        p->cgroup = strdup(cg);
                        if (!p->cgroup)
                                return -ENOMEM;
                }
        }
        /* a process started by 'gpureap run' carries its supervisor's PID: if that is gone,
         * whatever it left is a leftover even when it looks like a daemon */
        char env[32768];
        r = gr_read_file_at(piddir, "environ", env, sizeof(env), &len);
        p->env_read = r == 0 || r == -EFBIG;
        if (p->env_read) {
                gr_parse_environ_marks(env, len, &p->env);
                p->run_pid = p->env.run_pid;
                if (p->env.run_start && !init_timens())
                        p->env.run_start = 0;
        } else {
                p->env = (gr_env_marks){ .local_rank = -1, .rank = -1, .group_rank = -1 };
        }
        p->exe_state = gr_proc_read_exe_at(piddir, p->exe, sizeof(p->exe)) == 0 ? GR_EXE_READ : GR_EXE_UNREADABLE;
        p->has_details = true;
        return 0;
}

static int open_pid_dir(const char *proc_root, pid_t pid)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%d", proc_root, (int)pid);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        return fd;
}

int gr_proc_load_details(const gr_proc_options *opts, gr_process *p)
{
        if (p->has_details)
                return 0;
        int fd = open_pid_dir(opt_proc_root(opts), p->pid);
        if (fd < 0)
                return fd;
        int r = load_details_at(fd, p);
        close(fd);
        return r;
}

int gr_proc_load_net(const gr_proc_options *opts, gr_process *p)
{
        if (p->net)
                return 0;
        int fd = open_pid_dir(opt_proc_root(opts), p->pid);
        if (fd < 0)
                return fd;
        struct sock_list *socks = calloc(1, sizeof(*socks));
        if (!socks) {
                close(fd);
                return -ENOMEM;
        }
        int r = scan_fds(fd, "", 0, NULL, socks, NULL, NULL, NULL, NULL);
        if (r >= 0) {
                p->net = read_net(fd, socks, NULL);
                r = p->net ? 0 : -ENOMEM;
        }
        free(socks);
        close(fd);
        return r;
}

static uint64_t read_boot_time(int rootfd)
{
        char buf[16384];
        size_t len;
        int r = gr_read_file_at(rootfd, "stat", buf, sizeof(buf), &len);
        if (r < 0 && r != -EFBIG)
                return 0;
        const char *b = strstr(buf, "\nbtime ");
        uint64_t v = 0;
        if (b) {
                for (b += 7; *b >= '0' && *b <= '9'; b++)
                        v = v * 10 + (uint64_t)(*b - '0');
        }
        return v;
}


/* The scan proper. Reading every fd link of every process dominates (one readlinkat per fd,
 * and getdents of /proc/PID/fd is itself costly), so the PIDs are shared out among threads:
 * each takes the next chunk of the sorted PID list and fills that PID's slot. */
struct scan {
        int rootfd;
        const char *devdir;
        size_t devdir_len;
        const pid_t *pids;
        size_t n_pids;
        gr_process *slots;       /* one per PID; pid == 0 marks a process that vanished */
        size_t next;             /* next chunk to take (atomic) */
        unsigned vanished, unreadable; /* atomic */
        int error;               /* atomic: first -ENOMEM */
        gr_netns_cache *netns;   /* each network namespace's sockets, read once */
        int phase;               /* enum scan_phase */
        size_t *cand_slots;      /* PHASE_CANDIDATES: the slots whose fds are read */
        size_t n_cand_slots;
        bool read_threads;       /* a live leader's table without a device file: its threads' own */
        struct drm_class drm;
};

#define SCAN_CHUNK 8 /* small: the holders, which cost most, spread over the threads */

static void fill_stat(gr_process *p, const gr_stat *st)
{
        p->pid = st->pid;
        p->ppid = st->ppid;
        p->pgrp = st->pgrp;
        p->session = st->session;
        p->state = st->state;
        p->tty_nr = st->tty_nr;
        p->tpgid = st->tpgid;
        p->kthread = st->kthread;
        p->start_time = st->start_time;
        memcpy(p->comm, st->comm, sizeof(p->comm));
}

/* The fds of a process whose stat is in p and, when it holds a device file, its maps,
 * sockets and details. 0, or -ENOMEM */
static int scan_holding(struct scan *sc, int piddir, gr_process *p, unsigned *unreadable)
{
        gr_holding *h = NULL;
        gr_drm_holding *dh = NULL;
        struct sock_list socks;
        socks.n = 0;
        socks.truncated = false;
        int q = scan_fds(piddir, sc->devdir, sc->devdir_len, &h, &socks, NULL, &sc->drm, &dh, NULL);
        if (q == -EACCES || q == -EPERM)
                (*unreadable)++;
        else if (q == -ENOMEM)
                return q;
        if (!h && !dh)
                return 0;
        unsigned gpu_fds = 0;
        for (unsigned i = 0; h && i < h->n_gpus; i++)
                gpu_fds += h->gpus[i].n_fds;
        /* the maps only where the fds leave the footprint in doubt (GR_CUDA_GPU_FDS_MIN) */
        struct maps_count mc = { sc->devdir, sc->devdir_len, 0 };
        if (h && gpu_fds < 10 && gr_read_lines_at(piddir, "maps", maps_line, &mc) == 0) {
                h->n_maps = mc.n;
                h->maps_read = true;
        }
        p->hold = h;
        free(p->drm);
        p->drm = dh;
        p->net = read_net(piddir, &socks, sc->netns);
        q = p->net ? load_details_at(piddir, p) : -ENOMEM;
        return q == -ENOMEM ? q : 0;
}

/* Its directory and its stat, which must name pid (and, with want_start, that start time) */
static int open_and_stat(struct scan *sc, pid_t pid, gr_stat *st)
{
        char name[16];
        snprintf(name, sizeof(name), "%d", (int)pid);
        int piddir = openat(sc->rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (piddir < 0)
                return -ESRCH;
        char buf[1024];
        size_t len;
        int q = gr_read_file_at(piddir, "stat", buf, sizeof(buf), &len);
        if (q < 0 || gr_parse_stat(buf, len, st) < 0 || st->pid != pid) {
                close(piddir);
                return -ESRCH;
        }
        return piddir;
}

/* Does thread tid have a file table other than its process's leader's (unshare(CLONE_FILES))?
 * The kernel compares the two tables (kcmp): 1 yes, 0 no, -1 it cannot say (no kcmp in this
 * kernel, no right to look: a container's seccomp profile) */
static int file_table_own(pid_t pid, pid_t tid)
{
        long r = syscall(SYS_kcmp, pid, tid, KCMP_FILES, 0UL, 0UL);
        return r < 0 ? -1 : r > 0;
}

static bool own_file_table(pid_t pid, pid_t tid)
{
        return file_table_own(pid, tid) > 0;
}

/* Calls fn with the directory of each live thread of process pid but its leader in turn
 * (task/TID, which has the same fd, maps, net, status and cmdline files) and that thread's
 * stat, at most LIVE_THREADS_READ of them, until fn returns non-zero. Two cases need it:
 * - the main thread ended alone (pthread_exit) while others run on: the leader's stat says Z and
 *   its fd directory is empty, but the process, its files and its contexts live on in its
 *   threads (own_files false: each is tried, as one of them may have a table of its own, made
 *   by unshare(CLONE_FILES), and the process's files are then in another's);
 * - a live leader whose table holds nothing, while a thread's own table may (own_files: only
 *   the threads whose table is not the leader's are read).
 * Returns fn's non-zero answer, or 0. */
#define LIVE_THREADS_READ 64
/* strict (what decides a signal): a table kcmp cannot compare is read as one of its own, and
 * where more threads are to be read than LIVE_THREADS_READ, -E2BIG: not all known (an
 * adversary's wrong kills, 2026-12-07: a live job's client held in its 65th thread's table, or
 * in a thread's table under a seccomp profile that refuses kcmp, was not seen) */
static int each_thread(int piddir, pid_t pid, bool own_files, bool strict,
                       int (*fn)(int tdir, const gr_stat *tst, void *userdata), void *userdata)
{
        int td = openat(piddir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (td < 0)
                return -1;
        DIR *d = fdopendir(td);
        if (!d) {
                close(td);
                return -1;
        }
        int r = 0;
        unsigned n = 0;
        struct dirent *de;
        /* the table the others are compared with: the leader's; where the leader has ended, the
         * first live thread's once it is read (its threads share one table, as a rule: read once,
         * not once per thread; 65 of them made every target spared, and a client's holders the
         * same fd 64 times) */
        pid_t base = pid;
        bool compare = own_files;
        while (r == 0 && (de = readdir(d))) {
                pid_t tid;
                if (!parse_pid_name(de->d_name, &tid) || tid == pid ||
                    (compare && (strict ? file_table_own(base, tid) == 0 : !own_file_table(base, tid))))
                        continue;
                if (n == LIVE_THREADS_READ) {
                        if (strict)
                                r = -E2BIG;
                        break;
                }
                int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue;
                char buf[1024];
                size_t len;
                gr_stat tst;
                if (gr_read_file_at(fd, "stat", buf, sizeof(buf), &len) == 0 && gr_parse_stat(buf, len, &tst) == 0 &&
                    tst.state != 'Z' && tst.state != 'X') {
                        n++;
                        r = fn(fd, &tst, userdata);
                        if (!compare) {
                                base = tid;
                                compare = true;
                        }
                }
                close(fd);
        }
        closedir(d);
        return r;
}

static int each_live_thread(int piddir, pid_t pid, bool own_files,
                            int (*fn)(int tdir, const gr_stat *tst, void *userdata), void *userdata)
{
        return each_thread(piddir, pid, own_files, false, fn, userdata);
}

struct thread_holding {
        struct scan *sc;
        gr_process *p;
        unsigned *unreadable;
        bool first, set_state;
};

/* one live thread's files as the process's; non-zero once they hold a device file (or on
 * -ENOMEM) */
static int thread_holding(int tdir, const gr_stat *tst, void *userdata)
{
        struct thread_holding *th = userdata;
        if (th->first && th->set_state)
                th->p->state = tst->state; /* alive: as its first live thread */
        th->first = false;
        int q = scan_holding(th->sc, tdir, th->p, th->unreadable);
        return q < 0 ? q : th->p->hold != NULL;
}

/* scan_holding, through its live threads when the leader has ended alone (the process is then
 * as alive as they are, and its state is the first one's), and, with sc->read_threads, through
 * the threads with a file table of their own when the live leader's holds nothing. The full
 * /proc scan does not do the latter for every threaded process (a kcmp a thread: 40% more on a
 * host of 300 processes of 30 threads); the BPF scan does it for the processes it names, and
 * the snapshot for the live context owners (gr_proc_read_thread_files). */
static int scan_holding_any(struct scan *sc, int piddir, gr_process *p, unsigned n_threads, unsigned *unreadable)
{
        if (p->state != 'Z' && p->state != 'X') {
                int q = scan_holding(sc, piddir, p, unreadable);
                if (q < 0 || p->hold || n_threads < 2 || !sc->read_threads)
                        return q;
                struct thread_holding th = { sc, p, unreadable, true, false };
                int r = each_live_thread(piddir, p->pid, true, thread_holding, &th);
                return r == -ENOMEM ? r : 0;
        }
        struct thread_holding th = { sc, p, unreadable, true, true };
        int r = each_live_thread(piddir, p->pid, false, thread_holding, &th);
        if (th.first) /* no live thread: a zombie */
                return scan_holding(sc, piddir, p, unreadable);
        return r == -ENOMEM ? r : 0;
}

/* The /proc scan of one process: 0 when the slot was filled, 1 when the process vanished,
 * -ENOMEM */
static int scan_one(struct scan *sc, pid_t pid, gr_process *p, unsigned *unreadable)
{
        gr_stat st;
        int piddir = open_and_stat(sc, pid, &st);
        if (piddir < 0)
                return 1;
        fill_stat(p, &st);
        int q = scan_holding_any(sc, piddir, p, st.n_threads, unreadable);
        close(piddir);
        return q;
}

static int first_live_state(int tdir, const gr_stat *tst, void *userdata)
{
        *(char *)userdata = tst->state;
        return 1;
}

/* With the BPF scan, first every process's stat alone (one open, of the real /proc: the
 * iterator runs meanwhile), as scan_one reads it: a leader that ended alone (pthread_exit)
 * while its threads run on is as alive as they are, for a process that holds nothing too (a
 * launcher whose workers' verdicts rest on it being alive) */
static int scan_stat_only(struct scan *sc, pid_t pid, gr_process *p)
{
        char name[32], buf[1024];
        snprintf(name, sizeof(name), "%d/stat", (int)pid);
        int fd = openat(sc->rootfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOMEM ? -ENOMEM : 1;
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        gr_stat st;
        if (n <= 0 || (size_t)n == sizeof(buf) || gr_parse_stat(buf, (size_t)n, &st) < 0 || st.pid != pid)
                return 1;
        fill_stat(p, &st);
        if (st.state == 'Z' || st.state == 'X') {
                snprintf(name, sizeof(name), "%d", (int)pid);
                int piddir = openat(sc->rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (piddir >= 0) {
                        each_live_thread(piddir, pid, false, first_live_state, &p->state);
                        close(piddir);
                }
        }
        return 0;
}

/* then the fds and the rest of the candidates the iterator named, each still the process
 * whose stat was read (a PID reused meanwhile names another: it is left as read) */
static int scan_candidate(struct scan *sc, gr_process *p, unsigned *unreadable)
{
        gr_stat st;
        int piddir = open_and_stat(sc, p->pid, &st);
        if (piddir < 0)
                return 0; /* it ended since: as read, holding nothing */
        int q = 0;
        if (st.start_time == p->start_time) {
                fill_stat(p, &st);
                q = scan_holding_any(sc, piddir, p, st.n_threads, unreadable);
        }
        close(piddir);
        return q;
}

enum scan_phase {
        PHASE_FULL,              /* the /proc scan */
        PHASE_STAT,              /* BPF: every stat */
        PHASE_CANDIDATES,        /* BPF: the candidates' fds (cand_slots) */
};

static void *scan_worker(void *userdata)
{
        struct scan *sc = userdata;
        unsigned vanished = 0, unreadable = 0;
        size_t n_items = sc->phase == PHASE_CANDIDATES ? sc->n_cand_slots : sc->n_pids;
        for (;;) {
                size_t i = __atomic_fetch_add(&sc->next, SCAN_CHUNK, __ATOMIC_RELAXED);
                if (i >= n_items || __atomic_load_n(&sc->error, __ATOMIC_RELAXED))
                        break;
                size_t end = i + SCAN_CHUNK < n_items ? i + SCAN_CHUNK : n_items;
                for (; i < end; i++) {
                        int r;
                        switch (sc->phase) {
                        case PHASE_FULL: r = scan_one(sc, sc->pids[i], &sc->slots[i], &unreadable); break;
                        case PHASE_STAT: r = scan_stat_only(sc, sc->pids[i], &sc->slots[i]); break;
                        default: r = scan_candidate(sc, &sc->slots[sc->cand_slots[i]], &unreadable); break;
                        }
                        if (r < 0) {
                                __atomic_store_n(&sc->error, r, __ATOMIC_RELAXED);
                                break;
                        }
                        if (r > 0)
                                vanished++;
                }
        }
        __atomic_fetch_add(&sc->vanished, vanished, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sc->unreadable, unreadable, __ATOMIC_RELAXED);
        return NULL;
}

/* One phase, shared out to n_threads threads (this one among them) */
static void run_phase(struct scan *sc, enum scan_phase phase, unsigned n_threads)
{
        sc->phase = phase;
        sc->next = 0;
        pthread_t tids[16];
        unsigned started = 0;
        for (unsigned i = 1; i < n_threads && i < GR_ELEMENTSOF(tids); i++)
                if (pthread_create(&tids[started], NULL, scan_worker, sc) == 0)
                        started++;
        scan_worker(sc); /* this thread works too; with no thread started it does it all */
        for (unsigned i = 0; i < started; i++)
                pthread_join(tids[i], NULL);
}

/* The numeric entries of the /proc root, sorted. */
static int list_pids(int rootfd, const gr_proc_options *opts, pid_t **ret, size_t *ret_n)
{
        int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        pid_t *pids = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                pid_t pid;
                if (!parse_pid_name(de->d_name, &pid) || skipped(opts, pid))
                        continue;
                if (n == cap) {
                        if (cap >= GR_PROC_MAX)
                                break;
                        cap = cap ? cap * 2 : 1024;
                        pid_t *np = realloc(pids, cap * sizeof(*np));
                        if (!np) {
                                free(pids);
                                closedir(d);
                                return -ENOMEM;
                        }
                        pids = np;
                }
                pids[n++] = pid;
        }
        closedir(d);
        if (n > 0)
                qsort(pids, n, sizeof(*pids), gr_cmp_pid);
        *ret = pids;
        *ret_n = n;
        return 0;
}

int gr_proc_walk(const char *proc_root, int (*cb)(pid_t pid, const gr_stat *st, void *userdata), void *userdata)
{
        int rootfd = open(proc_root ? proc_root : gr_context_proc_root(NULL), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -errno;
        pid_t *pids = NULL;
        size_t n = 0;
        int r = list_pids(rootfd, NULL, &pids, &n);
        for (size_t i = 0; r == 0 && i < n; i++) {
                char name[16], buf[1024];
                size_t len;
                gr_stat st;
                snprintf(name, sizeof(name), "%d", (int)pids[i]);
                int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue; /* gone meanwhile */
                int q = gr_read_file_at(fd, "stat", buf, sizeof(buf), &len);
                close(fd);
                if (q < 0 || gr_parse_stat(buf, len, &st) < 0 || st.pid != pids[i])
                        continue;
                r = cb(pids[i], &st, userdata);
                if (r > 0)
                        r = 0;
        }
        free(pids);
        close(rootfd);
        return r;
}

static unsigned scan_threads(const gr_proc_options *opts, size_t n_pids)
{
        if (opts && opts->threads)
                return opts->threads;
        if (n_pids < 128)
                return 1; /* starting threads costs more than it saves */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        return cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
}

GR_NAME_TABLE(gr_scan_kind_name, gr_scan_kind, GR_SCAN_BPF, "unknown",
              [GR_SCAN_PROC] = "proc", [GR_SCAN_BPF] = "bpf")

/* May this process load a tracing program? root, or CAP_BPF and CAP_PERFMON (Linux 5.8) */
static bool may_load_bpf(void)
{
        if (geteuid() == 0)
                return true;
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[2] = { { 0 } };
        if (syscall(SYS_capget, &hdr, data) < 0)
                return false;
        const unsigned bpf = 39, perfmon = 38; /* CAP_BPF, CAP_PERFMON */
        return (data[bpf / 32].effective & (1u << (bpf % 32))) &&
               (data[perfmon / 32].effective & (1u << (perfmon % 32)));
}

/* Does /proc show the running kernel's initial PID namespace, whose numbers the iterator
 * reports? Our own namespace is the initial one and /proc names us by our own PID. */
/* Is our namespace of this kind (/proc/self/ns/KIND, "KIND:[INO]") the kernel's initial one,
 * whose inode number is fixed? 1 yes, 0 no, -errno when the link cannot be read */
static int own_ns_initial(const char *kind, unsigned long long init_ino)
{
        char path[32], link[64], want[48];
        snprintf(path, sizeof(path), "/proc/self/ns/%s", kind);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -EINVAL;
        link[n] = '\0';
        snprintf(want, sizeof(want), "%s:[%llu]", kind, init_ino);
        return strcmp(link, want) == 0;
}

bool gr_proc_in_init_pidns(void)
{
        return own_ns_initial("pid", 0xEFFFFFFCULL) == 1 && /* PROC_PID_INIT_INO */
               gr_proc_self_pid() == getpid();
}

bool gr_proc_in_init_timens(void)
{
        int r = own_ns_initial("time", 0xEFFFFFFAULL); /* PROC_TIME_INIT_INO */
        return r == 1 || r == -ENOENT; /* -ENOENT: a kernel without time namespaces (before 5.6) */
}

int gr_proc_self_start_time(uint64_t *ret)
{
        if (!gr_proc_in_init_timens())
                return -EXDEV;
        char buf[1024];
        size_t len;
        int r = gr_read_file_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        /* field 22 alone, the 20th after the name's last ')': every run pays this at its start,
         * and gr_parse_stat's whole line (the name made safe to show) cost 5,800 instructions */
        buf[len < sizeof(buf) ? len : sizeof(buf) - 1] = '\0';
        const char *p = strrchr(buf, ')');
        for (int field = 2; p && field < 22; field++) {
                p = strchr(p + 1, ' ');
        }
        if (!p)
                return -EINVAL;
        char num[24];
        size_t n = strcspn(p + 1, " \n");
        uint64_t v;
        if (n == 0 || n >= sizeof(num))
                return -EINVAL;
        memcpy(num, p + 1, n);
        num[n] = '\0';
        if (gr_parse_u64(num, &v) < 0 || v == 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

pid_t gr_proc_self_pid(void)
{
        char link[32];
        ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
        if (n <= 0)
                return 0;
        link[n] = '\0';
        uint64_t v;
        return gr_parse_u64(link, &v) == 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

/* Below this many open files (system-wide, /proc/sys/fs/file-nr) reading every fd directory
 * costs less than loading the program (~15 ms: libbpf reads the kernel's BTF and the verifier
 * checks the program); docs/benchmarks.md */
#define BPF_MIN_FILES 8192

static uint64_t open_files(void)
{
        char buf[128];
        size_t len;
        if (gr_read_file_at(AT_FDCWD, "/proc/sys/fs/file-nr", buf, sizeof(buf), &len) < 0)
                return UINT64_MAX;
        uint64_t v = 0;
        for (const char *c = buf; *c >= '0' && *c <= '9'; c++)
                v = v * 10 + (uint64_t)(*c - '0');
        return v;
}

/* The program a resident caller keeps (gr_proc_options.keep_bpf): loading it costs ~15 ms a
 * look, running it well under a millisecond on a quiet host. One scan at a time uses it. */
static void close_kept(void *b)
{
        gr_bpf_close(b);
}

/* The BPF scan loaded, or NULL with why the /proc scan reads every fd directory instead (why
 * empty when that was asked for). With keep, a kept program that still fits the device files is
 * used whatever the number of open files (its load is paid), and one loaded now is kept; the
 * caller then holds the context's lock until it has done with it (release_bpf). */
static gr_bpf_scan *choose_bpf(gr_context *ctx, const char *root, const char *devdir, bool keep, char *why,
                               size_t why_size)
{
        why[0] = '\0';
        const char *chosen;
        gr_scan_mode mode = gr_ctx_scan_mode(ctx, &chosen);
        if (mode == GR_SCAN_MODE_PROC) {
                if (chosen)
                        snprintf(why, why_size, "%s", chosen);
                return NULL;
        }
        bool forced = mode == GR_SCAN_MODE_BPF;
        if (strcmp(root, "/proc") != 0) {
                /* the iterator sees the running kernel, not a recorded tree */
                snprintf(why, why_size, "the /proc root is not /proc");
                return NULL;
        }
        if (!gr_proc_in_init_pidns()) {
                snprintf(why, why_size, "/proc is not of the initial PID namespace");
                return NULL;
        }
        if (!forced && !may_load_bpf()) {
                snprintf(why, why_size, "not root (nor CAP_BPF and CAP_PERFMON)");
                return NULL;
        }
        struct gr_kept *k = gr_ctx_kept(ctx);
        if (keep) {
                pthread_mutex_lock(&k->lock);
                if (gr_bpf_fits(k->bpf, devdir))
                        return k->bpf;
                gr_bpf_close(k->bpf); /* the device files changed: loaded again for them */
                k->bpf = NULL;
        }
        uint64_t files = forced ? UINT64_MAX : open_files();
        gr_bpf_scan *b = NULL;
        if (files < BPF_MIN_FILES)
                snprintf(why, why_size, "%llu open files: reading them costs less than loading the BPF program",
                         (unsigned long long)files);
        else if (gr_bpf_open(devdir, &b, why, why_size) < 0)
                b = NULL;
        if (keep) {
                k->bpf = b;
                k->close = close_kept;
                if (!b)
                        pthread_mutex_unlock(&k->lock);
        }
        return b;
}

/* The scan has done with the program chosen (with keep: the context's, under its lock) */
static void release_bpf(gr_context *ctx, bool keep, gr_bpf_scan *b)
{
        if (b && keep)
                pthread_mutex_unlock(&gr_ctx_kept(ctx)->lock);
        else
                gr_bpf_close(b);
}

struct bpf_run {
        gr_bpf_scan *bpf;
        pid_t *cands;
        size_t n_cands;
        int r;
        char *why;
        size_t why_size;
};

static void *bpf_thread(void *userdata)
{
        struct bpf_run *br = userdata;
        br->r = gr_bpf_run(br->bpf, &br->cands, &br->n_cands, br->why, br->why_size);
        return NULL;
}

/* The BPF scan: every stat read while the iterator runs, then the candidates' fds. 0, or
 * -errno when the iterator failed (the /proc scan's second half is then still to do) */
static int scan_with_bpf(struct scan *sc, gr_bpf_scan *bpf, unsigned n_threads, char *why, size_t why_size)
{
        struct bpf_run br = { .bpf = bpf, .why = why, .why_size = why_size };
        pthread_t tid;
        bool threaded = pthread_create(&tid, NULL, bpf_thread, &br) == 0;
        if (!threaded)
                bpf_thread(&br);
        run_phase(sc, PHASE_STAT, n_threads);
        if (threaded)
                pthread_join(tid, NULL);
        if (br.r < 0)
                return br.r;
        sc->cand_slots = malloc((br.n_cands ? br.n_cands : 1) * sizeof(size_t));
        if (!sc->cand_slots) {
                free(br.cands);
                return -ENOMEM;
        }
        for (size_t k = 0; k < br.n_cands; k++) {
                const pid_t *at = bsearch(&br.cands[k], sc->pids, sc->n_pids, sizeof(pid_t), gr_cmp_pid);
                /* one born since the listing, or gone before its stat, is not in the table */
                if (at && sc->slots[at - sc->pids].pid)
                        sc->cand_slots[sc->n_cand_slots++] = (size_t)(at - sc->pids);
        }
        free(br.cands);
        sc->read_threads = true; /* a named process's device file may be in a thread's table */
        run_phase(sc, PHASE_CANDIDATES, n_threads > sc->n_cand_slots / SCAN_CHUNK + 1 ?
                                        (unsigned)(sc->n_cand_slots / SCAN_CHUNK + 1) : n_threads);
        return 0;
}

/* Names alone in a recorded tree or a test's device directory, whose fds are links to paths
 * that need not exist; else the running system's device numbers */
static struct drm_class drm_class_of(const char *root, const char *devdir)
{
        bool by_name = strcmp(root, "/proc") != 0 || strcmp(devdir, "/dev") != 0;
        return (struct drm_class){ .by_name = by_name, .kfd_major = by_name ? 0 : char_major("kfd") };
}

int gr_proc_scan(const gr_proc_options *opts, gr_proc_table **ret)
{
        const char *root = opt_proc_root(opts);
        const char *devdir = opt_dev_dir(opts);
        size_t devdir_len = dev_dir_len(devdir);

        int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -errno;
        pid_t *pids = NULL;
        size_t n_pids = 0;
        int r = list_pids(rootfd, opts, &pids, &n_pids);
        if (r < 0) {
                close(rootfd);
                return r;
        }
        gr_proc_table *t = calloc(1, sizeof(*t));
        gr_process *slots = calloc(n_pids ? n_pids : 1, sizeof(*slots));
        if (!t || !slots) {
                free(t);
                free(slots);
                free(pids);
                close(rootfd);
                return -ENOMEM;
        }
        t->clock_ticks = sysconf(_SC_CLK_TCK);
        t->boot_time = read_boot_time(rootfd);
        gr_context *ctx = opts ? opts->ctx : NULL;
        bool keep = opts && opts->keep_bpf;
        gr_bpf_scan *bpf = choose_bpf(ctx, root, devdir, keep, t->scan_fallback, sizeof(t->scan_fallback));

        /* netlink answers for the running system only, not for a recorded /proc tree */
        gr_netns_cache *netns = gr_netns_cache_new(strcmp(opt_proc_root(opts), "/proc") == 0);
        struct scan sc = {
                .rootfd = rootfd, .devdir = devdir, .devdir_len = devdir_len,
                .pids = pids, .n_pids = n_pids, .slots = slots, .netns = netns,
                .drm = drm_class_of(root, devdir),
        };
        unsigned n_threads = scan_threads(opts, n_pids);
        t->scan = GR_SCAN_PROC;
        if (bpf && scan_with_bpf(&sc, bpf, n_threads, t->scan_fallback, sizeof(t->scan_fallback)) == 0) {
                t->scan = GR_SCAN_BPF;
        } else if (bpf && !sc.error) {
                /* the iterator failed after every stat was read: the fds of all of them, as
                 * the full /proc scan reads them */
                sc.read_threads = false;
                free(sc.cand_slots);
                sc.n_cand_slots = 0;
                sc.cand_slots = malloc((n_pids ? n_pids : 1) * sizeof(size_t));
                if (!sc.cand_slots)
                        sc.error = -ENOMEM;
                for (size_t i = 0; sc.cand_slots && i < n_pids; i++)
                        if (slots[i].pid)
                                sc.cand_slots[sc.n_cand_slots++] = i;
                if (sc.cand_slots)
                        run_phase(&sc, PHASE_CANDIDATES, n_threads);
        } else if (!bpf) {
                run_phase(&sc, PHASE_FULL, n_threads);
        }
        release_bpf(ctx, keep, bpf);
        free(sc.cand_slots);
        gr_netns_cache_free(netns);
        close(rootfd);
        free(pids);

        /* keep the processes that were read, in PID order */
        size_t n = 0;
        for (size_t i = 0; i < n_pids; i++)
                if (slots[i].pid)
                        slots[n++] = slots[i];
        t->procs = slots;
        t->n = n;
        t->cap = n_pids;
        t->n_vanished = sc.vanished;
        t->n_unreadable = sc.unreadable;
        for (size_t i = 0; i < n; i++) {
                t->n_holders += slots[i].hold != NULL;
                t->n_drm_holders += slots[i].drm != NULL;
        }
        if (sc.error < 0) {
                gr_proc_table_free(t);
                return sc.error;
        }
        *ret = t;
        return 0;
}

gr_process *gr_proc_table_find(const gr_proc_table *t, pid_t pid)
{
        if (!t)
                return NULL;
        size_t lo = 0, hi = t->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (t->procs[mid].pid == pid)
                        return &t->procs[mid];
                if (t->procs[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

void gr_proc_table_free(gr_proc_table *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->n; i++) {
                free(t->procs[i].cmdline);
                free(t->procs[i].cgroup);
                free(t->procs[i].hold);
                free(t->procs[i].drm);
                free(t->procs[i].net);
                free(t->procs[i].seen);
                free(t->procs[i].pod);
        }
        free(t->procs);
        free(t);
}

struct thread_fds {
        const char *devdir;
        size_t devdir_len;
        struct sock_list *socks;
        gr_holding **h;
};

/* one live thread's device files; non-zero once it holds one (or on an error) */
static int thread_fds(int tdir, const gr_stat *tst, void *userdata)
{
        struct thread_fds *tf = userdata;
        tf->socks->n = 0;
        return scan_fds(tdir, tf->devdir, tf->devdir_len, tf->h, tf->socks, NULL, NULL, NULL, NULL);
}

int gr_proc_read_thread_files(const gr_proc_options *opts, gr_proc_table *t, gr_process *p)
{
        if (p->hold || p->state == 'Z' || p->state == 'X')
                return 0;
        const char *devdir = opt_dev_dir(opts);
        size_t devdir_len = dev_dir_len(devdir);
        int fd = open_pid_dir(opt_proc_root(opts), p->pid);
        if (fd < 0)
                return fd;
        char buf[1024];
        size_t len;
        gr_stat st;
        int r = 0;
        if (gr_read_file_at(fd, "stat", buf, sizeof(buf), &len) == 0 && gr_parse_stat(buf, len, &st) == 0 &&
            st.pid == p->pid && st.start_time == p->start_time && st.n_threads > 1) {
                struct scan sc = { .rootfd = -1, .devdir = devdir, .devdir_len = devdir_len, .read_threads = true };
                unsigned unreadable = 0;
                struct thread_holding th = { &sc, p, &unreadable, true, false };
                r = each_live_thread(fd, p->pid, true, thread_holding, &th);
                if (r > 0)
                        r = 0;
                if (p->hold && t)
                        t->n_holders++;
        }
        close(fd);
        return r;
}

/* Has the leader of the process at piddir ended alone, where its table (scan_fds's answer r,
 * its fds entries) showed no fd? Its own fd directory is then empty, or root's and refused to a
 * user (its memory gone): the process may live on in its threads, whose files are theirs */
static bool leader_ended(int piddir, int r, unsigned entries)
{
        if (!((r == 0 && entries == 0) || r == -EACCES || r == -EPERM))
                return false;
        gr_stat st;
        char buf[1024];
        size_t len;
        return gr_read_file_at(piddir, "stat", buf, sizeof(buf), &len) == 0 && gr_parse_stat(buf, len, &st) == 0 &&
               (st.state == 'Z' || st.state == 'X');
}

/* Are the threads of the process at piddir to be read, where its leader's table (the answer r,
 * 0 when it held nothing asked for, and its fds entries) did not say? Every live thread where the
 * leader has ended alone (*ret_own_files false: the process lives on in them, and its files are
 * theirs); where it lives and has more than one thread (task/ has two links more than threads),
 * those with a table of their own (unshare(CLONE_FILES): true). One rule for the looks at a
 * process's device files, DRM files and sockets */
static bool threads_to_read(int piddir, int r, unsigned entries, bool *ret_own_files)
{
        struct stat task;
        bool ended = leader_ended(piddir, r, entries);
        *ret_own_files = !ended;
        return ended || (r == 0 && fstatat(piddir, "task", &task, 0) == 0 && task.st_nlink > 3);
}

int gr_proc_holding(const char *proc_root, const char *dev_dir, pid_t pid, gr_holding **ret)
{
        const char *devdir = dev_dir ? dev_dir : gr_context_dev_dir(NULL);
        size_t devdir_len = dev_dir_len(devdir);
        int fd = open_pid_dir(proc_root ? proc_root : gr_context_proc_root(NULL), pid);
        if (fd < 0)
                return fd;
        gr_holding *h = NULL;
        struct sock_list *socks = calloc(1, sizeof(*socks));
        if (!socks) {
                close(fd);
                return -ENOMEM;
        }
        unsigned entries = 0;
        int r = scan_fds(fd, devdir, devdir_len, &h, socks, &entries, NULL, NULL, NULL);
        /* no device file in the leader's table (r 0): its threads' may have one */
        bool own_files;
        if (threads_to_read(fd, r, entries, &own_files)) {
                struct thread_fds tf = { devdir, devdir_len, socks, &h };
                int q = each_live_thread(fd, pid, own_files, thread_fds, &tf);
                r = q < 0 ? q : 0;
        }
        free(socks);
        close(fd);
        if (r < 0)
                return r;
        *ret = h;
        return 0;
}

/* Is one of the sockets (inodes, any order) in the file table at dir (a process's or a thread's
 * directory)? 1 or 0; -errno when its fd directory cannot be read. *ret_entries: its fds. Every
 * fd is read (a server with thousands of connections has its listener among them) */
static int socket_in_table(int dir, const uint64_t *inodes, size_t n, unsigned *ret_entries)
{
        int fdd = openat(dir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fdd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        struct dents d = { .fd = fdd };
        struct dirent64 *de;
        unsigned entries = 0;
        int found = 0;
        while (!found && (de = dents_next(&d))) {
                if (de->d_name[0] == '.')
                        continue;
                entries++;
                char target[64];
                ssize_t len = readlinkat(fdd, de->d_name, target, sizeof(target) - 1);
                if (len <= 8 || strncmp(target, "socket:[", 8) != 0)
                        continue;
                target[len] = '\0';
                uint64_t ino = socket_inode(target);
                for (size_t k = 0; k < n && !found; k++)
                        found = inodes[k] == ino;
        }
        close(fdd);
        if (ret_entries)
                *ret_entries = entries;
        return found;
}

struct thread_socket {
        const uint64_t *inodes;
        size_t n;
};

static int thread_socket(int tdir, const gr_stat *tst, void *userdata)
{
        const struct thread_socket *ts = userdata;
        int r = socket_in_table(tdir, ts->inodes, ts->n, NULL);
        return r > 0 ? 1 : 0; /* a thread whose table cannot be read: not found there */
}

int gr_proc_holds_socket(const char *proc_root, pid_t pid, const uint64_t *inodes, size_t n)
{
        int fd = open_pid_dir(proc_root ? proc_root : gr_context_proc_root(NULL), pid);
        if (fd < 0)
                return fd;
        unsigned entries = 0;
        int r = socket_in_table(fd, inodes, n, &entries);
        /* not in the leader's table: its threads' may have it (a server whose main thread
         * called pthread_exit, a listener opened in a thread with a table of its own) */
        bool own_files;
        if (threads_to_read(fd, r, entries, &own_files)) {
                struct thread_socket ts = { inodes, n };
                int q = each_live_thread(fd, pid, own_files, thread_socket, &ts);
                r = q < 0 ? r : q;
        }
        close(fd);
        return r;
}

struct thread_drm {
        const char *devdir;
        size_t devdir_len;
        struct sock_list *socks;
        const struct drm_class *c;
        gr_drm_fd_fn fn;
        void *userdata;
};

/* one file table (a process's or a thread's directory, /proc/TID): fn on each of its DRM and
 * KFD fds, every one, until one answers non-zero; -errno when unreadable; *ret_entries its fds,
 * when asked */
static int drm_in_table(int dir, pid_t tid, struct thread_drm *td, unsigned *ret_entries)
{
        gr_holding *h = NULL;
        struct drm_each each = { td->fn, td->userdata, tid, 0 };
        td->socks->n = 0;
        int r = scan_fds(dir, td->devdir, td->devdir_len, &h, td->socks, ret_entries, td->c, NULL, &each);
        free(h);
        return r < 0 ? r : each.r;
}

static int thread_drm(int tdir, const gr_stat *tst, void *userdata)
{
        return drm_in_table(tdir, tst->pid, userdata, NULL);
}

int gr_proc_each_drm_fd(const char *proc_root, const char *dev_dir, pid_t pid, gr_drm_fd_fn fn, void *userdata)
{
        const char *root = proc_root ? proc_root : gr_context_proc_root(NULL);
        const char *devdir = dev_dir ? dev_dir : gr_context_dev_dir(NULL);
        int fd = open_pid_dir(root, pid);
        if (fd < 0)
                return fd;
        struct sock_list *socks = calloc(1, sizeof(*socks));
        if (!socks) {
                close(fd);
                return -ENOMEM;
        }
        struct drm_class c = drm_class_of(root, devdir);
        struct thread_drm td = { devdir, dev_dir_len(devdir), socks, &c, fn, userdata };
        unsigned entries = 0;
        int r = drm_in_table(fd, pid, &td, &entries);
        /* a thread with a table of its own (unshare(CLONE_FILES)) holds files the leader's fd
         * directory does not show; where the leader has ended alone, every live thread is
         * read. Found by the sixth adversarial round: a child forked during a reap whose thread
         * held a render node was signalled */
        bool own_files;
        if (threads_to_read(fd, r, entries, &own_files)) {
                int q = each_thread(fd, pid, own_files, true, thread_drm, &td);
                r = q < 0 ? (q == -1 ? -EIO : q) : q; /* a thread that cannot be read: not known */
        }
        free(socks);
        close(fd);
        return r;
}

static int any_drm(int table_dir, pid_t tid, int fd, unsigned node, unsigned minor, void *userdata)
{
        (void)table_dir, (void)tid, (void)fd, (void)node, (void)minor, (void)userdata;
        return 1;
}

int gr_proc_holds_drm(const char *proc_root, const char *dev_dir, pid_t pid)
{
        int r = gr_proc_each_drm_fd(proc_root, dev_dir, pid, any_drm, NULL);
        return r == -E2BIG ? 1 : r;
}

int gr_proc_same_process(const char *proc_root, pid_t pid, uint64_t start_time)
{
        int fd = open_pid_dir(proc_root ? proc_root : gr_context_proc_root(NULL), pid);
        if (fd == -ESRCH)
                return 0;
        if (fd < 0)
                return fd;
        char buf[1024];
        size_t len;
        gr_stat st;
        int r = gr_read_file_at(fd, "stat", buf, sizeof(buf), &len);
        close(fd);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        if (gr_parse_stat(buf, len, &st) < 0)
                return -EINVAL;
        return st.start_time == start_time ? 1 : 0;
}
