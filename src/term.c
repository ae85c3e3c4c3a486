/* Text for a terminal: how wide it is, whether to colour, and lines laid out to fit. A report
 * that fits its terminal never wraps there; one written to a pipe or a file is never cut (a
 * script or a bug report gets every character). Every string here is valid UTF-8 without
 * control characters (gr_text_sanitize), so widths are counted by character; East Asian wide
 * characters count two columns. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

int color_option(const char *value, enum color_when *ret)
{
        if (color_parse(value, ret) == 0)
                return 0;
        error_msg("invalid --color '%s' (auto, always or never)", QUOTED(value));
        return -1;
}

/* ---- widths ---- */

static unsigned decode(const char *s, size_t *len)
{
        const unsigned char *u = (const unsigned char *)s;
        if (u[0] < 0x80 || (u[0] & 0xe0) == 0x80) { /* (a stray continuation byte: one column) */
                *len = 1;
                return u[0];
        }
        size_t n = (u[0] & 0xe0) == 0xc0 ? 2 : (u[0] & 0xf0) == 0xe0 ? 3 : 4;
        unsigned cp = u[0] & (0x7f >> n);
        for (size_t i = 1; i < n; i++) {
                if ((u[i] & 0xc0) != 0x80) {
                        *len = i;
                        return 0xfffd;
                }
                cp = cp << 6 | (u[i] & 0x3f);
        }
        *len = n;
        return cp;
}

static int cp_width(unsigned cp)
{
        if (cp >= 0x300 && cp <= 0x36f)
                return 0; /* combining marks */
        if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
            (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
            (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) || (cp >= 0x1f900 && cp <= 0x1f9ff) ||
            (cp >= 0x20000 && cp <= 0x3fffd))
                return 2;
        return 1;
}

int text_width_n(const char *s, size_t n)
{
        int w = 0;
        for (size_t i = 0, len; i < n && s[i]; i += len) {
                if ((unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f) { /* printable ASCII, nearly every byte: one column */
                        w++;
                        len = 1;
                        continue;
                }
                w += cp_width(decode(s + i, &len));
        }
        return w;
}

int text_width(const char *s)
{
        return text_width_n(s, strlen(s));
}

/* The bytes of s that fit in cols columns (never half a character) */
static size_t fit_bytes(const char *s, int cols)
{
        size_t i = 0, len;
        int w = 0;
        while (s[i]) {
                int cw = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? (len = 1, 1) : cp_width(decode(s + i, &len));
                if (w + cw > cols)
                        break;
                w += cw;
                i += len;
        }
        return i;
}

/* ---- output ---- */

void out_color(const struct term *t, const char *code)
{
        if (t->color)
                fputs(code, t->f);
}

void out_reset(const struct term *t)
{
        if (t->color)
                fputs("\033[0m", t->f);
}

void out_cut(const struct term *t, int col, const char *text)
{
        int room = t->width > 0 ? t->width - col : 0;
        if (room <= 0 || text_width(text) <= room) {
                if (t->width <= 0 || room > 0)
                        fputs(text, t->f);
                return;
        }
        if (room <= 3) {
                fprintf(t->f, "%.*s", (int)fit_bytes(text, room), text);
                return;
        }
        fprintf(t->f, "%.*s...", (int)fit_bytes(text, room - 3), text);
}

void out_linef(const struct term *t, const char *fmt, ...)
{
        char line[4096];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        out_cut(t, 0, line);
        fputc('\n', t->f);
}

static void indent(const struct term *t, int n)
{
        fprintf(t->f, "%*s", n, "");
}

/* the end of a line (tail, then the newline) and the start of the next, at column ind; a
 * colour stops at the newline and starts again after the indent */
static void line_break(const struct term *t, const char *tail, int ind, const char *color)
{
        fprintf(t->f, "%s%s\n%*s%s", tail, color ? "\033[0m" : "", ind, "", color ? color : "");
}

/* "2.6 GiB": a number and its unit stay on one line. The length of the unit after s (a space
 * and the unit, then the end of the word), or 0 */
static size_t unit_after(const char *s)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "ms", "s" };
        if (s[0] != ' ')
                return 0;
        for (size_t i = 0; i < GR_ELEMENTSOF(units); i++) {
                size_t n = strlen(units[i]);
                if (strncmp(s + 1, units[i], n) == 0 && (s[1 + n] == '\0' || strchr(" ,;:)", s[1 + n])))
                        return 1 + n;
        }
        return 0;
}

/* Words of text from column col; a full line goes on at column ind. With cmd, a break is a
 * shell line continuation (" \" at its end; inside a word too long for a line "\", the rest
 * then at column 0, since spaces would split the word), so the command works when pasted. */
static void wrap(const struct term *t, int col, int ind, const char *text, bool cmd, const char *color)
{
        bool paint = color && t->color;
        if (paint)
                fputs(color, t->f);
        if (t->width <= 0) {
                fprintf(t->f, "%s%s\n", text, paint ? "\033[0m" : "");
                return;
        }
        int width = t->width;
        if (ind > width / 2)
                ind = width / 2; /* a very narrow terminal: keep some room */
        int keep = cmd ? 2 : 0;  /* room for " \" */
        bool first = true;
        for (const char *p = text; *p;) {
                const char *sp = p;
                while (*p == ' ')
                        p++;
                const char *w = p;
                while (*p && *p != ' ')
                        p++;
                if (w == p)
                        break; /* spaces at the end */
                if (!cmd && p[-1] >= '0' && p[-1] <= '9')
                        p += unit_after(p);
                while (*p && *p != ' ') /* "GiB," */
                        p++;
                const char *rest = p;
                while (*rest == ' ')
                        rest++;
                int spaces = (int)(w - sp), ww = text_width_n(w, (size_t)(p - w));
                int need = *rest ? keep : 0;
                if (col + spaces + ww + need <= width) {
                        fprintf(t->f, "%.*s%.*s", spaces, sp, (int)(p - w), w);
                        col += spaces + ww;
                } else if (!first && ind + ww + need <= width) {
                        line_break(t, cmd ? " \\" : "", ind, paint ? color : NULL);
                        fprintf(t->f, "%.*s", (int)(p - w), w);
                        col = ind + ww;
                } else {
                        /* a word longer than a line (or first and too long): in pieces */
                        if (col + spaces + 1 + (cmd ? 1 : 0) > width) {
                                line_break(t, cmd ? " \\" : "", ind, paint ? color : NULL);
                                col = ind;
                        } else {
                                fprintf(t->f, "%.*s", spaces, sp);
                                col += spaces;
                        }
                        for (const char *q = w; q < p;) {
                                int room = width - col - (cmd ? 1 : 0);
                                size_t n = fit_bytes(q, room > 1 ? room : 1);
                                if (n > (size_t)(p - q))
                                        n = (size_t)(p - q);
                                if (n == 0) /* a wide character in one column: it goes whole */
                                        decode(q, &n);
                                fprintf(t->f, "%.*s", (int)n, q);
                                col += text_width_n(q, n);
                                q += n;
                                if (q < p) {
                                        line_break(t, cmd ? "\\" : "", cmd ? 0 : ind, paint ? color : NULL);
                                        col = cmd ? 0 : ind;
                                }
                        }
                }
                first = false;
        }
        fprintf(t->f, "%s\n", paint ? "\033[0m" : "");
}

void out_wrap(const struct term *t, int col, int ind, const char *text)
{
        wrap(t, col, ind, text, false, NULL);
}

void out_command(const struct term *t, int col, int ind, const char *cmd, const char *color)
{
        wrap(t, col, ind, cmd, true, color);
}

void out_fields(const struct term *t, int col, int ind, const char *const *fields, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (!fields[i] || !fields[i][0])
                        continue;
                int w = text_width(fields[i]);
                if (col > 0 && t->width > 0 && col + 2 + w > t->width) {
                        fprintf(t->f, "\n%*s", ind, "");
                        col = ind;
                } else if (col > 0) {
                        fputs("  ", t->f);
                        col += 2;
                }
                out_cut(t, col, fields[i]);
                col += w;
        }
        fputc('\n', t->f);
}

/* ---- tables ---- */

void table_init(struct table *tb, const struct table_col *cols, unsigned n_cols)
{
        memset(tb, 0, sizeof(*tb));
        tb->cols = cols;
        tb->n_cols = n_cols;
}

void table_release(struct table *tb)
{
        for (size_t i = 0; i < tb->n_rows * tb->n_cols; i++)
                free(tb->cells[i]);
        free(tb->cells);
        free(tb->colors);
        free(tb->heading);
        memset(tb, 0, sizeof(*tb));
}

static int table_grow(struct table *tb)
{
        if (tb->n_rows == tb->cap) {
                size_t cap = tb->cap ? tb->cap * 2 : 16;
                char **nc = realloc(tb->cells, cap * tb->n_cols * sizeof(*nc));
                if (!nc)
                        return -ENOMEM;
                tb->cells = nc;
                const char **ncol = realloc(tb->colors, cap * tb->n_cols * sizeof(*ncol));
                if (!ncol)
                        return -ENOMEM;
                tb->colors = ncol;
                bool *nh = realloc(tb->heading, cap * sizeof(*nh));
                if (!nh)
                        return -ENOMEM;
                tb->heading = nh;
                tb->cap = cap;
        }
        return 0;
}

/* A row of n_cols cells (copied); color: for the cell of column color_col, or NULL */
int table_add(struct table *tb, const char *const *cells, int color_col, const char *color)
{
        if (table_grow(tb) < 0)
                return -ENOMEM;
        tb->heading[tb->n_rows] = false;
        for (unsigned c = 0; c < tb->n_cols; c++) {
                tb->cells[tb->n_rows * tb->n_cols + c] = strdup(cells[c] ? cells[c] : "");
                tb->colors[tb->n_rows * tb->n_cols + c] = (int)c == color_col ? color : NULL;
        }
        tb->n_rows++;
        return 0;
}

/* A line of its own (in the first cell), after which the column heads come again */
int table_add_heading(struct table *tb, const char *text)
{
        if (table_grow(tb) < 0)
                return -ENOMEM;
        tb->heading[tb->n_rows] = true;
        for (unsigned c = 0; c < tb->n_cols; c++) {
                tb->cells[tb->n_rows * tb->n_cols + c] = strdup(c == 0 ? text : "");
                tb->colors[tb->n_rows * tb->n_cols + c] = NULL;
        }
        tb->n_rows++;
        return 0;
}

void table_set_heading(struct table *tb, size_t row, const char *text)
{
        if (row >= tb->n_rows || !tb->heading[row])
                return;
        free(tb->cells[row * tb->n_cols]);
        tb->cells[row * tb->n_cols] = strdup(text);
}

/* Columns shown and their widths: the droppable ones go, highest drop first, until the rest
 * leaves the last column at least its minimum */
static void table_layout(const struct table *tb, const struct term *t, int ind, int *w, bool *shown)
{
        for (unsigned c = 0; c < tb->n_cols; c++) {
                const struct table_col *col = &tb->cols[c];
                w[c] = text_width(col->head);
                bool any = !col->hide_empty;
                for (size_t r = 0; r < tb->n_rows; r++) {
                        if (tb->heading[r])
                                continue;
                        const char *cell = tb->cells[r * tb->n_cols + c];
                        int cw = text_width(cell);
                        w[c] = cw > w[c] ? cw : w[c];
                        any |= strcmp(cell, "-") != 0 && cell[0];
                }
                shown[c] = any;
        }
        if (t->width <= 0)
                return;
        for (;;) {
                int total = ind;
                for (unsigned c = 0; c + 1 < tb->n_cols; c++)
                        total += shown[c] ? w[c] + 2 : 0;
                int last_min = tb->cols[tb->n_cols - 1].min;
                if (total + last_min <= t->width)
                        return;
                int drop = -1;
                for (unsigned c = 0; c + 1 < tb->n_cols; c++)
                        if (shown[c] && tb->cols[c].drop > 0 && (drop < 0 || tb->cols[c].drop < tb->cols[drop].drop))
                                drop = (int)c;
                if (drop < 0)
                        return;
                shown[drop] = false;
        }
}

static void table_line(const struct table *tb, const struct term *t, int ind, const int *w, const bool *shown,
                       const char *const *cells, const char *const *colors)
{
        indent(t, ind);
        int col = ind;
        unsigned last = tb->n_cols - 1;
        for (unsigned c = 0; c < tb->n_cols; c++) {
                if (!shown[c] && c != last)
                        continue;
                const char *cell = cells[c];
                if (c == last) {
                        out_cut(t, col, cell);
                        break;
                }
                int pad = w[c] - text_width(cell);
                /* a column past the edge of a very narrow terminal: cut there, and the rest of
                 * the row with it */
                bool edge = t->width > 0 && col + w[c] + 2 > t->width;
                if (tb->cols[c].right && !edge)
                        indent(t, pad);
                if (colors && colors[c])
                        out_color(t, colors[c]);
                out_cut(t, col + (tb->cols[c].right && !edge ? pad : 0), cell);
                if (colors && colors[c])
                        out_reset(t);
                if (edge)
                        break;
                if (!tb->cols[c].right)
                        indent(t, pad);
                fputs("  ", t->f);
                col += w[c] + 2;
        }
        fputc('\n', t->f);
}

void table_print(const struct table *tb, const struct term *t, int ind)
{
        int w[TABLE_COLS_MAX];
        bool shown[TABLE_COLS_MAX];
        if (tb->n_cols == 0 || tb->n_cols > TABLE_COLS_MAX)
                return;
        table_layout(tb, t, ind, w, shown);
        const char *heads[TABLE_COLS_MAX];
        for (unsigned c = 0; c < tb->n_cols; c++)
                heads[c] = tb->cols[c].head;
        if (tb->n_rows == 0 || !tb->heading[0])
                table_line(tb, t, ind, w, shown, heads, NULL);
        for (size_t r = 0; r < tb->n_rows; r++) {
                if (tb->heading[r]) {
                        const char *text = tb->cells[r * tb->n_cols];
                        out_cut(t, 0, text);
                        fputc('\n', t->f);
                        table_line(tb, t, ind, w, shown, heads, NULL);
                        continue;
                }
                table_line(tb, t, ind, w, shown, (const char *const *)&tb->cells[r * tb->n_cols],
                           &tb->colors[r * tb->n_cols]);
        }
}
