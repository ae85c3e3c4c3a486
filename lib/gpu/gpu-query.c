/* The NVML helper process. A thread stuck in the driver (state D) would keep our whole process
 * from exiting, so the NVML work runs in a forked child that writes its report into a shared
 * mapping and signals completion with one byte on a pipe. The parent waits until a deadline and
 * then abandons the child: SIGKILL, a last short wait, and if the driver still holds it, we
 * leave it behind rather than hang in wait(). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap/gpu.h"

struct shared {
        char current_call[64];
        gr_gpu_report rep;
        gr_gpu gpus[GR_GPUS_MAX];
        gr_gpu_proc procs[GR_GPUS_MAX * GR_GPU_PROCS_MAX];
};

/* Helpers that had delivered their report but not yet finished exiting (closing the driver's
 * files takes a few ms): reaped without blocking at the next query. */
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
        /* no room: wait for this one, which has delivered and is only exiting */
        int st;
        waitpid(pid, &st, 0);
}

struct gr_gpu_query {
        struct shared *sh;
        pid_t pid;
        int pipe_rd;
        uint64_t started_ms, deadline_ms, timeout_ms;
        char library[256];
};

const char *gr_ctx_kind_name(gr_ctx_kind k)
{
        switch (k) {
        case GR_CTX_COMPUTE: return "compute";
        case GR_CTX_GRAPHICS: return "graphics";
        case GR_CTX_MPS: return "mps";
        }
        return "unknown";
}

static const char *default_library(void)
{
        const char *e = getenv("GPUREAP_NVML_LIBRARY");
        return e && *e ? e : "libnvidia-ml.so.1";
}

static void query_free(gr_gpu_query *q)
{
        if (!q)
                return;
        if (q->sh)
                munmap(q->sh, sizeof(*q->sh));
        if (q->pipe_rd >= 0)
                close(q->pipe_rd);
        free(q);
}

int gr_gpu_query_start(const gr_gpu_options *opts, gr_gpu_query **ret, pid_t *ret_helper)
{
        gr_gpu_query *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->pipe_rd = -1;
        gr_strlcpy(q->library, opts && opts->library ? opts->library : default_library(),
                   sizeof(q->library));
        q->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 5000;
        reap_pending();
        /* pages are touched only as the child fills them: a few KiB for a few GPUs */
        q->sh = mmap(NULL, sizeof(*q->sh), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (q->sh == MAP_FAILED) {
                q->sh = NULL;
                query_free(q);
                return -ENOMEM;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                int r = -errno;
                query_free(q);
                return r;
        }
        pid_t parent = getpid();
        q->started_ms = gr_now_ms();
        q->deadline_ms = q->started_ms + q->timeout_ms;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                query_free(q);
                return r;
        }
        if (pid == 0) {
                close(p[0]);
                /* never outlive the caller: a helper is of no use to anyone after it */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(0);
                signal(SIGPIPE, SIG_IGN);
                struct shared *sh = q->sh;
                gr_nvml_read(q->library, &sh->rep, sh->gpus, sh->procs, sh->current_call,
                             sizeof(sh->current_call));
                char done = 'd';
                while (write(p[1], &done, 1) < 0 && errno == EINTR)
                        ;
                _exit(0);
        }
        close(p[1]);
        q->pipe_rd = p[0];
        q->pid = pid;
        *ret = q;
        if (ret_helper)
                *ret_helper = pid;
        return 0;
}

/* Wait for the child to finish exiting, at most until deadline; true when reaped. */
static bool reap_until(pid_t pid, uint64_t deadline_ms)
{
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        for (;;) {
                int st;
                pid_t w = waitpid(pid, &st, WNOHANG);
                if (w == pid || (w < 0 && errno == ECHILD)) {
                        if (pidfd >= 0)
                                close(pidfd);
                        return true;
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
        return false;
}

static int copy_report(const struct shared *sh, gr_gpu_report **ret)
{
        gr_gpu_report *rep = calloc(1, sizeof(*rep));
        if (!rep)
                return -ENOMEM;
        *rep = sh->rep;
        rep->gpus = NULL;
        if (rep->n_gpus > GR_GPUS_MAX)
                rep->n_gpus = GR_GPUS_MAX;
        if (rep->n_gpus > 0) {
                rep->gpus = calloc(rep->n_gpus, sizeof(gr_gpu));
                if (!rep->gpus) {
                        free(rep);
                        return -ENOMEM;
                }
        }
        for (unsigned i = 0; i < rep->n_gpus; i++) {
                gr_gpu *g = &rep->gpus[i];
                *g = sh->gpus[i];
                g->error[sizeof(g->error) - 1] = '\0';
                g->procs = NULL;
                if (g->n_procs > GR_GPU_PROCS_MAX)
                        g->n_procs = GR_GPU_PROCS_MAX;
                if (g->n_procs > 0) {
                        g->procs = calloc(g->n_procs, sizeof(gr_gpu_proc));
                        if (!g->procs) {
                                gr_gpu_report_free(rep);
                                return -ENOMEM;
                        }
                        memcpy(g->procs, sh->procs + (size_t)i * GR_GPU_PROCS_MAX,
                               g->n_procs * sizeof(gr_gpu_proc));
                }
        }
        *ret = rep;
        return 0;
}

int gr_gpu_query_finish(gr_gpu_query *q, gr_gpu_report **ret)
{
        bool done = false, died = false;
        for (;;) {
                uint64_t now = gr_now_ms();
                if (now >= q->deadline_ms)
                        break;
                struct pollfd pfd = { .fd = q->pipe_rd, .events = POLLIN };
                int n = poll(&pfd, 1, (int)(q->deadline_ms - now));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        continue; /* the loop re-checks the deadline */
                char c;
                ssize_t k = read(q->pipe_rd, &c, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k == 1)
                        done = true;
                else
                        died = true; /* EOF: the helper ended without finishing */
                break;
        }

        int status = 0;
        gr_gpu_report *rep = NULL;
        if (done) {
                /* The report is complete. The helper's exit still has to close the driver's
                 * files (2.5 ms measured on an H200): nobody needs to wait for that. */
                int st;
                if (waitpid(q->pid, &st, WNOHANG) == 0)
                        leave_pending(q->pid);
                status = copy_report(q->sh, &rep);
        } else {
                kill(q->pid, SIGKILL);
                bool reaped = reap_until(q->pid, gr_now_ms() + 100);
                rep = calloc(1, sizeof(*rep));
                if (!rep) {
                        query_free(q);
                        return -ENOMEM;
                }
                gr_strlcpy(rep->library, q->library, sizeof(rep->library));
                char call[sizeof(q->sh->current_call)];
                memcpy(call, q->sh->current_call, sizeof(call));
                call[sizeof(call) - 1] = '\0';
                if (died) {
                        rep->status = GR_GPU_FAILED;
                        snprintf(rep->error, sizeof(rep->error),
                                 "the NVML helper process died during '%s'", call[0] ? call : "start");
                } else {
                        rep->status = GR_GPU_TIMEOUT;
                        gr_strlcpy(rep->stuck_call, call[0] ? call : "start", sizeof(rep->stuck_call));
                        snprintf(rep->error, sizeof(rep->error),
                                 "the driver did not answer '%s' within %llu ms%s",
                                 rep->stuck_call, (unsigned long long)q->timeout_ms,
                                 reaped ? "" : " (the helper is stuck in the driver and was left behind)");
                }
        }
        if (rep)
                rep->elapsed_ms = gr_now_ms() - q->started_ms;
        query_free(q);
        if (status < 0)
                return status;
        *ret = rep;
        return 0;
}

void gr_gpu_report_free(gr_gpu_report *r)
{
        if (!r)
                return;
        for (unsigned i = 0; i < r->n_gpus; i++)
                free(r->gpus[i].procs);
        free(r->gpus);
        free(r);
}
