/* The client side of 'gpureap serve' (docs/serve.md): fetch the served snapshot over its Unix
 * socket, bounded in time and size, from a server that runs as root (or as ourselves). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpureap.h"
#include "gpureap/basic.h"

const char *serve_socket_path(const char *given)
{
        if (given && *given)
                return given;
        const char *e = getenv("GPUREAP_SERVE_SOCKET");
        return e && *e ? e : SERVE_SOCKET_DEFAULT;
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
        for (;;) {
                uint64_t now = gr_now_ms();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = events };
                int n = poll(&p, 1, (int)(deadline - now));
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

int serve_fetch(const char *path, const char *request, uint64_t timeout_ms, char **ret, size_t *ret_len)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        uint64_t deadline = gr_now_ms() + timeout_ms;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        int r = 0;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
                if (r == -EAGAIN || r == -EINPROGRESS) /* its backlog is full: wait a little */
                        r = wait_fd(fd, POLLOUT, deadline);
        }
        /* only a server run by root or by ourselves is believed: another user could not bind
         * the default path, but GPUREAP_SERVE_SOCKET may name anything */
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
                r = -errno;
        if (r == 0 && cred.uid != 0 && cred.uid != getuid())
                r = -EPERM;
        size_t rl = strlen(request);
        if (r == 0 && send(fd, request, rl, MSG_NOSIGNAL) != (ssize_t)rl)
                r = -EIO;
        char *buf = NULL;
        size_t len = 0, cap = 0;
        while (r == 0) {
                /* 64 KiB first: below malloc's mmap threshold (128 KiB), so no mmap, munmap
                 * and fresh zeroed pages for an answer of ~20 KB; grows as before */
                if (cap - len < 16384) {
                        size_t nc = cap ? cap * 2 : 65536;
                        if (nc > REPLAY_MAX_BYTES + 1) {
                                r = -EFBIG;
                                break;
                        }
                        char *b = realloc(buf, nc);
                        if (!b) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = b;
                        cap = nc;
                }
                ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
                if (n > 0) {
                        len += (size_t)n;
                        continue;
                }
                if (n == 0)
                        break;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                        r = -errno;
                        break;
                }
                r = wait_fd(fd, POLLIN, deadline);
        }
        close(fd);
        if (r == 0 && len == 0)
                r = -EPROTO;
        if (r < 0) {
                free(buf);
                return r;
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

void serve_merge_history(gr_snapshot *fresh, const gr_snapshot *served)
{
        if (!fresh->procs || !served->procs || !served->history_since_ms)
                return;
        for (size_t i = 0; i < fresh->procs->n; i++) {
                gr_process *p = &fresh->procs->procs[i];
                const gr_process *q = gr_proc_table_find(served->procs, p->pid);
                if (!p->hold || !q || !q->seen || q->start_time != p->start_time || p->seen)
                        continue;
                gr_seen *h = malloc(sizeof(*h));
                if (!h)
                        return;
                *h = *q->seen;
                if (h->launcher > 0 && h->end == GR_END_ALIVE) {
                        const gr_process *l = gr_proc_table_find(fresh->procs, h->launcher);
                        if (!l || l->start_time != h->launcher_start || l->state == 'Z' || l->state == 'X') {
                                h->end = GR_END_UNKNOWN; /* ended after serve's last look */
                                h->end_ms = fresh->taken_at_ms;
                        }
                }
                p->seen = h;
        }
        fresh->history_since_ms = served->history_since_ms;
        fresh->history_events = served->history_events;
        fresh->history_events_lost = served->history_events_lost;
        fresh->served_by = served->served_by;
}

static bool serve_json_only, serve_structs_only;

void serve_wire_set(const char *how)
{
        serve_json_only = how && strcmp(how, "0") == 0;
        serve_structs_only = how && strcmp(how, "structs") == 0;
}

bool serve_rendered_wanted(void)
{
        return !serve_json_only && !serve_structs_only;
}

gr_snapshot *serve_fetch_fresh(void)
{
        char *buf = NULL, err[256], req[128] = "status\n";
        size_t len = 0;
        /* the structs where serve is this very build, which it decides; JSON otherwise */
        if (!serve_json_only && wire_build_id()[0])
                snprintf(req, sizeof(req), "status-wire %s\n", wire_build_id());
        if (serve_fetch(serve_socket_path(NULL), req, 500, &buf, &len) < 0)
                return NULL;
        gr_snapshot *s = NULL;
        int r = len >= sizeof(WIRE_MAGIC) - 1 && memcmp(buf, WIRE_MAGIC, sizeof(WIRE_MAGIC) - 1) == 0
                        ? snapshot_from_wire(buf, len, &s)
                        : snapshot_from_json_buffer(buf, len, "gpureap serve", &s, err, sizeof(err));
        free(buf);
        if (r < 0)
                return NULL;
        uint64_t now = gr_wall_ms();
        if (!s->served_by || !s->history_since_ms || s->taken_at_ms + 5000 < now || s->taken_at_ms > now + 5000) {
                gr_snapshot_free(s);
                return NULL;
        }
        return s;
}

bool serve_history_into(gr_snapshot *s)
{
        gr_snapshot *served = serve_fetch_fresh();
        if (served)
                serve_merge_history(s, served);
        gr_snapshot_free(served);
        return served != NULL;
}
