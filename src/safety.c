/* Who a command that signals must never touch, whatever the plan says: gpureap itself and its
 * helpers, its ancestors (the shell, sudo, a monitoring agent that runs it), and for --tree its
 * own process group (the pipe reading its output). Every command that signals takes its plan
 * options from here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
