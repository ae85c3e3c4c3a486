/* The supervisor's tree: descendants by parent links, and the members of its leaf cgroup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "gpureap/tree.h"
#include "tree-internal.h"
#include "basic/pidset.h"

struct link {
        pid_t pid, ppid, pgrp;
        uint64_t start_time, cpu;
        char state;
        bool kthread;
        char comm[64];
        bool in;
};

static int cmp_link(const void *a, const void *b)
{
        pid_t x = ((const struct link *)a)->pid, y = ((const struct link *)b)->pid;
        return (x > y) - (x < y);
}

static struct link *find_link(struct link *l, size_t n, pid_t pid)
{
        struct link key = { .pid = pid };
        return bsearch(&key, l, n, sizeof(*l), cmp_link);
}

static void mark_cgroup(struct link *l, size_t n, const char *cgroup)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        char line[32];
        while (fgets(line, sizeof(line), f)) {
                uint64_t v;
                line[strcspn(line, "\n")] = '\0';
                if (gr_parse_u64(line, &v) == 0) {
                        struct link *k = find_link(l, n, (pid_t)v);
                        if (k)
                                k->in = true;
                }
        }
        fclose(f);
}

/* Every process of the /proc root with its parent, group and start time, sorted by PID: the one
 * walker of the whole process table outside the holder scan */
struct links {
        struct link *l;
        size_t n, cap;
};

static int add_link(pid_t pid, const gr_stat *st, void *userdata)
{
        struct links *ls = userdata;
        (void)pid;
        if (ls->n == ls->cap) {
                size_t cap = ls->cap ? ls->cap * 2 : 512;
                struct link *nl = realloc(ls->l, cap * sizeof(*nl));
                if (!nl)
                        return -ENOMEM;
                ls->l = nl;
                ls->cap = cap;
        }
        struct link *k = &ls->l[ls->n++];
        *k = (struct link){ .pid = st->pid, .ppid = st->ppid, .pgrp = st->pgrp, .start_time = st->start_time,
                            .cpu = st->cpu_ticks, .state = st->state, .kthread = st->kthread };
        gr_strlcpy(k->comm, st->comm, sizeof(k->comm));
        return 0;
}

/* Every process with its parent, group and start time, sorted by PID (gr_proc_walk) */
static int walk_links(const char *proc_root, struct link **ret, size_t *ret_n)
{
        struct links ls = { 0 };
        int r = gr_proc_walk(proc_root ? proc_root : "/proc", add_link, &ls);
        if (r < 0) {
                free(ls.l);
                return r;
        }
        *ret = ls.l;
        *ret_n = ls.n;
        return 0;
}

static int emit(struct link *l, size_t n, pid_t root, const pid_t *skip, size_t n_skip, gr_tree_proc **ret,
                size_t *ret_n)
{
        gr_tree_proc *out = calloc(n ? n : 1, sizeof(*out));
        size_t k = 0;
        for (size_t i = 0; out && i < n; i++) {
                if (!l[i].in || l[i].pid == root)
                        continue;
                bool skipped = false;
                for (size_t j = 0; j < n_skip; j++)
                        skipped = skipped || skip[j] == l[i].pid;
                if (skipped)
                        continue;
                out[k].pid = l[i].pid;
                out[k].start_time = l[i].start_time;
                out[k].cpu_ticks = l[i].cpu;
                out[k].state = l[i].state;
                out[k].kthread = l[i].kthread;
                out[k].pgid = l[i].pgrp;
                memcpy(out[k].comm, l[i].comm, sizeof(out[k].comm));
                k++;
        }
        free(l);
        if (!out)
                return -ENOMEM;
        *ret = out;
        *ret_n = k;
        return 0;
}

int gr_tree_group_members(const char *proc_root, const pid_t *pgids, size_t n_pgids, gr_tree_proc **ret,
                          size_t *ret_n)
{
        struct link *l = NULL;
        size_t n = 0;
        int r = walk_links(proc_root, &l, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < n_pgids && !l[i].in; k++)
                        l[i].in = l[i].pgrp == pgids[k];
        return emit(l, n, 0, NULL, 0, ret, ret_n);
}

/* ---- O(tree): the cgroup's members and the descendants by the kernel's children files ---- */


/* The PIDs of one children file ("12 13 14 "; a number may straddle two reads) */
static int read_children_fd(int fd, struct gr_pidset *ps)
{
        char buf[8192], carry[16] = "";
        ssize_t n;
        int r = 0;
        while (r >= 0 && (n = read(fd, buf, sizeof(buf) - 1)) > 0) {
                buf[n] = '\0';
                char *p = buf;
                if (carry[0]) {
                        size_t k = strspn(p, "0123456789");
                        char num[32];
                        snprintf(num, sizeof(num), "%s%.*s", carry, (int)k, p);
                        p += k;
                        carry[0] = '\0';
                        uint64_t v;
                        if (gr_parse_u64(num, &v) == 0 && v > 0 && v <= GR_PROC_PID_MAX)
                                r = gr_pidset_add(ps, (pid_t)v);
                }
                while (*p && r >= 0) {
                        p += strspn(p, " \n");
                        size_t k = strspn(p, "0123456789");
                        if (k == 0)
                                break;
                        if (p[k] == '\0' && k < sizeof(carry)) {
                                memcpy(carry, p, k);
                                carry[k] = '\0';
                                break;
                        }
                        char num[32];
                        snprintf(num, sizeof(num), "%.*s", (int)k, p);
                        uint64_t v;
                        if (gr_parse_u64(num, &v) == 0 && v > 0 && v <= GR_PROC_PID_MAX)
                                r = gr_pidset_add(ps, (pid_t)v);
                        p += k;
                }
        }
        if (carry[0] && r >= 0) {
                uint64_t v;
                if (gr_parse_u64(carry, &v) == 0 && v > 0 && v <= GR_PROC_PID_MAX)
                        r = gr_pidset_add(ps, (pid_t)v);
        }
        return r;
}

/* The children of every thread of pid (/proc/PID/task/TID/children, Linux 3.5 with
 * CONFIG_PROC_CHILDREN); -ENOENT when the kernel does not have the files */
static int add_children(const char *proc_root, pid_t pid, struct gr_pidset *ps)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/%d/task", proc_root, (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
        struct dirent *de;
        int r = 0;
        while (r >= 0 && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char file[4400];
                snprintf(file, sizeof(file), "%s/%s/children", path, de->d_name);
                int fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENOENT && access(path, F_OK) == 0) {
                                char t[4400];
                                snprintf(t, sizeof(t), "%s/%s", path, de->d_name);
                                if (access(t, F_OK) == 0)
                                        r = -ENOENT; /* the thread is there, its children file is not */
                        }
                        continue;
                }
                r = read_children_fd(fd, ps);
                close(fd);
        }
        closedir(d);
        return r < 0 ? r : 0;
}

/* The same for a process whose stat line was just read: with one thread (num_threads 1), its
 * leader's children file alone, without listing task/ (4 system calls a member instead of 9:
 * on a 16-core VM /proc calls cost 1-2 us each, and a listing of a thousand made 9,000 of
 * them). A thread started since the stat read is the same race as one started after task/
 * was listed: the next listing sees its children, and an orphan comes to the subreaper. Where
 * the file does not open (gone, or no such files), the walk of task/ decides */
static int add_children_of(const char *proc_root, pid_t pid, const gr_stat *st, struct gr_pidset *ps)
{
        if (st && st->n_threads == 1) {
                char file[4200];
                snprintf(file, sizeof(file), "%s/%d/task/%d/children", proc_root, (int)pid, (int)pid);
                int fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        int r = read_children_fd(fd, ps);
                        close(fd);
                        return r < 0 ? r : 0;
                }
        }
        return add_children(proc_root, pid, ps);
}

static int add_cgroup_members(const char *cgroup, struct gr_pidset *ps)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
        FILE *f = fopen(path, "re");
        if (!f)
                return 0; /* removed, or never made */
        char line[32];
        int r = 0;
        while (r >= 0 && fgets(line, sizeof(line), f)) {
                uint64_t v;
                line[strcspn(line, "\n")] = '\0';
                if (gr_parse_u64(line, &v) == 0 && v > 0 && v <= GR_PROC_PID_MAX)
                        r = gr_pidset_add(ps, (pid_t)v);
        }
        fclose(f);
        return r < 0 ? r : 0;
}

/* Call fn for every cgroup directly below cgroup, until it returns < 0; -errno or 0 */
static int each_sub_cgroup(const char *cgroup, int (*fn)(const char *sub, void *arg, int depth), void *arg, int depth)
{
        DIR *d = opendir(cgroup);
        if (!d)
                return 0;
        struct dirent *de;
        int r = 0;
        while (r >= 0 && (de = readdir(d))) {
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                char sub[4200];
                if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", cgroup, de->d_name) < sizeof(sub))
                        r = fn(sub, arg, depth + 1);
        }
        closedir(d);
        return r;
}

/* The members of the cgroup and of the cgroups below it (a nested 'gpureap run' makes its own
 * leaf under ours) */
static int add_cgroup_tree(const char *cgroup, void *ps, int depth)
{
        int r = add_cgroup_members(cgroup, ps);
        if (r < 0 || depth >= 16)
                return r;
        return each_sub_cgroup(cgroup, add_cgroup_tree, ps, depth);
}

static int cmp_tree_proc(const void *a, const void *b)
{
        pid_t x = ((const gr_tree_proc *)a)->pid, y = ((const gr_tree_proc *)b)->pid;
        return (x > y) - (x < y);
}

/* One member as the listing found it: its stat line (where it could be read) and whether it is
 * dead (a zombie whose threads are gone too) */
struct visit {
        gr_stat st;
        bool have_stat, dead;
};

/* Read one member's stat and, unless it is a cgroup member (by_cgroup) or dead, the children of
 * it into kids. One found through a children file whose parent is neither root nor a member
 * found before is not of the tree: its PID was freed and taken by another process
 * between the two reads (a child's parent is the one whose file named it, or, once that one
 * has ended, the nearest subreaper above it: root, or a member; a thread's child's is its
 * thread group's). Neither it nor its children are listed: before, such a stranger was, and
 * the teardown would have signalled it (an adversary's reading, 2026-12-07) */
static int visit_one(const char *proc_root, pid_t pid, bool skipped, bool by_cgroup, struct visit *v,
                     struct gr_pidset *kids, pid_t root, const struct gr_pidset *found)
{
        bool ask_children = !by_cgroup;
        v->have_stat = v->dead = false;
        if (!skipped && gr_proc_read_stat(proc_root, pid, &v->st) == 0) {
                if (!by_cgroup && v->st.ppid != root && !gr_pidset_has(found, v->st.ppid))
                        return 0; /* a stranger under a freed PID */
                v->have_stat = true;
                if (v->st.state == 'Z' && gr_proc_zombie_threads_alive(proc_root, pid, &v->st))
                        v->st.state = 'S'; /* its main thread is gone, not the process */
                v->dead = v->st.state == 'Z' || v->st.state == 'X';
        } /* else gone meanwhile (or skipped): its children, if any, are still asked for */
        if (ask_children && !v->dead)
                return add_children_of(proc_root, pid, v->have_stat ? &v->st : NULL, kids);
        return 0;
}

/* A wave of members (those the previous wave found) read by several threads at once: a young
 * tree of a hundred sleepers is one wave, which one thread read member by member while the
 * teardown's first signal waited (issue 25). Each thread has its own set of children, joined
 * afterwards in order, so the listing is the same as one thread's */
#define WAVE_PARALLEL_MIN 32
#define WAVE_THREADS 8
struct wave {
        const char *proc_root;
        const pid_t *pids;
        size_t n, n_by_cgroup;    /* pids[i] for i < n_by_cgroup are the cgroup's members */
        pid_t root;
        const pid_t *skip;
        size_t n_skip;
        struct visit *v;
        size_t next;              /* atomic */
        const struct gr_pidset *found; /* every PID found so far (not changed during the wave) */
};
struct wave_worker {
        struct wave *w;
        struct gr_pidset kids;
        int r;
};

static bool is_skipped(const struct wave *w, pid_t pid)
{
        bool skipped = pid == w->root;
        for (size_t j = 0; j < w->n_skip && !skipped; j++)
                skipped = w->skip[j] == pid;
        return skipped;
}

static void *wave_work(void *arg)
{
        struct wave_worker *ww = arg;
        struct wave *w = ww->w;
        for (;;) {
                size_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
                if (i >= w->n || ww->r < 0)
                        break;
                ww->r = visit_one(w->proc_root, w->pids[i], is_skipped(w, w->pids[i]), i < w->n_by_cgroup, &w->v[i],
                                  &ww->kids, w->root, w->found);
        }
        return NULL;
}

/* The wave [from, to) of ps: each member visited (v[i - from]), the children found added to ps */
static int visit_wave(struct wave *w, struct gr_pidset *ps)
{
        long cpus = gr_cpus_online();
        size_t n_threads = w->n < WAVE_PARALLEL_MIN || cpus < 2 ? 1 : cpus < WAVE_THREADS ? (size_t)cpus : WAVE_THREADS;
        if (n_threads == 1) {
                int r = 0;
                for (size_t i = 0; i < w->n && r >= 0; i++)
                        r = visit_one(w->proc_root, w->pids[i], is_skipped(w, w->pids[i]), i < w->n_by_cgroup, &w->v[i],
                                      ps, w->root, ps);
                return r;
        }
        struct wave_worker ww[WAVE_THREADS];
        memset(ww, 0, sizeof(ww));
        for (size_t i = 0; i < n_threads; i++)
                ww[i].w = w;
        gr_run_parallel(wave_work, ww, sizeof(ww[0]), n_threads);
        int r = 0;
        for (size_t i = 0; i < n_threads; i++) {
                if (ww[i].r < 0 && r == 0)
                        r = ww[i].r;
                for (size_t k = 0; r >= 0 && k < ww[i].kids.n; k++) {
                        int q = gr_pidset_add(ps, ww[i].kids.p[k]);
                        r = q < 0 ? q : r;
                }
                free(ww[i].kids.p);
                free(ww[i].kids.slots);
        }
        return r;
}

struct parent_of {
        pid_t pid, ppid;
};

static int cmp_parent_of(const void *a, const void *b)
{
        pid_t x = ((const struct parent_of *)a)->pid, y = ((const struct parent_of *)b)->pid;
        return (x > y) - (x < y);
}

/* The answers of one listing's walks (descends): each PID on a walked chain, whether it leads
 * to root; so that W strangers below one chain D deep cost D reads, not D x W */
struct descent_memo {
        struct gr_pidset yes, no;
        pid_t path[4096];
};

/* Does a process whose parent is ppid descend from root? Its parent chain followed up, from the
 * stat lines the wave read (index, sorted) and past them from /proc, until root (yes), PID 1 or
 * 0, an unreadable parent or 4096 steps (no), or a PID whose answer is known */
static bool descends(const char *proc_root, pid_t ppid, pid_t root, const struct parent_of *index, size_t n,
                     struct descent_memo *m)
{
        pid_t p = ppid;
        size_t len = 0;
        bool yes = false;
        for (; len < GR_ELEMENTSOF(m->path); len++) {
                if (p == root || gr_pidset_has(&m->yes, p)) {
                        yes = true;
                        break;
                }
                if (p <= 1 || gr_pidset_has(&m->no, p))
                        break;
                m->path[len] = p;
                struct parent_of key = { .pid = p };
                const struct parent_of *f = n ? bsearch(&key, index, n, sizeof(key), cmp_parent_of) : NULL;
                gr_stat st;
                if (f)
                        p = f->ppid;
                else if (gr_proc_read_stat(proc_root, p, &st) == 0)
                        p = st.ppid;
                else
                        break;
        }
        for (size_t i = 0; i < len && i < GR_ELEMENTSOF(m->path); i++)
                gr_pidset_add(yes ? &m->yes : &m->no, m->path[i]); /* out of memory: only not kept */
        return yes;
}

/* Deep: the cgroup's members of this wave asked for their children, each only where its parent
 * chain leads to root. A process that root moved into the leaf (or a stranger that took a
 * member's PID between cgroup.procs and its stat) is no descendant: its children (gpureap's own
 * parent among them, where that was moved in) are never asked for, so never listed */
static int ask_cgroup_members(const char *proc_root, pid_t root, const struct wave *w, struct gr_pidset *ps)
{
        struct parent_of *index = calloc(w->n ? w->n : 1, sizeof(*index));
        if (!index)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < w->n; i++)
                if (w->v[i].have_stat)
                        index[n++] = (struct parent_of){ w->v[i].st.pid, w->v[i].st.ppid };
        qsort(index, n, sizeof(*index), cmp_parent_of);
        struct descent_memo *m = calloc(1, sizeof(*m));
        int r = m ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < w->n_by_cgroup; i++) {
                const struct visit *v = &w->v[i];
                if (v->have_stat && !v->dead && descends(proc_root, v->st.ppid, root, index, n, m))
                        r = add_children_of(proc_root, w->pids[i], &v->st, ps);
        }
        if (m) {
                gr_pidset_free(&m->yes);
                gr_pidset_free(&m->no);
                free(m);
        }
        free(index);
        return r;
}

/* The descendants of root and the cgroup's members without reading the rest of /proc: the
 * cost follows the tree, not the machine (a node runs thousands of other processes) */
static int tree_by_children(const char *proc_root, pid_t root, const char *cgroup, bool deep, const pid_t *skip,
                            size_t n_skip, gr_tree_proc **ret, size_t *ret_n)
{
        struct gr_pidset ps = { 0 };
        int r = 0;
        if (cgroup && cgroup[0])
                r = add_cgroup_tree(cgroup, &ps, 0);
        /* The cgroup's members are not asked for their children: a child is born in its parent's
         * cgroup, and what root moves out of it is found once its parent ends (it comes to root,
         * the subreaper); a tree of a thousand costs a thousand stat reads, not nine thousand
         * system calls more. The others breadth first, a wave at a time, until no new one
         * appears. Deep (gr_tree_list_deep), those that descend from root are asked too, after
         * their wave: what was moved out of the cgroup while its parent lives is listed as that
         * parent's child. */
        size_t in_cgroup = ps.n;
        r = r < 0 ? r : add_children(proc_root, root, &ps);
        /* each one's stat first: a zombie (its leader dead, no thread left) has no children of
         * its own any more (the kernel hands them to the subreaper before it becomes one), so
         * the nine system calls that ask are saved: after a group's SIGTERM most of a tree is */
        gr_tree_proc *out = NULL;
        size_t k = 0, cap = 0;
        struct visit *v = NULL;
        size_t v_cap = 0;
        for (size_t from = 0; r >= 0 && from < ps.n;) {
                size_t to = ps.n;
                if (to - from > v_cap) {
                        struct visit *nv = realloc(v, (to - from) * sizeof(*nv));
                        if (!nv) {
                                r = -ENOMEM;
                                break;
                        }
                        v = nv;
                        v_cap = to - from;
                }
                /* the wave's PIDs copied: ps grows (and may move) as children are added */
                pid_t *pids = malloc((to - from) * sizeof(*pids));
                if (!pids) {
                        r = -ENOMEM;
                        break;
                }
                memcpy(pids, ps.p + from, (to - from) * sizeof(*pids));
                struct wave w = { .proc_root = proc_root, .pids = pids, .n = to - from, .root = root, .skip = skip,
                                  .n_skip = n_skip, .v = v, .found = &ps,
                                  .n_by_cgroup = in_cgroup > from ? (in_cgroup < to ? in_cgroup : to) - from : 0 };
                r = visit_wave(&w, &ps);
                if (r >= 0 && deep && w.n_by_cgroup)
                        r = ask_cgroup_members(proc_root, root, &w, &ps);
                free(pids);
                for (size_t i = 0; r >= 0 && i < w.n; i++) {
                        if (!v[i].have_stat)
                                continue;
                        if (k == cap) {
                                size_t nc = cap ? cap * 2 : 64;
                                gr_tree_proc *no = realloc(out, nc * sizeof(*no));
                                if (!no) {
                                        r = -ENOMEM;
                                        break;
                                }
                                out = no;
                                cap = nc;
                        }
                        const gr_stat *st = &v[i].st;
                        out[k] = (gr_tree_proc){ .pid = st->pid, .start_time = st->start_time, .cpu_ticks = st->cpu_ticks,
                                                 .state = st->state, .kthread = st->kthread, .pgid = st->pgrp };
                        gr_strlcpy(out[k].comm, st->comm, sizeof(out[k].comm));
                        k++;
                }
                from = to;
        }
        free(v);
        free(ps.slots);
        if (r < 0) {
                free(ps.p);
                free(out);
                return r;
        }
        if (!out && !(out = calloc(1, sizeof(*out)))) {
                free(ps.p);
                return -ENOMEM;
        }
        free(ps.p);
        if (k > 0)
                qsort(out, k, sizeof(*out), cmp_tree_proc);
        *ret = out;
        *ret_n = k;
        return 0;
}

static int tree_by_walk(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                        size_t n_skip, gr_tree_proc **ret, size_t *ret_n)
{
        struct link *l = NULL;
        size_t n = 0;
        int r = walk_links(proc_root, &l, &n);
        if (r < 0)
                return r;
        /* mark descendants: repeat until nothing changes (parents may sort after children) */
        for (bool changed = true; changed;) {
                changed = false;
                for (size_t i = 0; i < n; i++) {
                        if (l[i].in || l[i].pid == root)
                                continue;
                        if (l[i].ppid == root) {
                                l[i].in = changed = true;
                                continue;
                        }
                        struct link *p = find_link(l, n, l[i].ppid);
                        if (p && p->in) {
                                l[i].in = true;
                                changed = true;
                        }
                }
        }
        if (cgroup && cgroup[0])
                mark_cgroup(l, n, cgroup);
        return emit(l, n, root, skip, n_skip, ret, ret_n);
}

int gr_tree_list(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                 size_t n_skip, gr_tree_proc **ret, size_t *ret_n)
{
        const char *pr = proc_root ? proc_root : "/proc";
        int r = tree_by_children(pr, root, cgroup, false, skip, n_skip, ret, ret_n);
        if (r == -ENOENT)
                r = tree_by_walk(pr, root, cgroup, skip, n_skip, ret, ret_n);
        return r;
}

int gr_tree_list_deep(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                      size_t n_skip, gr_tree_proc **ret, size_t *ret_n)
{
        const char *pr = proc_root ? proc_root : "/proc";
        int r = tree_by_children(pr, root, cgroup, true, skip, n_skip, ret, ret_n);
        if (r == -ENOENT) /* the walk marks the descendants of every member by parent */
                r = tree_by_walk(pr, root, cgroup, skip, n_skip, ret, ret_n);
        return r;
}

int gr_tree_list_by_walk(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                         size_t n_skip, gr_tree_proc **ret, size_t *ret_n)
{
        return tree_by_walk(proc_root ? proc_root : "/proc", root, cgroup, skip, n_skip, ret, ret_n);
}

bool gr_reap_children(void (*cb)(pid_t pid, int status, void *userdata), void *userdata)
{
        for (;;) {
                int st;
                pid_t w = waitpid(-1, &st, WNOHANG);
                if (w < 0)
                        return errno == ECHILD;
                if (w == 0)
                        return false;
                if (cb)
                        cb(w, st, userdata);
        }
}

int gr_last_pid(pid_t *ret)
{
        char buf[32];
        int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        int e = errno;
        close(fd);
        if (n <= 0)
                return n < 0 ? -e : -EIO;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        uint64_t v;
        if (gr_parse_u64(buf, &v) < 0 || v > GR_PROC_PID_MAX)
                return -EINVAL;
        *ret = (pid_t)v;
        return 0;
}

bool gr_pid_new_since(pid_t pid, pid_t before, pid_t now)
{
        if (now >= before)
                return pid > before && pid <= now;
        return pid > before || pid <= now; /* the numbers wrapped at pid_max meanwhile */
}

int gr_cgroup2_mount(char *ret, size_t size)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        char line[4096];
        int r = -ENOENT;
        while (fgets(line, sizeof(line), f)) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER */
                char *dash = strstr(line, " - ");
                if (!dash || strncmp(dash + 3, "cgroup2 ", 8) != 0)
                        continue;
                char *p = line;
                for (int i = 0; i < 4 && p; i++) {
                        p = strchr(p, ' ');
                        if (p)
                                p++;
                }
                if (!p)
                        continue;
                char *e = strchr(p, ' ');
                if (!e)
                        continue;
                *e = '\0';
                if (gr_strlcpy(ret, p, size))
                        r = 0;
                break;
        }
        fclose(f);
        return r;
}

/* The directory of this process's own cgroup (mount + the "0::" line of /proc/self/cgroup) */
/* A process's cgroup v2 path (0: gpureap's own), from its /proc/PID/cgroup line, as seen from
 * the mount of gr_cgroup2_mount */
static int cgroup_path_of(pid_t pid, char *ret, size_t size)
{
        char file[64];
        if (pid > 0)
                snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
        FILE *f = fopen(pid > 0 ? file : "/proc/self/cgroup", "re");
        if (!f)
                return -errno;
        char line[2048];
        ret[0] = '\0';
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        gr_strlcpy(ret, line + 3, size);
                }
        fclose(f);
        return ret[0] ? 0 : -ENOENT;
}

/* gr_cgroup2_mount read once in a process (its mounts do not move): the leaf's creation, at
 * the run's first sample, reads it, so that the end's look for gpureap's ancestors in the leaf
 * does not read the mount table (0.1 ms on a container host's) before the signal */
static pthread_once_t mount_once = PTHREAD_ONCE_INIT;
static char mount_cached[1024];
static int mount_result;

static void mount_read(void)
{
        mount_result = gr_cgroup2_mount(mount_cached, sizeof(mount_cached));
}

static int cgroup2_mount_once(char *ret, size_t size)
{
        pthread_once(&mount_once, mount_read);
        if (mount_result < 0)
                return mount_result;
        return gr_strlcpy(ret, mount_cached, size) ? 0 : -ENAMETOOLONG;
}

static int own_cgroup_dir(char *ret, size_t size)
{
        char mount[1024], own[1024];
        int r = cgroup2_mount_once(mount, sizeof(mount));
        if (r < 0 || (r = cgroup_path_of(0, own, sizeof(own))) < 0)
                return r;
        size_t n = strlen(own);
        if ((size_t)snprintf(ret, size, "%s%.*s", mount, (int)(own[n - 1] == '/' ? n - 1 : n), own) >= size)
                return -ENAMETOOLONG;
        return 0;
}

int gr_cgroup_create_leaf(char *ret, size_t size, int *ret_lock)
{
        char dir[2100];
        int r = own_cgroup_dir(dir, sizeof(dir));
        if (r < 0)
                return r;
        pid_t self = gr_proc_self_pid();
        for (int attempt = 0; attempt < 8; attempt++) {
                uint64_t rnd = 0;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
                        uint64_t us = gr_now_us(); /* no entropy yet, early at boot: EEXIST retries */
                        rnd = us ^ us << 30 ^ (uint64_t)getpid() << 44 ^ (uint64_t)attempt;
                }
                char path[2200];
                snprintf(path, sizeof(path), "%s/gpureap-run-%d-%016llx", dir, (int)(self > 0 ? self : getpid()),
                         (unsigned long long)rnd);
                if (mkdir(path, 0755) < 0) {
                        if (errno == EEXIST)
                                continue;
                        return -errno;
                }
                /* the lock says the owner lives; a cleaner that took it first (the leaf was
                 * empty and unlocked) removed it meanwhile: another name */
                int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                struct stat a, b;
                if (fd < 0 || flock(fd, LOCK_EX) < 0 || fstat(fd, &a) < 0 || stat(path, &b) < 0 || a.st_ino != b.st_ino) {
                        if (fd >= 0)
                                close(fd);
                        continue;
                }
                if (!gr_strlcpy(ret, path, size)) {
                        rmdir(path);
                        close(fd);
                        return -ENAMETOOLONG;
                }
                *ret_lock = fd;
                return 0;
        }
        return -EEXIST;
}

/* Is the old-style leaf's owner (gpureap-run-N, no lock) gone: no live process N here, or one
 * whose name is not gpureap's. (A live run's leaf is empty only while it is made or removed, and
 * rmdir leaves a leaf with members: the worst this can do to a live old run is take its empty
 * leaf, and the run goes on with its subreaper alone) */
static bool old_owner_gone(const char *name)
{
        uint64_t n = 0;
        if (gr_parse_u64(name, &n) < 0 || n == 0 || n > GR_PROC_PID_MAX)
                return false;
        char path[64], comm[64] = "";
        snprintf(path, sizeof(path), "/proc/%llu/comm", (unsigned long long)n);
        FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT;
        bool got = fgets(comm, sizeof(comm), f) != NULL;
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        return got && strncmp(comm, "gpureap", 7) != 0; /* gpureap, gpureap-test-hooks (cut at 15) */
}

int gr_cgroup_remove_stale(unsigned *ret_removed)
{
        char dir[2100];
        int r = own_cgroup_dir(dir, sizeof(dir));
        if (r < 0)
                return r;
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        unsigned removed = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || strncmp(de->d_name, "gpureap-run-", 12) != 0)
                        continue;
                const char *id = de->d_name + 12;
                char path[2400];
                if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
                        continue;
                int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue;
                /* locked: its run lives. Unlocked and of the new kind: its owner is dead (the
                 * lock goes with its last fd). The lock is held over the removal, so that an
                 * owner that made it just now sees it gone and takes another name */
                bool dead = flock(fd, LOCK_EX | LOCK_NB) == 0 && (strchr(id, '-') || old_owner_gone(id));
                /* rmdir fails on a cgroup with members or children: nothing in it is touched */
                if (dead && gr_cgroup_empty(path) && rmdir(path) == 0)
                        removed++;
                close(fd);
        }
        closedir(d);
        if (ret_removed)
                *ret_removed = removed;
        return 0;
}

/* The end of a cgroup path's innermost gpureap-run-* component (the run the diagnosis names,
 * gr_cgroup_manager) where it is of the new kind, gpureap-run-N-RANDOM; NULL otherwise (an
 * old-style gpureap-run-M inside a new run's leaf is M's, which holds no lock) */
static const char *run_leaf_end(const char *cgroup)
{
        const char *found = NULL;
        for (const char *p = strstr(cgroup, "/gpureap-run-"); p; p = strstr(p + 1, "/gpureap-run-")) {
                const char *q = p + 13;
                size_t digits = strspn(q, "0123456789");
                found = NULL;
                if (digits == 0 || q[digits] != '-')
                        continue;
                q += digits + 1;
                if (strspn(q, "0123456789abcdef") != 16 || (q[16] != '\0' && q[16] != '/'))
                        continue;
                found = q + 16;
        }
        return found;
}

void gr_cgroup_run_leaf_locks(const char *const *cgroups, size_t n, gr_leaf_lock *ret)
{
        for (size_t i = 0; i < n; i++)
                ret[i] = GR_LEAF_UNKNOWN;
        /* /proc/locks shows a lock only where its taker is in /proc's PID namespace or below:
         * from a namespace of our own, a live run's lock may not be shown, and free would be a
         * lie */
        char mount[1024];
        if (n == 0 || !gr_proc_in_init_pidns() || cgroup2_mount_once(mount, sizeof(mount)) < 0)
                return;
        struct leaf {
                dev_t dev;
                ino_t ino;
        } *leaves = calloc(n, sizeof(*leaves));
        if (!leaves)
                return;
        size_t known = 0;
        for (size_t i = 0; i < n; i++) {
                const char *end = cgroups[i] && cgroups[i][0] == '/' ? run_leaf_end(cgroups[i]) : NULL;
                char path[4200];
                struct stat st;
                if (!end || (size_t)snprintf(path, sizeof(path), "%s%.*s", mount, (int)(end - cgroups[i]), cgroups[i]) >= sizeof(path) ||
                    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                leaves[i] = (struct leaf){ st.st_dev, st.st_ino };
                ret[i] = GR_LEAF_FREE; /* until its lock is found */
                known++;
        }
        FILE *f = known ? fopen("/proc/locks", "re") : NULL;
        /* one read for all: "1: FLOCK  ADVISORY  WRITE 1234 00:1b:5678 0 EOF"; a waiter's line
         * has "->" first */
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
                char kind[16], id[64];
                unsigned maj, min;
                unsigned long long ino;
                if (sscanf(line, "%*s %15s %*s %*s %*s %63s", kind, id) != 2 || strcmp(kind, "FLOCK") != 0 ||
                    sscanf(id, "%x:%x:%llu", &maj, &min, &ino) != 3)
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (ret[i] == GR_LEAF_FREE && maj == major(leaves[i].dev) && min == minor(leaves[i].dev) &&
                            ino == (unsigned long long)leaves[i].ino)
                                ret[i] = GR_LEAF_HELD;
        }
        bool failed = known && (!f || ferror(f)); /* not read whole: nothing is known free */
        if (f)
                fclose(f);
        for (size_t i = 0; failed && i < n; i++)
                ret[i] = GR_LEAF_UNKNOWN;
        free(leaves);
}

static int write_file(const char *dir, const char *name, const char *value)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, value, strlen(value));
        int r = n < 0 ? -errno : 0;
        close(fd);
        return r;
}

int gr_cgroup_enter(const char *cgroup, pid_t pid)
{
        char v[32];
        snprintf(v, sizeof(v), "%d", (int)pid);
        return write_file(cgroup, "cgroup.procs", v);
}

int gr_cgroup_kill(const char *cgroup)
{
        return write_file(cgroup, "cgroup.kill", "1");
}

bool gr_cgroup_empty(const char *cgroup)
{
        char path[4200], buf[64];
        snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
        FILE *f = fopen(path, "re");
        if (!f)
                return true;
        bool empty = !fgets(buf, sizeof(buf), f);
        fclose(f);
        return empty;
}

/* The leaf and the cgroups below it (a nested 'gpureap run' killed before it removed its own),
 * deepest first; only empty cgroups can be removed, so nothing else is touched */
static int remove_tree(const char *cgroup, void *arg, int depth)
{
        if (depth < 16)
                each_sub_cgroup(cgroup, remove_tree, arg, depth);
        return rmdir(cgroup) < 0 && depth == 0 ? -errno : 0; /* a sub-cgroup that stays: go on */
}

int gr_cgroup_remove(const char *cgroup)
{
        return remove_tree(cgroup, NULL, 0);
}

int gr_ancestors_read(struct gr_ancestors *ret)
{
        *ret = (struct gr_ancestors){ 0 };
        size_t cap = 0;
        pid_t p = getppid();
        for (int depth = 0; p > 1 && depth < 4096; depth++) {
                gr_stat st;
                if (gr_proc_read_stat(NULL, p, &st) < 0 || st.pid != p)
                        break;
                if (ret->n == cap) {
                        size_t nc = cap ? cap * 2 : 16;
                        void *na = realloc(ret->a, nc * sizeof(*ret->a));
                        if (!na)
                                return -ENOMEM;
                        ret->a = na;
                        cap = nc;
                }
                ret->a[ret->n].pid = p;
                ret->a[ret->n++].start_time = st.start_time;
                p = st.ppid;
        }
        return 0;
}

bool gr_ancestors_has(const struct gr_ancestors *anc, pid_t pid, uint64_t start_time)
{
        for (size_t i = 0; i < anc->n; i++)
                if (anc->a[i].pid == pid && anc->a[i].start_time == start_time)
                        return true;
        return false;
}

void gr_ancestors_free(struct gr_ancestors *anc)
{
        free(anc->a);
        *anc = (struct gr_ancestors){ 0 };
}

unsigned gr_cgroup_evict(const char *cgroup, const struct gr_ancestors *anc)
{
        size_t len = cgroup ? strlen(cgroup) : 0;
        const char *slash = len ? strrchr(cgroup, '/') : NULL;
        char mount[1024], parent[4200];
        if (!anc->n || !slash || slash == cgroup || (size_t)(slash - cgroup) >= sizeof(parent) ||
            cgroup2_mount_once(mount, sizeof(mount)) < 0 || strncmp(cgroup, mount, strlen(mount)) != 0)
                return 0;
        memcpy(parent, cgroup, (size_t)(slash - cgroup));
        parent[slash - cgroup] = '\0';
        const char *leaf = cgroup + strlen(mount); /* as /proc/PID/cgroup names it */
        size_t leaf_len = strlen(leaf);
        unsigned moved = 0;
        for (size_t i = 0; leaf_len && i < anc->n; i++) {
                char path[2048];
                gr_stat st;
                if (cgroup_path_of(anc->a[i].pid, path, sizeof(path)) == 0 && strncmp(path, leaf, leaf_len) == 0 &&
                    (path[leaf_len] == '\0' || path[leaf_len] == '/') &&
                    gr_proc_read_stat(NULL, anc->a[i].pid, &st) == 0 && st.start_time == anc->a[i].start_time) {
                        char v[32];
                        snprintf(v, sizeof(v), "%d", (int)anc->a[i].pid);
                        moved += write_file(parent, "cgroup.procs", v) == 0;
                }
        }
        return moved;
}
