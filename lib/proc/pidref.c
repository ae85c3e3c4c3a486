/* One process, named by PID and start time, reached through a pidfd. The pidfd is taken first
 * and only then is /proc checked to still show the planned process (start time, owner): from
 * then on the pidfd names that process and no other, whatever reuse of its PID follows; if it
 * had already died and its PID been reused, the check sees the newcomer's start time.
 *
 * Without a pidfd (kernels before 5.3, or no file descriptor left) every signal is sent with
 * kill() right after the same check: a window of microseconds in which the PID could be
 * recycled, the best that such a kernel allows. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"

int gr_proc_read_stat(const char *proc_root, pid_t pid, gr_stat *st)
{
        char name[4200], buf[1024];
        snprintf(name, sizeof(name), "%s/%d/stat", proc_root ? proc_root : gr_context_proc_root(NULL), (int)pid);
        int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        int e = errno;
        close(fd);
        if (n <= 0)
                return n < 0 ? (e == ENOENT ? -ESRCH : -e) : -ESRCH;
        if ((size_t)n == sizeof(buf) - 1)
                return -EFBIG; /* a stat line is a few hundred bytes: this is not one */
        buf[n] = '\0';
        return gr_parse_stat(buf, (size_t)n, st) < 0 ? -EINVAL : 0;
}

bool gr_proc_zombie_leader_alive(const char *proc_root, pid_t pid)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/%d/task", proc_root ? proc_root : gr_context_proc_root(NULL), (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return false;
        unsigned n = 0;
        struct dirent *de;
        while (n < 2 && (de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n >= 2;
}

bool gr_proc_zombie_threads_alive(const char *proc_root, pid_t pid, const gr_stat *st)
{
        /* num_threads counts the group's threads not yet released, as task/ lists them: the
         * zombie leader's own until it is reaped, a live thread's until it has exited. 1: the
         * leader is all that is left, known without opening task/; 0 (unknown: the stat line
         * of a process being released, a recorded tree) or more: task/ says */
        return st->n_threads != 1 && gr_proc_zombie_leader_alive(proc_root, pid);
}

/* A state that means the process has ended: Z or X, unless other threads of it still run */
static bool ended(const char *proc_root, pid_t pid, const gr_stat *st)
{
        return (st->state == 'Z' || st->state == 'X') && !gr_proc_zombie_threads_alive(proc_root, pid, st);
}

/* What /proc shows for pid now: its stat line (start time, state, threads) and owner. -ESRCH
 * when there is no such process */
static int look(const char *proc_root, pid_t pid, gr_stat *ret_st, uid_t *ret_uid, bool *ret_has_uid)
{
        if (!ret_uid)
                return gr_proc_read_stat(proc_root, pid, ret_st);
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%d", proc_root ? proc_root : gr_context_proc_root(NULL), (int)pid);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        char buf[8192];
        size_t len;
        gr_stat st;
        int r = gr_read_file_at(fd, "stat", buf, sizeof(buf), &len);
        if (r == 0 && gr_parse_stat(buf, len, &st) < 0)
                r = -EINVAL;
        if (r == 0 && ret_uid) {
                gr_status ss;
                int q = gr_read_file_at(fd, "status", buf, sizeof(buf), &len);
                if (q < 0 && q != -EFBIG)
                        r = q;
                else if (gr_parse_status(buf, len, &ss) == 0) {
                        *ret_uid = ss.uid;
                        *ret_has_uid = ss.has_uid;
                }
        }
        close(fd);
        if (r < 0)
                return r;
        *ret_st = st;
        return 0;
}

/* 0 when pid still names the planned process; -ESTALE another; -ESRCH none; other -errno */
static int verify(const char *proc_root, pid_t pid, uint64_t start_time, const uid_t *want_uid)
{
        gr_stat st;
        uid_t uid = 0;
        bool has_uid = false;
        int r = look(proc_root, pid, &st, want_uid ? &uid : NULL, &has_uid);
        if (r < 0)
                return r;
        if (st.start_time != start_time)
                return -ESTALE;
        if (ended(proc_root, pid, &st))
                return -ESRCH;
        if (want_uid && (!has_uid || uid != *want_uid))
                return -ESTALE; /* setuid since the plan, or not readable: not what was planned */
        return 0;
}

int gr_pidref_pin(gr_pidref *ret, const char *proc_root, pid_t pid, uint64_t start_time, const uid_t *want_uid,
                  bool use_fd)
{
        gr_pidref r = { .pid = pid, .start_time = start_time, .fd = -1 };
        if (use_fd) {
                r.fd = gr_pidfd_open(pid);
                if (r.fd == -ESRCH)
                        return -ESRCH;
                if (r.fd == -EMFILE || r.fd == -ENFILE)
                        return r.fd; /* an error, never taken for an outcome */
                if (r.fd < 0)
                        r.fd = -1; /* no pidfds here: the /proc check before each signal */
        }
        int q = verify(proc_root, pid, start_time, want_uid);
        if (q == 0 && r.fd >= 0 && gr_pidfd_exited(r.fd, 0))
                q = -ESRCH; /* it ended while being checked */
        if (q < 0) {
                if (r.fd >= 0)
                        close(r.fd);
                return q;
        }
        r.want_uid = want_uid ? *want_uid : 0;
        r.check_uid = want_uid != NULL;
        *ret = r;
        return 0;
}

int gr_pidref_kill(gr_pidref *r, const char *proc_root, int sig)
{
        if (r->fd >= 0)
                return gr_pidfd_send_signal(r->fd, sig);
        int q = verify(proc_root, r->pid, r->start_time, r->check_uid ? &r->want_uid : NULL);
        if (q == -ESTALE)
                return -ESRCH; /* the planned process is gone; its PID names another */
        if (q < 0)
                return q;
        return kill(r->pid, sig) < 0 ? -errno : 0;
}

bool gr_pidref_gone(const gr_pidref *r, const char *proc_root)
{
        if (r->fd >= 0)
                return gr_pidfd_exited(r->fd, 0);
        gr_stat st;
        int q = look(proc_root, r->pid, &st, NULL, NULL);
        return q == -ESRCH || (q == 0 && (st.start_time != r->start_time || ended(proc_root, r->pid, &st)));
}

void gr_pidref_done(gr_pidref *r)
{
        if (r->fd >= 0)
                close(r->fd);
        r->fd = -1;
}
