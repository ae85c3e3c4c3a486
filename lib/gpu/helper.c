/* The helper process; see helper.h. A thread stuck in the driver (state D) would keep our whole
 * process from exiting, so driver work never runs in a thread of ours. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/helper.h"
#include "gpureap/basic.h"

/* Helpers that finished but had not yet exited (closing the driver's files takes a few ms):
 * reaped without blocking when the next helper starts. */
static pid_t pending[16];

static void reap_pending(void)
{
        for (size_t i = 0; i < GR_ELEMENTSOF(pending); i++) {
                int st;
                if (pending[i] > 0 && waitpid(pending[i], &st, WNOHANG) != 0)
                        pending[i] = 0;
        }
}

static void leave_pending(pid_t pid)
{
        reap_pending();
        for (size_t i = 0; i < GR_ELEMENTSOF(pending); i++)
                if (pending[i] == 0) {
                        pending[i] = pid;
                        return;
                }
        int st;
        waitpid(pid, &st, 0); /* no room: it has finished and is only exiting */
}

void gr_helper_done(int done_fd)
{
        char d = 'd';
        while (write(done_fd, &d, 1) < 0 && errno == EINTR)
                ;
}

int gr_helper_start(struct gr_helper *h, size_t shm_size, gr_helper_work work, const void *arg)
{
        memset(h, 0, sizeof(*h));
        h->pipe_rd = -1;
        reap_pending();
        /* pages are touched only as the child fills them */
        h->shm = mmap(NULL, shm_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (h->shm == MAP_FAILED) {
                h->shm = NULL;
                return -ENOMEM;
        }
        h->shm_size = shm_size;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                int r = -errno;
                munmap(h->shm, shm_size);
                h->shm = NULL;
                return r;
        }
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                munmap(h->shm, shm_size);
                h->shm = NULL;
                return r;
        }
        if (pid == 0) {
                close(p[0]);
                /* never outlive the caller: a helper is of no use to anyone after it */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(0);
                signal(SIGPIPE, SIG_IGN);
                work(h->shm, arg, p[1]);
                _exit(0);
        }
        close(p[1]);
        h->pipe_rd = p[0];
        h->pid = pid;
        return 0;
}

int gr_helper_wait(struct gr_helper *h, uint64_t deadline_ms)
{
        for (;;) {
                uint64_t now = gr_now_ms();
                if (now >= deadline_ms)
                        return 0;
                struct pollfd pfd = { .fd = h->pipe_rd, .events = POLLIN };
                int n = poll(&pfd, 1, (int)(deadline_ms - now));
                if (n <= 0)
                        continue; /* EINTR or the deadline: the loop re-checks */
                char c;
                ssize_t k = read(h->pipe_rd, &c, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                return k == 1 ? 1 : -1; /* EOF: it ended without finishing */
        }
}

/* Wait for the child to finish exiting, at most until deadline; true when reaped. */
static bool reap_until(pid_t pid, uint64_t deadline_ms)
{
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        bool reaped = false;
        for (;;) {
                int st;
                pid_t w = waitpid(pid, &st, WNOHANG);
                if (w == pid || (w < 0 && errno == ECHILD)) {
                        reaped = true;
                        break;
                }
                uint64_t now = gr_now_ms();
                if (now >= deadline_ms)
                        break;
                if (pidfd >= 0) {
                        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
                        poll(&pfd, 1, (int)(deadline_ms - now));
                } else {
                        usleep(1000);
                }
        }
        if (pidfd >= 0)
                close(pidfd);
        return reaped;
}

bool gr_helper_stop(struct gr_helper *h, bool finished)
{
        bool ok = true;
        if (h->pid > 0) {
                int st;
                if (finished) {
                        /* its exit closes the driver's files (2.5 ms on an H200): not waited for */
                        if (waitpid(h->pid, &st, WNOHANG) == 0)
                                leave_pending(h->pid);
                } else {
                        kill(h->pid, SIGKILL);
                        ok = reap_until(h->pid, gr_now_ms() + 100);
                }
                h->pid = 0;
        }
        if (h->pipe_rd >= 0)
                close(h->pipe_rd);
        h->pipe_rd = -1;
        if (h->shm)
                munmap(h->shm, h->shm_size);
        h->shm = NULL;
        return ok;
}
