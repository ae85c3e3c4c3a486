/* What 'gpureap serve' remembers between snapshots (history.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "gpureap.h"
#include "gpureap/basic.h"
#include "history.h"

#define EXIT_EVENT_LATE_MS 3000

struct history_holder {
        pid_t pid;
        uint64_t start;
        gr_seen seen;
        char state;
        uint64_t generation;      /* the last update that saw it */
};

void history_init(struct history *h, uint64_t now_ms, bool events, const char *proc_root)
{
        memset(h, 0, sizeof(*h));
        pthread_mutex_init(&h->lock, NULL);
        h->since_ms = now_ms;
        h->events = events;
        gr_strlcpy(h->proc_root, proc_root ? proc_root : gr_context_proc_root(NULL), sizeof(h->proc_root));
}

void history_release(struct history *h)
{
        free(h->holders);
        h->holders = NULL;
        h->n = h->cap = 0;
        pthread_mutex_destroy(&h->lock);
}

bool history_note_exit(struct history *h, pid_t pid, int wait_status, uint64_t now_ms)
{
        bool watched = false;
        pthread_mutex_lock(&h->lock);
        /* the first exit of a watched launcher's PID after the watch began is the launcher's:
         * a later process with its PID cannot exit before it did. A refresh may have found it
         * gone (or a zombie) just before its event was read: that event still counts, if it
         * comes within EXIT_EVENT_LATE_MS */
        for (size_t i = 0; i < h->n; i++) {
                gr_seen *s = &h->holders[i].seen;
                if (s->launcher != pid)
                        continue;
                if (s->end != GR_END_ALIVE && !(s->end == GR_END_UNKNOWN && now_ms < s->end_ms + EXIT_EVENT_LATE_MS))
                        continue;
                if (WIFSIGNALED(wait_status)) {
                        s->end = GR_END_SIGNAL;
                        s->end_status = WTERMSIG(wait_status);
                } else {
                        s->end = GR_END_EXIT;
                        s->end_status = WEXITSTATUS(wait_status);
                }
                s->end_ms = now_ms;
                watched = true;
                h->dirty = true;
        }
        pthread_mutex_unlock(&h->lock);
        return watched;
}

void history_note_lost(struct history *h)
{
        pthread_mutex_lock(&h->lock);
        h->dirty |= !h->events_lost;
        h->events_lost = true;
        pthread_mutex_unlock(&h->lock);
}

static struct history_holder *find(struct history *h, pid_t pid, uint64_t start)
{
        for (size_t i = 0; i < h->n; i++)
                if (h->holders[i].pid == pid && h->holders[i].start == start)
                        return &h->holders[i];
        return NULL;
}

/* the executable of a process, "" unreadable */
static void exe_of(const char *proc_root, pid_t pid, char *buf, size_t size)
{
        char path[1100];
        snprintf(path, sizeof(path), "%s/%d/exe", proc_root, (int)pid);
        ssize_t n = readlink(path, buf, size - 1);
        buf[n > 0 ? n : 0] = '\0';
}

static bool running_or_sleeping(char state)
{
        return state == 'R' || state == 'S' || state == 'I';
}

static bool alive(const gr_process *p)
{
        return p && p->state != 'Z' && p->state != 'X';
}

/* The launcher of a holder seen for the first time: its parent, else the leader of its process
 * group or session, if that is alive and not the holder itself */
static const gr_process *launcher_of(const gr_snapshot *s, const gr_process *p)
{
        const pid_t cands[] = { p->ppid, p->pgrp, p->session };
        for (size_t i = 0; i < GR_ELEMENTSOF(cands); i++) {
                if (cands[i] <= 1 || cands[i] == p->pid)
                        continue;
                const gr_process *l = gr_proc_table_find(s->procs, cands[i]);
                if (alive(l) && !l->kthread)
                        return l;
        }
        return NULL;
}

int history_attach(struct history *h, gr_snapshot *s, uint64_t now_ms)
{
        int r = 0;
        pthread_mutex_lock(&h->lock);
        static uint64_t generation;
        generation++;
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                gr_process *p = &s->procs->procs[i];
                if (!p->hold || p->kthread)
                        continue;
                struct history_holder *e = find(h, p->pid, p->start_time);
                if (!e && h->n < HISTORY_HOLDERS_MAX) {
                        if (h->n == h->cap) {
                                size_t nc = h->cap ? h->cap * 2 : 64;
                                struct history_holder *a = realloc(h->holders, nc * sizeof(*a));
                                if (!a) {
                                        r = -ENOMEM;
                                        continue;
                                }
                                h->holders = a;
                                h->cap = nc;
                        }
                        e = &h->holders[h->n++];
                        memset(e, 0, sizeof(*e));
                        h->dirty = true;
                        e->pid = p->pid;
                        e->start = p->start_time;
                        e->seen.since_ms = now_ms;
                        e->state = p->state;
                        e->seen.state_since_ms = now_ms;
                        const gr_process *l = launcher_of(s, p);
                        if (l) {
                                e->seen.launcher = l->pid;
                                e->seen.launcher_start = l->start_time;
                                gr_strlcpy(e->seen.launcher_comm, l->comm, sizeof(e->seen.launcher_comm));
                                char a[PATH_MAX], b[PATH_MAX];
                                exe_of(h->proc_root, p->pid, a, sizeof(a));
                                exe_of(h->proc_root, l->pid, b, sizeof(b));
                                e->seen.same_exe = a[0] && strcmp(a, b) == 0;
                                e->seen.end = GR_END_ALIVE;
                        }
                }
                if (!e)
                        continue;
                e->generation = generation;
                if (e->state != p->state) {
                        /* a busy process flips between R and S at every other look: only a
                         * state that counts (T, D, Z) is worth a write of the file */
                        h->dirty |= !running_or_sleeping(e->state) || !running_or_sleeping(p->state);
                        e->state = p->state;
                        e->seen.state_since_ms = now_ms;
                }
                gr_seen *sn = &e->seen;
                if (sn->launcher > 0 && sn->end == GR_END_ALIVE) {
                        const gr_process *l = gr_proc_table_find(s->procs, sn->launcher);
                        if (!alive(l) || l->start_time != sn->launcher_start) {
                                /* gone, and no exit event said how (none came, or they were lost) */
                                sn->end = GR_END_UNKNOWN;
                                sn->end_ms = now_ms;
                                h->dirty = true;
                        }
                }
                free(p->seen);
                p->seen = malloc(sizeof(*p->seen));
                if (p->seen)
                        *p->seen = *sn;
                else
                        r = -ENOMEM;
        }
        /* forget the holders that are gone (or hold no GPU any more) */
        size_t k = 0;
        for (size_t i = 0; i < h->n; i++)
                if (h->holders[i].generation == generation)
                        h->holders[k++] = h->holders[i];
        h->dirty |= k != h->n;
        h->n = k;
        s->history_since_ms = h->since_ms;
        s->history_events = h->events;
        s->history_events_lost = h->events_lost;
        pthread_mutex_unlock(&h->lock);
        return r;
}

void history_gpus(struct history *h, gr_snapshot *s, const gr_diagnosis *d, uint64_t now_ms)
{
        if (!d || s->gpu->status != GR_GPU_OK)
                return;
        free(s->gpu_state_since_ms);
        s->gpu_state_since_ms = calloc(s->gpu->n_gpus ? s->gpu->n_gpus : 1, sizeof(uint64_t));
        pthread_mutex_lock(&h->lock);
        for (unsigned i = 0; i < s->gpu->n_gpus && i < d->n_gpus; i++) {
                const gr_gpu *g = &s->gpu->gpus[i];
                struct history_gpu *hg = NULL;
                for (unsigned k = 0; k < h->n_gpus && !hg; k++)
                        if (strcmp(h->gpus[k].uuid, g->uuid) == 0)
                                hg = &h->gpus[k];
                gr_gpu_state st = d->gpus[i].state;
                if (!hg && h->n_gpus < GR_GPUS_MAX) {
                        hg = &h->gpus[h->n_gpus++];
                        gr_strlcpy(hg->uuid, g->uuid, sizeof(hg->uuid));
                        hg->state = st;
                        hg->since_ms = now_ms;
                        h->dirty = true;
                } else if (hg && hg->state != st) {
                        audit_log(st == GR_GPU_CLEAN ? LOG_INFO : LOG_NOTICE, "GPU %u (%s): %s, was %s for %llu s",
                                  g->index, g->uuid, gr_gpu_state_name(st), gr_gpu_state_name(hg->state),
                                  (unsigned long long)((now_ms - hg->since_ms) / 1000));
                        hg->state = st;
                        hg->since_ms = now_ms;
                        h->dirty = true;
                }
                if (hg && s->gpu_state_since_ms)
                        s->gpu_state_since_ms[i] = hg->since_ms;
        }
        pthread_mutex_unlock(&h->lock);
}

/* ---- on disk ------------------------------------------------------------------------------ */

/* The file, beside serve's socket: a header, one line per holder and per GPU, then "end" (a
 * file without it was cut short). Text, so that an admin can read what serve remembers:
 *   gpureap-serve-history 1
 *   boot BOOT_ID  since MS  written MS
 *   holder PID START SINCE STATE STATE_SINCE LAUNCHER LAUNCHER_START SAME_EXE END END_STATUS END_MS COMM_HEX
 *   gpu UUID STATE SINCE
 *   end */
#define HISTORY_MAGIC "gpureap-serve-history 1"
#define HISTORY_FILE_MAX (16 << 20) /* 65536 holders of at most ~200 bytes, and the GPUs */

static void boot_id(char *buf, size_t size)
{
        buf[0] = '\0';
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        for (char *p = buf; *p; p++)
                if (*p <= ' ' || *p > '~')
                        *p = '-';
}

static void hex_of(FILE *f, const char *s)
{
        if (!*s)
                fputc('-', f);
        for (; *s; s++)
                fprintf(f, "%02x", (unsigned char)*s);
}

static bool hex_to(const char *hex, char *buf, size_t size)
{
        size_t n = 0;
        if (strcmp(hex, "-") != 0)
                for (; hex[0] && hex[1]; hex += 2) {
                        unsigned v;
                        if (n + 1 >= size || sscanf(hex, "%2x", &v) != 1 || v == 0)
                                return false;
                        buf[n++] = (char)v;
                }
        buf[n] = '\0';
        return !hex[0] || strcmp(hex, "-") == 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
        while (len) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

int history_save(struct history *h, int dir, const char *name, uint64_t now_ms)
{
        char *buf = NULL, boot[64];
        size_t len = 0;
        boot_id(boot, sizeof(boot));
        pthread_mutex_lock(&h->lock);
        if (!h->dirty) {
                pthread_mutex_unlock(&h->lock);
                return 0;
        }
        FILE *f = open_memstream(&buf, &len);
        if (!f) {
                pthread_mutex_unlock(&h->lock);
                return -ENOMEM;
        }
        fprintf(f, "%s\nboot %s since %llu written %llu\n", HISTORY_MAGIC, boot[0] ? boot : "-",
                (unsigned long long)h->since_ms, (unsigned long long)now_ms);
        for (size_t i = 0; i < h->n; i++) {
                const struct history_holder *e = &h->holders[i];
                const gr_seen *sn = &e->seen;
                fprintf(f, "holder %d %llu %llu %d %llu %d %llu %d %d %d %llu ", (int)e->pid, (unsigned long long)e->start,
                        (unsigned long long)sn->since_ms, (int)(unsigned char)e->state, (unsigned long long)sn->state_since_ms,
                        (int)sn->launcher, (unsigned long long)sn->launcher_start, sn->same_exe, (int)sn->end, sn->end_status,
                        (unsigned long long)sn->end_ms);
                hex_of(f, sn->launcher_comm);
                fputc('\n', f);
        }
        for (unsigned i = 0; i < h->n_gpus; i++) {
                fputs("gpu ", f);
                hex_of(f, h->gpus[i].uuid);
                fprintf(f, " %d %llu\n", (int)h->gpus[i].state, (unsigned long long)h->gpus[i].since_ms);
        }
        fputs("end\n", f);
        h->dirty = false;
        pthread_mutex_unlock(&h->lock);
        if (fclose(f) != 0) {
                free(buf);
                pthread_mutex_lock(&h->lock);
                h->dirty = true;
                pthread_mutex_unlock(&h->lock);
                return -ENOMEM;
        }
        /* the whole file, on disk, then the rename: a serve killed at any point leaves the old
         * file or the new one, never half of one */
        char tmp[300];
        snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
        unlinkat(dir, tmp, 0);
        int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r = fd < 0 ? -errno : write_all(fd, buf, len);
        free(buf);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (fd >= 0)
                close(fd);
        if (r == 0 && renameat(dir, tmp, dir, name) < 0)
                r = -errno;
        if (r < 0) {
                if (fd >= 0)
                        unlinkat(dir, tmp, 0);
                pthread_mutex_lock(&h->lock);
                h->dirty = true; /* tried again after the next look */
                pthread_mutex_unlock(&h->lock);
        }
        return r;
}

/* The fields of one line, split at spaces, at most max; their number */
static size_t split(char *line, char **fields, size_t max)
{
        size_t n = 0;
        for (char *save = NULL, *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                if (n == max)
                        return max + 1;
                fields[n++] = t;
        }
        return n;
}

static bool number(const char *s, uint64_t max, uint64_t *ret)
{
        uint64_t v;
        if (gr_parse_u64(s, &v) < 0 || v > max)
                return false;
        *ret = v;
        return true;
}

/* A launcher still alive, the same process as the one serve saw */
static bool launcher_alive(const char *proc_root, pid_t pid, uint64_t start)
{
        gr_stat st;
        return gr_proc_read_stat(proc_root, pid, &st) == 0 && st.start_time == start && st.state != 'Z' && st.state != 'X';
}

static int parse_line(char *line, struct history_holder *e, struct history_gpu *g, bool *ret_end)
{
        char *f[16];
        size_t n = split(line, f, GR_ELEMENTSOF(f));
        uint64_t v[12];
        if (n == 1 && strcmp(f[0], "end") == 0) {
                *ret_end = true;
                return 0;
        }
        if (n == 13 && strcmp(f[0], "holder") == 0) {
                static const uint64_t max[11] = { INT_MAX, UINT64_MAX, UINT64_MAX, 255, UINT64_MAX, INT_MAX,
                                                  UINT64_MAX, 1, GR_END_UNKNOWN, 255, UINT64_MAX };
                for (size_t i = 0; i < 11; i++)
                        if (!number(f[i + 1], max[i], &v[i]))
                                return -EINVAL;
                memset(e, 0, sizeof(*e));
                e->pid = (pid_t)v[0];
                e->start = v[1];
                e->seen.since_ms = v[2];
                e->state = (char)v[3];
                e->seen.state_since_ms = v[4];
                e->seen.launcher = (pid_t)v[5];
                e->seen.launcher_start = v[6];
                e->seen.same_exe = v[7];
                e->seen.end = (gr_launcher_end)v[8];
                e->seen.end_status = (int)v[9];
                e->seen.end_ms = v[10];
                if (e->pid <= 0 || !hex_to(f[12], e->seen.launcher_comm, sizeof(e->seen.launcher_comm)))
                        return -EINVAL;
                return 1;
        }
        if (n == 4 && strcmp(f[0], "gpu") == 0) {
                memset(g, 0, sizeof(*g));
                if (!hex_to(f[1], g->uuid, sizeof(g->uuid)) || !g->uuid[0] || !number(f[2], GR_GPU_UNKNOWN, &v[0]) ||
                    !number(f[3], UINT64_MAX, &v[1]))
                        return -EINVAL;
                g->state = (gr_gpu_state)v[0];
                g->since_ms = v[1];
                return 2;
        }
        return -EINVAL;
}

__attribute__((format(printf, 3, 4)))
static int ignored(char *msg, size_t size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, size, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* the file whole, read through the descriptor checked (serve's own, not too large): 0 and *ret
 * (NUL-terminated), 0 and NULL when there is none, or -errno with msg saying why */
static int history_read(int dir, const char *name, char **ret, char *msg, size_t size)
{
        *ret = NULL;
        int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : ignored(msg, size, "cannot be read: %s", strerror(errno));
        struct stat st;
        char *buf = NULL;
        int r = 0;
        if (fstat(fd, &st) < 0)
                r = ignored(msg, size, "cannot be read: %s", strerror(errno));
        else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
                r = ignored(msg, size, "not serve's own (a regular file of uid %u that only it may write)", (unsigned)geteuid());
        else if (st.st_size > HISTORY_FILE_MAX)
                r = ignored(msg, size, "larger than %d MiB", HISTORY_FILE_MAX >> 20);
        else if (!(buf = malloc((size_t)st.st_size + 1)))
                r = -ENOMEM;
        size_t len = 0;
        while (r == 0 && len < (size_t)st.st_size) {
                ssize_t k = read(fd, buf + len, (size_t)st.st_size - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t)k;
        }
        close(fd);
        if (r < 0) {
                free(buf);
                return r;
        }
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/* what a history file says, parsed */
struct history_parsed {
        struct history_holder *holders;
        size_t n, cap;
        struct history_gpu gpus[GR_GPUS_MAX];
        unsigned n_gpus;
        uint64_t since, written;
};

/* line 2: "boot ID since MS written MS", of this boot */
static int parse_header(char *line, struct history_parsed *p, char *msg, size_t size)
{
        char boot[64], *f[8];
        boot_id(boot, sizeof(boot));
        uint64_t a = 0, b = 0;
        if (split(line, f, GR_ELEMENTSOF(f)) != 6 || strcmp(f[0], "boot") != 0 || strcmp(f[2], "since") != 0 ||
            strcmp(f[4], "written") != 0 || !number(f[3], UINT64_MAX, &a) || !number(f[5], UINT64_MAX, &b))
                return ignored(msg, size, "corrupt (line 2)");
        if (strcmp(f[1], boot[0] ? boot : "-") != 0)
                return ignored(msg, size, "written before the machine last booted");
        p->since = a;
        p->written = b;
        return 0;
}

/* the file's lines, into p (buf is cut up); 0 or -errno with msg saying why */
static int history_parse(char *buf, struct history_parsed *p, char *msg, size_t size)
{
        char *save = NULL;
        size_t lineno = 0;
        bool end = false;
        int r = 0;
        for (char *line = strtok_r(buf, "\n", &save); line && r == 0 && !end; line = strtok_r(NULL, "\n", &save)) {
                lineno++;
                if (lineno == 1) {
                        if (strcmp(line, HISTORY_MAGIC) != 0)
                                r = ignored(msg, size, "not a history of gpureap serve (version 1)");
                        continue;
                }
                if (lineno == 2) {
                        r = parse_header(line, p, msg, size);
                        continue;
                }
                struct history_holder e;
                struct history_gpu g;
                int k = parse_line(line, &e, &g, &end);
                if (k < 0) {
                        r = ignored(msg, size, "corrupt (line %zu)", lineno);
                } else if (k == 1 && p->n < HISTORY_HOLDERS_MAX) {
                        if (p->n == p->cap) {
                                size_t nc = p->cap ? p->cap * 2 : 64;
                                struct history_holder *a = realloc(p->holders, nc * sizeof(*a));
                                if (!a)
                                        return -ENOMEM;
                                p->holders = a;
                                p->cap = nc;
                        }
                        p->holders[p->n++] = e;
                } else if (k == 2 && p->n_gpus < GR_GPUS_MAX) {
                        p->gpus[p->n_gpus++] = g;
                }
        }
        if (r == 0 && !end)
                r = ignored(msg, size, "corrupt (cut short after line %zu)", lineno);
        return r;
}

/* the history's own rules, now: a holder that is gone (its PID gone, or another process since)
 * is forgotten; a launcher last seen alive and gone now ended while serve was not watching, how
 * not seen. After this check a launcher still alive is the process serve saw, so the next exit
 * event of its PID is its own (history_note_exit). Returns the launchers kept; p->n the holders */
static size_t forget_gone(const struct history *h, struct history_parsed *p, uint64_t now_ms)
{
        size_t kept = 0, launchers = 0;
        for (size_t i = 0; i < p->n; i++) {
                struct history_holder *e = &p->holders[i];
                if (gr_proc_same_process(h->proc_root, e->pid, e->start) != 1)
                        continue;
                gr_seen *sn = &e->seen;
                if (sn->launcher > 0 && sn->end == GR_END_ALIVE && !launcher_alive(h->proc_root, sn->launcher, sn->launcher_start)) {
                        sn->end = GR_END_UNKNOWN;
                        sn->end_ms = now_ms;
                }
                bool first = sn->launcher > 0;
                for (size_t j = 0; j < kept && first; j++)
                        first = !(p->holders[j].seen.launcher == sn->launcher &&
                                  p->holders[j].seen.launcher_start == sn->launcher_start);
                launchers += first;
                p->holders[kept++] = *e;
        }
        p->n = kept;
        return launchers;
}

int history_load(struct history *h, int dir, const char *name, const char *shown, uint64_t now_ms, char *msg,
                 size_t size)
{
        msg[0] = '\0';
        char *buf;
        int r = history_read(dir, name, &buf, msg, size);
        if (r < 0 || !buf)
                return r;
        struct history_parsed *p = calloc(1, sizeof(*p));
        if (!p) {
                free(buf);
                return -ENOMEM;
        }
        r = history_parse(buf, p, msg, size);
        free(buf);
        if (r < 0) {
                free(p->holders);
                free(p);
                return r;
        }
        size_t launchers = forget_gone(h, p, now_ms);
        pthread_mutex_lock(&h->lock);
        free(h->holders);
        h->holders = p->holders;
        h->n = p->n;
        h->cap = p->cap;
        memcpy(h->gpus, p->gpus, p->n_gpus * sizeof(p->gpus[0]));
        h->n_gpus = p->n_gpus;
        if (p->since && p->since < h->since_ms)
                h->since_ms = p->since; /* what the memory claims goes back to the first start */
        h->dirty = true;
        pthread_mutex_unlock(&h->lock);
        uint64_t ago = now_ms > p->written ? now_ms - p->written : 0;
        snprintf(msg, size, "history of %zu launcher%s (%zu holder%s) recovered from '%s', written %llu.%llu s ago",
                 launchers, launchers == 1 ? "" : "s", p->n, p->n == 1 ? "" : "s", shown, (unsigned long long)(ago / 1000),
                 (unsigned long long)(ago % 1000 / 100));
        free(p);
        return 1;
}
