/* Who a command that signals must never touch, whatever the plan says: gpureap itself and its
 * helpers, its ancestors (the shell, sudo, a monitoring agent that runs it), and for --tree its
 * own process group (the pipe reading its output). Every command that signals takes its plan
 * options from here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap.h"

int self_plan_options(gr_plan_options *po)
{
        po->my_uid = getuid();
        po->self = getpid();
        po->self_pgrp = getpgrp();
        pid_t *a = NULL;
        size_t n = 0;
        pid_t pid = getppid();
        for (int depth = 0; pid > 1 && depth < 256; depth++) {
                pid_t *na = realloc(a, (n + 1) * sizeof(*a));
                if (!na) {
                        free(a);
                        return -ENOMEM;
                }
                a = na;
                a[n++] = pid;
                char path[64], buf[1024];
                size_t len;
                gr_stat st;
                snprintf(path, sizeof(path), "/proc/%d", (int)pid);
                int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int r = fd < 0 ? -errno : gr_read_file_at(fd, "stat", buf, sizeof(buf), &len);
                if (fd >= 0)
                        close(fd);
                if (r < 0 || gr_parse_stat(buf, len, &st) < 0)
                        break;
                pid = st.ppid;
        }
        po->ancestors = a;
        po->n_ancestors = n;
        return 0;
}

void self_plan_options_release(gr_plan_options *po)
{
        free((pid_t *)po->ancestors);
        po->ancestors = NULL;
        po->n_ancestors = 0;
}

/* A program or directory named by the environment that gpureap is about to run or trust: an
 * absolute path whose file, directories and links only root or this user can change
 * (gr_open_trusted), so that nobody else can swap it between this check and its use. With
 * ret_fd, the file checked, opened O_PATH, for the caller to use instead of the name. */
int env_path_trusted(const char *var, const char *path, int *ret_fd)
{
        char why[256] = "";
        int fd = gr_open_trusted(path, O_PATH, geteuid(), why, sizeof(why));
        if (fd < 0) {
                if (!why[0])
                        snprintf(why, sizeof(why), "%s", path[0] != '/' ? "not an absolute path" : strerror(-fd));
                error_msg("refusing %s '%s'%s: %s (give a path that only root%s can change)", var, QUOTED(path),
                          geteuid() == 0 ? " as root" : "", why, geteuid() == 0 ? "" : " or you");
                return -1;
        }
        if (ret_fd)
                *ret_fd = fd;
        else
                close(fd);
        return 0;
}

/* Before signalling: the processes gpureap judges must be this machine's, as its own /proc
 * shows them. GPUREAP_PROC_ROOT names another tree (a recording, a container's bind mount of a
 * host's /proc) whose PIDs are not ours to signal; GPUREAP_DEV_DIR decides which processes hold
 * a GPU, so as root it must be root's. -1 (the message printed) when it may not go on. */
int signalling_env_ok(const char *cmd)
{
        /* a child PID namespace that sees another namespace's /proc (unshare -fp without
         * --mount-proc, a container given the host's /proc): the PIDs judged there are not the
         * ones a signal reaches (pidfd_open and kill resolve in our own namespace) */
        pid_t self = gr_proc_self_pid();
        if (self != getpid()) {
                char shown[16] = "missing";
                if (self > 0)
                        snprintf(shown, sizeof(shown), "%d", (int)self);
                error_msg("%s signals processes by the PIDs /proc shows, and this /proc is not of gpureap's own PID "
                          "namespace (/proc/self is '%s', gpureap is PID %d): mount one of its own (unshare --mount-proc)",
                          cmd, shown, (int)getpid());
                return -1;
        }
        const char *pr = getenv("GPUREAP_PROC_ROOT");
        if (pr && *pr && strcmp(pr, "/proc") != 0 && strcmp(pr, "/proc/") != 0) {
                error_msg("%s signals the processes of this machine: not with GPUREAP_PROC_ROOT='%s' (a recorded "
                          "or foreign /proc; its PIDs are not this /proc's)", cmd, QUOTED(pr));
                return -1;
        }
        const char *dev = getenv("GPUREAP_DEV_DIR");
        if (dev && *dev && env_path_trusted("GPUREAP_DEV_DIR", dev, NULL) < 0)
                return -1;
        return 0;
}

/* An output file that gpureap writes whole and renames into place (--json, --ready-file,
 * --textfile) replaces what its path names: only a regular file, or nothing yet. A device (as
 * root, --json /dev/null would have made /dev/null a file), a directory, a FIFO or a symbolic
 * link is refused. -1 (the message printed) when it may not be written. */
int output_path_ok(const char *option, const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return 0; /* nothing there yet (or the write will say why not) */
        if (S_ISREG(st.st_mode))
                return 0;
        error_msg("%s '%s' is not a regular file (%s): gpureap replaces the file it writes; give a new path or a "
                  "regular file's", option, QUOTED(path),
                  S_ISLNK(st.st_mode)   ? "a symbolic link"
                  : S_ISDIR(st.st_mode) ? "a directory"
                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                        : "a FIFO or socket");
        return -1;
}
