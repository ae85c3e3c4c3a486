/* gpureap tree: the processes a supervisor is answerable for: its descendants (it is a child
 * subreaper, so orphans come back to it) and, where cgroup v2 is writable, the members of a
 * leaf cgroup of its own, which even setsid and double-fork escapees cannot leave. */
#ifndef GPUREAP_TREE_H
#define GPUREAP_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpureap/proc.h"

#pragma GCC visibility push(default)

typedef struct gr_tree_proc {
        pid_t pid;
        uint64_t start_time;
        uint64_t cpu_ticks;
        char state;
        bool kthread;
        char comm[64];
        pid_t pgid;
} gr_tree_proc;

/* The descendants of root (root itself left out) and, with cgroup set, the members of that
 * cgroup and of the cgroups below it; sorted by PID. skip: PIDs left out (gpureap's own helpers).
 * From the cgroups' lists and the kernel's children files: it reads only the tree, whatever else
 * runs on the machine (a full walk where the children files are missing). The cgroup's members
 * are not asked for their children (born in the cgroup): a child that root moved out of it
 * while its parent lives is listed once its parent ends and it comes to root, the subreaper. */
int gr_tree_list(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                 size_t n_skip, gr_tree_proc **ret, size_t *ret_n);

/* The same, with the cgroup's members asked for their children too (nine system calls a member
 * more), each only where its parent chain leads to root: a child that root (or the child
 * itself, 'systemd-run --scope') moved out of the cgroup is listed while its parent lives, and
 * the children of a process moved into the cgroup are not. For a tree that has had its SIGTERM
 * and is still there */
int gr_tree_list_deep(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                      size_t n_skip, gr_tree_proc **ret, size_t *ret_n);

/* The same from a walk of the whole process table (the fallback, and the cross-check of tests) */
int gr_tree_list_by_walk(const char *proc_root, pid_t root, const char *cgroup, const pid_t *skip,
                         size_t n_skip, gr_tree_proc **ret, size_t *ret_n);

/* The members of these process groups, sorted by PID */
int gr_tree_group_members(const char *proc_root, const pid_t *pgids, size_t n_pgids, gr_tree_proc **ret,
                          size_t *ret_n);

/* Reap every child that has ended (waitpid(-1, WNOHANG)), each told to cb (NULL: none); true
 * when no child is left at all */
bool gr_reap_children(void (*cb)(pid_t pid, int status, void *userdata), void *userdata);

/* The PID last handed out in this PID namespace (/proc/sys/kernel/ns_last_pid) */
int gr_last_pid(pid_t *ret);
/* Was pid handed out after 'before' was the last one, 'now' the last one since? The kernel hands
 * PIDs out in increasing order, wrapping at pid_max and skipping those in use: so a process born
 * since has a PID in (before, now], and one older only when the numbers wrapped and passed over
 * it (a false "new", never a false "old") */
bool gr_pid_new_since(pid_t pid, pid_t before, pid_t now);

/* The cgroup v2 mount point from /proc/self/mountinfo (/sys/fs/cgroup or .../unified) */
int gr_cgroup2_mount(char *ret, size_t size);
/* Create "gpureap-run-PID-RANDOM" below this process's own cgroup (PID as this process's own PID
 * namespace numbers it, RANDOM 64 bits: the cgroup tree is the host's, and every namespace has
 * its PID 1); the path in ret, and in ret_lock the leaf's directory, flocked: kept open for as
 * long as the run lives, it tells that its owner does */
int gr_cgroup_create_leaf(char *ret, size_t size, int *ret_lock);
/* Remove the empty gpureap-run-* leaves beside ours whose owner is provably dead (a new-style
 * one's lock is free; an old-style gpureap-run-N's N is no live gpureap here); never a member */
int gr_cgroup_remove_stale(unsigned *ret_removed);
/* For each cgroup path (as /proc/PID/cgroup gives it) that is a run's leaf of the new kind: is
 * its lock held (its run lives) or free (gone)? From one read of /proc/locks, never by taking
 * a lock; UNKNOWN for anything else or where the leaf cannot be found from here */
void gr_cgroup_run_leaf_locks(const char *const *cgroups, size_t n, gr_leaf_lock *ret);
int gr_cgroup_enter(const char *cgroup, pid_t pid);
int gr_cgroup_kill(const char *cgroup);          /* cgroup.kill (Linux 5.14) */
int gr_cgroup_remove(const char *cgroup);
bool gr_cgroup_empty(const char *cgroup);

#pragma GCC visibility pop

#endif
