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
                        render_status_table(f, s, d, &sel, false);
                        fclose(f);
                        check_table(buf, len);
                        free(buf);
                }
                gr_diagnosis_free(d);
        }
        gr_snapshot_free(s);
        return 0;
}
