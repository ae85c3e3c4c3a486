/* The kernel's process events (the netlink process connector, CN_IDX_PROC): for 'gpureap serve',
 * how each process ended, which no /proc scan can tell after the fact; for 'gpureap reap', who
 * forked whom while it ends its targets. Needs CAP_NET_ADMIN;
 * without it serve still runs, and says that exit causes are not known. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "gpureap/proc.h"

int gr_procev_open(void)
{
        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
        if (fd < 0)
                return -errno;
        /* a fork storm sends thousands of events a second: room for a burst of them; what
         * overflows is reported (ENOBUFS) and counted as lost */
        int size = 8 << 20;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0 };
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        struct __attribute__((aligned(NLMSG_ALIGNTO))) {
                struct nlmsghdr nlh;
                struct __attribute__((packed)) {
                        struct cn_msg cn;
                        enum proc_cn_mcast_op op;
                } body;
        } msg;
        memset(&msg, 0, sizeof(msg));
        msg.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(msg.body));
        msg.nlh.nlmsg_type = NLMSG_DONE;
        msg.nlh.nlmsg_pid = (uint32_t)getpid();
        msg.body.cn.id.idx = CN_IDX_PROC;
        msg.body.cn.id.val = CN_VAL_PROC;
        msg.body.cn.len = sizeof(enum proc_cn_mcast_op);
        msg.body.op = PROC_CN_MCAST_LISTEN;
        if (send(fd, &msg, msg.nlh.nlmsg_len, 0) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int read_events(int fd, gr_procev_fork_fn on_fork, gr_procev_exit_fn on_exit, void *userdata, bool *ret_lost);
static int read_into(int fd, char *buf, gr_procev_fork_fn on_fork, gr_procev_exit_fn on_exit, void *userdata,
                     bool *ret_lost);
#define PROCEV_BUF 65536

int gr_procev_read(int fd, gr_procev_exit_fn on_exit, void *userdata, bool *ret_lost)
{
        return read_events(fd, NULL, on_exit, userdata, ret_lost);
}

int gr_procev_read_lineage(int fd, gr_procev_fork_fn on_fork, gr_procev_exit_fn on_exit, void *userdata, bool *ret_lost)
{
        return read_events(fd, on_fork, on_exit, userdata, ret_lost);
}

static int read_events(int fd, gr_procev_fork_fn on_fork, gr_procev_exit_fn on_exit, void *userdata, bool *ret_lost)
{
        /* each call its own buffer: serve reads its events in one thread while its policy's reap
         * follows forks in another (one static buffer tore events between them) */
        char *buf = aligned_alloc(NLMSG_ALIGNTO < 16 ? 16 : NLMSG_ALIGNTO, PROCEV_BUF);
        if (!buf)
                return -ENOMEM;
        int r = read_into(fd, buf, on_fork, on_exit, userdata, ret_lost);
        free(buf);
        return r;
}

static int read_into(int fd, char *buf, gr_procev_fork_fn on_fork, gr_procev_exit_fn on_exit, void *userdata,
                     bool *ret_lost)
{
        int n_exits = 0;
        for (unsigned rounds = 0; rounds < 4096; rounds++) {
                ssize_t n = recv(fd, buf, PROCEV_BUF, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) {
                                *ret_lost = true; /* the kernel dropped some: go on reading */
                                continue;
                        }
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return n_exits;
                        return -errno;
                }
                size_t len = (size_t)n;
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
                        if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
                                continue;
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg)))
                                continue;
                        const struct cn_msg *cn = NLMSG_DATA(h);
                        if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC ||
                            cn->len < offsetof(struct proc_event, event_data) ||
                            h->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg) + cn->len))
                                continue;
                        /* the event follows a 20-byte header: copied out, to read it aligned */
                        struct proc_event ev;
                        memset(&ev, 0, sizeof(ev));
                        memcpy(&ev, cn->data, cn->len < sizeof(ev) ? cn->len : sizeof(ev));
                        if (on_fork && ev.what == PROC_EVENT_FORK &&
                            cn->len >= offsetof(struct proc_event, event_data) + sizeof(ev.event_data.fork)) {
                                /* a new process, not a thread of one */
                                if (ev.event_data.fork.child_pid == ev.event_data.fork.child_tgid) {
                                        on_fork((pid_t)ev.event_data.fork.parent_tgid, (pid_t)ev.event_data.fork.child_tgid,
                                                userdata);
                                        n_exits++;
                                }
                                continue;
                        }
                        if (ev.what != PROC_EVENT_EXIT ||
                            cn->len < offsetof(struct proc_event, event_data) + sizeof(ev.event_data.exit))
                                continue;
                        /* the process ends when its thread group leader does */
                        if (ev.event_data.exit.process_pid != ev.event_data.exit.process_tgid)
                                continue;
                        if (on_exit)
                                on_exit((pid_t)ev.event_data.exit.process_tgid, (int)ev.event_data.exit.exit_code, userdata);
                        n_exits++;
                }
        }
        return n_exits;
}
