#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gpureap/basic.h"

bool gr_strlcpy(char *dst, const char *src, size_t size)
{
        if (size == 0)
                return false;
        size_t n = strlen(src);
        bool fits = n < size;
        if (!fits)
                n = size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
        return fits;
}

int gr_parse_u64(const char *s, uint64_t *ret)
{
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        uint64_t v = 0;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                unsigned d = (unsigned)(*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int gr_cmp_pid(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

int gr_parse_int(const char *s, int *ret)
{
        bool neg = s && *s == '-';
        uint64_t v;
        int r = gr_parse_u64(neg ? s + 1 : s, &v);
        if (r < 0)
                return r;
        if (v > (uint64_t)INT32_MAX + (neg ? 1 : 0))
                return -ERANGE;
        *ret = neg ? (int)(-(int64_t)v) : (int)v;
        return 0;
}

/* A non-negative decimal with optional fraction, followed by a unit suffix from the table. */
struct unit {
        const char *suffix;
        double factor;
};

static int parse_with_units(const char *s, const struct unit *units, size_t n_units,
                            double default_factor, uint64_t *ret)
{
        if (!s || !*s)
                return -EINVAL;
        const char *p = s;
        double whole = 0, frac = 0, scale = 1;
        bool digits = false;
        for (; *p >= '0' && *p <= '9'; p++, digits = true)
                whole = whole * 10 + (*p - '0');
        if (*p == '.') {
                p++;
                for (; *p >= '0' && *p <= '9'; p++, digits = true) {
                        scale /= 10;
                        frac += (*p - '0') * scale;
                }
        }
        if (!digits)
                return -EINVAL;
        double factor = default_factor;
        if (*p) {
                size_t i;
                for (i = 0; i < n_units; i++)
                        if (strcasecmp(p, units[i].suffix) == 0)
                                break;
                if (i == n_units)
                        return -EINVAL;
                factor = units[i].factor;
        }
        double v = (whole + frac) * factor;
        if (!(v < 18446744073709549568.0)) /* largest double below 2^64 */
                return -ERANGE;
        *ret = (uint64_t)(v + 0.5);
        return 0;
}

int gr_parse_duration_ms(const char *s, uint64_t *ret_ms)
{
        static const struct unit units[] = {
                { "ms", 1 }, { "s", 1000 }, { "sec", 1000 }, { "m", 60000 }, { "min", 60000 },
                { "h", 3600000 },
        };
        return parse_with_units(s, units, GR_ELEMENTSOF(units), 1000, ret_ms);
}

int gr_parse_size(const char *s, uint64_t *ret_bytes)
{
        static const struct unit units[] = {
                { "b", 1 },
                { "k", 1024.0 }, { "kb", 1024.0 }, { "kib", 1024.0 },
                { "m", 1048576.0 }, { "mb", 1048576.0 }, { "mib", 1048576.0 },
                { "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
                { "t", 1099511627776.0 }, { "tb", 1099511627776.0 }, { "tib", 1099511627776.0 },
        };
        return parse_with_units(s, units, GR_ELEMENTSOF(units), 1, ret_bytes);
}

const char *gr_format_bytes(uint64_t bytes, char *buf, size_t size)
{
        if (bytes == GR_UNKNOWN_U64) {
                snprintf(buf, size, "?");
                return buf;
        }
        static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        double v = (double)bytes;
        size_t i = 0;
        while (v >= 1024 && i + 1 < GR_ELEMENTSOF(names)) {
                v /= 1024;
                i++;
        }
        if (i <= 2)
                snprintf(buf, size, "%.0f %s", v, names[i]);
        else
                snprintf(buf, size, "%.1f %s", v, names[i]);
        return buf;
}

