/* The little gpureap keeps between runs: the last reap's result, for the metrics. One directory:
 * $GPUREAP_STATE_DIR, /run/gpureap for root, $XDG_RUNTIME_DIR/gpureap for a user. What is kept
 * there is believed (serve's memory makes verdicts), so the directory must be one that only
 * root or this user can change (gr_open_trusted), and it is used through the descriptor that
 * was checked. */
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

static int state_dir_path(char *buf, size_t size)
{
        const char *dir = getenv("GPUREAP_STATE_DIR");
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        int n;
        if (dir && *dir)
                n = snprintf(buf, size, "%s", dir);
        else if (geteuid() == 0)
                n = snprintf(buf, size, "/run/gpureap");
        else if (xdg && *xdg)
                n = snprintf(buf, size, "%s/gpureap", xdg);
        else
                return -ENOENT;
        return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int state_file_path(const char *name, char *buf, size_t size)
{
        char dir[4096];
        int r = state_dir_path(dir, sizeof(dir));
        if (r < 0)
                return r;
        if (snprintf(buf, size, "%s/%s", dir, name) >= (int)size)
                return -ENAMETOOLONG;
        return 0;
}

/* The state directory, checked and opened (O_PATH), made first with create; -EPERM (the
 * message printed once) when someone else could change it */
static int state_dir_open(bool create)
{
        char dir[4096], why[256] = "";
        int r = state_dir_path(dir, sizeof(dir));
        if (r < 0)
                return r;
        int fd = gr_open_trusted(dir, O_PATH | O_DIRECTORY, geteuid(), why, sizeof(why));
        if (fd == -ENOENT && create) {
                if (mkdir(dir, geteuid() == 0 ? 0755 : 0700) < 0 && errno != EEXIST)
                        return -errno;
                fd = gr_open_trusted(dir, O_PATH | O_DIRECTORY, geteuid(), why, sizeof(why));
        }
        static bool said;
        if (fd == -EPERM && !said) {
                said = true;
                error_msg("not using the state directory '%s': %s", QUOTED(dir), why);
        }
        return fd;
}

FILE *state_fopen(const char *name)
{
        int dir = state_dir_open(false);
        if (dir < 0)
                return NULL;
        int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        close(dir);
        /* in a sticky directory another user may have put the file there: only ours counts */
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
                        (st.st_mode & (S_IWGRP | S_IWOTH)))) {
                close(fd);
                fd = -1;
        }
        FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
        if (!f && fd >= 0)
                close(fd);
        return f;
}

int state_write(const char *name, const char *content)
{
        char tmp[300];
        if (strchr(name, '/') || snprintf(tmp, sizeof(tmp), "%s.%d.tmp", name, (int)getpid()) >= (int)sizeof(tmp))
                return -EINVAL;
        _cleanup_close_ int dir = state_dir_open(true);
        if (dir < 0)
                return dir;
        int r;
        int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
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
        if (r == 0 && renameat(dir, tmp, dir, name) < 0)
                r = -errno;
        if (r < 0)
                unlinkat(dir, tmp, 0);
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
