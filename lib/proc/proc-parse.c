/* Pure parsers of /proc files: no I/O, every index checked, tested on fixtures and fuzzed. */
#include <errno.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "basic/names.h"

/* Next space-separated field of stat after *p; returns its start and length, or NULL. */
static const char *next_field(const char **p, const char *end, size_t *ret_len)
{
        const char *s = *p;
        while (s < end && *s == ' ')
                s++;
        if (s >= end)
                return NULL;
        const char *e = s;
        while (e < end && *e != ' ' && *e != '\n')
                e++;
        *ret_len = (size_t)(e - s);
        *p = e;
        return s;
}

static int field_to_i64(const char *s, size_t len, int64_t *ret)
{
        char tmp[32];
        if (len == 0 || len >= sizeof(tmp))
                return -EINVAL;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        bool neg = tmp[0] == '-';
        uint64_t v;
        int r = gr_parse_u64(neg ? tmp + 1 : tmp, &v);
        if (r < 0)
                return r;
        if (v > INT64_MAX)
                return -ERANGE;
        *ret = neg ? -(int64_t)v : (int64_t)v;
        return 0;
}

int gr_parse_stat(const char *buf, size_t len, gr_stat *ret)
{
        const char *end = buf + len;
        const char *open = memchr(buf, '(', len);
        if (!open)
                return -EINVAL;
        /* comm may hold ')' itself: the real end is the last ')' of the line */
        const char *close = NULL;
        for (const char *q = end; q > open; q--)
                if (q[-1] == ')') {
                        close = q - 1;
                        break;
                }
        if (!close)
                return -EINVAL;

        gr_stat st = { 0 };
        int64_t v;
        {
                const char *p = buf;
                size_t flen;
                const char *f = next_field(&p, open, &flen);
                if (!f || field_to_i64(f, flen, &v) < 0 || v <= 0 || v > INT32_MAX)
                        return -EINVAL;
                st.pid = (pid_t)v;
        }
        size_t clen = (size_t)(close - open - 1);
        if (clen >= sizeof(st.comm))
                clen = sizeof(st.comm) - 1;
        memcpy(st.comm, open + 1, clen);
        st.comm[clen] = '\0';
        /* any user may name a process "\033]0;..." (PR_SET_NAME), and the kernel cuts names at
         * 15 bytes, mid-character if need be: the name reaches root's terminal */
        gr_text_sanitize(st.comm);

        const char *p = close + 1;
        size_t flen;
        const char *f = next_field(&p, end, &flen);
        if (!f || flen != 1)
                return -EINVAL;
        /* a letter from the kernel; anything else (a recorded tree) is shown as unknown */
        st.state = (f[0] >= 'A' && f[0] <= 'Z') || (f[0] >= 'a' && f[0] <= 'z') ? f[0] : '?';

        /* fields 4..22 after the state: ppid pgrp session ... starttime */
        int64_t fields[19];
        for (unsigned i = 0; i < GR_ELEMENTSOF(fields); i++) {
                f = next_field(&p, end, &flen);
                if (!f || field_to_i64(f, flen, &fields[i]) < 0)
                        return -EINVAL;
        }
        if (fields[0] < 0 || fields[1] < 0 || fields[2] < 0 || fields[18] < 0)
                return -EINVAL;
        st.ppid = (pid_t)fields[0];
        st.pgrp = (pid_t)fields[1];
        st.session = (pid_t)fields[2];
        st.tty_nr = fields[3] >= INT32_MIN && fields[3] <= INT32_MAX ? (int)fields[3] : 0;
        st.tpgid = fields[4] > 0 && fields[4] <= INT32_MAX ? (pid_t)fields[4] : -1;
        st.kthread = fields[5] >= 0 && (fields[5] & 0x00200000); /* PF_KTHREAD */
        st.exiting = fields[5] >= 0 && (fields[5] & 0x00000004); /* PF_EXITING */
        st.start_time = (uint64_t)fields[18];
        st.n_threads = fields[16] > 0 && fields[16] <= INT32_MAX ? (unsigned)fields[16] : 0;
        if (fields[10] >= 0 && fields[11] >= 0)
                st.cpu_ticks = (uint64_t)fields[10] + (uint64_t)fields[11];
        *ret = st;
        return 0;
}

static unsigned hex_digit(char c)
{
        return (c >= '0' && c <= '9') ? (unsigned)(c - '0') :
               (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10) :
               (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10) : 99;
}

static bool line_has_key(const char *line, size_t len, const char *key, const char **ret_value)
{
        size_t klen = strlen(key);
        if (len < klen || memcmp(line, key, klen) != 0)
                return false;
        *ret_value = line + klen;
        return true;
}

int gr_parse_status(const char *buf, size_t len, gr_status *ret)
{
        gr_status st = { 0 };
        const char *p = buf, *end = buf + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *le = nl ? nl : end;
                const char *v;
                size_t llen = (size_t)(le - p);
                if (line_has_key(p, llen, "Uid:", &v)) {
                        /* "Uid:\treal\teffective\tsaved\tfs": the first number is the real uid */
                        const char *c = v;
                        while (c < le && (*c == ' ' || *c == '\t'))
                                c++;
                        const char *s = c;
                        while (c < le && *c >= '0' && *c <= '9')
                                c++;
                        int64_t x;
                        if (c > s && field_to_i64(s, (size_t)(c - s), &x) == 0 && x <= UINT32_MAX) {
                                st.uid = (uid_t)x;
                                st.has_uid = true;
                        }
                } else if (line_has_key(p, llen, "SigIgn:", &v)) {
                        const char *c = v;
                        while (c < le && (*c == ' ' || *c == '\t'))
                                c++;
                        uint64_t mask = 0;
                        unsigned digits = 0;
                        for (; c < le && hex_digit(*c) <= 15 && digits < 16; c++, digits++)
                                mask = mask << 4 | hex_digit(*c);
                        if (digits > 0) {
                                st.sig_ignored = mask;
                                st.has_sig_ignored = true;
                        }
                } else if (line_has_key(p, llen, "NSpid:", &v)) {
                        const char *c = v;
                        while (c < le && st.n_nspid < GR_NSPID_MAX) {
                                while (c < le && (*c == ' ' || *c == '\t'))
                                        c++;
                                const char *s = c;
                                while (c < le && *c >= '0' && *c <= '9')
                                        c++;
                                if (c == s)
                                        break;
                                int64_t x;
                                if (field_to_i64(s, (size_t)(c - s), &x) < 0 || x <= 0 || x > INT32_MAX)
                                        break;
                                st.nspid[st.n_nspid++] = (pid_t)x;
                        }
                }
                if (!nl)
                        break;
                p = nl + 1;
        }
        *ret = st;
        return 0;
}

int gr_parse_cgroup(const char *buf, size_t len, char *ret, size_t size)
{
        const char *p = buf, *end = buf + len;
        const char *first = NULL, *first_end = NULL;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *le = nl ? nl : end;
                /* hierarchy-ID:controllers:path; the path itself may hold ':' */
                const char *c1 = memchr(p, ':', (size_t)(le - p));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
                if (c2) {
                        if (c1 - p == 1 && p[0] == '0' && c2 == c1 + 1) {
                                first = c2 + 1;
                                first_end = le;
                                break;
                        }
                        if (!first) {
                                first = c2 + 1;
                                first_end = le;
                        }
                }
                if (!nl)
                        break;
                p = nl + 1;
        }
        if (!first || size == 0)
                return -ENOENT;
        size_t n = (size_t)(first_end - first);
        if (n >= size)
                n = size - 1;
        memcpy(ret, first, n);
        ret[n] = '\0';
        gr_text_sanitize(ret); /* a container's own cgroup names are chosen inside it */
        return 0;
}

void gr_render_cmdline(const char *buf, size_t len, char *ret, size_t size)
{
        if (size == 0)
                return;
        while (len > 0 && buf[len - 1] == '\0')
                len--;
        size_t o = 0;
        for (size_t i = 0; i < len && o + 1 < size; i++) {
                unsigned char c = (unsigned char)buf[i];
                ret[o++] = c == '\0' ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        }
        ret[o] = '\0';
        gr_text_sanitize(ret); /* C1 controls and bytes that are not UTF-8 (argv is anything) */
}

gr_dev_kind gr_classify_device_path(const char *devdir, size_t devdir_len, const char *path,
                                    unsigned *ret_minor)
{
        if (strncmp(path, devdir, devdir_len) != 0)
                return GR_DEV_NONE;
        const char *n = path + devdir_len;
        if (*n != '/')
                return GR_DEV_NONE;
        n++;
        if (strncmp(n, "nvidia", 6) != 0)
                return GR_DEV_NONE;
        const char *rest = n + 6;
        if (*rest >= '0' && *rest <= '9') {
                uint64_t minor = 0;
                const char *c = rest;
                for (; *c >= '0' && *c <= '9' && minor < 1000000; c++)
                        minor = minor * 10 + (unsigned)(*c - '0');
                /* "nvidia0" exactly; a deleted file shows as "nvidia0 (deleted)": not a device */
                if (*c != '\0' || minor >= 1000000)
                        return GR_DEV_OTHER;
                if (ret_minor)
                        *ret_minor = (unsigned)minor;
                return GR_DEV_GPU;
        }
        if (strcmp(rest, "ctl") == 0)
                return GR_DEV_CTL;
        if (strcmp(rest, "-uvm") == 0 || strcmp(rest, "-uvm-tools") == 0)
                return GR_DEV_UVM;
        if (strncmp(rest, "-caps/", 6) == 0 || strncmp(rest, "-cap", 4) == 0)
                return GR_DEV_CAPS;
        return GR_DEV_OTHER;
}

bool gr_maps_line_is_nvidia(const char *line, size_t len, const char *devdir, size_t devdir_len)
{
        /* address, perms, offset, dev and inode hold no '/': the path starts at the first one */
        const char *s = memchr(line, '/', len);
        if (!s)
                return false;
        size_t rest = len - (size_t)(s - line);
        if (rest < devdir_len + 7 || memcmp(s, devdir, devdir_len) != 0)
                return false;
        return memcmp(s + devdir_len, "/nvidia", 7) == 0;
}

static bool is_hex(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* the 64 hex digits of the container a cgroup path names, or NULL */
static const char *container_id_at(const char *cgroup)
{
        /* the last component that is, or ends in, a container runtime's id (64 hex digits, the
         * sha256 that docker, containerd, CRI-O and podman give): ".../docker-<id>.scope",
         * ".../cri-containerd-<id>.scope", ".../crio-<id>.scope", "/docker/<id>", ".../<id>".
         * Shorter hex names are not taken: a service manager's own (a job runner's 32-digit
         * "/process_api/<id>") would make every process of the host "in a container" */
        const char *best = NULL;
        const char *p = cgroup;
        while (*p) {
                const char *e = strchr(p, '/');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                size_t k = n;
                if (k > 6 && memcmp(p + k - 6, ".scope", 6) == 0)
                        k -= 6;
                size_t run = 0;
                while (run < k && is_hex(p[k - 1 - run]))
                        run++;
                if (run == 64 && (run == k || p[k - 1 - run] == '-'))
                        best = p + k - run;
                if (!e)
                        break;
                p = e + 1;
        }
        return best;
}

int gr_cgroup_container_id(const char *cgroup, char *ret, size_t size)
{
        const char *id = container_id_at(cgroup);
        if (!id || size < 13)
                return -ENOENT;
        memcpy(ret, id, 12);
        ret[12] = '\0';
        return 0;
}

int gr_cgroup_container_full_id(const char *cgroup, char *ret, size_t size)
{
        const char *id = container_id_at(cgroup);
        if (!id || size < 65)
                return -ENOENT;
        memcpy(ret, id, 64);
        ret[64] = '\0';
        return 0;
}

int gr_cgroup_slurm_job(const char *cgroup, char *ret, size_t size)
{
        const char *j = strstr(cgroup, "/job_");
        if (!j)
                return -ENOENT;
        j += 5;
        size_t n = 0;
        while (j[n] >= '0' && j[n] <= '9')
                n++;
        if (n == 0 || n >= size || (j[n] != '\0' && j[n] != '/'))
                return -ENOENT;
        memcpy(ret, j, n);
        ret[n] = '\0';
        return 0;
}

bool gr_parse_tcp_socket(const char *line, size_t len, unsigned *ret_state, unsigned *ret_port,
                         uint64_t *ret_inode)
{
        const char *p = line, *end = line + len;
        size_t flen;
        const char *f[10];
        size_t fl[10];
        for (int i = 0; i < 10; i++) {
                f[i] = next_field(&p, end, &flen);
                if (!f[i])
                        return false;
                fl[i] = flen;
        }
        /* f[1] local address "IP:PORT" in hex, f[3] state, f[9] inode */
        if (fl[3] != 2 || hex_digit(f[3][0]) > 15 || hex_digit(f[3][1]) > 15)
                return false;
        const char *colon = memchr(f[1], ':', fl[1]);
        if (!colon || (size_t)(f[1] + fl[1] - colon - 1) != 4)
                return false;
        unsigned port = 0;
        for (const char *c = colon + 1; c < f[1] + fl[1]; c++) {
                unsigned v = hex_digit(*c);
                if (v > 15)
                        return false;
                port = port * 16 + v;
        }
        int64_t inode;
        if (field_to_i64(f[9], fl[9], &inode) < 0 || inode <= 0)
                return false;
        *ret_state = hex_digit(f[3][0]) * 16 + hex_digit(f[3][1]);
        *ret_port = port;
        *ret_inode = (uint64_t)inode;
        return true;
}

bool gr_parse_tcp_listen(const char *line, size_t len, unsigned *ret_port, uint64_t *ret_inode)
{
        unsigned state, port;
        uint64_t inode;
        if (!gr_parse_tcp_socket(line, len, &state, &port, &inode) || state != GR_TCP_LISTEN)
                return false;
        *ret_port = port;
        *ret_inode = inode;
        return true;
}

pid_t gr_parse_environ_run_pid(const char *buf, size_t len)
{
        static const char key[] = "GPUREAP_RUN_PID=";
        const char *p = buf, *end = buf + len;
        while (p < end) {
                const char *z = memchr(p, '\0', (size_t)(end - p));
                if (!z)
                        break; /* cut by a truncated read: "=12345" may have been "=123456" */
                const char *e = z;
                if ((size_t)(e - p) > sizeof(key) - 1 && memcmp(p, key, sizeof(key) - 1) == 0) {
                        int64_t v;
                        const char *num = p + sizeof(key) - 1;
                        if (field_to_i64(num, (size_t)(e - num), &v) == 0 && v > 0 && v <= GR_PROC_PID_MAX)
                                return (pid_t)v;
                        return 0;
                }
                p = e + 1;
        }
        return 0;
}

/* value of KEY=VALUE if the NUL-terminated string [p, e) starts with key, else NULL */
static const char *env_value(const char *p, const char *e, const char *key, size_t *ret_len)
{
        size_t k = strlen(key);
        if ((size_t)(e - p) <= k || memcmp(p, key, k) != 0 || p[k] != '=')
                return NULL;
        *ret_len = (size_t)(e - p) - k - 1;
        return p + k + 1;
}

static void env_copy(const char *v, size_t n, char *dst, size_t size)
{
        /* only printable ASCII is kept: these are ids, never prose */
        size_t o = 0;
        for (size_t i = 0; i < n && o + 1 < size; i++)
                dst[o++] = v[i] > 0x20 && v[i] < 0x7f ? v[i] : '?';
        dst[o] = '\0';
}

static int env_int(const char *v, size_t n)
{
        int64_t x;
        return field_to_i64(v, n, &x) == 0 && x >= 0 && x < INT32_MAX ? (int)x : -1;
}

int gr_parse_run_ref(const char *s, size_t n, pid_t *ret_pid, uint64_t *ret_start)
{
        const char *at = memchr(s, '@', n);
        int64_t pid, start;
        if (!at || field_to_i64(s, (size_t)(at - s), &pid) < 0 || pid <= 0 || pid > GR_PROC_PID_MAX ||
            field_to_i64(at + 1, n - (size_t)(at + 1 - s), &start) < 0 || start <= 0)
                return -EINVAL;
        *ret_pid = (pid_t)pid;
        *ret_start = (uint64_t)start;
        return 0;
}

void gr_parse_environ_marks(const char *buf, size_t len, gr_env_marks *ret)
{
        gr_env_marks m = { .local_rank = -1, .rank = -1, .group_rank = -1 };
        pid_t ref_pid = 0;
        uint64_t ref_start = 0;
        const char *p = buf, *end = buf + len;
        while (p < end) {
                const char *z = memchr(p, '\0', (size_t)(end - p));
                /* an entry without its NUL was cut by a truncated read (an environment longer
                 * than the buffer): SLURM_JOB_ID=1234 read as 12, GPUREAP_RUN_PID=12345 as 1234
                 * would name another job or a dead supervisor. Not read at all */
                if (!z)
                        break;
                const char *e = z;
                const char *v;
                size_t n;
                int64_t x;
                if ((v = env_value(p, e, "GPUREAP_RUN_PID", &n))) {
                        if (field_to_i64(v, n, &x) == 0 && x > 0 && x <= GR_PROC_PID_MAX)
                                m.run_pid = (pid_t)x;
                } else if ((v = env_value(p, e, "GPUREAP_RUN_REF", &n))) {
                        (void)gr_parse_run_ref(v, n, &ref_pid, &ref_start); /* untouched when malformed */
                } else if ((v = env_value(p, e, "TORCHELASTIC_RUN_ID", &n))) {
                        env_copy(v, n, m.torchelastic_run_id, sizeof(m.torchelastic_run_id));
                        if (!m.torchelastic_run_id[0]) /* set but empty: still a marker */
                                gr_strlcpy(m.torchelastic_run_id, "?", sizeof(m.torchelastic_run_id));
                } else if ((v = env_value(p, e, "LOCAL_RANK", &n))) {
                        m.local_rank = env_int(v, n);
                } else if ((v = env_value(p, e, "RANK", &n))) {
                        m.rank = env_int(v, n);
                } else if ((v = env_value(p, e, "GROUP_RANK", &n))) {
                        m.group_rank = env_int(v, n);
                } else if ((v = env_value(p, e, "SLURM_JOB_ID", &n))) {
                        env_copy(v, n, m.slurm_job_id, sizeof(m.slurm_job_id));
                }
                p = e + 1;
        }
        /* the start time is the run's whose number is in GPUREAP_RUN_PID: a run of an older
         * gpureap started inside sets GPUREAP_RUN_PID alone, and the outer run's REF it
         * inherited names another process */
        if (ref_pid && ref_pid == m.run_pid)
                m.run_start = ref_start;
        *ret = m;
}

GR_NAME_TABLE(gr_cgroup_kind_name, gr_cgroup_kind, GR_CG_RUN, "none",
              [GR_CG_NONE] = "none", [GR_CG_SERVICE] = "systemd_service", [GR_CG_SLURM] = "slurm_job", [GR_CG_POD] = "kubernetes_pod", [GR_CG_CONTAINER] = "container", [GR_CG_SESSION] = "session", [GR_CG_RUN] = "gpureap_run")

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
        size_t k = strlen(suffix);
        return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
        size_t k = strlen(prefix);
        return n >= k && memcmp(s, prefix, k) == 0;
}

static void name_copy(const char *s, size_t n, char *ret, size_t size)
{
        if (size == 0)
                return;
        if (n >= size)
                n = size - 1;
        memcpy(ret, s, n);
        ret[n] = '\0';
}

/* A pod's UID in one path component: "kubepods-besteffort-pod<uid>.slice" (systemd driver,
 * '-' written as '_') or "pod<uid>" (cgroupfs driver) */
static bool pod_uid(const char *c, size_t n, char *ret, size_t size)
{
        const char *k = NULL;
        for (size_t i = 0; i + 3 <= n; i++)
                if (memcmp(c + i, "pod", 3) == 0 && (i == 0 || c[i - 1] == '-')) {
                        k = c + i + 3;
                        break;
                }
        if (!k)
                return false;
        size_t m = (size_t)(c + n - k);
        if (has_suffix(k, m, ".slice"))
                m -= 6;
        if (m < 8)
                return false;
        for (size_t i = 0; i < m; i++)
                if (!is_hex(k[i]) && k[i] != '-' && k[i] != '_')
                        return false;
        name_copy(k, m, ret, size);
        for (char *x = ret; *x; x++)
                if (*x == '_')
                        *x = '-';
        return true;
}

gr_cgroup_kind gr_cgroup_manager(const char *cgroup, char *ret_name, size_t size)
{
        gr_cgroup_kind kind = GR_CG_NONE;
        char name[128] = "";
        bool in_kubepods = false;
        const char *p = cgroup;
        /* components from the top: the innermost manager that is not a session wins, except
         * that a pod wins over the container scopes inside it */
        while (p && *p) {
                while (*p == '/')
                        p++;
                const char *e = strchr(p, '/');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                if (n == 0)
                        break;
                char tmp[128];
                if (has_prefix(p, n, "kubepods"))
                        in_kubepods = true;
                if (in_kubepods && kind != GR_CG_POD && pod_uid(p, n, tmp, sizeof(tmp))) {
                        kind = GR_CG_POD;
                        gr_strlcpy(name, tmp, sizeof(name));
                } else if (has_prefix(p, n, "gpureap-run-")) {
                        /* gpureap-run-N-RANDOM (gpureap-run-N before): N, the run's number */
                        size_t d = 12;
                        while (d < n && p[d] >= '0' && p[d] <= '9')
                                d++;
                        kind = GR_CG_RUN;
                        name_copy(p + 12, d - 12, name, sizeof(name));
                } else if (has_prefix(p, n, "job_") && n > 4 && kind != GR_CG_POD) {
                        size_t d = 4;
                        while (d < n && p[d] >= '0' && p[d] <= '9')
                                d++;
                        if (d == n) {
                                kind = GR_CG_SLURM;
                                name_copy(p + 4, n - 4, name, sizeof(name));
                        }
                } else if (has_suffix(p, n, ".service") && !has_prefix(p, n, "user@") &&
                           kind != GR_CG_POD && kind != GR_CG_SLURM) {
                        kind = GR_CG_SERVICE;
                        name_copy(p, n, name, sizeof(name));
                } else if (has_prefix(p, n, "session-") && has_suffix(p, n, ".scope") && kind == GR_CG_NONE) {
                        kind = GR_CG_SESSION;
                        name_copy(p, n, name, sizeof(name));
                }
                if (!e)
                        break;
                p = e;
        }
        if (kind != GR_CG_POD && gr_cgroup_container_id(cgroup, name, sizeof(name)) == 0)
                kind = GR_CG_CONTAINER;
        if (kind == GR_CG_CONTAINER && in_kubepods)
                kind = GR_CG_POD; /* a pod whose UID component was not recognised */
        if (ret_name && size > 0)
                gr_strlcpy(ret_name, kind == GR_CG_NONE ? "" : name, size);
        return kind;
}

static const char *const init_names[] = { "systemd", "init", "tini", "docker-init", "dumb-init",
                                          "catatonit", "s6-svscan", "runit", "runsvdir", "gpureap",
                                          "pause" /* Kubernetes' pod sandbox, PID 1 of a shared namespace */ };

bool gr_proc_comm_is_init(const char *comm)
{
        for (size_t i = 0; i < GR_ELEMENTSOF(init_names); i++)
                if (strcmp(comm, init_names[i]) == 0)
                        return true;
        return strncmp(comm, "containerd-shim", 15) == 0 || strcmp(comm, "conmon") == 0;
}

bool gr_proc_comm_is_shim(const char *comm)
{
        static const char *const shims[] = { "tini", "docker-init", "dumb-init", "catatonit", "gpureap" };
        for (size_t i = 0; i < GR_ELEMENTSOF(shims); i++)
                if (strcmp(comm, shims[i]) == 0)
                        return true;
        return false;
}

bool gr_proc_is_init_program(const char *comm, gr_exe_state exe_state, const char *exe)
{
        if (!gr_proc_comm_is_init(comm))
                return false;
        if (exe_state == GR_EXE_UNKNOWN)
                return true;
        if (exe_state != GR_EXE_READ)
                return false;
        /* its executable is one of theirs (/sbin/init is systemd's, a busybox's; tini ships
         * as tini-static too; gpureap-run is gpureap run linked static, and names itself
         * gpureap); a build's gpureap under test keeps its name */
        if (gr_proc_comm_is_init(exe) || strncmp(exe, "tini", 4) == 0 || strncmp(exe, "dumb-init", 9) == 0 ||
            (strcmp(comm, "gpureap") == 0 && strcmp(exe, "gpureap-run") == 0))
                return true;
        return strcmp(comm, "init") == 0 && strcmp(exe, "busybox") == 0;
}
