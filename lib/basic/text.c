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

/* C0, DEL and C1; the bidirectional formatting characters (U+061C, U+200E-U+200F,
 * U+202A-U+202E, U+2066-U+2069), with which a name can show its text in another order than
 * the bytes' (a pod named "\u202eniart" shows as "train"); the line and paragraph separators
 * (U+2028, U+2029: a new paragraph for bidi); and the deprecated format characters
 * (U+206A-U+206F, which change how brackets mirror) */
static bool is_control(uint32_t cp)
{
        return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
               cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
               (cp >= 0x2066 && cp <= 0x206f);
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

/* One character of text to quote at s: its length in s (*ret_n), and whether it is written as
 * \xNN (a control character's sequence, or a byte that starts none, a byte at a time) */
static bool quote_escaped(const unsigned char *s, size_t *ret_n)
{
        uint32_t cp = 0;
        size_t n = utf8_sequence(s, &cp);
        bool escape = n == 0 || is_control(cp);
        *ret_n = escape ? 1 : n;
        return escape;
}

char *gr_text_quote(const char *s, char *buf, size_t size)
{
        static const char hex[] = "0123456789abcdef";
        const unsigned char *in = (const unsigned char *)(s ? s : "");
        if (size < 8) {
                if (size > 0)
                        buf[0] = '\0';
                return buf;
        }
        /* does it all fit? if not, it is cut where what is written and "..." still fit */
        size_t len = 0, n;
        for (const unsigned char *p = in; *p && len < size; p += n)
                len += quote_escaped(p, &n) ? 4 : n;
        bool cut = len >= size;
        size_t o = 0;
        for (const unsigned char *p = in; *p; p += n) {
                bool escape = quote_escaped(p, &n);
                if (cut && o + (escape ? 4 : n) + 3 >= size) {
                        memcpy(buf + o, "...", 4);
                        return buf;
                }
                if (escape) {
                        buf[o++] = '\\';
                        buf[o++] = 'x';
                        buf[o++] = hex[*p >> 4];
                        buf[o++] = hex[*p & 0xf];
                } else {
                        memcpy(buf + o, p, n);
                        o += n;
                }
        }
        buf[o] = '\0';
        return buf;
}
