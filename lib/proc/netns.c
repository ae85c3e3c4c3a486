/* The TCP sockets of each network namespace, read once per scan (netns.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "netns.h"

#define NETNS_MAX 32 /* namespaces remembered per scan; more are read per process */

struct netns_entry {
        uint64_t ino;
        bool filled, failed;
        gr_sock_table table;
};

struct gr_netns_cache {
        pthread_mutex_t lock;
        bool live;
        uint64_t self_ino; /* gpureap's own namespace, 0 unknown */
        struct netns_entry e[NETNS_MAX];
        size_t n;
};

static int add_sock(gr_sock_table *t, size_t *cap, uint64_t inode, unsigned port, unsigned state)
{
        if (state != GR_TCP_LISTEN && state != GR_TCP_ESTABLISHED)
                return 0;
        if (t->n >= GR_NETNS_SOCKS_MAX) {
                t->truncated = true;
                return 0;
        }
        if (t->n == *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                gr_sock *s = realloc(t->socks, nc * sizeof(*s));
                if (!s)
                        return -ENOMEM;
                t->socks = s;
                *cap = nc;
        }
        t->socks[t->n++] = (gr_sock){ .inode = inode, .port = (uint16_t)port, .state = (uint8_t)state };
        return 0;
}

struct proc_fill {
        gr_sock_table *t;
        size_t cap;
        int error;
};

static int proc_line(const char *line, size_t len, void *userdata)
{
        struct proc_fill *f = userdata;
        unsigned state, port;
        uint64_t inode;
        if (!gr_parse_tcp_socket(line, len, &state, &port, &inode) || inode == 0)
                return 0;
        if (add_sock(f->t, &f->cap, inode, port, state) < 0) {
                f->error = -ENOMEM;
                return -ENOMEM;
        }
        return 0;
}

int gr_sock_table_from_proc(int piddir, gr_sock_table *t)
{
        *t = (gr_sock_table){ 0 };
        struct proc_fill f = { .t = t };
        int r4 = gr_read_lines_at(piddir, "net/tcp", proc_line, &f);
        int r6 = gr_read_lines_at(piddir, "net/tcp6", proc_line, &f); /* absent without IPv6 */
        if (f.error < 0 || (r4 < 0 && r6 < 0)) {
                gr_sock_table_release(t);
                return f.error < 0 ? f.error : r4;
        }
        return 0;
}

/* One family's TCP sockets in the listening and established states, by sock_diag */
static int netlink_family(int fd, uint8_t family, gr_sock_table *t, size_t *cap, char *buf, size_t buf_size)
{
        struct {
                struct nlmsghdr nlh;
                struct inet_diag_req_v2 req;
        } msg = {
                .nlh = { .nlmsg_len = sizeof(msg), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                         .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = family },
                .req = { .sdiag_family = family, .sdiag_protocol = IPPROTO_TCP,
                         .idiag_states = (1u << GR_TCP_LISTEN) | (1u << GR_TCP_ESTABLISHED) },
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                return -errno;
        for (unsigned rounds = 0; rounds < 100000; rounds++) {
                ssize_t n = recv(fd, buf, buf_size, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno; /* EAGAIN: SO_RCVTIMEO ran out */
                }
                if (n == 0)
                        return -EPROTO;
                size_t len = (size_t)n;
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
                        if (h->nlmsg_seq != family)
                                continue;
                        if (h->nlmsg_type == NLMSG_DONE)
                                return 0;
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                const struct nlmsgerr *e = NLMSG_DATA(h);
                                return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? e->error : -EPROTO;
                        }
                        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                                continue;
                        const struct inet_diag_msg *m = NLMSG_DATA(h);
                        if (m->idiag_inode && add_sock(t, cap, m->idiag_inode, ntohs(m->id.idiag_sport), m->idiag_state) < 0)
                                return -ENOMEM;
                }
        }
        return -E2BIG;
}

int gr_sock_table_from_netlink(gr_sock_table *t)
{
        *t = (gr_sock_table){ 0 };
        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (fd < 0)
                return -errno;
        /* the kernel answers a dump at once; the bound is for a kernel that never does */
        struct timeval tv = { .tv_sec = 1 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        /* the answer's buffer from the heap, not a thread-local array: 32 KiB of .tbss is
         * zeroed in every thread's TLS at its start, eight page faults for every gpureap
         * command (also 'status' through serve, which reads no socket table) */
        enum { BUF_SIZE = 32768 };
        char *buf = malloc(BUF_SIZE); /* malloc's alignment (16) is NLMSG_ALIGNTO's (4) and more */
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        size_t cap = 0;
        int r = netlink_family(fd, AF_INET, t, &cap, buf, BUF_SIZE);
        if (r == 0) {
                r = netlink_family(fd, AF_INET6, t, &cap, buf, BUF_SIZE);
                if (r == -EAFNOSUPPORT || r == -ENOENT)
                        r = 0; /* no IPv6 here */
        }
        free(buf);
        close(fd);
        if (r < 0)
                gr_sock_table_release(t);
        return r;
}

void gr_sock_table_release(gr_sock_table *t)
{
        free(t->socks);
        *t = (gr_sock_table){ 0 };
}

static uint64_t ns_ino_at(int dirfd, const char *path)
{
        struct stat st;
        return fstatat(dirfd, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

gr_netns_cache *gr_netns_cache_new(bool live)
{
        gr_netns_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        pthread_mutex_init(&c->lock, NULL);
        c->live = live;
        c->self_ino = live ? ns_ino_at(AT_FDCWD, "/proc/self/ns/net") : 0;
        return c;
}

void gr_netns_cache_free(gr_netns_cache *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                gr_sock_table_release(&c->e[i].table);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

const gr_sock_table *gr_netns_table(gr_netns_cache *c, int piddir)
{
        if (!c)
                return NULL;
        uint64_t ino = ns_ino_at(piddir, "ns/net");
        if (ino == 0)
                return NULL;
        const gr_sock_table *ret = NULL;
        pthread_mutex_lock(&c->lock);
        struct netns_entry *e = NULL;
        for (size_t i = 0; i < c->n && !e; i++)
                if (c->e[i].ino == ino)
                        e = &c->e[i];
        if (!e && c->n < NETNS_MAX) {
                e = &c->e[c->n++];
                *e = (struct netns_entry){ .ino = ino };
        }
        if (e && !e->filled && !e->failed) {
                /* the first process of a namespace reads it, under the lock: the others of the
                 * same namespace would only wait for the same read */
                int r = -ENOENT;
                if (c->live && ino == c->self_ino)
                        r = gr_sock_table_from_netlink(&e->table);
                if (r < 0)
                        r = gr_sock_table_from_proc(piddir, &e->table);
                e->filled = r == 0;
                e->failed = r < 0;
        }
        if (e && e->filled)
                ret = &e->table;
        pthread_mutex_unlock(&c->lock);
        return ret;
}
