/* The sockets of a network namespace read by sock_diag netlink (gpureap's own namespace) and
 * from /proc/PID/net/tcp{,6} (any other) give the same answer, on real sockets: a listener, an
 * accepted connection and its client, IPv4 and IPv6; and the scan's cache reads a namespace once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "proc/netns.h"

static uint64_t ino_of(int fd)
{
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        return (uint64_t)st.st_ino;
}

static unsigned port_of(int fd)
{
        struct sockaddr_storage a;
        socklen_t l = sizeof(a);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
        return a.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&a)->sin_port)
                                      : ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
}

static const gr_sock *find(const gr_sock_table *t, uint64_t inode)
{
        for (size_t i = 0; i < t->n; i++)
                if (t->socks[i].inode == inode)
                        return &t->socks[i];
        return NULL;
}

struct conn {
        int listener, client, server;
};

static void make_conn(int family, struct conn *c)
{
        c->listener = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(c->listener >= 0);
        struct sockaddr_storage a = { 0 };
        socklen_t l;
        if (family == AF_INET) {
                struct sockaddr_in *s = (struct sockaddr_in *)&a;
                s->sin_family = AF_INET;
                s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                l = sizeof(*s);
        } else {
                struct sockaddr_in6 *s = (struct sockaddr_in6 *)&a;
                s->sin6_family = AF_INET6;
                s->sin6_addr = in6addr_loopback;
                l = sizeof(*s);
        }
        assert_int_equal(bind(c->listener, (struct sockaddr *)&a, l), 0);
        assert_int_equal(listen(c->listener, 4), 0);
        assert_int_equal(getsockname(c->listener, (struct sockaddr *)&a, &l), 0);
        c->client = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(c->client, (struct sockaddr *)&a, l), 0);
        c->server = accept4(c->listener, NULL, NULL, SOCK_CLOEXEC);
        assert_true(c->server >= 0);
}

/* the entry of INODE, which must be there */
static gr_sock get(const gr_sock_table *t, uint64_t inode)
{
        const gr_sock *s = find(t, inode);
        assert_non_null(s);
        return s ? *s : (gr_sock){ 0 };
}

static void check_conn(const gr_sock_table *t, const struct conn *c)
{
        gr_sock s = get(t, ino_of(c->listener));
        assert_int_equal(s.state, GR_TCP_LISTEN);
        assert_int_equal(s.port, port_of(c->listener));
        s = get(t, ino_of(c->server));
        assert_int_equal(s.state, GR_TCP_ESTABLISHED);
        assert_int_equal(s.port, port_of(c->listener)); /* accepted on the listening port */
        s = get(t, ino_of(c->client));
        assert_int_equal(s.state, GR_TCP_ESTABLISHED);
        assert_int_equal(s.port, port_of(c->client));
}

static void netlink_and_proc_agree(void **state)
{
        struct conn c4, c6;
        make_conn(AF_INET, &c4);
        bool v6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0) >= 0; /* (leaked: the test ends) */
        if (v6)
                make_conn(AF_INET6, &c6);
        gr_sock_table nl, pr;
        int r = gr_sock_table_from_netlink(&nl);
        if (r < 0) {
                printf("# no sock_diag netlink here (%s): the /proc tables are used\n", strerror(-r));
                skip();
        }
        int self = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(self >= 0);
        assert_int_equal(gr_sock_table_from_proc(self, &pr), 0);
        check_conn(&nl, &c4);
        check_conn(&pr, &c4);
        if (v6) {
                check_conn(&nl, &c6);
                check_conn(&pr, &c6);
        }
        /* a socket that is neither listening nor connected is in neither */
        int idle = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        gr_sock_table nl2;
        assert_int_equal(gr_sock_table_from_netlink(&nl2), 0);
        assert_null(find(&nl2, ino_of(idle)));
        assert_null(find(&pr, ino_of(idle)));
        gr_sock_table_release(&nl);
        gr_sock_table_release(&nl2);
        gr_sock_table_release(&pr);
        close(self);
}

static void cache_reads_a_namespace_once(void **state)
{
        struct conn c;
        make_conn(AF_INET, &c);
        int self = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (int live = 0; live <= 1; live++) {
                gr_netns_cache *cache = gr_netns_cache_new(live);
                assert_non_null(cache);
                const gr_sock_table *a = gr_netns_table(cache, self);
                assert_non_null(a);
                check_conn(a, &c);
                /* a socket made after the first read is not in the namespace's copy */
                struct conn later;
                make_conn(AF_INET, &later);
                const gr_sock_table *b = gr_netns_table(cache, self);
                assert_ptr_equal(a, b);
                assert_null(find(b, ino_of(later.listener)));
                gr_netns_cache_free(cache);
        }
        assert_null(gr_netns_table(NULL, self)); /* no cache: the caller reads the process's own */
        close(self);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(netlink_and_proc_agree),
                cmocka_unit_test(cache_reads_a_namespace_once),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
