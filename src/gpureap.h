/* The command line: shared declarations of the subcommands and the renderers. */
#ifndef GPUREAP_CLI_H
#define GPUREAP_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "gpureap/diagnose.h"
#include "gpureap/snapshot.h"
#include "gpureap/verify.h"

/* Documented, stable exit codes (docs/exit-codes.md) */
enum {
        EXIT_CLEAN = 0,       /* every selected GPU clean / the action is done */
        EXIT_NOT_CLEAN = 1,   /* something holds a selected GPU / findings */
        EXIT_USAGE = 2,       /* bad command line or input */
        EXIT_DRIVER = 3,      /* GPU or driver failure, or the driver did not answer in time */
        EXIT_OUTPUT = 4,      /* the output or the state could not be written (a full disk, a
                                 closed stdout): what it would have said is lost */
};

/* run's own exit codes, beside the command's (docs/exit-codes.md) */
enum {
        EXIT_NOT_READY = 121, /* --ready-port/--ready-log not seen within --ready-timeout */
        EXIT_STALLED = 122,   /* no output and no CPU progress for --stall-timeout */
        EXIT_MAX_TIME = 124,  /* --max-time, as timeout(1) */
        EXIT_RUN_FAILED = 125, /* gpureap itself failed (pipes, fork, the --json result; for
                                  gpureap-run, an untrusted helper beside it), as timeout(1) and
                                  env(1) */
        EXIT_CANNOT_EXEC = 126,
        EXIT_NOT_FOUND = 127,
};
/* check's own failure (a bad command line, its line not written): UNKNOWN for Nagios */
#define CHECK_UNKNOWN 3

#define JSON_SCHEMA_VERSION 4

struct gpu_selection {
        const char *list;     /* --gpu value, comma separated; NULL for all */
        const gr_scope *scope; /* --job, --cgroup, --container, --pod: and then, without --gpu,
                                  only the GPUs that its processes hold (mask below) */
        uint64_t scope_mask;
};

/* the scope options' codes for getopt_long, beyond any short option */
enum { OPT_JOB = 1000, OPT_CGROUP, OPT_CONTAINER, OPT_POD, OPT_ENDED, OPT_KUBELET_SOCKET };
const char *scope_option_name(int code);
/* " --pod UID" (the option that gives sc), "" without a scope */
const char *scope_arg(const gr_scope *sc, char *buf, size_t size);
#define SCOPE_USAGE \
        "  --job ID         only the processes of this Slurm job (its cgroup, or SLURM_JOB_ID)\n" \
        "  --cgroup PATH    only the processes of this cgroup and those below it\n" \
        "  --container ID   only the processes of this container (12+ hex digits)\n" \
        "  --pod UID        only the processes of this Kubernetes pod\n"
/* the same for a usage whose descriptions start at column 21 (wait) */
#define SCOPE_USAGE_21 \
        "  --job ID           only the processes of this Slurm job (its cgroup, or\n" \
        "                     SLURM_JOB_ID)\n" \
        "  --cgroup PATH      only the processes of this cgroup and those below it\n" \
        "  --container ID     only the processes of this container (12+ hex digits)\n" \
        "  --pod UID          only the processes of this Kubernetes pod\n"
/* the same for a usage whose descriptions start at column 25 (status) */
#define SCOPE_USAGE_25 \
        "  --job ID               only the processes of this Slurm job (its cgroup, or\n" \
        "                         SLURM_JOB_ID)\n" \
        "  --cgroup PATH          only the processes of this cgroup and those below it\n" \
        "  --container ID         only the processes of this container (12+ hex digits)\n" \
        "  --pod UID              only the processes of this Kubernetes pod\n"
/* --job/--cgroup/--container/--pod VALUE into sc; -1 (message printed) when malformed or a
 * second scope */
int scope_option(const char *option, const char *value, gr_scope *sc);
/* The GPUs (bit i: index i of the report) that the scope's processes hold */
uint64_t scope_gpus(const gr_snapshot *s, const gr_scope *sc);

bool gpu_selected(const struct gpu_selection *sel, const gr_gpu *g);
/* An AMD or Intel GPU that --gpu names by its PCI address (0000:03:00.0, or 03:00.0 in any
 * domain); every one without --gpu */
bool drm_gpu_selected(const struct gpu_selection *sel, const gr_drm_gpu *g);
/* A selector that names no AMD or Intel GPU, or more than one: returns it, else NULL */
const char *drm_selection_unmatched(const struct gpu_selection *sel, const gr_drm_report *r, char *buf, size_t size);
/* Does --gpu name what the snapshot's GPUs are not (said on stderr: true)? The AMD and Intel
 * GPUs' PCI addresses where they are the node's answer (gr_snapshot_drm_only), else NVML's GPUs
 * where the driver answered */
bool selection_rejected(const struct gpu_selection *sel, const gr_snapshot *s);
/* An unknown or ambiguous selector: returns it (why in *ret_ambiguous), or NULL when every
 * selector names exactly one GPU */
const char *gpu_selection_unmatched(const struct gpu_selection *sel, const gr_gpu_report *rep,
                                    char *buf, size_t size);
/* The one-line error for it (exit 2) */
void gpu_selection_error(const struct gpu_selection *sel, const gr_gpu_report *rep);

/* src/term.c: the terminal, and text laid out to fit it */
/* Columns to fit in: the terminal's (TIOCGWINSZ) when fd is one, else $COLUMNS, else 0: no
 * limit (a pipe or a file gets every character) */
int terminal_width(int fd);
enum color_when { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
int color_option(const char *value, enum color_when *ret); /* --color=WHEN; -1: message printed */
int color_parse(const char *value, enum color_when *ret);  /* the same, silent (term-basic.c) */
/* auto: only on a terminal, and not with $NO_COLOR */
bool color_wanted(enum color_when when, int fd);

struct term {
        FILE *f;
        int width;  /* 0: no limit */
        bool color;
};
int text_width(const char *s);               /* in columns */
int text_width_n(const char *s, size_t n);
void out_color(const struct term *t, const char *code);
void out_reset(const struct term *t);
/* text from column col, cut with "..." at the width (no newline) */
void out_cut(const struct term *t, int col, const char *text);
/* one line, cut at the width */
void out_linef(const struct term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* prose from column col (what is before it already written), wrapped at words to column ind */
void out_wrap(const struct term *t, int col, int ind, const char *text);
/* a command to paste, from column col, broken with shell line continuations; in colour (a
 * code, or NULL) when t has colour */
void out_command(const struct term *t, int col, int ind, const char *cmd, const char *color);
/* fields two spaces apart from column col (what is before it already written), on more
 * lines from column ind where one is full */
void out_fields(const struct term *t, int col, int ind, const char *const *fields, size_t n);

#define TABLE_COLS_MAX 16
struct table_col {
        const char *head;
        bool right;       /* numbers: right-aligned */
        int drop;         /* > 0: left out when the line would not fit, lowest first */
        bool hide_empty;  /* left out when every cell is "-" */
        int min;          /* the last column: the least it keeps before others are dropped */
};
struct table {
        const struct table_col *cols;
        unsigned n_cols;
        char **cells;
        const char **colors;
        bool *heading;    /* a line of its own, the column heads again after it */
        size_t n_rows, cap;
};
void table_init(struct table *tb, const struct table_col *cols, unsigned n_cols);
int table_add(struct table *tb, const char *const *cells, int color_col, const char *color);
int table_add_heading(struct table *tb, const char *text);
void table_set_heading(struct table *tb, size_t row, const char *text);
/* the header and the rows from column ind; the last column is cut at the width */
void table_print(const struct table *tb, const struct term *t, int ind);
void table_release(struct table *tb);

struct table_options {
        bool color;
        bool why;             /* details of every GPU, and every piece of evidence */
        int width;            /* columns to fit in; 0: no limit */
        const char *replay;   /* the file a replayed snapshot came from */
};
/* opt NULL: no colour, no limit */
int render_status_table(FILE *f, const gr_snapshot *s, const gr_diagnosis *d,
                        const struct gpu_selection *sel, const struct table_options *opt);
/* the AMD and Intel view (src/render-drm.c): its part of the table, its "drm" object */
void render_drm_table(const struct term *t, const gr_snapshot *s, const gr_diagnosis *d);
struct json_object *drm_json(const gr_snapshot *s, const gr_diagnosis *d);
/* the status object (--json) of a snapshot, for a command's result to embed */
struct json_object *status_json(const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel);
int render_status_json(FILE *f, const gr_snapshot *s, const gr_diagnosis *d,
                       const struct gpu_selection *sel);
/* A snapshot recorded with 'gpureap status --json' (schema 1 or 2), for --replay: a regular
 * file of at most REPLAY_MAX_BYTES (docs/exit-codes.md); -errno and a one-line err otherwise */
#define REPLAY_MAX_BYTES (64 << 20)
/* and in items (src/snapshot-json.c): past these it is refused before it is parsed, or as soon
 * as a list is seen. A recorded process holds up to ~90 values, 20 of them objects or arrays:
 * the bounds leave each of REPLAY_PROCESSES_MAX processes 256 values and 32 containers, and
 * cost json-c some 200 MB at most */
#define REPLAY_VALUES_MAX (1 << 21)
#define REPLAY_CONTAINERS_MAX (1 << 18)
#define REPLAY_PROCESSES_MAX 8192
int snapshot_from_json(const char *path, gr_snapshot **ret, char *err, size_t err_size);
/* The same from a buffer of len bytes (path only names it in messages); the fuzz target's entry */
int snapshot_from_json_buffer(const char *buf, size_t len, const char *path, gr_snapshot **ret,
                              char *err, size_t err_size);
/* The processes a served or recorded snapshot keeps (calloc'd, one per process of the table):
 * the holders, the driver's context owners, and their ancestors, groups and sessions */
bool *snapshot_wanted_processes(const gr_snapshot *s);

/* serve's snapshot as its structs (src/snapshot-wire.c): what 'status' through serve copies out
 * instead of parsing JSON. Only a client of the very same build (its GNU build ID) reads it. */
#define WIRE_MAGIC "GRWIRE1\n"
int snapshot_to_wire(const gr_snapshot *s, char **ret, size_t *ret_len);
/* -EPROTO: not a wire of this build, -EINVAL: malformed, -ENOMEM */
int snapshot_from_wire(const char *buf, size_t len, gr_snapshot **ret);
/* This build's GNU build ID in hex ("" none: the wire is not used) */
const char *wire_build_id(void);
/* the GNU build ID among len bytes of ELF notes, as hex into out (build-id.c); -1: none */
int elf_notes_build_id(const void *notes, size_t len, char *out, size_t size);
/* The gpureap program beside this one, as /proc/self/exe resolves it (build-id.c): 0, or -1 where
 * that cannot be told, and then no other gpureap is guessed at */
int gpureap_beside(char *ret, size_t size);
/* The same, opened (read-only, close-on-exec) where it is one to run: the fd; -ENOENT where there is none;
 * -EPERM where, run by root, it is not as trusted as this program's own file (why says what:
 * another user's file, a directory others may write); -1 where it cannot be told */
int gpureap_beside_open(char *ret, size_t size, char *why, size_t why_size);
/* uid's name in this machine's user database, cut to size: true, or false where it has none
 * (users.c: the system's NSS; users-file.c, for gpureap-run: /etc/passwd alone) */
bool user_name(uid_t uid, char *ret, size_t size);

/* Is finding f about a selected GPU (or about no GPU in particular)? */
bool finding_selected(const struct gpu_selection *sel, const gr_snapshot *s, const gr_finding *f);

int cmd_status(int argc, char **argv);
/* One status report of a snapshot (src/cmd-status.c), the command's and serve's rendered one */
struct status_report_options {
        bool json, why, color;
        int width;                 /* 0: as wide as it takes */
        const char *replay;
        const char *gpus;          /* --gpu's list; NULL or "": all */
        const gr_scope *scope;     /* NULL: none */
};
int status_report(const gr_snapshot *s, const struct status_report_options *o, FILE *f, bool *ret_would_say);
int cmd_reap(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* the Prometheus text of 'gpureap metrics' (and of serve's /metrics) */
void metrics_render(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel);
/* 'gpureap serve''s socket: where it is by default, and a client's fetch of the served
 * snapshot (the answer to request: its JSON, or its structs, with serve's memory) within timeout_ms; -errno when there is no serve
 * (-ENOENT, -ECONNREFUSED), it is not root's (-EPERM) or it did not answer in time */
#define SERVE_SOCKET_DEFAULT "/run/gpureap/serve.sock"
const char *serve_socket_path(const char *given);
int serve_fetch(const char *path, const char *request, uint64_t timeout_ms, char **ret, size_t *ret_len);
/* serve's rendered report (status-out) for a client of build_id with these options, to stdout's
 * width: its exit code, the answer in *ret_buf (to free) and the report in it; -errno where serve
 * does not answer so (-ETIMEDOUT: not within 500 ms; -EPROTO: "no", or an answer cut short) */
int serve_fetch_report(const char *build_id, bool json, bool color, bool why, bool wide, char **ret_buf,
                       const char **ret_report, size_t *ret_len);
/* GPUREAP_SERVE_WIRE: "0" ask serve for JSON only, never its structs; "structs" its structs,
 * never its rendered report (for comparing); NULL or else: all three, best first */
void serve_wire_set(const char *how);
bool serve_rendered_wanted(void);
bool serve_structs_wanted(void);
/* Copy serve's memory of each process into a fresh snapshot (same PID and start time); a
 * launcher that serve last saw alive and that is gone now ended unseen */
void serve_merge_history(gr_snapshot *fresh, const gr_snapshot *served);
/* The same from a running serve (at most 500 ms, a snapshot of at most 5 s): true when merged */
bool serve_history_into(gr_snapshot *s);
/* A running serve's snapshot with its memory, when it answers within 500 ms and it is at most
 * 5 s old; NULL otherwise */
gr_snapshot *serve_fetch_fresh(void);

/* src/view.c: the snapshot every face judges from. VIEW_SERVED_OK: a running serve's, when it
 * answers and is fresh (s->served_by says so), else one taken here with serve's memory joined;
 * VIEW_OWN_LOOK: always one taken here (a reap, the Slurm hooks: what they act or vouch on),
 * serve's memory joined; VIEW_DIRECT (--direct): taken here, serve not asked. -errno */
enum view_want { VIEW_SERVED_OK, VIEW_OWN_LOOK, VIEW_DIRECT };
int view_take(const gr_snapshot_options *so, enum view_want want, gr_snapshot **ret);
int cmd_slurm_prolog(int argc, char **argv);
int cmd_slurm_epilog(int argc, char **argv);

/* 'gpureap reap' from options, not an argv, for the faces that reap on their own account (the
 * Slurm epilog): without asking, printing what reap prints; reap's exit code */
struct reap_request {
        const char *gpus;          /* a --gpu list; NULL all */
        const pid_t *pids;         /* --pid */
        size_t n_pids;
        const gr_pid_start *only;  /* --only */
        size_t n_only;
        const gr_scope *scope;     /* NULL: none */
        bool scope_ended;          /* --ended */
        bool all_users, user_set, direct;
        uid_t user;
        uint64_t grace_ms, timeout_ms, nvml_timeout_ms;
        bool quiet;                /* nothing on stdout (serve's policy): the audit trail, the
                                      record for metrics and errors on stderr only */
        /* the first look, where the face has its own memory to join (serve's); NULL: reap's */
        int (*take)(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata);
        void *take_userdata;
};
int reap_request_run(const struct reap_request *q);

/* src/words.c: a finding in words (the diagnosis hands facts): its explanation, the decisive
 * evidence, the next step as a command to paste, advice; "" where there is none */
struct finding_words {
        char explanation[640];
        char reason[240];
        char next_step[768];
        char advice[896];
};
void finding_words(const gr_snapshot *s, const gr_diagnosis *d, const gr_finding *f, struct finding_words *ret);
/* why a process's pod (or container) is not named by the kubelet, in words */
const char *pod_naming_words(gr_pod_naming n);

void sd_notify_send(const char *msg); /* to $NOTIFY_SOCKET (systemd Type=notify), if set */

/* options shared by the commands (src/cmd-status.c) */
int parse_duration_option(const char *v, uint64_t *ret, bool zero_ok);
int gpu_option_append(char *list, size_t size, const char *value); /* --gpu, repeatable */
bool list_items_ok(const char *value);     /* no empty item in a comma-separated list */
int nvml_timeout_from_env(uint64_t *ret);                          /* $GPUREAP_NVML_TIMEOUT */
/* The kubelet asked in the look: at --kubelet-socket PATH (given, NULL: not on the command line),
 * else $GPUREAP_KUBELET_SOCKET, else its default path; -1 (message printed) for an empty path */
int kubelet_socket_option(gr_snapshot_options *so, const char *given);
/* The library reads no environment: gpureap's variables for it (GPUREAP_PROC_ROOT,
 * GPUREAP_DEV_DIR, GPUREAP_SCAN, GPUREAP_NVML_LIBRARY) passed to its setters (src/program.c);
 * again after the command changed one of them */
void library_from_env(void);
/* SIGPIPE's disposition when gpureap started, before main() put its own handler there: run
 * gives the command the caller's (an ignored PIPE stays ignored, as tini leaves it) */
extern struct sigaction caller_sigpipe;
int no_stray_arguments(int argc, char **argv, const char *cmd);    /* after getopt */

void error_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What the user gave (an argument, an option's value, a file name, an environment variable),
 * for a message: no control byte reaches the terminal, and a long one is cut (gr_text_quote).
 * The buffer lives until the end of the enclosing block: for the call it is an argument of. */
#define QUOTED(s) gr_text_quote((s), (char[GR_QUOTE_MAX]){ 0 }, GR_QUOTE_MAX)
/* "did you mean": the nearest of words within two edits, or NULL */
const char *closest_word(const char *word, const char *const *words, size_t n);
/* After getopt_long returned '?': the option most likely meant, and where to look */
struct option;
void unknown_option(int argc, char **argv, const struct option *opts, const char *cmd);

/* What a command's exit code becomes when its output cannot be written (docs/exit-codes.md) */
enum output_kind {
        OUTPUT_READ,    /* the output is the answer: any write error fails it, 4 for 0 and 1 */
        OUTPUT_ACT,     /* it signals, resets or drains: a reader gone away (EPIPE: 'reap | head
                           -1') is no error once it acted; another write error is, 4 for 0 and 1 */
        OUTPUT_CHECK,   /* a health check's line: without it the check's own failure, 3 (UNKNOWN) */
        OUTPUT_OWN,     /* run: its exit code is the command's; it reports its own output */
};
/* src/program.c: what every program does before its command (SIGPIPE, stdout, the library's
 * settings), and its exit code once stdout has been checked */
void program_start(void);
/* Was fd (0, 1 or 2) closed by the caller, and is held with /dev/null since program_start? */
bool std_fd_held(int fd);
int output_checked(int code, enum output_kind kind);

/* src/summary.c: what is wrong with the GPUs, in one line */
enum summary_level { SUMMARY_OK, SUMMARY_WARNING, SUMMARY_CRITICAL, SUMMARY_UNKNOWN };
struct summary {
        enum summary_level level;
        char text[512];
        size_t o;             /* its length */
        size_t o_severe;      /* the end of the critical and unknown items, which come first */
        const gr_scope *scope; /* the diagnosis was narrowed to it: the hints' reaps keep it */
};
void summary_say(struct summary *m, enum summary_level l, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void summary_gpu(struct summary *m, const gr_snapshot *s, const gr_diagnosis *d, unsigned i);
unsigned summary_drm(struct summary *m, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel,
                     unsigned *ret_busy);

/* src/audit.c: every signal and the verdict behind it, to syslog ($GPUREAP_SYSLOG_SOCKET or
 * /dev/log, facility authpriv) */
void audit_open(const char *command);
void audit_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void audit_close(void);

/* src/state.c: what is kept between runs ($GPUREAP_STATE_DIR, /run/gpureap, ...) */
int state_file_path(const char *name, char *buf, size_t size);
int state_write(const char *name, const char *content); /* atomically */
FILE *state_fopen(const char *name); /* for reading; NULL when missing or not trusted */

/* src/safety.c: gpureap, its helpers and ancestors, never signalled */
struct gr_plan_options;
int self_plan_options(struct gr_plan_options *po);
/* a path from the environment is trusted only when nobody but root or this user can change it */
int env_path_trusted(const char *var, const char *path, int *ret_fd);
/* before a command signals anything: no foreign /proc, no device directory root does not own */
int signalling_env_ok(const char *cmd);
int output_path_ok(const char *option, const char *path);
void self_plan_options_release(struct gr_plan_options *po);

#endif
