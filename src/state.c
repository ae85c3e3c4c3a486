/* The little gpureap keeps between runs: the last reap's result, for the metrics. One directory:
 * $GPUREAP_STATE_DIR, /run/gpureap for root, $XDG_RUNTIME_DIR/gpureap for a user. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

int state_file_path(const char *name, char *buf, size_t size)
{
        const char *dir = getenv("GPUREAP_STATE_DIR");
        char tmp[4096];
        if (!dir || !*dir) {
                const char *xdg = getenv("XDG_RUNTIME_DIR");
                if (geteuid() == 0)
                        dir = "/run/gpureap";
                else if (xdg && *xdg && snprintf(tmp, sizeof(tmp), "%s/gpureap", xdg) < (int)sizeof(tmp))
                        dir = tmp;
                else
                        return -ENOENT;
        }
        if (snprintf(buf, size, "%s/%s", dir, name) >= (int)size)
                return -ENAMETOOLONG;
        return 0;
}

int state_write(const char *name, const char *content)
{
        char path[4096], tmp[4200];
        int r = state_file_path(name, path, sizeof(path));
        if (r < 0)
                return r;
        char *slash = strrchr(path, '/');
        *slash = '\0';
        if (mkdir(path, geteuid() == 0 ? 0755 : 0700) < 0 && errno != EEXIST)
                return -errno;
        *slash = '/';
        snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        /* a full file system may take part of it: the rest then fails with the cause */
        r = 0;
        for (size_t len = strlen(content), o = 0; r == 0 && o < len;) {
                ssize_t w = write(fd, content + o, len - o);
                if (w < 0 && errno != EINTR)
                        r = -errno;
                else if (w == 0)
                        r = -EIO;
                else if (w > 0)
                        o += (size_t)w;
        }
        if (close(fd) < 0 && r == 0 && errno != EINTR)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

/* systemd's notification protocol (sd_notify(3)): one datagram to $NOTIFY_SOCKET, if set */
void sd_notify_send(const char *msg)
{
        const char *path = getenv("NOTIFY_SOCKET");
        if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
                return;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        memcpy(sa.sun_path, path, strlen(path));
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0';
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return;
        sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path)));
        close(fd);
}
