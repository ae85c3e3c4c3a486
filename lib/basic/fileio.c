#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"

static int map_vanished(int err)
{
        /* a process that exits between readdir and open shows up as ENOENT or ESRCH */
        return err == ENOENT ? -ESRCH : -err;
}

/* Open name for reading only if it is a regular file. O_NONBLOCK makes the open of a FIFO
 * return at once instead of waiting for a writer; on the regular files we then read it changes
 * nothing (the /proc files and plain files we read do not honour it). */
static int open_regular_at(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return map_vanished(errno);
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = map_vanished(errno);
                close(fd);
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        return fd;
}

int gr_read_file_at(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len)
{
        if (size < 2)
                return -EINVAL;
        int fd = open_regular_at(dirfd, name);
        if (fd < 0)
                return fd;

        size_t len = 0;
        char extra;
        int r = 0;
        for (;;) {
                /* ask for one byte more than fits, so a full buffer means truncation */
                ssize_t n;
                if (len < size - 1)
                        n = read(fd, buf + len, size - 1 - len);
                else
                        n = read(fd, &extra, 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = map_vanished(errno);
                        break;
                }
                if (n == 0)
                        break;
                if (len >= size - 1) {
                        r = -EFBIG;
                        break;
                }
                len += (size_t)n;
        }
        close(fd);
        if (r < 0 && r != -EFBIG)
                return r;
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return r;
}

int gr_read_lines_at(int dirfd, const char *name, gr_line_cb cb, void *userdata)
{
        int fd = open_regular_at(dirfd, name);
        if (fd < 0)
                return fd;

        char buf[16384];
        size_t have = 0;    /* bytes of a partial line kept at the start of buf */
        bool skipping = false; /* the current line was longer than buf: its rest is dropped */
        int r = 0;
        for (;;) {
                ssize_t n = read(fd, buf + have, sizeof(buf) - have);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = map_vanished(errno);
                        break;
                }
                if (n == 0) {
                        if (have > 0 && !skipping)
                                r = cb(buf, have, userdata);
                        break;
                }
                size_t end = have + (size_t)n, start = 0;
                for (;;) {
                        char *nl = memchr(buf + start, '\n', end - start);
                        if (!nl)
                                break;
                        size_t llen = (size_t)(nl - (buf + start));
                        if (!skipping) {
                                r = cb(buf + start, llen, userdata);
                                if (r != 0)
                                        goto done;
                        }
                        skipping = false;
                        start += llen + 1;
                }
                have = end - start;
                if (have == sizeof(buf)) {
                        /* a line longer than the buffer: hand over its prefix once, drop the rest */
                        if (!skipping) {
                                r = cb(buf, have, userdata);
                                if (r != 0)
                                        goto done;
                        }
                        skipping = true;
                        have = 0;
                } else if (start > 0 && have > 0) {
                        memmove(buf, buf + start, have);
                }
        }
done:
        close(fd);
        return r < 0 ? r : 0;
}
