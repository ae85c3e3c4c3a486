/* The fdinfo of a DRM file (Linux Documentation/gpu/drm-usage-stats.rst): "key: value" lines,
 * keys without whitespace, whitespace after the colon ignored, numbers with an optional unit.
 * Built from the documented format and the amdgpu, i915 and xe examples; see docs/drm.md. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap/drm.h"

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

int gr_drm_parse_size(const char *s, size_t len, uint64_t *ret_bytes)
{
        size_t i = 0;
        while (i < len && is_space(s[i]))
                i++;
        while (len > i && is_space(s[len - 1]))
                len--;
        if (i >= len || s[i] < '0' || s[i] > '9')
                return -EINVAL;
        uint64_t v = 0;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
                unsigned d = (unsigned)(s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        while (i < len && is_space(s[i]))
                i++;
        uint64_t mult = 1;
        size_t rest = len - i;
        if (rest == 3 && memcmp(s + i, "KiB", 3) == 0)
                mult = 1024;
        else if (rest == 3 && memcmp(s + i, "MiB", 3) == 0)
                mult = 1024 * 1024;
        else if (rest != 0)
                return -EINVAL;
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        *ret_bytes = v * mult;
        return 0;
}

/* The spelling drm-pdev has for a PCI device: dddd:bb:dd.f in hex, kept in lower case */
static bool pci_address(const char *s, size_t len, char *ret, size_t size)
{
        static const char shape[] = "xxxx:xx:xx.x";
        if (len != sizeof(shape) - 1 || size < sizeof(shape))
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (shape[i] != 'x') {
                        if (c != shape[i])
                                return false;
                        ret[i] = c;
                        continue;
                }
                if (c >= 'A' && c <= 'F')
                        c = (char)(c - 'A' + 'a');
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
                ret[i] = c;
        }
        ret[len] = '\0';
        return true;
}

static gr_drm_region *region(gr_drm_fdinfo *f, const char *name, size_t len)
{
        if (len == 0 || len >= GR_DRM_NAME_MAX)
                return NULL;
        for (size_t i = 0; i < len; i++)
                if (is_space(name[i]) || (unsigned char)name[i] < 0x20 || (unsigned char)name[i] >= 0x7f)
                        return NULL;
        for (unsigned i = 0; i < f->n_regions; i++)
                if (strlen(f->regions[i].name) == len && memcmp(f->regions[i].name, name, len) == 0)
                        return &f->regions[i];
        if (f->n_regions == GR_DRM_REGIONS_MAX) {
                f->regions_truncated = true;
                return NULL;
        }
        gr_drm_region *r = &f->regions[f->n_regions++];
        memcpy(r->name, name, len);
        r->name[len] = '\0';
        r->total = r->shared = r->resident = r->purgeable = r->active = r->memory = GR_UNKNOWN_U64;
        return r;
}

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
        size_t n = strlen(prefix);
        return len >= n && memcmp(s, prefix, n) == 0;
}

/* drm-{total,shared,resident,purgeable,active}-<region> and amdgpu's drm-memory-<region>; 0
 * when the key is none of them (engines, cycles, another driver's key) */
static int memory_key(gr_drm_fdinfo *f, const char *key, size_t klen, const char *val, size_t vlen)
{
        static const struct {
                const char *prefix;
                size_t offset;
        } kinds[] = {
                { "drm-total-", offsetof(gr_drm_region, total) },
                { "drm-shared-", offsetof(gr_drm_region, shared) },
                { "drm-resident-", offsetof(gr_drm_region, resident) },
                { "drm-purgeable-", offsetof(gr_drm_region, purgeable) },
                { "drm-active-", offsetof(gr_drm_region, active) },
                { "drm-memory-", offsetof(gr_drm_region, memory) },
        };
        for (size_t k = 0; k < GR_ELEMENTSOF(kinds); k++) {
                if (!has_prefix(key, klen, kinds[k].prefix))
                        continue;
                const char *name = key + strlen(kinds[k].prefix);
                size_t nlen = klen - strlen(kinds[k].prefix);
                /* xe's drm-total-cycles-<engine> is a GPU timestamp beside drm-cycles-<engine>,
                 * not a memory region called "cycles-rcs" */
                if (has_prefix(name, nlen, "cycles-"))
                        return 0;
                uint64_t bytes;
                if (gr_drm_parse_size(val, vlen, &bytes) < 0) {
                        f->n_bad++;
                        return 0;
                }
                gr_drm_region *r = region(f, name, nlen);
                if (!r) {
                        f->n_bad += !f->regions_truncated;
                        return 0;
                }
                memcpy((char *)r + kinds[k].offset, &bytes, sizeof(bytes));
                return 1;
        }
        return 0;
}

static void line(gr_drm_fdinfo *f, const char *s, size_t len, bool *has_driver)
{
        const char *colon = memchr(s, ':', len);
        if (!colon)
                return;
        size_t klen = (size_t)(colon - s);
        for (size_t i = 0; i < klen; i++)
                if (is_space(s[i]))
                        return; /* keys hold no whitespace: not a key */
        const char *val = colon + 1;
        size_t vlen = len - klen - 1;
        while (vlen && is_space(*val)) {
                val++;
                vlen--;
        }
        while (vlen && is_space(val[vlen - 1]))
                vlen--;
        if (klen == 10 && memcmp(s, "drm-driver", 10) == 0) {
                size_t n = vlen < sizeof(f->driver) - 1 ? vlen : sizeof(f->driver) - 1;
                memcpy(f->driver, val, n);
                f->driver[n] = '\0';
                gr_text_sanitize(f->driver);
                *has_driver = n > 0;
        } else if (klen == 13 && memcmp(s, "drm-client-id", 13) == 0) {
                char num[24];
                uint64_t v;
                if (vlen && vlen < sizeof(num)) {
                        memcpy(num, val, vlen);
                        num[vlen] = '\0';
                }
                if (vlen && vlen < sizeof(num) && gr_parse_u64(num, &v) == 0) {
                        f->client_id = v;
                        f->has_client_id = true;
                } else {
                        f->n_bad++;
                }
        } else if (klen == 8 && memcmp(s, "drm-pdev", 8) == 0) {
                if (!pci_address(val, vlen, f->pdev, sizeof(f->pdev))) {
                        f->pdev[0] = '\0';
                        f->n_bad++;
                }
        } else {
                memory_key(f, s, klen, val, vlen);
        }
}

int gr_drm_fdinfo_parse(const char *buf, size_t len, gr_drm_fdinfo *ret)
{
        gr_drm_fdinfo f;
        memset(&f, 0, sizeof(f));
        bool has_driver = false;
        size_t i = 0;
        while (i < len) {
                const char *nl = memchr(buf + i, '\n', len - i);
                size_t end = nl ? (size_t)(nl - buf) : len;
                line(&f, buf + i, end - i, &has_driver);
                i = end + 1;
        }
        if (!has_driver)
                return -ENOMSG;
        *ret = f;
        return 0;
}

bool gr_drm_region_is_device(const char *name)
{
        /* amdgpu "vram", xe "vram0".."vramN", i915 "local0".. (its device memory); i915's
         * "stolen-local0" is carved out of it for the display, not a client's */
        return strncmp(name, "vram", 4) == 0 || strncmp(name, "local", 5) == 0;
}

uint64_t gr_drm_fdinfo_device_bytes(const gr_drm_fdinfo *f, uint64_t *ret_shared)
{
        uint64_t sum = 0, shared = 0;
        bool any = false;
        for (unsigned i = 0; i < f->n_regions; i++) {
                const gr_drm_region *r = &f->regions[i];
                if (!gr_drm_region_is_device(r->name))
                        continue;
                uint64_t v = r->total != GR_UNKNOWN_U64 ? r->total : r->memory;
                if (v == GR_UNKNOWN_U64)
                        continue;
                any = true;
                sum = sum > UINT64_MAX - v ? UINT64_MAX - 1 : sum + v;
                if (r->shared != GR_UNKNOWN_U64)
                        shared = shared > UINT64_MAX - r->shared ? UINT64_MAX - 1 : shared + r->shared;
        }
        if (ret_shared)
                *ret_shared = any ? shared : GR_UNKNOWN_U64;
        return any ? sum : GR_UNKNOWN_U64;
}
