/* AMD's KFD in sysfs (drivers/gpu/drm/amd/amdkfd: kfd_process.c, kfd_topology.c): per process
 * /sys/class/kfd/kfd/proc/PID/vram_<gpu_id> (bytes), per GPU a topology node whose properties
 * name its render node and PCI location and whose gpu_id file gives the id the proc entries
 * use. Only read, never /dev/kfd: opening it creates a KFD process entry for the opener. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/drm.h"

int gr_kfd_parse_number(const char *buf, size_t len, uint64_t *ret)
{
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                len--;
        char num[24];
        if (len == 0 || len >= sizeof(num))
                return len ? -ERANGE : -EINVAL;
        memcpy(num, buf, len);
        num[len] = '\0';
        return gr_parse_u64(num, ret);
}

bool gr_kfd_vram_entry(const char *name, uint32_t *ret_gpu_id)
{
        if (strncmp(name, "vram_", 5) != 0)
                return false;
        uint64_t v;
        if (gr_parse_u64(name + 5, &v) < 0 || v == 0 || v > UINT32_MAX)
                return false;
        *ret_gpu_id = (uint32_t)v;
        return true;
}

int gr_kfd_parse_properties(const char *buf, size_t len, gr_kfd_node *ret)
{
        gr_kfd_node n;
        memset(&n, 0, sizeof(n));
        n.drm_render_minor = -1;
        bool any = false;
        size_t i = 0;
        while (i < len) {
                const char *nl = memchr(buf + i, '\n', len - i);
                size_t end = nl ? (size_t)(nl - buf) : len;
                const char *s = buf + i;
                size_t l = end - i;
                i = end + 1;
                const char *sp = memchr(s, ' ', l);
                if (!sp)
                        continue;
                char key[32], val[24];
                size_t kl = (size_t)(sp - s), vl = l - kl - 1;
                if (kl == 0 || kl >= sizeof(key) || vl == 0 || vl >= sizeof(val))
                        continue;
                memcpy(key, s, kl);
                key[kl] = '\0';
                memcpy(val, sp + 1, vl);
                val[vl] = '\0';
                uint64_t v;
                if (gr_parse_u64(val, &v) < 0)
                        continue;
                any = true;
                if (strcmp(key, "simd_count") == 0)
                        n.is_gpu = v > 0;
                else if (strcmp(key, "drm_render_minor") == 0 && v <= INT32_MAX)
                        n.drm_render_minor = (int)v;
                else if (strcmp(key, "vendor_id") == 0 && v <= UINT32_MAX)
                        n.vendor_id = (uint32_t)v;
                else if (strcmp(key, "device_id") == 0 && v <= UINT32_MAX)
                        n.device_id = (uint32_t)v;
                else if (strcmp(key, "domain") == 0 && v <= UINT32_MAX)
                        n.domain = (uint32_t)v;
                else if (strcmp(key, "location_id") == 0 && v <= 0xffff) {
                        n.location_id = (uint32_t)v;
                        n.has_location = true;
                } else if (strcmp(key, "unique_id") == 0)
                        n.unique_id = v;
        }
        if (!any)
                return -EINVAL;
        /* a CPU node says drm_render_minor 0 (or nothing): only a GPU has a render node */
        if (!n.is_gpu)
                n.drm_render_minor = -1;
        *ret = n;
        return 0;
}

bool gr_kfd_node_pci(const gr_kfd_node *n, char *buf, size_t size)
{
        if (!n->has_location || n->domain > 0xffff)
                return false;
        unsigned bus = n->location_id >> 8, devfn = n->location_id & 0xff;
        int w = snprintf(buf, size, "%04x:%02x:%02x.%u", n->domain, bus, devfn >> 3, devfn & 7);
        return w > 0 && (size_t)w < size;
}

int gr_kfd_entries_left(gr_context *ctx, const pid_t *pids, size_t n)
{
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/class/kfd/kfd/proc", gr_context_sys_root(ctx));
        int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d < 0)
                return errno == ENOENT ? 0 : -errno; /* no KFD here: nothing of it to wait for */
        int left = 0;
        for (size_t i = 0; i < n; i++) {
                char name[24];
                struct stat st;
                snprintf(name, sizeof(name), "%d", (int)pids[i]);
                if (pids[i] <= 0 || fstatat(d, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                        continue;
                bool again = false; /* a PID listed twice counts once */
                for (size_t k = 0; k < i && !again; k++)
                        again = pids[k] == pids[i];
                left += !again;
        }
        close(d);
        return left;
}
