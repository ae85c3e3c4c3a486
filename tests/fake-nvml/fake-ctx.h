/* The fake driver's model of a CUDA context, shared by the fake NVML and the test helper.
 *
 * A context is a token file "ctx-<n>" in the context directory. Its creator opens it and takes an
 * open-file-description (OFD) lock on it and keeps the fd open without O_CLOEXEC. Like the real
 * driver's open file on /dev/nvidia*, the fd and with it the lock are inherited by forks and
 * released only when the last process holding that open file closes it or dies: exactly when the
 * real driver frees a context's memory. The fake NVML lists the creator's (host) PID while the
 * lock is held, also after the creator died (the ghost), and for teardown_ms after it noticed the
 * release (memory being torn down). */
#ifndef FAKE_CTX_H
#define FAKE_CTX_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Is the context's open file still held by anyone? (-1 when the token cannot be read) */
static inline int fake_ctx_held(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -1;
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        int r = fcntl(fd, F_OFD_GETLK, &fl);
        close(fd);
        if (r < 0)
                return -1;
        return fl.l_type != F_UNLCK;
}

/* Parse "pid=<pid> gpu=<index> mib=<mib>" */
static inline bool fake_ctx_parse(const char *buf, unsigned *pid, unsigned *gpu,
                                  unsigned long long *mib)
{
        return sscanf(buf, "pid=%u gpu=%u mib=%llu", pid, gpu, mib) == 3;
}

#endif
