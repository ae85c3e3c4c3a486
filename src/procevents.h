/* The kernel's process events, for 'gpureap serve' and 'gpureap reap' (procevents.c) */
#ifndef GPUREAP_PROCEVENTS_H
#define GPUREAP_PROCEVENTS_H

#include <stdbool.h>
#include <sys/types.h>

/* A process ended: its PID and its wait status (WIFSIGNALED/WTERMSIG, WEXITSTATUS) */
typedef void (*procev_exit_fn)(pid_t pid, int wait_status, void *userdata);

/* A non-blocking socket subscribed to the events, or -errno (-EPERM without CAP_NET_ADMIN) */
int procev_open(void);
/* Read what is waiting, calling on_exit for each process that ended; *ret_lost set when the
 * kernel dropped events. The number of exits, or -errno. */
int procev_read(int fd, procev_exit_fn on_exit, void *userdata, bool *ret_lost);

/* A process forked another (thread group IDs; threads are left out) */
typedef void (*procev_fork_fn)(pid_t parent, pid_t child, void *userdata);
/* The same with the forks too, in the kernel's order (for 'gpureap reap': who descends from its
 * targets while it ends them); on_exit may be NULL. The number of events, or -errno. */
int procev_read_lineage(int fd, procev_fork_fn on_fork, procev_exit_fn on_exit, void *userdata, bool *ret_lost);

#endif
