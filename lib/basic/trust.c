/* Opening a path that the environment named, as a process that will load, run or trust what
 * it finds there. A check of the path by name (stat) and a later use by name race with anyone
 * who can change a directory on the way: a symbolic link flipped between the two made root
 * load another user's library. So the path is walked here one component at a time without
 * following anything (O_PATH | O_NOFOLLOW), each directory and link checked as it is reached,
 * links followed by hand only once their own directory is known to be safe, and the file that
 * was checked is the one handed back. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"

#define TRUST_LINKS_MAX 40 /* the kernel's own bound on links in one lookup */

__attribute__((format(printf, 3, 4)))
static int refuse(char *why, size_t size, const char *fmt, ...)
{
        if (why && size) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(why, size, fmt, ap);
                va_end(ap);
        }
        return -EPERM;
}

static bool owner_ok(const struct stat *st, uid_t uid)
{
        return st->st_uid == 0 || st->st_uid == uid;
}

/* A directory nobody but root or uid can change what it names: owned by one of them, and not
 * writable by others, or sticky (/tmp: each entry then belongs to its owner, checked in turn) */
static int check_dir(const struct stat *st, uid_t uid, const char *shown, char *why, size_t size)
{
        if (!owner_ok(st, uid))
                return refuse(why, size, "the directory '%s' belongs to user %u", shown, (unsigned)st->st_uid);
        if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
                return refuse(why, size, "others may write the directory '%s'", shown);
        return 0;
}

int gr_open_trusted(const char *path, int flags, uid_t uid, char *why, size_t why_size)
{
        if (why && why_size)
                why[0] = '\0';
        if (!path || path[0] != '/')
                return refuse(why, why_size, "not an absolute path");
        char rest[4096]; /* what is left to walk */
        if (!gr_strlcpy(rest, path, sizeof(rest)))
                return -ENAMETOOLONG;
        char shown[4096] = ""; /* the directories walked so far, for the messages */
        int dir = -1, links = 0;
        size_t pos = 0;
        for (;;) {
                if (rest[pos] == '/') { /* from the root again (the start, an absolute link) */
                        if (dir >= 0)
                                close(dir);
                        dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (dir < 0)
                                return -errno;
                        struct stat st;
                        int r = fstat(dir, &st) < 0 ? -errno : check_dir(&st, uid, "/", why, why_size);
                        if (r < 0) {
                                close(dir);
                                return r;
                        }
                        shown[0] = '\0';
                        while (rest[pos] == '/')
                                pos++;
                }
                size_t len = strcspn(rest + pos, "/");
                if (len == 0) { /* a trailing slash: what was reached is the answer */
                        int fd = openat(dir, ".", (flags & ~O_CREAT) | O_CLOEXEC);
                        int r = fd < 0 ? -errno : fd;
                        close(dir);
                        return r;
                }
                char name[256];
                if (len >= sizeof(name)) {
                        close(dir);
                        return -ENAMETOOLONG;
                }
                memcpy(name, rest + pos, len);
                name[len] = '\0';
                pos += len;
                while (rest[pos] == '/')
                        pos++;
                bool last = rest[pos] == '\0';
                if (strcmp(name, ".") == 0 && !last)
                        continue;
                size_t sl = strlen(shown);
                snprintf(shown + sl, sizeof(shown) - sl, "/%s", name);
                int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        int r = -errno;
                        close(dir);
                        return r; /* -ENOENT: missing from a directory nobody else can change */
                }
                struct stat st;
                if (fstat(fd, &st) < 0) {
                        int r = -errno;
                        close(fd);
                        close(dir);
                        return r;
                }
                if (S_ISLNK(st.st_mode)) {
                        char target[4096];
                        ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
                        close(fd);
                        int r = n < 0 ? -errno : !owner_ok(&st, uid)
                                ? refuse(why, why_size, "the link '%s' belongs to user %u", shown, (unsigned)st.st_uid)
                                : ++links > TRUST_LINKS_MAX ? -ELOOP : n == 0 ? -EINVAL : 0;
                        if (r < 0) {
                                close(dir);
                                return r;
                        }
                        target[n] = '\0';
                        /* the link's text, then what was left after it */
                        char next[4096];
                        if ((size_t)snprintf(next, sizeof(next), "%s%s%s", target, last ? "" : "/", rest + pos) >= sizeof(next)) {
                                close(dir);
                                return -ENAMETOOLONG;
                        }
                        memcpy(rest, next, strlen(next) + 1);
                        pos = 0;
                        /* a relative link goes on from the directory that holds it */
                        sl = strlen(shown);
                        while (sl > 0 && shown[sl - 1] != '/')
                                sl--;
                        shown[sl > 0 ? sl - 1 : 0] = '\0';
                        continue;
                }
                close(dir);
                dir = -1;
                if (!last) {
                        int r = !S_ISDIR(st.st_mode) ? -ENOTDIR : check_dir(&st, uid, shown, why, why_size);
                        if (r < 0) {
                                close(fd);
                                return r;
                        }
                        dir = fd;
                        continue;
                }
                int r = 0;
                if (S_ISDIR(st.st_mode))
                        r = check_dir(&st, uid, shown, why, why_size);
                else if (!owner_ok(&st, uid))
                        r = refuse(why, why_size, "'%s' belongs to user %u", shown, (unsigned)st.st_uid);
                else if (st.st_mode & (S_IWGRP | S_IWOTH))
                        r = refuse(why, why_size, "others may write '%s'", shown);
                if (r < 0 || (flags & O_PATH)) {
                        if (r < 0)
                                close(fd);
                        return r < 0 ? r : fd;
                }
                /* the file checked, opened for use: through its O_PATH descriptor, so that it
                 * is that very file */
                char self[64];
                snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
                int ufd = open(self, (flags & ~(O_CREAT | O_NOFOLLOW)) | O_CLOEXEC);
                r = ufd < 0 ? -errno : 0;
                struct stat ust;
                if (r == 0 && (fstat(ufd, &ust) < 0 || ust.st_dev != st.st_dev || ust.st_ino != st.st_ino))
                        r = -ESTALE;
                close(fd);
                if (r < 0) {
                        if (ufd >= 0)
                                close(ufd);
                        return r;
                }
                return ufd;
        }
}
