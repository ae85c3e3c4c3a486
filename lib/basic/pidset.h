/* A set of PIDs for lib/ only: in the order found, with an open-addressing index kept at most
 * half full, so that a tree of thousands is listed (lib/act/tree.c) and its ended members
 * counted (lib/act/tree-end.c) in linear time. Zero-initialized: empty */
#ifndef GPUREAP_LIB_PIDSET_H
#define GPUREAP_LIB_PIDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gr_pidset {
        pid_t *p;
        size_t n, cap;
        pid_t *slots;             /* 0 empty */
        size_t mask;
};

/* 1 added, 0 there already, -ENOMEM (the set unchanged) */
int gr_pidset_add(struct gr_pidset *ps, pid_t pid);
/* Is pid in the set? (no change to it: safe while other threads read the same set) */
bool gr_pidset_has(const struct gr_pidset *ps, pid_t pid);
void gr_pidset_free(struct gr_pidset *ps);

#endif
