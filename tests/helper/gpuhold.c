/* gpuhold: the test helper that builds the process trees gpureap must understand, holding fake
 * NVIDIA device files ($GPUREAP_DEV_DIR) and fake contexts ($GPUREAP_FAKE_CTX_DIR).
 * It runs its verbs left to right:
 *   pidfile PATH ROLE      append "ROLE PID" to PATH (how tests learn who is who); right before
 *                          "cuda": after it, once the context exists
 *   cuda MINOR GPU MIB     open the device files as a CUDA process does, map them, and create a
 *                          context of MIB MiB on GPU index GPU (see tests/fake-nvml/fake-ctx.h)
 *   monitor MINOR          open the device files as an NVML-only client does, no context
 *   open FILE              open one file of the device directory
 *   spawn-holder PATH ROLE fork a child that inherits everything and sleeps; record it; go on
 *   child                  fork: the child goes on with the next verbs, the parent sleeps and
 *                          never reaps it (so it stays a zombie once it exits)
 *   setpgid                lead a new process group (as a launcher run with job control)
 *   setsid                 lead a new session (as a worker a launcher starts with setsid)
 *   child-exit-on-usr1 N   fork: the child goes on with the next verbs; the parent waits for
 *                          SIGUSR1, then exits with status N (a launcher that ends by itself)
 *   worker PATH ROLE MINOR GPU MIB
 *                          fork a child that runs 'cuda MINOR GPU MIB', records ROLE and sleeps
 *   daemon-worker PATH ROLE MINOR GPU MIB
 *                          the same through a double fork: the worker is reparented at once
 *   listen PATH            listen on a TCP port of 127.0.0.1 and record "port N" in PATH
 *   name STR               set its own process name (comm) with prctl(PR_SET_NAME)
 *   ignore-term            ignore SIGTERM
 *   setuid-on-usr1 UID     wait for SIGUSR1, then become UID (real, effective, saved) and sleep:
 *                          a process whose owner changes between a plan and its signal
 *   dstate PATH ROLE       sit in state D, still killable: a vfork-like child (recorded as ROLE)
 *                          shares our memory and sleeps without exec, so we wait for it in the
 *                          kernel (TASK_KILLABLE, shown as D) like a process stuck in a driver call
 *   leader-exit            start a thread that sleeps, then end the main thread alone
 *                          (pthread_exit): the leader is a zombie, /proc/PID/fd is empty, and
 *                          the process, its fds and its context live on in the other thread
 *   leader-exit-unshared   the same, but the first thread started takes a file table of its own
 *                          (unshare(CLONE_FILES)) and closes every fd above 2 in it, and a second
 *                          one keeps the process's table: the GPU is in the second thread's
 *   thread-holds           start a thread that takes a file table of its own (unshare(CLONE_FILES):
 *                          a copy, with the device files), then close every fd above 2 in the
 *                          leader's: the leader lives on, /proc/PID/fd shows no device file, and
 *                          only the thread's table (task/TID/fd) holds the GPU
 *   sleep                  sleep until killed
 *   exit                   exit 0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>

#include "../fake-nvml/fake-ctx.h"

static const char *dev_dir(void)
{
        const char *d = getenv("GPUREAP_DEV_DIR");
        return d && *d ? d : "/dev";
}

static void die(const char *what)
{
        fprintf(stderr, "gpuhold: %s: %s\n", what, strerror(errno));
        exit(2);
}

static int open_dev(const char *name)
{
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dev_dir(), name);
        int fd = open(path, O_RDWR); /* no O_CLOEXEC: children inherit it, as with CUDA */
        if (fd < 0)
                die(path);
        return fd;
}

static void map_dev(int fd, int times)
{
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size < 4096)
                return;
        for (int i = 0; i < times; i++)
                if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
                        die("mmap");
}

/* The host PID: NSpid's first field as the mounted /proc shows it (tests in a new PID
 * namespace keep the host's /proc), as the real driver reports host PIDs. */
static unsigned host_pid(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        unsigned pid = (unsigned)getpid();
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "NSpid: %u", &pid) == 1)
                        break;
        if (f)
                fclose(f);
        return pid;
}

static void create_context(unsigned gpu, unsigned long long mib)
{
        const char *dir = getenv("GPUREAP_FAKE_CTX_DIR");
        if (!dir || !*dir) {
                fprintf(stderr, "gpuhold: GPUREAP_FAKE_CTX_DIR is not set\n");
                exit(2);
        }
        static unsigned seq;
        char path[1024];
        unsigned pid = host_pid();
        snprintf(path, sizeof(path), "%s/ctx-%u-%u-%u", dir, pid, gpu, seq++);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
        if (fd < 0)
                die(path);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
                die("F_OFD_SETLK");
        /* the lock is taken before the content exists: the fake skips unparsable tokens */
        if (dprintf(fd, "pid=%u gpu=%u mib=%llu\n", pid, gpu, mib) < 0)
                die("write");
}

static void record(const char *path, const char *role, pid_t pid)
{
        char line[128];
        int n = snprintf(line, sizeof(line), "%s %d\n", role, (int)pid);
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                die(path);
        if (write(fd, line, (size_t)n) != n) /* one write: lines never interleave */
                die("write");
        close(fd);
}

static void *sleeper_thread(void *arg)
{
        for (;;)
                pause();
        return arg;
}

static volatile int unshared_done;

static void *unsharing_thread(void *arg)
{
        if (unshare(CLONE_FILES) == 0)
                for (int fd = 3; fd < 1024; fd++)
                        close(fd);
        __atomic_store_n(&unshared_done, 1, __ATOMIC_SEQ_CST);
        for (;;)
                pause();
        return arg;
}

/* takes a copy of the process's table and keeps it */
static void *keeping_thread(void *arg)
{
        if (unshare(CLONE_FILES) != 0)
                die("unshare(CLONE_FILES)");
        __atomic_store_n(&unshared_done, 1, __ATOMIC_SEQ_CST);
        for (;;)
                pause();
        return arg;
}

static void cuda(const char *minor, const char *gpu, const char *mib)
{
        char name[32];
        snprintf(name, sizeof(name), "nvidia%s", minor);
        open_dev("nvidiactl");
        open_dev("nvidia-uvm");
        open_dev("nvidia-uvm");
        int g = open_dev(name);
        open_dev(name);
        open_dev(name);
        map_dev(g, 40);
        create_context((unsigned)strtoul(gpu, NULL, 10), strtoull(mib, NULL, 10));
}

static void sleep_forever(void);

/* fork a child (through a double fork with daemon) that runs 'cuda' when asked, records itself
 * as a[1] in a[0] and sleeps; return once it has recorded itself */
static void worker(char **a, bool daemon, bool with_cuda)
{
        int p[2];
        if (pipe(p) < 0)
                die("pipe");
        pid_t c = fork();
        if (c < 0)
                die("fork");
        if (c == 0) {
                close(p[0]);
                if (daemon) {
                        pid_t gc = fork();
                        if (gc < 0)
                                die("fork");
                        if (gc > 0)
                                _exit(0); /* the grandchild is reparented at once */
                }
                if (with_cuda)
                        cuda(a[2], a[3], a[4]);
                record(a[0], a[1], (pid_t)host_pid());
                close(p[1]);
                sleep_forever();
        }
        close(p[1]);
        char b;
        while (read(p[0], &b, 1) < 0 && errno == EINTR)
                ;
        close(p[0]);
        if (daemon)
                waitpid(c, NULL, 0);
}

static void sleep_forever(void)
{
        for (;;)
                pause();
}

static void on_usr1(int sig)
{
        (void)sig;
}

static void setuid_on_usr1(uid_t uid)
{
        sigset_t set, old;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, &old);
        signal(SIGUSR1, on_usr1);
        sigsuspend(&old);
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                die("setresuid");
        sleep_forever();
}

static const char *dstate_path, *dstate_role;
static pid_t dstate_parent;

/* The child of 'dstate'. It runs on its own stack in our address space while we are blocked, so
 * it makes system calls only (no stdio, no malloc): it must die with us (PDEATHSIG), hold none
 * of the device files (its copy of the fd table is closed; our open files, and with them the
 * context's lock, stay ours), record itself and sleep. */
static int dstate_child(void *arg)
{
        (void)arg;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != dstate_parent)
                _exit(0); /* the parent was killed before PDEATHSIG was set */
        int fd = open(dstate_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0) {
                char line[128], num[16];
                size_t n = 0, k = 0;
                for (const char *r = dstate_role; *r && n < 100; r++)
                        line[n++] = *r;
                line[n++] = ' ';
                /* not in a PID namespace here (the tests that use it are not): getpid is the host PID */
                for (unsigned v = (unsigned)syscall(SYS_getpid); k == 0 || v; v /= 10)
                        num[k++] = (char)('0' + v % 10);
                while (k)
                        line[n++] = num[--k];
                line[n++] = '\n';
                ssize_t w = write(fd, line, n); /* one write: lines never interleave */
                (void)w;
                close(fd);
        }
        syscall(SYS_close_range, 0U, ~0U, 0U);
        for (;;)
                pause();
        return 0;
}

static void dstate(const char *path, const char *role)
{
        static char stack[64 * 1024] __attribute__((aligned(16)));
        dstate_path = path;
        dstate_role = role;
        dstate_parent = getpid();
        /* CLONE_VFORK: we wait in the kernel until the child execs or exits, which it never does */
        if (clone(dstate_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL) < 0)
                die("clone");
        sleep_forever(); /* the child died (it was killed): sleep, still holding the GPU */
}

int main(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                const char *v = argv[i];
                int left = argc - i - 1;
                if (strcmp(v, "pidfile") == 0 && left >= 6 && strcmp(argv[i + 3], "cuda") == 0) {
                        /* "pidfile F ROLE cuda ...": recorded once the context is made. A test
                         * that waits for the role and then looks at the GPU would otherwise
                         * look in between, now and then (one CI run in many saw two owners of
                         * three) */
                        cuda(argv[i + 4], argv[i + 5], argv[i + 6]);
                        record(argv[i + 1], argv[i + 2], (pid_t)host_pid());
                        i += 6;
                } else if (strcmp(v, "pidfile") == 0 && left >= 2) {
                        record(argv[i + 1], argv[i + 2], (pid_t)host_pid());
                        i += 2;
                } else if (strcmp(v, "cuda") == 0 && left >= 3) {
                        cuda(argv[i + 1], argv[i + 2], argv[i + 3]);
                        i += 3;
                } else if ((strcmp(v, "worker") == 0 || strcmp(v, "daemon-worker") == 0) && left >= 5) {
                        worker(&argv[i + 1], v[0] == 'd', true);
                        i += 5;
                } else if (strcmp(v, "setsid") == 0) {
                        if (setsid() < 0)
                                die("setsid");
                } else if (strcmp(v, "child-exit-on-usr1") == 0 && left >= 1) {
                        int code = (int)strtol(argv[++i], NULL, 10);
                        sigset_t usr1;
                        sigemptyset(&usr1);
                        sigaddset(&usr1, SIGUSR1);
                        sigprocmask(SIG_BLOCK, &usr1, NULL);
                        pid_t c = fork();
                        if (c < 0)
                                die("fork");
                        if (c > 0) {
                                int sig;
                                sigwait(&usr1, &sig);
                                _exit(code);
                        }
                        sigprocmask(SIG_UNBLOCK, &usr1, NULL);
                } else if (strcmp(v, "setpgid") == 0) {
                        if (setpgid(0, 0) < 0)
                                die("setpgid");
                } else if (strcmp(v, "listen") == 0 && left >= 1) {
                        int sfd = socket(AF_INET, SOCK_STREAM, 0); /* inherited, like a server's */
                        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                        socklen_t len = sizeof(a);
                        if (sfd < 0 || bind(sfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(sfd, 8) < 0 ||
                            getsockname(sfd, (struct sockaddr *)&a, &len) < 0)
                                die("listen");
                        record(argv[++i], "port", (pid_t)ntohs(a.sin_port));
                } else if (strcmp(v, "monitor") == 0 && left >= 1) {
                        char name[32];
                        snprintf(name, sizeof(name), "nvidia%s", argv[i + 1]);
                        open_dev("nvidiactl");
                        int g = open_dev(name);
                        open_dev(name);
                        open_dev(name);
                        open_dev("nvidia-uvm");
                        open_dev("nvidia-uvm");
                        map_dev(g, 4);
                        i += 1;
                } else if (strcmp(v, "open") == 0 && left >= 1) {
                        open_dev(argv[++i]);
                } else if (strcmp(v, "spawn-holder") == 0 && left >= 2) {
                        worker(&argv[i + 1], false, false);
                        i += 2;
                } else if (strcmp(v, "child") == 0) {
                        pid_t c = fork();
                        if (c < 0)
                                die("fork");
                        if (c > 0)
                                sleep_forever(); /* never reaps */
                } else if (strcmp(v, "name") == 0 && left >= 1) {
                        if (prctl(PR_SET_NAME, argv[++i], 0, 0, 0) < 0)
                                die("PR_SET_NAME");
                } else if (strcmp(v, "setuid-on-usr1") == 0 && left >= 1) {
                        setuid_on_usr1((uid_t)strtoul(argv[i + 1], NULL, 10));
                } else if (strcmp(v, "dstate") == 0 && left >= 2) {
                        dstate(argv[i + 1], argv[i + 2]);
                        i += 2;
                } else if (strcmp(v, "ignore-term") == 0) {
                        signal(SIGTERM, SIG_IGN);
                } else if (strcmp(v, "leader-exit") == 0) {
                        pthread_t th;
                        if (pthread_create(&th, NULL, sleeper_thread, NULL) != 0)
                                return 1;
                        pthread_exit(NULL);
                } else if (strcmp(v, "leader-exit-unshared") == 0) {
                        pthread_t t1, t2;
                        if (pthread_create(&t1, NULL, unsharing_thread, NULL) != 0)
                                return 1;
                        while (!__atomic_load_n(&unshared_done, __ATOMIC_SEQ_CST))
                                usleep(1000);
                        if (pthread_create(&t2, NULL, sleeper_thread, NULL) != 0)
                                return 1;
                        pthread_exit(NULL);
                } else if (strcmp(v, "thread-holds") == 0) {
                        pthread_t t1;
                        if (pthread_create(&t1, NULL, keeping_thread, NULL) != 0)
                                return 1;
                        while (!__atomic_load_n(&unshared_done, __ATOMIC_SEQ_CST))
                                usleep(1000);
                        for (int fd = 3; fd < 1024; fd++)
                                close(fd);
                } else if (strcmp(v, "sleep") == 0) {
                        sleep_forever();
                } else if (strcmp(v, "exit") == 0) {
                        _exit(0);
                } else {
                        fprintf(stderr, "gpuhold: unknown or incomplete verb '%s'\n", v);
                        return 2;
                }
        }
        return 0;
}
