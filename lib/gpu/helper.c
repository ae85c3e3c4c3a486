/* The caller's side of the helper process; see helper.h. A thread stuck in the driver (state D)
 * would keep our whole process from exiting, so driver work never runs in a thread of ours; and
 * a fork of a threaded program may only call async-signal-safe functions before exec, so the
 * helper is a program of its own, started with posix_spawn. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/helper.h"
#include "basic/context.h"
#include "gpureap/basic.h"

#ifndef GR_HELPER_PATH
#define GR_HELPER_PATH "/usr/local/libexec/gpureap-nvml-helper"
#endif

extern char **environ;

/* The NVML to load. A process does not load code that it was told to load (its environment,
 * an option) unless the file, every directory on the way to it and every link followed belong
 * to root or to itself and nobody else may change them (the dynamic linker's rule for
 * LD_PRELOAD in secure mode, in spirit): otherwise an environment left by sudo -E, or a link
 * another user flips between a check and the load, would choose what runs as root. The file
 * checked is the file loaded. Only the default name is left to the loader's search. */
int gr_nvml_library(const gr_gpu_options *opts, struct gr_nvml_lib *ret)
{
        ret->fd = -1;
        ret->missing = false;
        ret->why[0] = '\0';
        const char *e = opts && opts->library && *opts->library ? opts->library : NULL;
        const char *origin = NULL;
        if (!e)
                e = gr_ctx_nvml_library(opts ? opts->ctx : NULL, &origin);
        gr_strlcpy(ret->origin, origin && *origin ? origin : "the NVML library", sizeof(ret->origin));
        if (!e || !*e)
                return gr_strlcpy(ret->name, "libnvidia-ml.so.1", sizeof(ret->name)) ? 0 : -ENAMETOOLONG;
        if (!gr_strlcpy(ret->name, e, sizeof(ret->name)))
                return -ENAMETOOLONG;
        if (!strchr(e, '/')) {
                if (geteuid() != 0)
                        return 0; /* the loader's search, in this user's own environment */
                snprintf(ret->why, sizeof(ret->why), "a bare name is looked up in a search path");
                return -EPERM;
        }
        if (e[0] != '/') {
                snprintf(ret->why, sizeof(ret->why), "not an absolute path");
                return -EPERM;
        }
        int fd = gr_open_trusted(e, O_RDONLY, geteuid(), ret->why, sizeof(ret->why));
        if (fd == -ENOENT) {
                /* the helper reports no library and loads nothing: in a sticky directory (/tmp)
                 * another user may create that name between this look and a load by name */
                ret->missing = true;
                return 0;
        }
        if (fd < 0) {
                if (!ret->why[0])
                        snprintf(ret->why, sizeof(ret->why), "%s", strerror(-fd));
                return fd == -EPERM ? fd : -EPERM;
        }
        /* above the helper's fixed descriptors, which the spawn's dup2s write over */
        if (fd <= GR_HELPER_LIBRARY_FD) {
                int high = fcntl(fd, F_DUPFD_CLOEXEC, GR_HELPER_LIBRARY_FD + 1);
                close(fd);
                if (high < 0)
                        return -errno;
                fd = high;
        }
        ret->fd = fd;
        return 0;
}

void gr_nvml_lib_done(struct gr_nvml_lib *l)
{
        if (l->fd >= 0)
                close(l->fd);
        l->fd = -1;
}

const char *gr_helper_path(const gr_gpu_options *opts)
{
        if (opts && opts->helper && *opts->helper)
                return opts->helper;
        const char *h = gr_ctx_helper(opts ? opts->ctx : NULL);
        return h ? h : GR_HELPER_PATH;
}

/* Helpers that finished but had not yet exited (closing the driver's files takes a few ms):
 * reaped without blocking when the next helper starts. */
static pid_t pending[16];

static void reap_pending(void)
{
        for (size_t i = 0; i < GR_ELEMENTSOF(pending); i++) {
                int st;
                pid_t p = __atomic_load_n(&pending[i], __ATOMIC_RELAXED);
                if (p > 0 && waitpid(p, &st, WNOHANG) != 0)
                        __atomic_compare_exchange_n(&pending[i], &p, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        }
}

static void leave_pending(pid_t pid)
{
        reap_pending();
        for (size_t i = 0; i < GR_ELEMENTSOF(pending); i++) {
                pid_t none = 0;
                if (__atomic_compare_exchange_n(&pending[i], &none, pid, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                        return;
        }
        int st;
        waitpid(pid, &st, 0); /* no room: it has finished and is only exiting */
}

/* fd moved to a number of at least 5, so that placing it at 3 or 4 in the child cannot
 * overwrite the other one */
static int fd_above_4(int fd)
{
        if (fd > 4)
                return fd;
        int n = fcntl(fd, F_DUPFD_CLOEXEC, 5);
        int r = n < 0 ? -errno : n;
        close(fd);
        return r;
}

static void unmap(struct gr_helper *h)
{
        if (h->shm)
                munmap(h->shm, h->shm_size);
        h->shm = NULL;
}

static int spawn(struct gr_helper *h, const char *exe, int memfd, int done_wr, int library_fd)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        int r = posix_spawn_file_actions_init(&fa);
        if (r != 0)
                return -r;
        r = posix_spawnattr_init(&attr);
        if (r != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return -r;
        }
        /* only its two descriptors: a helper stuck in the driver must not keep a pipe that
         * someone reads our output from open */
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, memfd, GR_HELPER_SHM_FD);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, done_wr, GR_HELPER_DONE_FD);
        if (r == 0 && library_fd >= 0)
                r = posix_spawn_file_actions_adddup2(&fa, library_fd, GR_HELPER_LIBRARY_FD);
        if (r == 0)
                r = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        if (r == 0)
                r = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        if (r == 0)
                r = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
#ifdef HAVE_POSIX_SPAWN_FILE_ACTIONS_ADDCLOSEFROM_NP
        if (r == 0)
                r = posix_spawn_file_actions_addclosefrom_np(&fa, library_fd >= 0 ? GR_HELPER_LIBRARY_FD + 1
                                                                                  : GR_HELPER_DONE_FD + 1);
#endif
        /* whatever the caller blocks or ignores (gpureap run blocks INT and TERM for its
         * signalfd), the helper starts with every signal at its default */
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        char *const argv[] = { (char *)"gpureap-nvml-helper", (char *)GR_NVML_HELPER_ARG, NULL };
        if (r == 0)
                r = posix_spawn(&h->pid, exe, &fa, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        return -r;
}

int gr_helper_start(struct gr_helper *h, const char *exe, enum gr_helper_kind kind, size_t shm_size,
                    const struct gr_nvml_lib *library, const gr_gpu_options *opts)
{
        memset(h, 0, sizeof(*h));
        h->pipe_rd = -1;
        reap_pending();
        int memfd = (int)syscall(SYS_memfd_create, "gpureap-nvml", 1u /* MFD_CLOEXEC */);
        if (memfd < 0)
                return -errno;
        memfd = fd_above_4(memfd);
        if (memfd < 0)
                return memfd;
        /* sparse: pages are touched only as the helper fills them */
        int r = ftruncate(memfd, (off_t)shm_size) < 0 ? -errno : 0;
        if (r == 0) {
                h->shm = mmap(NULL, shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
                if (h->shm == MAP_FAILED) {
                        h->shm = NULL;
                        r = -ENOMEM;
                }
        }
        if (r < 0) {
                close(memfd);
                return r;
        }
        h->shm_size = shm_size;
        struct gr_helper_header *hdr = h->shm;
        hdr->magic = GR_HELPER_MAGIC;
        hdr->abi = GR_HELPER_ABI;
        hdr->kind = kind;
        hdr->size = shm_size;
        hdr->parent = (int32_t)getpid();
        gr_strlcpy(hdr->library, library->name, sizeof(hdr->library));
        hdr->library_by_fd = library->fd >= 0 ? GR_LIBRARY_BY_FD : library->missing ? GR_LIBRARY_MISSING : GR_LIBRARY_BY_NAME;
        hdr->progress.gpu = -1;
        unsigned threads = opts ? opts->nvml_threads : 0;
        hdr->threads_max = threads == 0 || threads > GR_NVML_THREADS_MAX ? GR_NVML_THREADS_MAX : threads;

        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                r = -errno;
                close(memfd);
                unmap(h);
                return r;
        }
        int done_wr = fd_above_4(p[1]);
        int rd = fd_above_4(p[0]);
        if (done_wr < 0 || rd < 0) {
                r = done_wr < 0 ? done_wr : rd;
                if (done_wr >= 0)
                        close(done_wr);
                if (rd >= 0)
                        close(rd);
                close(memfd);
                unmap(h);
                return r;
        }
        h->started_us = gr_now_us();
        r = spawn(h, exe, memfd, done_wr, library->fd);
        close(memfd);
        close(done_wr);
        if (r < 0) {
                h->pid = 0;
                close(rd);
                unmap(h);
                return r;
        }
        h->pipe_rd = rd;
        return 0;
}

static int read_answer(struct gr_helper *h)
{
        for (;;) {
                char c;
                ssize_t k = read(h->pipe_rd, &c, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                return k == 1 ? 1 : -1; /* EOF: it ended without finishing */
        }
}

/* The progress that the deadline runs on: the main thread's; while the GPU threads run, the
 * one of theirs that has been in its call longest, or, when all have finished, the last to
 * finish (the main thread is about to take over). A thread that finished early does not count
 * against one still in a call. */
static const struct gr_nvml_progress *current_progress(const struct gr_helper_header *hdr)
{
        unsigned n = __atomic_load_n(&hdr->n_threads, __ATOMIC_ACQUIRE);
        if (n == 0)
                return &hdr->progress;
        if (n > GR_NVML_THREADS_MAX)
                n = GR_NVML_THREADS_MAX;
        const struct gr_nvml_progress *busy = NULL, *last = NULL;
        uint64_t busy_us = 0, last_us = 0;
        for (unsigned i = 0; i < n; i++) {
                const struct gr_nvml_progress *p = &hdr->threads[i];
                /* finished first: its stamp is then the finish, never older */
                bool finished = __atomic_load_n(&p->finished, __ATOMIC_ACQUIRE);
                uint64_t since = __atomic_load_n(&p->started_us, __ATOMIC_ACQUIRE);
                if (finished) {
                        if (!last || since > last_us)
                                last = p, last_us = since;
                } else if (!busy || since < busy_us) {
                        busy = p, busy_us = since;
                }
        }
        return busy ? busy : last;
}

int gr_helper_wait(struct gr_helper *h, uint64_t deadline_ms, uint64_t stall_ms)
{
        const struct gr_helper_header *hdr = h->shm;
        uint64_t deadline_us = deadline_ms == UINT64_MAX ? UINT64_MAX : deadline_ms * 1000;
        for (;;) {
                /* what is there first: a helper that answered while we were busy has answered */
                struct pollfd pfd = { .fd = h->pipe_rd, .events = POLLIN };
                if (poll(&pfd, 1, 0) > 0)
                        return read_answer(h);
                uint64_t now = gr_now_us(), until = deadline_us, step_ms = 60000;
                if (stall_ms) {
                        /* the driver's own time: since the call it is in began. A later call
                         * only moves the limit on, so sleeping until it is safe; before the
                         * first call we look often, as that one may begin any moment */
                        uint64_t since = __atomic_load_n(&current_progress(hdr)->started_us, __ATOMIC_ACQUIRE);
                        uint64_t limit = since ? since + stall_ms * 1000
                                               : h->started_us + (stall_ms > GR_HELPER_START_MS ? stall_ms : GR_HELPER_START_MS) * 1000;
                        if (limit < until)
                                until = limit;
                        if (!since)
                                step_ms = 2;
                }
                if (now >= until)
                        return 0;
                uint64_t wait_ms = (until - now + 999) / 1000;
                poll(&pfd, 1, (int)(wait_ms < step_ms ? wait_ms : step_ms)); /* then the loop looks again */
        }
}

void gr_helper_current_call(const struct gr_helper *h, char *buf, size_t size, int *ret_gpu)
{
        if (ret_gpu)
                *ret_gpu = -1;
        if (size == 0)
                return;
        const struct gr_helper_header *hdr = h->shm;
        const struct gr_nvml_progress *p = hdr ? current_progress(hdr) : NULL;
        size_t i = 0;
        for (; p && i + 1 < size && i < sizeof(p->call) && p->call[i]; i++)
                buf[i] = p->call[i];
        buf[i] = '\0';
        if (p && ret_gpu && p->gpu >= 0 && p->gpu < GR_GPUS_MAX)
                *ret_gpu = p->gpu;
        gr_text_sanitize(buf);
        if (!buf[0])
                gr_strlcpy(buf, "start", size);
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
        unmap(h);
        return ok;
}
