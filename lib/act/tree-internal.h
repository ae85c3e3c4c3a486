/* lib/act's own (not exported): what tree.c does for tree-end.c */
#ifndef GR_ACT_TREE_INTERNAL_H
#define GR_ACT_TREE_INTERNAL_H

/* gpureap's ancestors (its parent, theirs, up to PID 1) are never of its tree: one that was
 * moved into cgroup, the run's leaf, or a cgroup below it (root can write to any cgroup.procs)
 * is moved back out to the leaf's parent, where gpureap itself is, so that neither the ladder,
 * which lists the leaf's members, nor cgroup.kill reaches it. The number moved */
unsigned gr_cgroup_evict_ancestors(const char *cgroup);

#endif
