/* Text that another process or the driver chose reaches root's terminal and JSON readers:
 * anyone can name a process "\033]0;...\a" (prctl), and the kernel cuts names mid-character. */
#include <stdint.h>
#include <string.h>

#include "gpureap/basic.h"

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF), 0 when none starts there. The NUL that ends s is never a
 * continuation byte, so this never reads past it. */
static size_t utf8_sequence(const unsigned char *s, uint32_t *ret_cp)
{
        unsigned char c = s[0];
        if (c < 0x80) {
                *ret_cp = c;
                return 1;
        }
        size_t n;
        unsigned char lo = 0x80, hi = 0xbf; /* the range allowed for the second byte */
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else {
                return 0;
        }
        for (size_t i = 1; i < n; i++) {
                unsigned char b = s[i];
                if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
                        return 0;
                cp = cp << 6 | (b & 0x3f);
        }
        *ret_cp = cp;
        return n;
}

static bool is_control(uint32_t cp)
{
        return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
}

size_t gr_text_sanitize(char *s)
{
        if (!s)
                return 0;
        unsigned char *in = (unsigned char *)s, *out = in;
        size_t replaced = 0;
        while (*in) {
                uint32_t cp = 0;
                size_t n = utf8_sequence(in, &cp);
                if (n == 0 || is_control(cp)) {
                        /* a bad byte is replaced alone, so the next one is judged afresh: a cut
                         * sequence costs one '?' per byte, a control character one '?' */
                        *out++ = '?';
                        in += n ? n : 1;
                        replaced++;
                        continue;
                }
                if (out != in)
                        memmove(out, in, n);
                out += n;
                in += n;
        }
        *out = '\0';
        return replaced;
}

bool gr_text_is_clean(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
                uint32_t cp = 0;
                size_t n = utf8_sequence(p, &cp);
                if (n == 0 || is_control(cp))
                        return false;
                p += n;
        }
        return true;
}
