/* User space of the kernel-side holder scan: the device directory's nvidia* inodes and the
 * nvidia majors of /proc/devices handed to the program, the program loaded (its object is
 * built at compile time and embedded: holders.skel.h), the iterator read to its end, the
 * records turned into the candidate processes. It only reads; libbpf prints nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "proc-bpf.h"

#if GR_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "holders.skel.h"

#define MAJORS_MAX 16   /* GR_BPF_MAJORS_MAX of the program: the nvidia ones, drm, kfd */
#define INODES_MAX 1024 /* the program's map */
#define DEV_DEPTH_MAX 4

struct inode_set {
        uint64_t ino[INODES_MAX];
        unsigned n;
        bool full;
};

/* Every inode under devdir's nvidia* entries (the entries, and what nvidia* directories hold),
 * and its dri/ and kfd: the files whose paths the /proc scan would classify as NVIDIA, DRM or
 * KFD device files. Real DRM and KFD files are also found by their majors; a test's device
 * directory holds ordinary files named so, which the /proc scan takes by name, and which the
 * iterator missed (both scans must name the same holders: the AMD reap's tests failed on a
 * host crowded enough for the iterator to be chosen) */
static void collect_inodes(int dirfd, bool all, unsigned depth, struct inode_set *set)
{
        DIR *d = fdopendir(dirfd);
        if (!d) {
                close(dirfd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)) && !set->full) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (!all && strncmp(de->d_name, "nvidia", 6) != 0 && strcmp(de->d_name, "dri") != 0 &&
                    strcmp(de->d_name, "kfd") != 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (set->n == INODES_MAX) {
                        set->full = true;
                        break;
                }
                set->ino[set->n++] = st.st_ino;
                if (S_ISDIR(st.st_mode) && depth < DEV_DEPTH_MAX) {
                        int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (sub >= 0)
                                collect_inodes(sub, true, depth + 1, set);
                }
        }
        closedir(d);
}

/* The character majors /proc/devices names nvidia, nvidia-uvm, nvidia-caps, nvidia-nvswitch...,
 * and drm (226: AMD's and Intel's card and render nodes) and kfd (AMD's ROCm compute, assigned at
 * load): the same files the /proc scan tells by their numbers (proc-scan.c, drm_by_number), so
 * the two scans name the same DRM and KFD holders */
static unsigned read_majors(uint32_t *majors, unsigned max)
{
        FILE *f = fopen("/proc/devices", "re");
        if (!f)
                return 0;
        char line[256];
        bool chr = false;
        unsigned n = 0;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "Character devices:", 18) == 0) {
                        chr = true;
                        continue;
                }
                if (strncmp(line, "Block devices:", 14) == 0)
                        break;
                unsigned major;
                char name[128];
                if (!chr || sscanf(line, "%u %127s", &major, name) != 2 ||
                    (strncmp(name, "nvidia", 6) != 0 && strcmp(name, "drm") != 0 && strcmp(name, "kfd") != 0))
                        continue;
                bool dup = false;
                for (unsigned i = 0; i < n; i++)
                        dup |= majors[i] == major;
                if (!dup && n < max)
                        majors[n++] = major;
        }
        fclose(f);
        return n;
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        return 0;
}

static void say(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
}

/* Read the iterator to its end; the records are (tgid, fd) pairs of 32 bits each */
static int read_iter(int fd, pid_t **ret, size_t *ret_n)
{
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (cap - len < 4096) {
                        char *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
                        if (!nb) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = nb;
                        cap *= 2;
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;
                        free(buf);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        struct gr_bpf_record { uint32_t tgid, fd; };
        size_t n_rec = len / sizeof(struct gr_bpf_record);
        pid_t *pids = malloc((n_rec ? n_rec : 1) * sizeof(*pids));
        if (!pids) {
                free(buf);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_rec; i++) {
                struct gr_bpf_record rec;
                memcpy(&rec, buf + i * sizeof(rec), sizeof(rec));
                pids[i] = (pid_t)rec.tgid;
        }
        free(buf);
        qsort(pids, n_rec, sizeof(*pids), gr_cmp_pid);
        size_t n = 0;
        for (size_t i = 0; i < n_rec; i++)
                if (n == 0 || pids[n - 1] != pids[i])
                        pids[n++] = pids[i];
        *ret = pids;
        *ret_n = n;
        return 0;
}

struct gr_bpf_scan {
        struct gr_holders_bpf *skel;
        char devdir[4096];
        uint32_t majors[MAJORS_MAX];
        unsigned n_majors;
        struct inode_set set; /* what the program was given, to tell whether it still fits */
};

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static void device_files(const char *devdir, struct inode_set *set, uint32_t *majors, unsigned *n_majors)
{
        memset(set, 0, sizeof(*set));
        int dfd = open(devdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                collect_inodes(dfd, false, 0, set);
        qsort(set->ino, set->n, sizeof(set->ino[0]), cmp_u64);
        *n_majors = read_majors(majors, MAJORS_MAX);
}

bool gr_bpf_fits(const gr_bpf_scan *b, const char *devdir)
{
        if (!b || strcmp(b->devdir, devdir) != 0)
                return false;
        struct inode_set *set = malloc(sizeof(*set));
        if (!set)
                return false;
        uint32_t majors[MAJORS_MAX];
        unsigned n_majors;
        device_files(devdir, set, majors, &n_majors);
        bool same = n_majors == b->n_majors && memcmp(majors, b->majors, n_majors * sizeof(majors[0])) == 0 &&
                    set->n == b->set.n && set->full == b->set.full &&
                    memcmp(set->ino, b->set.ino, set->n * sizeof(set->ino[0])) == 0;
        free(set);
        return same;
}

void gr_bpf_close(gr_bpf_scan *b)
{
        if (!b)
                return;
        gr_holders_bpf__destroy(b->skel);
        free(b);
}

int gr_bpf_open(const char *devdir, gr_bpf_scan **ret, char *why, size_t why_size)
{
        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                int r = -errno;
                say(why, why_size, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s)", strerror(-r));
                return r;
        }
        gr_bpf_scan *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        struct inode_set *set = &b->set;
        gr_strlcpy(b->devdir, devdir, sizeof(b->devdir));
        device_files(devdir, set, b->majors, &b->n_majors);
        int r;
        if (set->full) {
                r = -E2BIG;
                say(why, why_size, "more than %d files under %s/nvidia*, dri and kfd", INODES_MAX, devdir);
                goto fail;
        }
        libbpf_set_print(silent);
        b->skel = gr_holders_bpf__open();
        if (!b->skel) {
                r = -errno;
                say(why, why_size, "the BPF program did not open: %s", strerror(-r));
                goto fail;
        }
        b->skel->rodata->n_majors = b->n_majors;
        for (unsigned i = 0; i < b->n_majors; i++)
                b->skel->rodata->majors[i] = b->majors[i];
        r = gr_holders_bpf__load(b->skel);
        if (r < 0) {
                say(why, why_size, "the BPF program did not load: %s", strerror(-r));
                goto fail;
        }
        uint8_t one = 1;
        for (unsigned i = 0; i < set->n; i++) {
                r = bpf_map__update_elem(b->skel->maps.inodes, &set->ino[i], sizeof(uint64_t), &one, 1, BPF_ANY);
                if (r < 0) {
                        say(why, why_size, "the BPF map did not take an inode: %s", strerror(-r));
                        goto fail;
                }
        }
        *ret = b;
        return 0;
fail:
        gr_bpf_close(b);
        return r;
}

int gr_bpf_run(gr_bpf_scan *b, pid_t **ret, size_t *ret_n, char *why, size_t why_size)
{
        struct bpf_link *link = bpf_program__attach_iter(b->skel->progs.gr_holders, NULL);
        if (!link) {
                int r = -errno;
                say(why, why_size, "the BPF iterator did not attach: %s", strerror(-r));
                return r;
        }
        int r, fd = bpf_iter_create(bpf_link__fd(link));
        if (fd < 0) {
                r = -errno;
                say(why, why_size, "the BPF iterator did not start: %s", strerror(-r));
        } else {
                r = read_iter(fd, ret, ret_n);
                if (r < 0)
                        say(why, why_size, "the BPF iterator could not be read: %s", strerror(-r));
                close(fd);
        }
        bpf_link__destroy(link);
        return r;
}

#else

int gr_bpf_open(const char *devdir, gr_bpf_scan **ret, char *why, size_t why_size)
{
        snprintf(why, why_size, "built without BPF support");
        return -EOPNOTSUPP;
}

int gr_bpf_run(gr_bpf_scan *b, pid_t **ret, size_t *ret_n, char *why, size_t why_size)
{
        return -EOPNOTSUPP;
}

void gr_bpf_close(gr_bpf_scan *b)
{
}

bool gr_bpf_fits(const gr_bpf_scan *b, const char *devdir)
{
        return false;
}

#endif
