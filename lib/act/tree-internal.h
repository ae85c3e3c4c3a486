/* lib/act's own (not exported): what tree.c does for tree-end.c */
#ifndef GR_ACT_TREE_INTERNAL_H
#define GR_ACT_TREE_INTERNAL_H

#include "basic/pidset.h"

/* gpureap's ancestors into *ret: its parent, theirs, up to PID 1 (at most 4096); 0 or -ENOMEM.
 * None of them is ever of its tree, wherever root moved them */
int gr_ancestors(struct gr_pidset *ret);

/* Those of pids found in cgroup, the run's leaf, or a cgroup below it (root can write to any
 * cgroup.procs) moved back out to the leaf's parent, where gpureap itself is, so that
 * cgroup.kill does not reach them. The number moved */
unsigned gr_cgroup_evict(const char *cgroup, const struct gr_pidset *pids);

#endif
