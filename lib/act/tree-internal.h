/* lib/act's own (not exported): what tree.c does for tree-end.c */
#ifndef GR_ACT_TREE_INTERNAL_H
#define GR_ACT_TREE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* gpureap's ancestors: its parent, theirs, up to PID 1 (at most 4096), each with its start
 * time, so that a PID one of them leaves behind and a member of the tree takes is not taken
 * for it. None of them is ever of its tree, wherever root moved them */
struct gr_ancestors {
        struct { pid_t pid; uint64_t start_time; } *a;
        size_t n;
};
int gr_ancestors_read(struct gr_ancestors *ret); /* 0 or -ENOMEM */
bool gr_ancestors_has(const struct gr_ancestors *anc, pid_t pid, uint64_t start_time);
void gr_ancestors_free(struct gr_ancestors *anc);

/* Those found in cgroup, the run's leaf, or a cgroup below it (root can write to any
 * cgroup.procs) moved back out to the leaf's parent, where gpureap itself is, so that
 * cgroup.kill does not reach them. The number moved */
unsigned gr_cgroup_evict(const char *cgroup, const struct gr_ancestors *anc);

#endif
