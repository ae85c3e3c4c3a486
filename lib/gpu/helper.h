/* A helper process that does driver work which may block forever: forked, given a shared
 * mapping to write into, it sends one byte on a pipe when its work is done. The caller waits
 * until a deadline and abandons it then (SIGKILL; if the driver still holds it, it is left
 * behind rather than waited for). Internal to lib/gpu. */
#ifndef GPUREAP_GPU_HELPER_H
#define GPUREAP_GPU_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gr_helper {
        pid_t pid;
        int pipe_rd;
        void *shm;
        size_t shm_size;
};

/* work runs in the child with the shared mapping; it calls done(done_fd) when its result is
 * complete (it may go on working after, as a poller does until it is stopped) */
typedef void (*gr_helper_work)(void *shm, const void *arg, int done_fd);

int gr_helper_start(struct gr_helper *h, size_t shm_size, gr_helper_work work, const void *arg);
void gr_helper_done(int done_fd);
/* 1: done, 0: the deadline passed, -1: the helper ended without finishing */
int gr_helper_wait(struct gr_helper *h, uint64_t deadline_ms);
/* Stop it: a helper that finished is left to exit on its own (reaped later without blocking);
 * one that did not is killed. Returns false when a killed helper would not die (stuck in the
 * driver) and was left behind. Unmaps the shared memory. */
bool gr_helper_stop(struct gr_helper *h, bool finished);

#endif
