/* Fuzz target for the replay path (libFuzzer: clang -fsanitize=fuzzer): the input is a recorded
 * snapshot as 'gpureap status --replay' reads it. A loaded snapshot goes on through the
 * diagnosis, the plan and both renderers, since a recording is anyone's text and all of them
 * trust what the loader gives; and what they write is checked: the JSON is valid UTF-8 without
 * a raw control character, the table has no control character but its newlines (no escape
 * sequence can reach a terminal). The committed corpus is replayed by the tests. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the JSON: every line clean (json-c escapes control characters; it would not mend UTF-8) */
static void check_json(char *buf)
{
        for (char *line = buf; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                if (!gr_text_is_clean(line)) {
                        fprintf(stderr, "fuzz: --json wrote a line that is not clean UTF-8: %s\n", line);
                        abort();
                }
                line = nl ? nl + 1 : NULL;
        }
}

/* the table: no C0 control but newline, no DEL, no C1 control (U+0080..U+009F). Bytes of a
 * character that a column width cut short are allowed: they cannot start an escape sequence */
static void check_table(const char *buf, size_t len)
{
        const unsigned char *p = (const unsigned char *)buf;
        for (size_t i = 0; i < len; i++) {
                bool c0 = p[i] < 0x20 && p[i] != '\n';
                bool c1 = p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
                if (c0 || c1 || p[i] == 0x7f) {
                        fprintf(stderr, "fuzz: the table has a control character at byte %zu\n", i);
                        abort();
                }
        }
}

/* the table laid out for a terminal of width columns: no line is wider (colour codes take
 * no room) */
static void check_width(char *buf, size_t len, int width)
{
        (void)len;
        for (char *line = buf; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                char plain[8192];
                size_t n = 0;
                for (const char *p = line; *p && n + 1 < sizeof(plain); p++) {
                        if (*p == '\033') { /* ESC [ ... m */
                                while (*p && *p != 'm')
                                        p++;
                                if (!*p)
                                        break;
                                continue;
                        }
                        plain[n++] = *p;
                }
                plain[n] = '\0';
                if (text_width(plain) > width) {
                        fprintf(stderr, "fuzz: a line of %d columns on a terminal of %d: %s\n", text_width(plain), width, plain);
                        abort();
                }
                line = nl ? nl + 1 : NULL;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        gr_snapshot *s = NULL;
        char err[512];
        if (snapshot_from_json_buffer((const char *)data, size, "fuzz", &s, err, sizeof(err)) < 0)
                return 0;
        gr_diagnosis *d = NULL;
        if (gr_diagnose(s, 1000, &d) == 0) {
                gr_plan_options po = { .my_uid = 1000, .self = 1, .all = size % 2 == 0, .tree = size % 3 == 0 };
                gr_plan *plan = NULL;
                if (gr_plan_make(s, d, &po, &plan) == 0)
                        gr_plan_free(plan);
                struct gpu_selection sel = { NULL };
                char *buf = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&buf, &len);
                if (f) {
                        render_status_json(f, s, d, &sel);
                        fclose(f);
                        check_json(buf);
                        free(buf);
                }
                buf = NULL;
                f = open_memstream(&buf, &len);
                if (f) {
                        render_status_table(f, s, d, &sel, NULL);
                        fclose(f);
                        check_table(buf, len);
                        free(buf);
                }
                /* laid out for a narrow terminal, with colour and every detail */
                buf = NULL;
                f = open_memstream(&buf, &len);
                if (f) {
                        struct table_options narrow = { .color = true, .why = true, .width = 40 + (int)(size % 81) };
                        render_status_table(f, s, d, &sel, &narrow);
                        fclose(f);
                        check_width(buf, len, narrow.width);
                        free(buf);
                }
                gr_diagnosis_free(d);
        }
        gr_snapshot_free(s);
        return 0;
}
