/* The helper's side (helper.h): the main of the program that gpu-query.c and drain.c start.
 * It is a fresh single-threaded process, so loading NVML here is safe whatever the caller is;
 * the threads it starts itself to read several GPUs at once (nvml.c) are all joined before it
 * reports. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/helper.h"
#include "gpureap/basic.h"

void gr_helper_done(int done_fd)
{
        char d = 'd';
        while (write(done_fd, &d, 1) < 0 && errno == EINTR)
                ;
}

static size_t layout_size(uint32_t kind)
{
        switch (kind) {
        case GR_HELPER_QUERY: return sizeof(struct gr_query_shared);
        case GR_HELPER_DRAIN: return sizeof(struct gr_drain_shared);
        }
        return 0;
}

int gr_nvml_helper_main(int argc, char **argv)
{
        if (argc != 2 || strcmp(argv[1], GR_NVML_HELPER_ARG) != 0)
                return -EINVAL;
        /* never outlive the caller: a helper is of no use to anyone after it. The caller is the
         * thread that started us; checked after asking, in case it went before we could ask */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        struct stat st;
        if (fstat(GR_HELPER_SHM_FD, &st) < 0 || !S_ISREG(st.st_mode) ||
            (size_t)st.st_size < sizeof(struct gr_helper_header))
                return -EBADF;
        void *shm = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, GR_HELPER_SHM_FD, 0);
        if (shm == MAP_FAILED)
                return -EBADF;
        struct gr_helper_header *hdr = shm;
        size_t want = layout_size(hdr->kind);
        if (hdr->magic != GR_HELPER_MAGIC || hdr->abi != GR_HELPER_ABI || want == 0 ||
            hdr->size != want || (size_t)st.st_size < want)
                return -EPROTO; /* another gpureap's helper: the layouts would not match */
        if (getppid() != (pid_t)hdr->parent)
                _exit(0);
        close(GR_HELPER_SHM_FD);
        prctl(PR_SET_NAME, "gpureap-nvml");
        signal(SIGPIPE, SIG_IGN);
        hdr->library[sizeof(hdr->library) - 1] = '\0';
        if (hdr->threads_max == 0 || hdr->threads_max > GR_NVML_THREADS_MAX)
                hdr->threads_max = GR_NVML_THREADS_MAX;
        if (hdr->kind == GR_HELPER_QUERY) {
                struct gr_query_shared *sh = shm;
                gr_nvml_read(sh);
                /* the time of the end, for the caller's account of the driver's time */
                gr_strlcpy(hdr->progress.call, "done", sizeof(hdr->progress.call));
                __atomic_store_n(&hdr->progress.started_us, gr_now_us(), __ATOMIC_RELEASE);
                gr_helper_done(GR_HELPER_DONE_FD);
        } else {
                gr_nvml_watch_drain(shm, gr_helper_done, GR_HELPER_DONE_FD);
        }
        /* no nvmlShutdown and no exit handlers: the driver cleans up after a process that ends,
         * and a shutdown that hung would only delay the end */
        _exit(0);
}
