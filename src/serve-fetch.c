/* Fetch an answer from 'gpureap serve' over its Unix socket (docs/serve.md), bounded in time and
 * size, from a server that runs as root (or as ourselves). Shared by gpureap and the served
 * status client (gpureap-status, src/status-fast.c), which links nothing else of gpureap. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
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

int serve_fetch_report(const char *build_id, bool json, bool color, bool why, bool wide, char **ret_buf,
                       const char **ret_report, size_t *ret_len)
{
        char req[192];
        snprintf(req, sizeof(req), "status-out %s %c%c%c %d %u\n", build_id, json ? 'j' : 't',
                 !json && color ? 'c' : '-', !json && why ? 'v' : '-', json || wide ? 0 : terminal_width(STDOUT_FILENO),
                 (unsigned)getuid());
        char *buf = NULL;
        size_t len = 0;
        int r = serve_fetch(serve_socket_path(NULL), req, 500, &buf, &len);
        if (r < 0)
                return r;
        /* "ok CODE LENGTH\n" and exactly LENGTH bytes: an answer cut short (serve closes a
         * client that has not read it all in 2 s) is not taken */
        char *nl = memchr(buf, '\n', len);
        unsigned c;
        unsigned long long n;
        char tail;
        if (!nl || sscanf(buf, "ok %u %llu%c", &c, &n, &tail) != 3 || tail != '\n' || c > 9 ||
            n != len - (size_t)(nl + 1 - buf)) {
                free(buf);
                return -EPROTO; /* "no", or not a whole answer */
        }
        *ret_buf = buf;
        *ret_report = nl + 1;
        *ret_len = (size_t)n;
        return (int)c;
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

bool serve_structs_wanted(void)
{
        return !serve_json_only;
}
