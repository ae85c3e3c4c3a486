/* pidfd_open(2) (Linux 5.3) and pidfd_send_signal(2) (5.1) without relying on libc wrappers,
 * and the file-descriptor limit: a kill of hundreds of processes holds one pidfd each. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpureap/basic.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int gr_pidfd_open(pid_t pid)
{
        if (pid <= 0)
                return -EINVAL;
        long fd = syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : (int)fd;
}

int gr_pidfd_send_signal(int fd, int sig)
{
        return syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* PIDFD_SIGNAL_PROCESS_GROUP (Linux 6.9): the kernel takes the pidfd's pid for the group's ID
 * (kill_pgrp_info on the pidfd's struct pid), so the group reached is the one the process led,
 * even once it is reaped: the struct pid the pidfd holds is never another group's, whatever
 * process gets its number later. A pidfd of a process that leads no group reaches nobody
 * (-ESRCH). */
#define GR_PIDFD_SIGNAL_PROCESS_GROUP (1U << 2)

int gr_pidfd_signal_group(int fd, int sig)
{
        return syscall(SYS_pidfd_send_signal, fd, sig, NULL, GR_PIDFD_SIGNAL_PROCESS_GROUP) < 0 ? -errno : 0;
}

bool gr_pidfd_exited(int fd, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, timeout_ms) > 0;
}

int gr_raise_fd_limit(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_cur >= rl.rlim_max)
                return 0;
        rl.rlim_cur = rl.rlim_max;
        return setrlimit(RLIMIT_NOFILE, &rl) < 0 ? -errno : 0;
}

unsigned gr_fd_headroom(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return 1024;
        /* a few stay free for /proc reads, pipes and the helper */
        unsigned used = 0;
        DIR *d = opendir("/proc/self/fd");
        if (d) {
                while (readdir(d))
                        used++;
                closedir(d);
        }
        rlim_t cur = rl.rlim_cur > 1 << 20 ? 1 << 20 : rl.rlim_cur;
        return cur > used + 16 ? (unsigned)(cur - used - 16) : 0;
}
