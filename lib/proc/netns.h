/* The TCP sockets of each network namespace, read once per scan instead of once per process.
 *
 * /proc/PID/net/tcp walks the kernel's whole socket hash table, empty buckets included: on the
 * H200 machine (128 GiB) one read took 3 ms, tcp and tcp6 6.5 ms, for four sockets, and a scan
 * read them for every holder with a socket. Here each namespace's table is read once: for
 * gpureap's own namespace with a sock_diag netlink dump (what ss does: only the sockets there
 * are), for another one from the first of its processes' /proc/PID/net/tcp{,6}. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gr_sock {
        uint64_t inode;
        uint16_t port;  /* local port */
        uint8_t state;  /* GR_TCP_LISTEN or GR_TCP_ESTABLISHED (others are not kept) */
} gr_sock;

typedef struct gr_sock_table {
        gr_sock *socks;
        size_t n;
        bool truncated; /* more sockets than GR_NETNS_SOCKS_MAX */
} gr_sock_table;

#define GR_NETNS_SOCKS_MAX (1u << 17)

typedef struct gr_netns_cache gr_netns_cache;

/* live: the scan reads the running system's /proc (not a recorded tree), so gpureap's own
 * namespace may be read by netlink. NULL on -ENOMEM. Safe to share between threads. */
gr_netns_cache *gr_netns_cache_new(bool live);
void gr_netns_cache_free(gr_netns_cache *c);

/* The table of the namespace that the process of PIDDIR is in, read on first use; NULL when
 * its namespace cannot be named (ns/net unreadable: another user's process) or read: the
 * caller then reads the process's own tables. */
const gr_sock_table *gr_netns_table(gr_netns_cache *c, int piddir);

/* The same tables from a process directory's net/tcp and net/tcp6 (the fallback), and from a
 * netlink dump of gpureap's own namespace: for the cross-check test. 0 or -errno. */
int gr_sock_table_from_proc(int piddir, gr_sock_table *t);
int gr_sock_table_from_netlink(gr_sock_table *t);
void gr_sock_table_release(gr_sock_table *t);
