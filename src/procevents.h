/* The kernel's process events, for 'gpureap serve' (procevents.c) */
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

#endif
