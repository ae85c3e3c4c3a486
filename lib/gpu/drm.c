/* The vendor-neutral view of AMD and Intel GPUs (drm.h): two backends behind one interface.
 * DRM: sysfs's render and card nodes (class/drm/<node>/device/uevent names the PCI slot and the
 * driver, device/vendor the vendor), then the fdinfo of every DRM fd the /proc scan found,
 * merged into clients by (pdev, drm-client-id). KFD: its topology (gpu_id, render minor, PCI
 * location) and its per-process VRAM. Everything is read, nothing is opened that is a device:
 * /dev/kfd and the /dev/dri nodes are never touched, only /proc and /sys files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/drm.h"
#include "basic/names.h"

GR_NAME_TABLE(gr_vendor_name, gr_vendor, GR_VENDOR_INTEL, "unknown",
              [GR_VENDOR_NVIDIA] = "nvidia", [GR_VENDOR_AMD] = "amd", [GR_VENDOR_INTEL] = "intel")
GR_NAME_TABLE(gr_drm_source_name, gr_drm_source, GR_SOURCE_KFD, "unknown",
              [GR_SOURCE_DRM] = "drm", [GR_SOURCE_KFD] = "kfd")

gr_vendor gr_vendor_of_pci(uint32_t vendor_id)
{
        switch (vendor_id) {
        case 0x10de: return GR_VENDOR_NVIDIA;
        case 0x1002: return GR_VENDOR_AMD;
        case 0x8086: return GR_VENDOR_INTEL;
        default: return GR_VENDOR_UNKNOWN;
        }
}

int gr_drm_report_gpu(const gr_drm_report *r, const char *pdev)
{
        for (unsigned i = 0; r && pdev && pdev[0] && i < r->n_gpus; i++)
                if (strcmp(r->gpus[i].pdev, pdev) == 0)
                        return (int)i;
        return -1;
}

/* The GPU of a PCI address, added when new (-1 when the table is full) */
static int gpu_at(gr_drm_report *r, const char *pdev)
{
        int i = gr_drm_report_gpu(r, pdev);
        if (i >= 0)
                return i;
        if (r->n_gpus == GR_DRM_GPUS_MAX) {
                r->gpus_truncated = true;
                return -1;
        }
        gr_drm_gpu *g = &r->gpus[r->n_gpus];
        memset(g, 0, sizeof(*g));
        gr_strlcpy(g->pdev, pdev, sizeof(g->pdev));
        g->card_minor = g->render_minor = -1;
        g->vram_total = g->vram_used = GR_UNKNOWN_U64;
        return (int)r->n_gpus++;
}

static int open_dir(const char *root, const char *sub)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%s", root, sub);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static uint64_t read_number_at(int dirfd, const char *name)
{
        char buf[64];
        size_t len;
        uint64_t v;
        if (gr_read_file_at(dirfd, name, buf, sizeof(buf), &len) < 0 || gr_kfd_parse_number(buf, len, &v) < 0)
                return GR_UNKNOWN_U64;
        return v;
}

/* A sysfs PCI id file: "0x1002" */
static uint32_t read_pci_id(int dirfd, const char *name)
{
        char buf[32];
        size_t len;
        if (gr_read_file_at(dirfd, name, buf, sizeof(buf), &len) < 0 || len < 3 || buf[0] != '0' || buf[1] != 'x')
                return 0;
        uint32_t v = 0;
        for (size_t i = 2; i < len && i < 10; i++) {
                char c = buf[i];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                        c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0)
                        break;
                v = v << 4 | (uint32_t)d;
        }
        return v;
}

/* The drivers of this view (drm.h): AMD's and Intel's */
static gr_vendor vendor_of_driver(const char *driver)
{
        if (strcmp(driver, "amdgpu") == 0)
                return GR_VENDOR_AMD;
        if (strcmp(driver, "i915") == 0 || strcmp(driver, "xe") == 0)
                return GR_VENDOR_INTEL;
        return GR_VENDOR_UNKNOWN;
}

/* KEY=value of a uevent file into buf; false when absent */
static bool uevent_value(const char *ue, const char *key, char *buf, size_t size)
{
        size_t kl = strlen(key);
        for (const char *l = ue; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                if (strncmp(l, key, kl) == 0 && l[kl] == '=') {
                        const char *v = l + kl + 1, *e = strchr(v, '\n');
                        size_t n = e ? (size_t)(e - v) : strlen(v);
                        if (n == 0 || n >= size)
                                return false;
                        memcpy(buf, v, n);
                        buf[n] = '\0';
                        gr_text_sanitize(buf);
                        return true;
                }
        return false;
}

/* One node of class/drm (card<N>, renderD<N>; a connector such as card0-DP-1 is not one) */
static void drm_node(gr_drm_report *r, int classfd, const char *name)
{
        bool render = strncmp(name, "renderD", 7) == 0;
        uint64_t minor;
        if (gr_parse_u64(name + (render ? 7 : 4), &minor) < 0 || minor >= 1u << 20 ||
            (!render && strncmp(name, "card", 4) != 0))
                return;
        char sub[96];
        snprintf(sub, sizeof(sub), "%s/device", name);
        int dev = openat(classfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dev < 0)
                return;
        char ue[2048], pdev[GR_DRM_NAME_MAX], driver[GR_DRM_NAME_MAX] = "";
        size_t len;
        int q = gr_read_file_at(dev, "uevent", ue, sizeof(ue) - 1, &len);
        ue[q == 0 || q == -EFBIG ? len : 0] = '\0';
        uint32_t vendor = read_pci_id(dev, "vendor");
        gr_vendor v = gr_vendor_of_pci(vendor);
        if (!uevent_value(ue, "PCI_SLOT_NAME", pdev, sizeof(pdev)) || (v != GR_VENDOR_AMD && v != GR_VENDOR_INTEL)) {
                close(dev);
                return; /* not a PCI GPU, or NVML's, or a BMC's display */
        }
        for (char *c = pdev; *c; c++)
                if (*c >= 'A' && *c <= 'F')
                        *c = (char)(*c - 'A' + 'a');
        uevent_value(ue, "DRIVER", driver, sizeof(driver));
        int gi = gpu_at(r, pdev);
        if (gi >= 0) {
                gr_drm_gpu *g = &r->gpus[gi];
                g->vendor = v;
                if (driver[0])
                        gr_strlcpy(g->driver, driver, sizeof(g->driver));
                if (render)
                        g->render_minor = (int)minor;
                else
                        g->card_minor = (int)minor;
                g->vram_total = read_number_at(dev, "mem_info_vram_total");
                g->vram_used = read_number_at(dev, "mem_info_vram_used");
                g->sources |= 1u << GR_SOURCE_DRM;
        }
        close(dev);
}

static int cmp_client(const void *a, const void *b)
{
        const gr_drm_client *x = a, *y = b;
        int c = strcmp(x->pdev, y->pdev);
        return c ? c : (x->client_id > y->client_id) - (x->client_id < y->client_id);
}

static int cmp_holder(const void *a, const void *b)
{
        const gr_drm_holder *x = a, *y = b;
        return x->pid != y->pid ? (x->pid > y->pid) - (x->pid < y->pid) : (x->fd > y->fd) - (x->fd < y->fd);
}

/* The GPU of a DRM minor (card or render), -1 none */
static int gpu_of_minor(const gr_drm_report *r, unsigned node, unsigned minor)
{
        for (unsigned i = 0; i < r->n_gpus; i++)
                if ((node == 1 ? r->gpus[i].render_minor : r->gpus[i].card_minor) == (int)minor)
                        return (int)i;
        return -1;
}

/* The clients by (pdev, client id): an open-addressing index into r->clients, so that a
 * process with thousands of DRM fds, each its own client, is read in linear time (an
 * adversary's 19,000 took 2.4 s with a walk of the clients for each fd) */
struct client_index {
        size_t *slots;            /* index + 1; 0 empty */
        size_t mask;
};

static size_t client_hash(const char *pdev, uint64_t id)
{
        uint64_t h = id * 0x9e3779b97f4a7c15ULL;
        for (const char *c = pdev; *c; c++)
                h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
        return (size_t)(h ^ (h >> 29));
}

static gr_drm_client *client_find(const gr_drm_report *r, const struct client_index *x, const char *pdev, uint64_t id)
{
        if (!x->slots)
                return NULL;
        for (size_t h = client_hash(pdev, id) & x->mask;; h = (h + 1) & x->mask) {
                size_t k = x->slots[h];
                if (k == 0)
                        return NULL;
                gr_drm_client *c = &r->clients[k - 1];
                if (c->client_id == id && strcmp(c->pdev, pdev) == 0)
                        return c;
        }
}

/* r->clients[k] into the index, which is kept at most half full */
static int client_index_add(const gr_drm_report *r, struct client_index *x, size_t k)
{
        if (!x->slots || (r->n_clients + 1) * 2 > x->mask + 1) {
                size_t n = x->slots ? (x->mask + 1) * 2 : 64;
                size_t *ns = calloc(n, sizeof(*ns));
                if (!ns)
                        return -ENOMEM;
                free(x->slots);
                x->slots = ns;
                x->mask = n - 1;
                for (size_t i = 0; i < r->n_clients; i++)
                        if (i != k)
                                client_index_add(r, x, i);
        }
        size_t h = client_hash(r->clients[k].pdev, r->clients[k].client_id) & x->mask;
        while (x->slots[h])
                h = (h + 1) & x->mask;
        x->slots[h] = k + 1;
        return 0;
}

/* One fd's fdinfo into its client (found by pdev and client id, or made) */
static int drm_fd(gr_drm_report *r, const char *proc_root, const gr_drm_fd_ref *ref, size_t *cap,
                  struct client_index *index)
{
        char path[128];
        if (ref->tid > 0) /* a thread's own table: its task directory's, as the scan read it */
                snprintf(path, sizeof(path), "%d/task/%d/fdinfo/%d", (int)ref->pid, (int)ref->tid, ref->fd);
        else
                snprintf(path, sizeof(path), "%d/fdinfo/%d", (int)ref->pid, ref->fd);
        int rootfd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return 0;
        char buf[8192];
        size_t len;
        int q = gr_read_file_at(rootfd, path, buf, sizeof(buf), &len);
        close(rootfd);
        if (q == -EACCES || q == -EPERM)
                r->n_unreadable++;
        if (q < 0 && q != -EFBIG)
                return 0; /* gone since the scan, or not ours to read */
        gr_drm_fdinfo fi;
        if (gr_drm_fdinfo_parse(buf, len, &fi) < 0 || !fi.has_client_id) {
                r->n_not_client++;
                return 0;
        }
        gr_vendor v = vendor_of_driver(fi.driver);
        if (v == GR_VENDOR_UNKNOWN)
                return 0; /* nvidia-drm (NVML's), a BMC's display, a virtual GPU: not this view's */
        int gi = fi.pdev[0] ? gr_drm_report_gpu(r, fi.pdev) : gpu_of_minor(r, ref->node, ref->minor);
        if (gi < 0 && fi.pdev[0])
                gi = gpu_at(r, fi.pdev); /* a GPU sysfs did not show (a recorded tree without it) */
        if (gi >= 0) {
                gr_drm_gpu *g = &r->gpus[gi];
                if (!g->driver[0])
                        gr_strlcpy(g->driver, fi.driver, sizeof(g->driver));
                if (g->vendor == GR_VENDOR_UNKNOWN)
                        g->vendor = v;
        }
        const char *pdev = fi.pdev[0] ? fi.pdev : gi >= 0 ? r->gpus[gi].pdev : "";
        gr_drm_client *c = client_find(r, index, pdev, fi.client_id);
        if (!c) {
                if (r->n_clients == *cap) {
                        size_t nc = *cap ? *cap * 2 : 16;
                        gr_drm_client *n = realloc(r->clients, nc * sizeof(*n));
                        if (!n)
                                return -ENOMEM;
                        r->clients = n;
                        *cap = nc;
                }
                c = &r->clients[r->n_clients++];
                memset(c, 0, sizeof(*c));
                gr_strlcpy(c->pdev, pdev, sizeof(c->pdev));
                c->client_id = fi.client_id;
                gr_strlcpy(c->driver, fi.driver, sizeof(c->driver));
                c->gpu = gi;
                /* every holder of one client reads the same numbers: the first one's are kept */
                c->device_bytes = gr_drm_fdinfo_device_bytes(&fi, &c->shared_bytes);
                c->n_regions = fi.n_regions;
                memcpy(c->regions, fi.regions, sizeof(c->regions));
                if (client_index_add(r, index, r->n_clients - 1) < 0)
                        return -ENOMEM;
        }
        /* one fd of one process once, whichever of its threads' tables showed it (two tables of
         * one process that share the open file: its copy, unshare(CLONE_FILES)) */
        for (unsigned k = 0; k < c->n_holders && k < GR_DRM_CLIENT_HOLDERS_MAX; k++)
                if (c->holders[k].pid == ref->pid && c->holders[k].fd == ref->fd)
                        return 0;
        if (c->n_holders < GR_DRM_CLIENT_HOLDERS_MAX)
                c->holders[c->n_holders] = (gr_drm_holder){ ref->pid, ref->fd };
        c->n_holders++;
        return 0;
}

static int drm_read(const gr_drm_input *in, gr_drm_report *r)
{
        int classfd = open_dir(in->sys_root ? in->sys_root : gr_context_sys_root(in->ctx), "class/drm");
        if (classfd >= 0) {
                DIR *d = fdopendir(classfd);
                if (!d) {
                        close(classfd);
                } else {
                        struct dirent *de;
                        while ((de = readdir(d)))
                                if (de->d_name[0] != '.')
                                        drm_node(r, dirfd(d), de->d_name);
                        closedir(d);
                }
        }
        size_t cap = 0;
        struct client_index index = { 0 };
        for (size_t i = 0; i < in->n_fds; i++) {
                if (in->fds[i].node == 2)
                        continue; /* /dev/kfd: no fdinfo of its own; KFD's sysfs says it */
                int q = drm_fd(r, in->proc_root ? in->proc_root : gr_context_proc_root(in->ctx), &in->fds[i], &cap, &index);
                if (q < 0) {
                        free(index.slots);
                        return q;
                }
        }
        free(index.slots);
        for (size_t i = 0; i < r->n_clients; i++) {
                gr_drm_client *c = &r->clients[i];
                unsigned n = c->n_holders < GR_DRM_CLIENT_HOLDERS_MAX ? c->n_holders : GR_DRM_CLIENT_HOLDERS_MAX;
                qsort(c->holders, n, sizeof(c->holders[0]), cmp_holder);
        }
        if (r->n_clients > 1)
                qsort(r->clients, r->n_clients, sizeof(r->clients[0]), cmp_client);
        return 0;
}

const gr_gpu_backend gr_drm_backend = { GR_SOURCE_DRM, drm_read };

/* ---- KFD ---- */

static void kfd_node(gr_drm_report *r, int nodes, const char *name)
{
        char path[96], buf[4096];
        size_t len;
        snprintf(path, sizeof(path), "%s/properties", name);
        int q = gr_read_file_at(nodes, path, buf, sizeof(buf), &len);
        gr_kfd_node n;
        if ((q < 0 && q != -EFBIG) || gr_kfd_parse_properties(buf, len, &n) < 0 || !n.is_gpu)
                return;
        char pdev[GR_DRM_NAME_MAX];
        if (!gr_kfd_node_pci(&n, pdev, sizeof(pdev)))
                return;
        int sub = openat(nodes, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t id = sub >= 0 ? read_number_at(sub, "gpu_id") : GR_UNKNOWN_U64;
        if (sub >= 0)
                close(sub);
        int gi = gpu_at(r, pdev);
        if (gi < 0)
                return;
        gr_drm_gpu *g = &r->gpus[gi];
        if (g->vendor == GR_VENDOR_UNKNOWN)
                g->vendor = gr_vendor_of_pci(n.vendor_id ? n.vendor_id : 0x1002); /* KFD is AMD's */
        if (id != GR_UNKNOWN_U64 && id <= UINT32_MAX)
                g->kfd_gpu_id = (uint32_t)id;
        if (g->render_minor < 0)
                g->render_minor = n.drm_render_minor;
        g->sources |= 1u << GR_SOURCE_KFD;
}

static int gpu_of_kfd_id(const gr_drm_report *r, uint32_t id)
{
        for (unsigned i = 0; i < r->n_gpus; i++)
                if (r->gpus[i].kfd_gpu_id == id)
                        return (int)i;
        return -1;
}

static int cmp_kfd(const void *a, const void *b)
{
        const gr_kfd_usage *x = a, *y = b;
        return x->pid != y->pid ? (x->pid > y->pid) - (x->pid < y->pid)
                                : (x->gpu_id > y->gpu_id) - (x->gpu_id < y->gpu_id);
}

/* /sys/class/kfd/kfd/proc/PID/vram_<gpu_id> of every KFD process, a dead PID's too */
static int kfd_procs(gr_drm_report *r, int procfd)
{
        DIR *d = fdopendir(procfd);
        if (!d) {
                close(procfd);
                return 0;
        }
        size_t cap = 0;
        int ret = 0;
        struct dirent *de;
        while (ret == 0 && (de = readdir(d))) {
                uint64_t pid;
                if (gr_parse_u64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                        continue;
                int pd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (pd < 0)
                        continue;
                DIR *e = fdopendir(pd);
                if (!e) {
                        close(pd);
                        continue;
                }
                struct dirent *fe;
                while ((fe = readdir(e))) {
                        uint32_t id;
                        if (!gr_kfd_vram_entry(fe->d_name, &id))
                                continue;
                        uint64_t v = read_number_at(dirfd(e), fe->d_name);
                        if (r->n_kfd == cap) {
                                size_t nc = cap ? cap * 2 : 16;
                                gr_kfd_usage *n = nc <= 65536 ? realloc(r->kfd, nc * sizeof(*n)) : NULL;
                                if (!n) {
                                        ret = nc <= 65536 ? -ENOMEM : 0;
                                        break;
                                }
                                r->kfd = n;
                                cap = nc;
                        }
                        r->kfd[r->n_kfd++] = (gr_kfd_usage){ (pid_t)pid, id, gpu_of_kfd_id(r, id), v };
                }
                closedir(e);
        }
        closedir(d);
        if (r->n_kfd > 1)
                qsort(r->kfd, r->n_kfd, sizeof(r->kfd[0]), cmp_kfd);
        return ret;
}

static int kfd_read(const gr_drm_input *in, gr_drm_report *r)
{
        const char *sys = in->sys_root ? in->sys_root : gr_context_sys_root(in->ctx);
        int nodes = open_dir(sys, "class/kfd/kfd/topology/nodes");
        if (nodes >= 0) {
                DIR *d = fdopendir(nodes);
                if (!d) {
                        close(nodes);
                } else {
                        struct dirent *de;
                        while ((de = readdir(d)))
                                if (de->d_name[0] != '.')
                                        kfd_node(r, dirfd(d), de->d_name);
                        closedir(d);
                }
        }
        int procfd = open_dir(sys, "class/kfd/kfd/proc");
        if (procfd < 0)
                return 0;
        r->kfd_present = true;
        return kfd_procs(r, procfd);
}

const gr_gpu_backend gr_kfd_backend = { GR_SOURCE_KFD, kfd_read };

int gr_drm_report_read(const gr_drm_input *in, gr_drm_report **ret)
{
        *ret = NULL;
        gr_drm_report *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        /* KFD first: its topology gives each AMD GPU its gpu_id before the clients are keyed */
        static const gr_gpu_backend *const backends[] = { &gr_kfd_backend, &gr_drm_backend };
        for (size_t i = 0; i < GR_ELEMENTSOF(backends); i++) {
                int q = backends[i]->read(in, r);
                if (q < 0) {
                        gr_drm_report_free(r);
                        return q;
                }
        }
        /* the GPUs in PCI order, whatever order sysfs listed them in; then every index again */
        for (unsigned i = 1; i < r->n_gpus; i++)
                for (unsigned j = i; j > 0 && strcmp(r->gpus[j - 1].pdev, r->gpus[j].pdev) > 0; j--) {
                        gr_drm_gpu tmp = r->gpus[j];
                        r->gpus[j] = r->gpus[j - 1];
                        r->gpus[j - 1] = tmp;
                }
        for (size_t i = 0; i < r->n_clients; i++)
                r->clients[i].gpu = gr_drm_report_gpu(r, r->clients[i].pdev);
        for (size_t i = 0; i < r->n_kfd; i++)
                r->kfd[i].gpu = gpu_of_kfd_id(r, r->kfd[i].gpu_id);
        if (r->n_gpus == 0 && r->n_clients == 0 && r->n_kfd == 0 && !r->kfd_present) {
                gr_drm_report_free(r);
                return 0;
        }
        *ret = r;
        return 0;
}

void gr_drm_report_free(gr_drm_report *r)
{
        if (!r)
                return;
        free(r->clients);
        free(r->kfd);
        free(r);
}
