/* The supervisor's tree: descendants by parent links, and the members of its leaf cgroup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "gpureap/tree.h"

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

int gr_tree_list(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
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

int gr_cgroup_create_leaf(char *ret, size_t size)
{
        char mount[1024], own[1024] = "";
        int r = gr_cgroup2_mount(mount, sizeof(mount));
        if (r < 0)
                return r;
        FILE *f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return -errno;
        char line[2048];
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        gr_strlcpy(own, line + 3, sizeof(own));
                }
        fclose(f);
        if (!own[0])
                return -ENOENT;
        char path[2200];
        snprintf(path, sizeof(path), "%s%s%sgpureap-run-%d", mount, own,
                 own[strlen(own) - 1] == '/' ? "" : "/", (int)getpid());
        if (mkdir(path, 0755) < 0)
                return -errno;
        if (!gr_strlcpy(ret, path, size)) {
                rmdir(path);
                return -ENAMETOOLONG;
        }
        return 0;
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

int gr_cgroup_remove(const char *cgroup)
{
        return rmdir(cgroup) < 0 ? -errno : 0;
}
