/* gpureap run -- CMD: run a command so that, whatever way it ends, every process it started is
 * gone and the GPUs it used have their memory back. The command runs in its own session (at a
 * terminal: as its foreground job, or on a pty of its own, src/run-tty.c); gpureap is its child
 * subreaper (orphans come back to it) and, where cgroup v2 is writable, puts it in a leaf cgroup
 * of its own that even setsid/double-fork escapees cannot leave. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <syslog.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap/tree.h"
#include "gpureap.h"
#include "run-tty.h"


static void run_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap run [OPTIONS] -- COMMAND [ARGS...]\n"
                "\n"
                "Run COMMAND so that it leaves no process and no GPU memory behind: when it exits,\n"
                "when gpureap gets INT, TERM, HUP or QUIT, or at a deadline, every process it started\n"
                "is ended (TERM, CONT, grace, KILL, again until none is left) and the GPUs it used are\n"
                "awaited until the driver has their memory back. Every other signal is passed on\n"
                "(USR1, USR2, ALRM, WINCH, PIPE, URG, a sent ABRT or SEGV...; without a terminal\n"
                "also TSTP, TTIN, TTOU, CONT). A signal ignored when gpureap starts (nohup) stays\n"
                "ignored by the command and never ends the run: it is passed on.\n"
                "\n"
                "  --grace DUR          between SIGTERM and SIGKILL (default 5s)\n"
                "  --max-time DUR       end it after this long (exit 124)\n"
                "  --ready-port PORT    ready once 127.0.0.1:PORT accepts a connection\n"
                "  --ready-log REGEX    ready once a line of its output matches (extended regex)\n"
                "  --ready-timeout DUR  not ready by then: diagnose the tree, end it (exit 121;\n"
                "                       default 10m with --ready-*)\n"
                "  --ready-file FILE    create FILE once ready (removed at the end); readiness also\n"
                "                       goes to systemd (READY=1 to $NOTIFY_SOCKET, Type=notify):\n"
                "                       once started, or with --ready-* once that is seen\n"
                "  --stall-timeout DUR  no output and no CPU time for that long: diagnose, end (122)\n"
                "  --drain-timeout DUR  how long to wait for the GPU memory at the end (default 30s)\n"
                "  --no-cgroup          do not create a cgroup (the subreaper alone finds the tree)\n"
                "  --tty WHEN           auto (default): at a terminal the command is its foreground\n"
                "                       job (Ctrl-C, Ctrl-Z, fg reach it), and with a watchdog and\n"
                "                       stdout a terminal it gets a pseudo-terminal of its own;\n"
                "                       always: a pseudo-terminal whatever stdin and stdout are;\n"
                "                       never: no terminal, a session of its own\n"
                "  --quiet              no summary line\n"
                "  --json FILE          write the result as JSON to FILE at the end ('-': stdout, after\n"
                "                       the command's output): how it ended, what was ended, the drain\n"
                "  --remap-exit CODE    exit 0 when the command's status is CODE (tini -e); repeatable\n"
                "  --signal-group       pass signals on to the command's process group (tini -g)\n"
                "  --rewrite-signal S:R\n"
                "                       a signal S that gpureap gets is taken for R (dumb-init -r);\n"
                "                       R 0: S is dropped; repeatable\n"
                "  --parent-death-signal SIG\n"
                "                       gpureap gets SIG when its parent dies (tini -p)\n"
                "  -v, --verbose        say what is passed on and how the tree is ended (tini -v)\n"
                "\n"
                "exit status: the command's (128+N when a signal N ended it; 143 when gpureap got TERM),\n"
                "121 not ready, 122 stalled, 124 max time, 125 gpureap failed (also: the --json result\n"
                "could not be written), 126 cannot execute,\n"
                "127 not found, 2 usage\n");
}

struct run {
        char **cmd;
        uint64_t grace, max_time, ready_timeout, stall_timeout, drain_timeout;
        int ready_port;
        bool ready_log_set, no_cgroup, quiet;
        const char *json_path;
        const char *ready_file;
        char json_abs[4096], ready_abs[4096]; /* as given, from the caller's directory: gpureap
                                                 leaves it (to /) once the command runs */
        dev_t ready_dev;           /* the ready file as written: removed at the end only if still it */
        ino_t ready_ino;
        bool announced;
        regex_t ready_re;
        char cgroup[4096];
        pid_t child;                    /* gpureap's child: the command, or with a pty the shim */
        pid_t cmd_pid;                  /* the command */
        enum tty_when tty_when;
        struct run_tty tty;
        uint64_t paused_ms;             /* stopped at a terminal: not counted as not ready */
        uint64_t stopped_at_ms;         /* without one: since a stop signal was passed on */
        int sigfd;
        int out_fd, err_fd;
        uint64_t start_ms, last_activity_ms, last_cpu, stall_check_ms;
        bool ready;
        char last_line[256];
        size_t line_len;
        char line[1024];
        bool tty_lines;                 /* output from a pty: \r ends a line too, escapes left out */
        bool after_cr;
        int esc;                        /* in an escape sequence: its kind */
        uint64_t gpu_minors;            /* device minors the tree was seen holding */
        struct sampled *sampled;        /* who was looked at, and when to look again */
        size_t n_sampled, cap_sampled;
        pid_t gone[1024];               /* the last members that left the tree (a ring) */
        size_t n_gone;
        pid_t *end_pids;                /* those and the tree when it was ended, sorted: the drain */
        size_t n_end_pids;              /* looks for them among the driver's context owners */
        gr_tree_proc *end_before;       /* the tree as listed for the last look before the signal */
        size_t n_end_before;
        uint64_t end_before_us;         /* when */
        bool maybe_opened;              /* a member looked at without a GPU was not looked at
                                           again at the end: it may have opened one since */
        /* AMD and Intel (docs/drm.md): a member was seen holding a DRM or KFD file; the view
         * just before the first signal, and the clients held by the tree alone in it */
        bool drm_used;
        gr_snapshot *drm_before;
        gr_drm_key *drm_keys;
        size_t n_drm_keys;
        unsigned reaped_orphans;
        unsigned killed_term, killed_kill;
        unsigned not_ended;             /* members still alive when the teardown gave up */
        bool cgroup_tried;
        int cgroup_lock;                /* the leaf's directory, flocked while the run lives */
        bool cgroup_partial;            /* not every member was moved into it (cut short) */
        int cgroup_kill_fd;             /* its cgroup.kill, for a crash of gpureap's */
        int group_fd;                   /* a pidfd of the command, which leads a process group of
                                           its own session's (none as a terminal's job) */
        bool out_broken, err_broken; /* our stdout or stderr cannot be written any more */
        bool signal_group;              /* --signal-group: passed on to the command's group */
        int rewrite[_NSIG];             /* --rewrite-signal: what a signal is taken for; 0: itself,
                                           -1: dropped */
        bool remap_exit[256];           /* --remap-exit: these statuses of the command are 0 */
        int verbose;
        uint64_t caller_ignored;        /* bit n-1: signal n was ignored when gpureap started */
};

/* GPUREAP_RUN_TRACE=1: the monotonic time of each step of the end, on stderr once gpureap is
 * done (docs/benchmarks.md: where the teardown's time goes). A profiling aid: off, it costs one
 * getenv */
static struct {
        bool on;
        unsigned n;
        struct { const char *step; uint64_t us; } at[32];
        unsigned ticks, reaped;   /* the end's rounds, and the children it reaped */
} trace;

static void trace_step(const char *step)
{
        if (trace.on && trace.n < GR_ELEMENTSOF(trace.at))
                trace.at[trace.n++] = (typeof(trace.at[0])){ step, gr_now_us() };
}

static void trace_print(void)
{
        if (trace.n)
                fprintf(stderr, "gpureap: trace: the end began at %llu us (CLOCK_MONOTONIC)\n",
                        (unsigned long long)trace.at[0].us);
        for (unsigned i = 0; i < trace.n; i++)
                fprintf(stderr, "gpureap: trace: %8.3f ms  %s\n", (double)(trace.at[i].us - trace.at[0].us) / 1000,
                        trace.at[i].step);
        if (trace.on)
                fprintf(stderr, "gpureap: trace: %u rounds, %u children reaped in the end\n", trace.ticks, trace.reaped);
}

/* The cgroup the listings take as the tree's: none while some members were never moved into it
 * (gr_tree_list does not ask the leaf's members for their children) */
static const char *listing_cgroup(const struct run *r)
{
        return r->cgroup_partial ? NULL : r->cgroup;
}

static int64_t now_ms_since(const struct run *r)
{
        return (int64_t)(gr_now_ms() - r->start_ms);
}

/* Can a process here hold a GPU at all: the driver's control device is there (GPUREAP_DEV_DIR in
 * the tests) or the driver is loaded. Where neither is, the tree is not looked at for GPU files
 * (a CPU node, the CI machine): every look would find nothing. Once true, it stays. */
static bool nvidia_present(void)
{
        static bool present;
        if (present)
                return true;
        char path[4200];
        snprintf(path, sizeof(path), "%s/nvidiactl", gr_context_dev_dir(NULL));
        present = access(path, F_OK) == 0 || access("/proc/driver/nvidia", F_OK) == 0;
        return present;
}

/* An AMD or Intel GPU in sysfs (docs/drm.md; GPUREAP_SYS_ROOT in the tests): read once, at the
 * first look at the tree (a command that ends at once never pays it) */
static bool drm_present(void)
{
        static int present = -1;
        if (present < 0) {
                gr_drm_report *rep = NULL;
                present = gr_drm_report_read(&(gr_drm_input){ 0 }, &rep) == 0 && rep && rep->n_gpus > 0;
                gr_drm_report_free(rep);
        }
        return present;
}

static bool driver_present(void)
{
        return nvidia_present() || drm_present();
}

/* gpureap itself was told to end (its signals wait in the signalfd): long steps of the
 * supervision give way to the teardown */
static const int ending_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };

/* A signal that gpureap would die of, sent to it (kill -ABRT, -SEGV): a handler of its own,
 * since a fault of gpureap's own would not run one while it is blocked (the kernel unblocks it and
 * kills). One sent by another process is passed on as any other; a real fault, or gpureap's own
 * abort(), ends the tree first (cgroup.kill of the leaf, SIGKILL to the command's group), then
 * gpureap dies of it: nothing is left behind, and the terminal's modes are put back. */
static const int fatal_signals[] = { SIGABRT, SIGSEGV, SIGILL, SIGBUS, SIGFPE };
static volatile sig_atomic_t fatal_sent;          /* bit i: fatal_signals[i] sent, to pass on */
static volatile sig_atomic_t crash_kill_fd = -1;  /* the leaf's cgroup.kill */
static volatile sig_atomic_t crash_pgid;          /* the command's group while it is not reaped */
static bool fatal_taken[GR_ELEMENTSOF(fatal_signals)];
static bool fatal_ignored[GR_ELEMENTSOF(fatal_signals)]; /* by the caller: so for the command */

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
        (void)uc;
        size_t i = 0;
        while (i + 1 < GR_ELEMENTSOF(fatal_signals) && fatal_signals[i] != sig)
                i++;
        if (si->si_code <= 0 && si->si_pid != getpid()) { /* SI_USER, SI_QUEUE, SI_TKILL */
                fatal_sent |= 1 << i;
                return;
        }
        int e = errno;
        run_tty_crash_restore(); /* async-signal-safe: tcsetattr */
        int fd = crash_kill_fd;
        if (fd >= 0 && write(fd, "1", 1) < 0)
                e = errno;
        if (crash_pgid > 0)
                kill(-crash_pgid, SIGKILL);
        signal(sig, SIG_DFL);
        errno = e;
        if (si->si_code <= 0) { /* raised by gpureap itself: again, by default; a fault faults again */
                sigset_t s;
                sigemptyset(&s);
                sigaddset(&s, sig);
                sigprocmask(SIG_UNBLOCK, &s, NULL);
                raise(sig);
        }
}

static void fatal_install(const struct sigaction *caller)
{
        struct sigaction sa = { .sa_sigaction = fatal_handler, .sa_flags = SA_SIGINFO | SA_RESTART };
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < GR_ELEMENTSOF(fatal_signals); i++) {
                fatal_ignored[i] = caller[fatal_signals[i]].sa_handler == SIG_IGN;
                fatal_taken[i] = sigaction(fatal_signals[i], &sa, NULL) == 0;
        }
}

/* In the child, before the exec: the caller's disposition (a handler would not survive the exec
 * anyway; an ignored one does) */
static void fatal_uninstall(void)
{
        for (size_t i = 0; i < GR_ELEMENTSOF(fatal_signals); i++)
                if (fatal_taken[i])
                        signal(fatal_signals[i], fatal_ignored[i] ? SIG_IGN : SIG_DFL);
}

/* SIGNAL: a number, TERM, SIGTERM, RTMIN+N; 0 with allow_zero */
static int parse_signal(const char *s, bool allow_zero)
{
        int v;
        if (gr_parse_int(s, &v) == 0)
                return (v > 0 && v < SIGRTMAX + 1) || (allow_zero && v == 0) ? v : -1;
        if (strncasecmp(s, "SIG", 3) == 0)
                s += 3;
        if (strncasecmp(s, "RTMIN+", 6) == 0 && gr_parse_int(s + 6, &v) == 0 && v >= 0 && SIGRTMIN + v <= SIGRTMAX)
                return SIGRTMIN + v;
        if (strcasecmp(s, "RTMIN") == 0)
                return SIGRTMIN;
        if (strcasecmp(s, "RTMAX") == 0)
                return SIGRTMAX;
        for (int sig = 1; sig < SIGRTMIN; sig++) {
                const char *name = sigabbrev_np(sig);
                if (name && strcasecmp(s, name) == 0)
                        return sig;
        }
        return -1;
}

static const char *signal_name(int sig, char *buf, size_t size)
{
        const char *n = sig < SIGRTMIN ? sigabbrev_np(sig) : NULL;
        if (n)
                snprintf(buf, size, "SIG%s", n);
        else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
                snprintf(buf, size, "SIGRTMIN+%d", sig - SIGRTMIN);
        else
                snprintf(buf, size, "signal %d", sig);
        return buf;
}

static void verbose(const struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verbose(const struct run *r, const char *fmt, ...)
{
        if (!r->verbose)
                return;
        va_list ap;
        va_start(ap, fmt);
        fputs("gpureap run: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

/* What a signal gpureap got is taken for (--rewrite-signal): itself, another, or 0: dropped */
static int taken_signal(const struct run *r, int sig)
{
        if (sig <= 0 || sig >= (int)GR_ELEMENTSOF(r->rewrite) || r->rewrite[sig] == 0)
                return sig;
        return r->rewrite[sig] < 0 ? 0 : r->rewrite[sig];
}

/* A signal for the command (its group with --signal-group), only while it is not reaped: its
 * PID, the number of its group, may be another's after that */
static void pass_on(const struct run *r, int sig)
{
        char name[32];
        verbose(r, "passing %s on to %s %d", signal_name(sig, name, sizeof(name)),
                r->signal_group ? "the process group" : "the command", (int)r->cmd_pid);
        kill(r->signal_group ? -r->cmd_pid : r->cmd_pid, sig);
}

/* Does pid leave sig to its default action (neither caught nor ignored), from its status */
static bool default_action(pid_t pid, int sig)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        bool dfl = true;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "SigIgn:", 7) == 0 || strncmp(line, "SigCgt:", 7) == 0)
                        dfl = dfl && !(strtoull(line + 7, NULL, 16) >> (sig - 1) & 1);
        fclose(f);
        return dfl;
}

/* Without a terminal, job control passed on: TSTP, TTIN, TTOU, as themselves (a handler runs),
 * and where the command leaves them to their default, SIGSTOP after: the command leads a session
 * of its own, an orphaned process group, and the kernel drops a stop signal's default action
 * there. A stopped command counts toward neither watchdog. */
static void pass_on_job_control(struct run *r, int sig)
{
        pass_on(r, sig);
        if (sig == SIGCONT) {
                if (r->stopped_at_ms)
                        r->paused_ms += gr_now_ms() - r->stopped_at_ms;
                r->stopped_at_ms = 0;
                r->last_activity_ms = gr_now_ms();
                return;
        }
        if (default_action(r->cmd_pid, sig))
                kill(r->signal_group ? -r->cmd_pid : r->cmd_pid, SIGSTOP);
        if (!r->stopped_at_ms)
                r->stopped_at_ms = gr_now_ms();
}

/* A signal that ends gpureap, and with it the tree (the others are passed on) */
static bool ends_run(int sig)
{
        for (size_t i = 0; i < GR_ELEMENTSOF(ending_signals); i++)
                if (sig == ending_signals[i])
                        return true;
        return false;
}

/* ... and was not ignored by gpureap's caller: then it is passed on (the command inherited its
 * disposition), as tini passes on every signal */
static bool ending_signal(const struct run *r, int sig)
{
        return sig > 0 && ends_run(sig) && !(r->caller_ignored >> (sig - 1) & 1);
}

static uint64_t ignored_at_start; /* the run's caller_ignored, for end_pending */

static bool end_pending(void)
{
        sigset_t p;
        if (sigpending(&p) != 0)
                return false;
        for (size_t i = 0; i < GR_ELEMENTSOF(ending_signals); i++)
                if (sigismember(&p, ending_signals[i]) == 1 && !(ignored_at_start >> (ending_signals[i] - 1) & 1))
                        return true;
        return false;
}

static bool child_ended(const struct run *r);

/* The run is about to end: a signal that ends it is pending, or the command has ended (not yet
 * reaped). The work of a sample (moving a young tree of a thousand into the cgroup, looking at
 * each member) gives way to the end, which looks at the tree itself: it held the end back by up
 * to 55 ms on the H100 */
static bool end_coming(const struct run *r)
{
        return end_pending() || child_ended(r);
}

/* Who of the tree was looked at for GPU files: a process is looked at when it is first seen,
 * then again at growing intervals while it holds none (CUDA is often opened seconds after the
 * start, after the imports), and never again once it holds one: its GPUs are noted. A tree of
 * thousands costs a look at the new ones, not a walk of every fd every 250 ms. */
struct sampled {
        pid_t pid;
        uint64_t start_time, next_ms, interval_ms;
        bool looked;              /* its fds were read at least once */
        bool end_looked;          /* ... and again at the end */
        bool holds;
};

static int cmp_sampled(const void *a, const void *b)
{
        pid_t x = ((const struct sampled *)a)->pid, y = ((const struct sampled *)b)->pid;
        return (x > y) - (x < y);
}

/* Note which GPUs the tree holds (the tree's own fd directories): the due ones; at the end the
 * ones never looked at, or everyone not known to hold one. The record is rebuilt from the
 * listing each time (both sorted by PID): what is gone is forgotten, since PIDs come back, but
 * its PID is kept in a ring for the drain. */
enum sample_mode {
        SAMPLE_DUE,      /* while the command runs: the members due for a look */
        SAMPLE_END_PRE,  /* the end, before the first signal: everyone not known to hold a GPU,
                            the never looked at first, for END_PRE_BUDGET_US, or up to
                            END_PRE_MAX_US where the rate so far finishes them by then */
        SAMPLE_END_POST, /* after it: the never looked at that the first pass did not reach */
        SAMPLE_ALL,      /* after it: everyone not known to hold one */
};
#define END_PRE_BUDGET_US 2000
/* A look not finished makes the end ask the driver (an NVML start: 17-19 ms on the H100), so a
 * look that will finish within this is cheaper: a thousand members there take 5-8 ms */
#define END_PRE_MAX_US 12000
/* The last look's listing stands for who is in the command's group at its signal when it is at
 * most this old (the listing after the signal, before the end waited for the tree, was about as
 * late): a member may leave the group or join it meanwhile */
#define END_BEFORE_FRESH_US 3000

static void note_gone(struct run *r, pid_t pid)
{
        r->gone[r->n_gone++ % GR_ELEMENTSOF(r->gone)] = pid;
}

/* What the looks at members found: the GPUs they hold */
struct look_found {
        uint64_t minors;
        bool drm_used;
};

/* One member's fds: the GPUs it holds into *f (each thread of a parallel look its own); which
 * drivers can be there is decided by the caller, on the main thread (their answers are cached
 * in statics that the look's threads must not race on) */
static void look_member(struct sampled *sm, struct look_found *f, bool nvidia, bool drm)
{
        int q = drm ? gr_proc_holds_drm(NULL, NULL, sm->pid) : 0;
        if (q > 0 || (q < 0 && q != -ESRCH && q != -ENOENT)) {
                /* one whose files cannot all be read (more DRM fds than listed) counts as holding */
                f->drm_used = true;
                sm->holds = true;
        }
        gr_holding *h = NULL;
        if (!nvidia || gr_proc_holding(NULL, NULL, sm->pid, &h) < 0 || !h)
                return;
        for (unsigned g = 0; g < h->n_gpus; g++)
                if (h->gpus[g].minor < 64) {
                        f->minors |= 1ULL << h->gpus[g].minor;
                        sm->holds = true;
                }
        free(h);
}

static void found_join(struct run *r, const struct look_found *f)
{
        r->gpu_minors |= f->minors;
        r->drm_used = r->drm_used || f->drm_used;
}

/* One member's fds: the GPUs it holds join the tree's */
static void look_at(struct run *r, struct sampled *sm, bool nvidia, bool drm)
{
        struct look_found f = { 0 };
        look_member(sm, &f, nvidia, drm);
        found_join(r, &f);
}

/* The end's looks (sample_gpus): the members in order, each marked looked as it is, until the
 * budget is spent (0: none). Past LOOK_PARALLEL_MIN members, shared out to one thread per CPU
 * (at most LOOK_THREADS): a young tree's hundred members were read one by one before the
 * first signal, which waited for them (issue 25) */
#define LOOK_PARALLEL_MIN 16
#define LOOK_THREADS 8
struct look_job {
        struct sampled *sm;
        bool again;               /* looked at before: at the end once more */
};
struct look_pool {
        struct look_job *jobs;
        size_t n;
        size_t next;              /* atomic: the next job to take */
        uint64_t t0_us, budget_us, now_ms;
        size_t done;              /* atomic: the looks finished */
        bool nvidia, drm;         /* nvidia_present(), drm_present(): read before the threads */
};
struct look_worker {
        struct look_pool *pool;
        struct look_found found;
};

/* Past the budget, on as long as the rate so far finishes every look within END_PRE_MAX_US */
static bool look_in_budget(struct look_pool *p)
{
        if (!p->budget_us)
                return true;
        uint64_t spent = gr_now_us() - p->t0_us;
        if (spent <= p->budget_us)
                return true;
        size_t done = __atomic_load_n(&p->done, __ATOMIC_RELAXED);
        return spent < END_PRE_MAX_US && done > 0 && spent * p->n / done <= END_PRE_MAX_US;
}

static void *look_work(void *arg)
{
        struct look_worker *w = arg;
        struct look_pool *p = w->pool;
        for (;;) {
                size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
                if (i >= p->n || !look_in_budget(p))
                        break;
                struct sampled *sm = p->jobs[i].sm;
                if (!p->jobs[i].again) {
                        sm->next_ms = p->now_ms + sm->interval_ms;
                        sm->looked = true;
                        if (sm->interval_ms < 5000)
                                sm->interval_ms *= 2;
                }
                sm->end_looked = true;
                look_member(sm, &w->found, p->nvidia, p->drm);
                __atomic_fetch_add(&p->done, 1, __ATOMIC_RELAXED);
        }
        return NULL;
}

static void look_many(struct run *r, struct look_pool *p)
{
        long cpus = gr_cpus_online();
        size_t n_threads = p->n < LOOK_PARALLEL_MIN || cpus < 2 ? 1 : cpus < LOOK_THREADS ? (size_t)cpus : LOOK_THREADS;
        struct look_worker w[LOOK_THREADS] = { 0 };
        for (size_t i = 0; i < n_threads; i++)
                w[i].pool = p;
        /* the other threads block every signal, as this one does: the signalfd's stay here */
        gr_run_parallel(look_work, w, sizeof(w[0]), n_threads);
        for (size_t i = 0; i < n_threads; i++)
                found_join(r, &w[i].found);
}

/* The record for the tree as listed now (zombies left out), each member's earlier record kept
 * where it is the same process; who left since the last look is noted for the drain. At the
 * end, one that left before its fds were ever read may have held a GPU: the driver is asked
 * (the group's SIGTERM comes before the look after the signal, and ends most of a young tree
 * before it) */
static struct sampled *records(struct run *r, const gr_tree_proc *t, size_t n, bool at_end, size_t *ret_n)
{
        struct sampled *now_set = calloc(n ? n : 1, sizeof(*now_set));
        if (!now_set)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (t[i].state == 'Z')
                        continue;
                struct sampled key = { .pid = t[i].pid };
                struct sampled *old = r->n_sampled ? bsearch(&key, r->sampled, r->n_sampled, sizeof(key), cmp_sampled) : NULL;
                if (old && old->start_time == t[i].start_time)
                        now_set[k++] = *old;
                else
                        now_set[k++] = (struct sampled){ .pid = t[i].pid, .start_time = t[i].start_time, .interval_ms = 250 };
        }
        /* who left since the last look (both sorted by PID) */
        for (size_t i = 0, j = 0; i < r->n_sampled; i++) {
                while (j < k && now_set[j].pid < r->sampled[i].pid)
                        j++;
                if (j < k && now_set[j].pid == r->sampled[i].pid && now_set[j].start_time == r->sampled[i].start_time)
                        continue;
                note_gone(r, r->sampled[i].pid);
                if ((r->sampled[i].looked || at_end) && !r->sampled[i].holds && !r->sampled[i].end_looked)
                        r->maybe_opened = true;
        }
        *ret_n = k;
        return now_set;
}

static void sample_gpus(struct run *r, enum sample_mode mode)
{
        if (!driver_present())
                return;
        gr_tree_proc *t = NULL;
        size_t n = 0, k = 0;
        if (gr_tree_list(NULL, getpid(), listing_cgroup(r), NULL, 0, &t, &n) < 0)
                return;
        struct sampled *now_set = records(r, t, n, mode == SAMPLE_END_POST || mode == SAMPLE_ALL, &k);
        if (mode == SAMPLE_END_PRE && !r->end_before) { /* the end judges the group by it */
                r->end_before = t;
                r->n_end_before = n;
                r->end_before_us = gr_now_us();
        } else {
                free(t);
        }
        if (mode != SAMPLE_DUE)
                trace_step("the tree listed for the look");
        if (!now_set)
                return;
        uint64_t now = gr_now_ms(), t0 = gr_now_us();
        bool nvidia = nvidia_present(), drm = drm_present();
        if (mode == SAMPLE_DUE) {
                for (size_t i = 0; i < k; i++) {
                        struct sampled *sm = &now_set[i];
                        if (sm->holds || now < sm->next_ms)
                                continue;
                        if (end_coming(r))
                                continue; /* the teardown looks at the new ones */
                        sm->next_ms = now + sm->interval_ms;
                        sm->looked = true;
                        if (sm->interval_ms < 5000)
                                sm->interval_ms *= 2;
                        look_at(r, sm, nvidia, drm);
                }
        } else {
                /* at the end: the never looked at first; before the signal, then (a child forked
                 * since the last look has its parent's files) those looked at earlier without a
                 * GPU, in what is left of the budget; after it, everyone not known to hold one
                 * (SAMPLE_ALL) or the never looked at that the first pass did not reach */
                struct look_pool p = { .jobs = calloc(k ? k : 1, sizeof(*p.jobs)), .t0_us = t0, .now_ms = now,
                                       .budget_us = mode == SAMPLE_END_PRE ? END_PRE_BUDGET_US : 0,
                                       .nvidia = nvidia, .drm = drm };
                if (!p.jobs) {
                        free(now_set);
                        return;
                }
                for (size_t i = 0; i < k; i++)
                        if (!now_set[i].holds && !now_set[i].looked)
                                p.jobs[p.n++] = (struct look_job){ &now_set[i], false };
                for (size_t i = 0; i < k; i++)
                        if (!now_set[i].holds && now_set[i].looked && !now_set[i].end_looked &&
                            (mode == SAMPLE_END_PRE || mode == SAMPLE_ALL))
                                p.jobs[p.n++] = (struct look_job){ &now_set[i], true };
                look_many(r, &p);
                free(p.jobs);
        }
        free(r->sampled);
        r->sampled = now_set;
        r->n_sampled = k;
}

/* A child reaped (here or by the teardown, gr_tree_end): noted for the drain, and its status
 * kept where it is the command's */
static void child_reaped(struct run *r, pid_t pid, int status, int *child_status, bool *child_done)
{
        note_gone(r, pid);
        if (pid == r->cmd_pid)
                crash_pgid = 0; /* its number may be another group's now */
        if (pid == r->child) {
                *child_status = status;
                *child_done = true;
        } else if (pid != r->cmd_pid) { /* with a pty the shim leaves the command to us */
                r->reaped_orphans++;
        }
}

/* gpureap run's part of the tree's end (gr_tree_end, lib/act/tree-end.c does the signals) */
struct end_hooks {
        struct run *r;
        int *child_status;
        bool *child_done;
        enum sample_mode post_sample; /* the GPU look once the first SIGTERMs went out */
};

static void end_reaped(pid_t pid, int status, void *userdata)
{
        struct end_hooks *eh = userdata;
        if (trace.on && trace.reaped++ == 0)
                trace_step("the first child reaped");
        child_reaped(eh->r, pid, status, eh->child_status, eh->child_done);
}

/* reap every zombie child; true when no child is left at all */
static bool reap_children(struct run *r, int *child_status, bool *child_done)
{
        struct end_hooks eh = { r, child_status, child_done, SAMPLE_ALL };
        return gr_reap_children(end_reaped, &eh);
}

static bool port_open(int port)
{
        /* never blocking: a listener whose queue is full drops the SYN, and a blocking connect
         * retried it for two minutes while gpureap passed on no signal and kept no watch */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return false;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (!ok && errno == EINPROGRESS) {
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                int err = 0;
                socklen_t len = sizeof(err);
                ok = poll(&p, 1, 50) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
        }
        close(fd);
        return ok;
}

/* The inodes of the sockets that listen on port, as gpureap's network namespace shows them */
static size_t port_listeners(int port, uint64_t *ret, size_t max)
{
        static const char *const tables[] = { "/proc/self/net/tcp", "/proc/self/net/tcp6" };
        size_t n = 0;
        for (size_t i = 0; i < GR_ELEMENTSOF(tables); i++) {
                FILE *f = fopen(tables[i], "re");
                if (!f)
                        continue;
                char line[512];
                while (n < max && fgets(line, sizeof(line), f)) {
                        unsigned p;
                        uint64_t ino;
                        if (gr_parse_tcp_listen(line, strlen(line), &p, &ino) && p == (unsigned)port && ino)
                                ret[n++] = ino;
                }
                fclose(f);
        }
        return n;
}

/* Does a member of the tree have one of these sockets open (in its own file table, or where its
 * main thread has ended alone, its live threads': lib, gr_proc_holds_socket) */
static bool tree_holds_socket(const struct run *r, const uint64_t *inodes, size_t n)
{
        gr_tree_proc *t = NULL;
        size_t k = 0;
        bool found = false;
        if (gr_tree_list(NULL, getpid(), listing_cgroup(r), NULL, 0, &t, &k) < 0)
                return false;
        for (size_t i = 0; i < k && !found; i++)
                found = gr_proc_holds_socket(NULL, t[i].pid, inodes, n) > 0;
        free(t);
        return found;
}

/* --ready-port: 127.0.0.1:PORT accepts a connection, and its listener is the tree's (the socket
 * is in a member's fd table): another user's server on that port is not the command ready */
static bool port_ready(const struct run *r)
{
        if (!port_open(r->ready_port))
                return false;
        uint64_t inodes[16];
        size_t n = port_listeners(r->ready_port, inodes, GR_ELEMENTSOF(inodes));
        return n > 0 && tree_holds_socket(r, inodes, n);
}

static void line_end(struct run *r)
{
        if (r->tty_lines && r->line_len == 0)
                return; /* the \n of a \r\n, a redraw's \r */
        r->line[r->line_len] = '\0';
        if (r->line_len > 0)
                gr_strlcpy(r->last_line, r->line, sizeof(r->last_line));
        if (r->ready_log_set && !r->ready && regexec(&r->ready_re, r->line, 0, NULL, 0) == 0)
                r->ready = true;
        r->line_len = 0;
}

/* A line as the regex and the record see it. From a pty, a carriage return ends a line too (a
 * progress bar redraws its line with one) and escape sequences (colours, cursor moves: the
 * command knows it is on a terminal) are left out: CSI up to its final byte, OSC up to BEL or
 * ST, any other up to its next byte */
enum { ESC_NONE, ESC_START, ESC_CSI, ESC_OSC, ESC_OSC_ESC };

static void line_byte(struct run *r, char c)
{
        if (r->tty_lines) {
                switch (r->esc) {
                case ESC_START:
                        r->esc = c == '[' ? ESC_CSI : c == ']' ? ESC_OSC : ESC_NONE;
                        return;
                case ESC_CSI:
                        if (c >= 0x40 && c <= 0x7e)
                                r->esc = ESC_NONE;
                        return;
                case ESC_OSC:
                        r->esc = c == '\a' ? ESC_NONE : c == '\x1b' ? ESC_OSC_ESC : ESC_OSC;
                        return;
                case ESC_OSC_ESC:
                        r->esc = ESC_NONE;
                        return;
                }
                if (c == '\x1b') {
                        r->esc = ESC_START;
                        return;
                }
                bool crlf = c == '\n' && r->after_cr;
                r->after_cr = c == '\r';
                if (c == '\r' || crlf) {
                        line_end(r);
                        return;
                }
        }
        if (c == '\n')
                line_end(r);
        else if (r->line_len < sizeof(r->line) - 1)
                r->line[r->line_len++] = c;
}

/* pass output through; watch lines for --ready-log and remember the last one */
static void pump(struct run *r, int fd, int to)
{
        char buf[8192];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return; /* the pty's master is non-blocking */
        if (n <= 0) {
                if (fd == r->out_fd) {
                        close(r->out_fd);
                        r->out_fd = -1;
                } else {
                        close(r->err_fd);
                        r->err_fd = -1;
                }
                return;
        }
        /* a reader that went away (| head) or a closed fd: the output is dropped, never the
         * supervision. The command is told as it would be without gpureap between: its pipe is
         * closed, so that its next write fails (EPIPE, its SIGPIPE); drained instead, it never
         * knew (yes | head ran forever). A pty is still drained (a terminal has no reader to
         * lose: the command would block on a full one) */
        bool *broken = to == STDOUT_FILENO ? &r->out_broken : &r->err_broken;
        for (ssize_t o = 0; o < n && !*broken;) {
                ssize_t w = write(to, buf + o, (size_t)(n - o));
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        *broken = true;
                        break;
                }
                o += w;
        }
        r->last_activity_ms = gr_now_ms();
        for (ssize_t i = 0; i < n; i++)
                line_byte(r, buf[i]);
        if (*broken && !(r->tty_lines && fd == r->out_fd)) { /* with a pty, out_fd is its master */
                verbose(r, "the reader of its %s went away: its pipe closed", to == STDOUT_FILENO ? "stdout" : "stderr");
                if (fd == r->out_fd) {
                        close(r->out_fd);
                        r->out_fd = -1;
                } else if (fd == r->err_fd) {
                        close(r->err_fd);
                        r->err_fd = -1;
                }
        }
}

static uint64_t tree_cpu(struct run *r)
{
        gr_tree_proc *t = NULL;
        size_t n = 0;
        uint64_t sum = 0;
        if (gr_tree_list(NULL, getpid(), listing_cgroup(r), NULL, 0, &t, &n) == 0)
                for (size_t i = 0; i < n; i++)
                        sum += t[i].cpu_ticks;
        free(t);
        return sum;
}

/* what the tree is doing, for a missed readiness or a stall */
static void diagnose_tree(struct run *r, const char *why)
{
        gr_tree_proc *t = NULL;
        size_t n = 0;
        run_tty_end_relay(&r->tty); /* the terminal out of raw mode for the lines below */
        fprintf(stderr, "gpureap run: %s; the tree of '%s':\n", why, QUOTED(r->cmd[0]));
        if (gr_tree_list(NULL, getpid(), listing_cgroup(r), NULL, 0, &t, &n) < 0)
                return;
        long hz = sysconf(_SC_CLK_TCK);
        fprintf(stderr, "  %-8s %-2s %-24s %10s  %s\n", "PID", "ST", "WCHAN", "CPU", "COMMAND");
        for (size_t i = 0; i < n; i++) {
                char path[64], wchan[64] = "-";
                snprintf(path, sizeof(path), "/proc/%d/wchan", (int)t[i].pid);
                FILE *f = fopen(path, "re");
                if (f) {
                        if (!fgets(wchan, sizeof(wchan), f))
                                gr_strlcpy(wchan, "-", sizeof(wchan));
                        fclose(f);
                }
                if (!wchan[0] || strcmp(wchan, "0") == 0)
                        gr_strlcpy(wchan, "-", sizeof(wchan));
                fprintf(stderr, "  %-8d %-2c %-24.24s %9.2fs  %s\n", (int)t[i].pid, t[i].state, wchan,
                        hz > 0 ? (double)t[i].cpu_ticks / (double)hz : 0.0, t[i].comm);
        }
        if (r->last_line[0])
                fprintf(stderr, "  last output line: %s\n", r->last_line);
        free(t);
}

/* No child left (we are the subreaper: every descendant has one of our children as its
 * ancestor) and an empty cgroup: the tree is gone, no need to read /proc at all */
static bool tree_gone(struct run *r, int *child_status, bool *child_done)
{
        if (!reap_children(r, child_status, child_done))
                return false;
        return !r->cgroup[0] || gr_cgroup_empty(r->cgroup);
}

static void end_group_signalled(bool done, void *userdata)
{
        struct end_hooks *eh = userdata;
        struct run *r = eh->r;
        if (done)
                audit_log(LOG_NOTICE, "'%s' (supervised): SIGTERM and SIGCONT to its process group %d", r->cmd[0],
                          (int)r->cmd_pid);
        trace_step(done ? "SIGTERM and SIGCONT to the command's group" : "no group signal");
        verbose(r, "ending the tree: SIGTERM and SIGCONT to %s, SIGKILL after %.1fs",
                done ? "its process group, then to each other process" : "each process", (double)r->grace / 1000);
}

static void end_after_term(void *userdata)
{
        struct end_hooks *eh = userdata;
        trace_step("the tree listed, pinned and its first rung signalled");
        sample_gpus(eh->r, eh->post_sample);
        trace_step("the look after the signal");
}

static void end_tick(void *userdata)
{
        struct end_hooks *eh = userdata;
        trace.ticks++;
        struct signalfd_siginfo si;
        while (read(eh->r->sigfd, &si, sizeof(si)) == sizeof(si))
                ; /* SIGCHLD and what we forward: the tree is ending anyway */
}

static void end_member(const gr_ladder_member *m, bool term, void *userdata)
{
        struct end_hooks *eh = userdata;
        struct run *r = eh->r;
        if (m->ref.pid == r->tty.shim)
                return; /* gpureap's own part of the tree: it ends with the command */
        r->killed_kill += m->result == GR_KILL_KILLED;
        audit_log(gr_kill_result_failed(m->result) ? LOG_WARNING : LOG_NOTICE,
                  "'%s' (supervised): pid %d start %llu comm '%s': a member of its tree: %s", r->cmd[0],
                  (int)m->ref.pid, (unsigned long long)m->ref.start_time, m->comm, gr_kill_result_name(m->result));
}

/* The signal that ended gpureap (INT, HUP, QUIT), to the command alone, and time to act on it:
 * until the command has ended, another such signal comes, or the grace is over (what it used is
 * taken from the grace of the rest). A SIGINT is a KeyboardInterrupt to Python, and its handler
 * runs; SIGTERM to the group right after it, as before, killed Python in the handler. The
 * command's pidfd tells its end (with a pty it is the shim's child, which the shim leaves to
 * us: not reaped, its PID stays its own). Returns the milliseconds waited. */
static uint64_t pass_on_and_wait(struct run *r, int sig, uint64_t grace)
{
        uint64_t t0 = gr_now_ms();
        int pfd = gr_pidfd_open(r->cmd_pid); /* not reaped yet: its PID is still its own */
        char name[32];
        verbose(r, "%s to %s %d, up to %.1fs to end by itself", signal_name(sig, name, sizeof(name)),
                r->signal_group ? "the process group" : "the command", (int)r->cmd_pid, (double)grace / 1000);
        if (kill(r->signal_group ? -r->cmd_pid : r->cmd_pid, sig) < 0 || pfd < 0) {
                if (pfd >= 0)
                        close(pfd);
                return 0;
        }
        for (;;) {
                uint64_t spent = gr_now_ms() - t0;
                if (spent >= grace)
                        break;
                struct pollfd p[2] = { { .fd = pfd, .events = POLLIN }, { .fd = r->sigfd, .events = POLLIN } };
                if (poll(p, 2, (int)(grace - spent)) < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        break; /* the command has ended */
                bool again = false;
                struct signalfd_siginfo si;
                while (p[1].revents && read(r->sigfd, &si, sizeof(si)) == sizeof(si))
                        again = again || ending_signal(r, taken_signal(r, (int)si.ssi_signo));
                if (again)
                        break; /* told again: the rest of the teardown now */
        }
        close(pfd);
        uint64_t spent = gr_now_ms() - t0;
        return spent < grace ? spent : grace;
}

static bool in_tree(const struct run *r, pid_t pid)
{
        struct sampled key = { .pid = pid };
        return r->n_sampled && bsearch(&key, r->sampled, r->n_sampled, sizeof(key), cmp_sampled);
}

/* AMD and Intel (docs/drm.md): where a member was seen holding a DRM or KFD file, the view just
 * before the first signal: the device's VRAM count then, and the clients the tree alone holds
 * (one shared with a process outside it stays when the tree is gone), whose memory the end
 * waits for. The scan of every process's DRM files (a few ms) is paid only there */
static void drm_view_before(struct run *r)
{
        if (!r->drm_used || r->drm_before)
                return;
        gr_snapshot_options so = { 0 };
        nvml_timeout_from_env(&so.gpu.timeout_ms);
        if (gr_snapshot_take(&so, &r->drm_before) < 0) {
                r->drm_before = NULL;
                return;
        }
        const gr_drm_report *dr = r->drm_before->drm;
        r->drm_keys = dr && dr->n_clients ? calloc(dr->n_clients, sizeof(*r->drm_keys)) : NULL;
        for (size_t i = 0; r->drm_keys && i < dr->n_clients; i++) {
                const gr_drm_client *c = &dr->clients[i];
                bool alone = c->n_holders > 0 && c->n_holders <= GR_DRM_CLIENT_HOLDERS_MAX;
                for (unsigned k = 0; alone && k < c->n_holders; k++)
                        alone = in_tree(r, c->holders[k].pid);
                if (!alone)
                        continue;
                gr_strlcpy(r->drm_keys[r->n_drm_keys].pdev, c->pdev, sizeof(r->drm_keys[0].pdev));
                r->drm_keys[r->n_drm_keys++].client_id = c->client_id;
        }
}

static void end_tree(struct run *r, int ending, int *child_status, bool *child_done)
{
        if (tree_gone(r, child_status, child_done))
                goto reaped;
        /* Which GPUs to verify at the end: a last look at the members' fds while they are alive,
         * the never looked at first (a child forked since the last look has its parent's files,
         * a ghost's), then those looked at earlier without a GPU, for at most 2 ms. Walking
         * every member's fds after the signal, while a thousand of them exit, cost 260 ms of a
         * 300 ms teardown; so what 2 ms do not reach is left to after the signal (the never
         * looked at) or to the driver: one that opened a GPU after its last look made a context
         * under its own PID, which the driver lists until the memory is back, and the drain
         * looks for the tree's PIDs (now, the last that left, the reaped) among the context
         * owners. NVML reports host PIDs: in another PID namespace they match nothing, so there
         * everyone is walked. */
        bool host_pids = gr_proc_in_init_pidns();
        if (host_pids)
                sample_gpus(r, SAMPLE_END_PRE);
        trace_step("the last look before the signal");
        drm_view_before(r);
        /* The signal that ended gpureap (INT, HUP, QUIT) reaches the command first, as itself,
         * with time to act on it (pass_on_and_wait), but only after the last look: passed on at
         * once, it ended the command before that look could see its GPU. The time it takes is
         * the command's own: the rest of the tree then has the whole grace after its SIGTERM
         * (taken from the grace, it got TERM and KILL back to back, and its handlers never ran).
         * Then the command's group its SIGTERM at once (gr_tree_end), and one ladder over the
         * tree: each member gets SIGTERM and SIGCONT once (the ladder passes by who had the
         * group's: a second TERM told a handler twice, and to many servers a second TERM means
         * "quit now"), the never looked at get their look after it. */
        bool passed_on = !*child_done && ending && ending != SIGTERM;
        if (passed_on)
                pass_on_and_wait(r, ending, r->grace);
        struct end_hooks eh = { r, child_status, child_done, host_pids ? SAMPLE_END_POST : SAMPLE_ALL };
        bool before_fresh = !passed_on && r->end_before && gr_now_us() - r->end_before_us <= END_BEFORE_FRESH_US;
        gr_tree_end_options to = {
                .grace_ms = r->grace, .cgroup = r->cgroup, .cgroup_complete = !r->cgroup_partial,
                .group_fd = r->group_fd, .pgid = r->cmd_pid, .pgid_held = crash_pgid > 0,
                .reaped = end_reaped, .group_signalled = end_group_signalled, .after_term = end_after_term,
                .tick = end_tick, .member = end_member, .userdata = &eh,
                /* the tree may end by itself before it is listed where the look after the signal
                 * is not needed: before it every member was looked at, or the driver is asked at
                 * the end for the PIDs of those that were not (collect_end_pids); not in another
                 * PID namespace, where the driver's PIDs match nobody */
                .settle = host_pids || !driver_present(), .wake_fd = r->sigfd,
                /* who is in the group, from the last look's listing while it is fresh: not
                 * after a look that took long (a member with 20,000 fds) nor where the command
                 * had its time to act on the signal passed on (gr_tree_end lists again, just
                 * before the signal) */
                .before = before_fresh ? r->end_before : NULL, .n_before = before_fresh ? r->n_end_before : 0,
        };
        gr_tree_end_result tr;
        if (!gr_tree_end(&to, &tr) && tr.n_left > 0) {
                /* denied every signal (a setuid program's, another user's) or held in state D:
                 * said, and in the result, never reported as ended */
                char pids[96] = "";
                size_t n = 0;
                for (unsigned i = 0; i < tr.n_left && i < GR_ELEMENTSOF(tr.left) && n < sizeof(pids); i++)
                        n += (size_t)snprintf(pids + n, sizeof(pids) - n, "%s%d", i ? ", " : "", (int)tr.left[i]);
                r->not_ended = tr.n_left;
                error_msg("%u process%s of the tree could not be ended (PID %s%s): still running", tr.n_left,
                          tr.n_left == 1 ? "" : "es", pids, tr.n_left > GR_ELEMENTSOF(tr.left) ? ", ..." : "");
        }
        r->killed_term += tr.ended; /* each once: reaped, signalled, or gone since the listing */
        trace_step("the tree is gone (every member reaped)");
reaped:
        crash_pgid = 0; /* reaped: the number may be another group's */
        if (r->cgroup[0])
                gr_cgroup_remove(r->cgroup);
        crash_kill_fd = -1;
        if (r->cgroup_kill_fd >= 0)
                close(r->cgroup_kill_fd);
        if (r->cgroup_lock >= 0)
                close(r->cgroup_lock);
        if (r->group_fd >= 0)
                close(r->group_fd);
        r->cgroup_kill_fd = r->cgroup_lock = r->group_fd = -1;
        trace_step("the cgroup removed");
}

/* The tree's PIDs for the drain, once it is gone: the members when it was ended, the last that
 * left before, and the reaped */
static void collect_end_pids(struct run *r)
{
        note_gone(r, r->child);
        if (r->cmd_pid > 0 && r->cmd_pid != r->child)
                note_gone(r, r->cmd_pid);
        size_t n_gone = r->n_gone < GR_ELEMENTSOF(r->gone) ? r->n_gone : GR_ELEMENTSOF(r->gone);
        free(r->end_pids);
        r->end_pids = calloc(r->n_sampled + n_gone + 1, sizeof(pid_t));
        r->n_end_pids = 0;
        for (size_t i = 0; r->end_pids && i < r->n_sampled; i++)
                r->end_pids[r->n_end_pids++] = r->sampled[i].pid;
        for (size_t i = 0; r->end_pids && i < n_gone; i++)
                r->end_pids[r->n_end_pids++] = r->gone[i];
        /* a member not looked at at the end and not seen holding (the tree was gone before the
         * end could look: the command exited right after opening one, or the group's SIGTERM
         * ended it before the look after the signal) may have held one */
        for (size_t i = 0; i < r->n_sampled; i++)
                if (!r->sampled[i].holds && !r->sampled[i].end_looked)
                        r->maybe_opened = true;
        if (r->n_end_pids)
                qsort(r->end_pids, r->n_end_pids, sizeof(pid_t), gr_cmp_pid);
}

/* Create the leaf cgroup and move the tree into it: listed again until a round finds nobody
 * new (a process that forks while it is moved may leave a child behind, found next round;
 * one missed for good is still a descendant, which the subreaper finds at the end) */
static void contain(struct run *r)
{
        r->cgroup_tried = true;
        /* the empty leaves of runs that were SIGKILLed (a crash, the OOM killer) go first */
        unsigned stale = 0;
        if (gr_cgroup_remove_stale(&stale) == 0 && stale)
                verbose(r, "removed %u empty cgroup%s of runs that are gone", stale, stale == 1 ? "" : "s");
        if (gr_cgroup_create_leaf(r->cgroup, sizeof(r->cgroup), &r->cgroup_lock) < 0) {
                r->cgroup[0] = '\0'; /* not writable here: the subreaper alone */
                return;
        }
        char kill_path[4200];
        snprintf(kill_path, sizeof(kill_path), "%s/cgroup.kill", r->cgroup);
        r->cgroup_kill_fd = open(kill_path, O_WRONLY | O_CLOEXEC);
        crash_kill_fd = r->cgroup_kill_fd;
        pid_t moved[1024];
        size_t n_moved = 0;
        if (gr_cgroup_enter(r->cgroup, r->child) == 0)
                moved[n_moved++] = r->child;
        /* until a round finds nobody new: then every member is in the leaf, and the listings may
         * take its members for the tree without asking them for their children (those born
         * before their parent was moved are not in it); cut short, they ask everyone */
        r->cgroup_partial = true;
        for (int round = 0; round < 10 && !end_coming(r); round++) {
                gr_tree_proc *t = NULL;
                size_t n = 0, fresh = 0;
                if (gr_tree_list(NULL, getpid(), NULL, NULL, 0, &t, &n) < 0)
                        break;
                for (size_t i = 0; i < n && n_moved < GR_ELEMENTSOF(moved); i++) {
                        /* a move costs 0.3 ms (the kernel's cgroup lock): a hundred of them
                         * must not hold back a SIGTERM; the teardown finds the rest by parent */
                        if (end_coming(r))
                                break;
                        bool known = false;
                        for (size_t k = 0; k < n_moved && !known; k++)
                                known = moved[k] == t[i].pid;
                        if (known || t[i].state == 'Z')
                                continue;
                        if (gr_cgroup_enter(r->cgroup, t[i].pid) == 0) {
                                moved[n_moved++] = t[i].pid;
                                fresh++;
                        }
                }
                free(t);
                if (fresh == 0) {
                        r->cgroup_partial = end_coming(r) || n_moved == GR_ELEMENTSOF(moved);
                        break;
                }
        }
}

struct drain_cond {
        uint64_t minors;                /* the GPUs to wait for: seen held, or owned by the tree */
        const pid_t *pids;              /* the tree when it was ended, sorted */
        size_t n_pids;
};

/* The minors of the GPUs on which the driver lists a context of one of pids (sorted) */
static uint64_t minors_owned(const gr_gpu_report *rep, const pid_t *pids, size_t n)
{
        uint64_t m = 0;
        for (unsigned i = 0; n && i < rep->n_gpus; i++) {
                const gr_gpu *g = &rep->gpus[i];
                for (unsigned j = 0; g->minor >= 0 && g->minor < 64 && j < g->n_procs; j++) {
                        pid_t pid = (pid_t)g->procs[j].pid;
                        if (bsearch(&pid, pids, n, sizeof(pid), gr_cmp_pid))
                                m |= 1ULL << g->minor;
                }
        }
        return m;
}

/* The GPUs the tree used are clean or busy with others' work. A GPU whose driver still lists a
 * context of a process of the tree joins them: the process is gone (the tree was reaped), so
 * its memory is held by someone else or still being given back. */
static bool gpus_back(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        struct drain_cond *c = userdata;
        c->minors |= minors_owned(s->gpu, c->pids, c->n_pids);
        for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                int m = s->gpu->gpus[i].minor;
                if (m >= 0 && m < 64 && (c->minors >> m & 1) && d->gpus[i].state != GR_GPU_CLEAN &&
                    d->gpus[i].state != GR_GPU_BUSY)
                        return false;
        }
        return true;
}


/* The GPUs on which the driver still lists a context of a process of the ended tree: the NVML
 * part alone (no /proc scan), for a tree never seen holding a GPU */
static uint64_t gpus_owned_by_tree(const struct run *r)
{
        gr_gpu_options go = { 0 };
        nvml_timeout_from_env(&go.timeout_ms);
        gr_gpu_query *q = NULL;
        gr_gpu_report *rep = NULL;
        pid_t helper = 0;
        if (gr_gpu_query_start(&go, &q, &helper) < 0)
                return 0;
        if (gr_gpu_query_finish(q, &rep) < 0 || !rep)
                return 0;
        uint64_t m = rep->status == GR_GPU_OK ? minors_owned(rep, r->end_pids, r->n_end_pids) : 0;
        gr_gpu_report_free(rep);
        return m;
}

/* FILE of an option, from the caller's working directory, which gpureap leaves */
static int absolute_path(const char *option, const char *path, char *ret, size_t size)
{
        char cwd[4096];
        if (path[0] == '/') {
                if (gr_strlcpy(ret, path, size))
                        return 0;
        } else if (getcwd(cwd, sizeof(cwd)) && (size_t)snprintf(ret, size, "%s/%s", cwd, path) < size) {
                return 0;
        }
        error_msg("%s '%s': the path is too long or the working directory cannot be named", option, QUOTED(path));
        return -1;
}

/* gpureap's own paths from the environment (the device directory, the NVML library, the test
 * driver's files...), made absolute before gpureap leaves the caller's directory: the command's
 * environment is left as it was given (it keeps the directory). A library or program named
 * without a slash is looked up (the loader, PATH), not a path. */
static void absolute_env(void)
{
        static const char *const names[] = { "GPUREAP_DEV_DIR", "GPUREAP_NVML_LIBRARY", "GPUREAP_STATE_DIR",
                                             "GPUREAP_SYSLOG_SOCKET", "GPUREAP_NVIDIA_SMI",
                                             "GPUREAP_FAKE_NVML_SCENARIO", "GPUREAP_FAKE_CTX_DIR" };
        char cwd[4096], abs[8192];
        if (!getcwd(cwd, sizeof(cwd)))
                return;
        for (size_t i = 0; i < GR_ELEMENTSOF(names); i++) {
                const char *v = getenv(names[i]);
                bool looked_up = strstr(names[i], "NVML_LIBRARY") || strstr(names[i], "NVIDIA_SMI");
                if (!v || !*v || v[0] == '/' || (looked_up && !strchr(v, '/')) ||
                    (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, v) >= sizeof(abs))
                        continue;
                setenv(names[i], abs, 1);
        }
}

/* Ready: told once, to systemd and to --ready-file (written whole, then renamed) */
/* Write path whole: a temp file beside it, then renamed, so that a reader never sees half of
 * it; data and then tail, synced first with sync. What its path names is replaced only when it
 * is a regular file or nothing (output_path_ok, again just before the rename: it may have been
 * replaced since the start). true when written; false with the reason printed, the temp file
 * removed. */
static bool replace_file(const char *option, const char *path, const char *data, size_t len, const char *tail,
                         bool sync)
{
        char tmp[4096];
        int fd = -1;
        if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) < (int)sizeof(tmp))
                fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        size_t tlen = strlen(tail);
        bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len && write(fd, tail, tlen) == (ssize_t)tlen &&
                  (!sync || fsync(fd) == 0);
        if (fd >= 0 && close(fd) != 0)
                ok = false;
        bool fits = ok && output_path_ok(option, path) == 0;
        if (fits && rename(tmp, path) == 0)
                return true;
        if (!ok || fits)
                error_msg("cannot write '%s': %s", QUOTED(path), strerror(errno));
        if (fd >= 0)
                unlink(tmp);
        return false;
}

static void announce_ready(struct run *r)
{
        if (r->announced)
                return;
        r->announced = true;
        char msg[320];
        snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%d\nSTATUS=running %.200s", (int)getpid(), r->cmd[0]);
        sd_notify_send(msg);
        if (!r->ready_file)
                return;
        char line[64];
        int n = snprintf(line, sizeof(line), "ready %d %lld\n", (int)r->cmd_pid, (long long)now_ms_since(r));
        if (!replace_file("--ready-file", r->ready_file, line, (size_t)n, "", false)) {
                r->ready_file = NULL; /* nothing of ours to remove at the end */
                return;
        }
        struct stat st;
        if (stat(r->ready_file, &st) == 0) { /* removed at the end only while it is still ours */
                r->ready_dev = st.st_dev;
                r->ready_ino = st.st_ino;
        }
}

/* --json FILE: how the run ended, what was ended, the drain; docs/json-schema.md */
static bool write_result(const struct run *r, int code, const char *ended, const char *run_error, int got_signal,
                         const int *child_status, uint64_t end_ms, int drain_met, uint64_t drain_ms)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "schema_version", json_object_new_int(JSON_SCHEMA_VERSION));
        json_object_object_add(o, "command", json_object_new_string("run"));
        json_object *argv = json_object_new_array();
        for (char **a = r->cmd; *a; a++) {
                char *safe = strdup(*a);
                if (!safe)
                        continue;
                gr_text_sanitize(safe); /* valid UTF-8, no control characters, as every string */
                json_object_array_add(argv, json_object_new_string(safe));
                free(safe);
        }
        json_object_object_add(o, "argv", argv);
        json_object_object_add(o, "pid", r->cmd_pid > 0 ? json_object_new_int(r->cmd_pid) : NULL);
        json_object_object_add(o, "elapsed_ms", json_object_new_int64(now_ms_since(r)));
        json_object_object_add(o, "ended", json_object_new_string(ended ? ended : "gpureap_failed"));
        bool exited = child_status && WIFEXITED(*child_status), signalled = child_status && WIFSIGNALED(*child_status);
        json_object_object_add(o, "command_exit_status", exited ? json_object_new_int(WEXITSTATUS(*child_status)) : NULL);
        json_object_object_add(o, "command_signal", signalled ? json_object_new_int(WTERMSIG(*child_status)) : NULL);
        json_object_object_add(o, "gpureap_signal", got_signal ? json_object_new_int(got_signal) : NULL);
        json_object_object_add(o, "gpureap_error", run_error ? json_object_new_string(run_error) : NULL);
        json_object_object_add(o, "cgroup", r->cgroup[0] ? json_object_new_string(r->cgroup) : NULL);
        json_object *lo = json_object_new_object();
        json_object_object_add(lo, "ended", json_object_new_int64(r->killed_term));
        json_object_object_add(lo, "needed_sigkill", json_object_new_int64(r->killed_kill));
        json_object_object_add(lo, "orphans_reaped", json_object_new_int64(r->reaped_orphans));
        json_object_object_add(lo, "not_ended", json_object_new_int64(r->not_ended));
        json_object_object_add(lo, "teardown_ms", json_object_new_int64((int64_t)end_ms));
        json_object_object_add(o, "leftovers", lo);
        json_object *minors = json_object_new_array();
        for (unsigned m = 0; m < 64; m++)
                if (r->gpu_minors >> m & 1)
                        json_object_array_add(minors, json_object_new_int(m));
        json_object_object_add(o, "gpu_minors", minors);
        json_object *dr = NULL;
        if (r->gpu_minors) {
                dr = json_object_new_object();
                json_object_object_add(dr, "memory_back", drain_met < 0 ? NULL : json_object_new_boolean(drain_met));
                json_object_object_add(dr, "elapsed_ms", drain_met < 0 ? NULL : json_object_new_int64((int64_t)drain_ms));
                json_object_object_add(dr, "timeout_ms", json_object_new_int64((int64_t)r->drain_timeout));
        }
        json_object_object_add(o, "drain", dr);
        json_object_object_add(o, "exit_code", json_object_new_int(code));
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
        bool ok;
        if (strcmp(r->json_path, "-") == 0) {
                ok = puts(text) >= 0 && fflush(stdout) == 0;
                if (!ok)
                        error_msg("cannot write the result to stdout: %s", strerror(errno));
        } else {
                ok = replace_file("--json", r->json_path, text, strlen(text), "\n", true);
        }
        json_object_put(o);
        return ok;
}

/* At a terminal: the command stopped (Ctrl-Z, a read from the background): gpureap stops with
 * it and continues it when it is continued itself. A stopped job is neither stalled nor late. */
static void follow_stop(struct run *r, int *child_status, bool *child_done)
{
        int st;
        if (waitpid(r->child, &st, WNOHANG | WUNTRACED) != r->child)
                return;
        if (!WIFSTOPPED(st)) {
                *child_status = st;
                *child_done = true;
                return;
        }
        uint64_t t0 = gr_now_ms();
        run_tty_suspend(&r->tty);
        r->paused_ms += gr_now_ms() - t0;
        r->last_activity_ms = gr_now_ms();
}

/* What ended the run and how: the command's status, a watchdog, a signal to gpureap */
struct run_end {
        int child_status, code, got_signal;
        bool child_done, remapped;
        const char *why, *ended, *run_error;
};

/* AMD (docs/drm.md): KFD keeps a process's entry, and its VRAM, until what it opened is
 * released; where the tree's PIDs have entries left, they are waited for as NVIDIA's memory is
 * (one directory look where there is no KFD: nothing on an NVIDIA machine) */
static void wait_kfd_back(struct run *r, int *drain_met, uint64_t *drain_ms, char *note, size_t note_size)
{
        int left = gr_kfd_entries_left(NULL, r->end_pids, r->n_end_pids);
        if (left <= 0)
                return;
        uint64_t t0 = gr_now_ms(), step = 1;
        while (left > 0 && gr_now_ms() - t0 < r->drain_timeout) {
                struct timespec ts = { 0, (long)step * 1000000L };
                nanosleep(&ts, NULL);
                step = step < 32 ? step * 2 : 50;
                left = gr_kfd_entries_left(NULL, r->end_pids, r->n_end_pids);
        }
        uint64_t ms = gr_now_ms() - t0;
        *drain_met = (*drain_met != 0) && left == 0;
        *drain_ms += ms;
        size_t o = strlen(note);
        snprintf(note + o, note_size - o, "; AMD VRAM (KFD) %s in %llu ms", left == 0 ? "back" : "NOT back",
                 (unsigned long long)ms);
        if (left != 0)
                error_msg("KFD still keeps the VRAM of %d process%s of the tree after %.1fs (docs/drm.md)", left,
                          left == 1 ? "" : "es", (double)r->drain_timeout / 1000);
}

/* The tree's AMD and Intel GPUs back (docs/drm.md): none of the clients it alone held still
 * there, no KFD entry of its PIDs left, and the devices' VRAM count back by what those clients
 * held (where the view before the signal was taken: a tree that ended on its own was not looked
 * at then, and is waited for by its KFD entries alone). Only what is the tree's: another's
 * leftover on the same GPU is no part of it (an adversary's run waited 30 s for one) */
static bool drm_back(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        (void)d;
        const struct run *r = userdata;
        if (!s->drm)
                return gr_kfd_entries_left(NULL, r->end_pids, r->n_end_pids) <= 0;
        for (size_t i = 0; i < s->drm->n_clients; i++)
                if (gr_drm_key_listed(r->drm_keys, r->n_drm_keys, s->drm->clients[i].pdev, s->drm->clients[i].client_id))
                        return false;
        for (size_t i = 0; i < s->drm->n_kfd; i++)
                if (r->n_end_pids && bsearch(&s->drm->kfd[i].pid, r->end_pids, r->n_end_pids, sizeof(pid_t), gr_cmp_pid))
                        return false;
        return !r->drm_before || gr_drm_usage_back(r->drm_before, s, r->drm_keys, r->n_drm_keys, r->end_pids, r->n_end_pids);
}

static void wait_drm_back(struct run *r, int *drain_met, uint64_t *drain_ms, char *note, size_t note_size)
{
        gr_snapshot_options so = { 0 };
        nvml_timeout_from_env(&so.gpu.timeout_ms);
        gr_wait_options w = { .so = &so, .timeout_ms = r->drain_timeout, .drm = true };
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        bool met = false;
        uint64_t t0 = gr_now_ms();
        if (gr_wait_until(&w, drm_back, r, &s, &d, &met) < 0)
                return;
        uint64_t ms = gr_now_ms() - t0;
        *drain_met = (*drain_met != 0) && met;
        *drain_ms += ms;
        size_t o = strlen(note);
        snprintf(note + o, note_size - o, "; AMD/Intel GPU memory %s in %llu ms", met ? "back" : "NOT back",
                 (unsigned long long)ms);
        if (!met) {
                error_msg("the AMD/Intel GPU memory of the tree did not come back within %.1fs:", (double)r->drain_timeout / 1000);
                render_status_table(stderr, s, d, NULL, &(struct table_options){ .width = terminal_width(STDERR_FILENO) });
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

/* The GPUs the tree used: until the driver has their memory back. *drain_met 1 back, 0 not
 * by --drain-timeout, -1 nothing to wait for (or the driver could not be read); the note for
 * the summary line */
static void wait_gpus_back(struct run *r, int *drain_met, uint64_t *drain_ms, char *note, size_t note_size)
{
        *drain_met = -1; /* nothing to wait for, or the driver could not be read */
        *drain_ms = 0;
        note[0] = '\0';
        /* the driver is asked only when a member looked at without a GPU may have opened one
         * since: every other member's files were read at the end, or it was seen holding */
        collect_end_pids(r);
        if (!r->gpu_minors && r->maybe_opened && nvidia_present())
                r->gpu_minors = gpus_owned_by_tree(r);
        if (r->gpu_minors) {
                gr_snapshot_options so = { 0 };
                nvml_timeout_from_env(&so.gpu.timeout_ms);
                struct drain_cond dc = { r->gpu_minors, r->end_pids, r->n_end_pids };
                gr_wait_options w = { .so = &so, .timeout_ms = r->drain_timeout };
                gr_snapshot *s = NULL;
                gr_diagnosis *d = NULL;
                bool met = false;
                uint64_t t0 = gr_now_ms();
                int wr = gr_wait_until(&w, gpus_back, &dc, &s, &d, &met);
                if (wr == 0 && !met && s && s->gpu && s->gpu->status != GR_GPU_OK) {
                        /* not "did not come back": nothing could be asked (the driver failed, or
                         * the NVML helper could not be started: gpureap-run's is the gpureap
                         * beside it) */
                        snprintf(note, note_size, "; GPU memory not verified");
                        error_msg("the GPU memory of the tree could not be verified: %s",
                                  s->gpu->error[0] ? s->gpu->error : "the driver could not be read");
                        gr_diagnosis_free(d);
                        gr_snapshot_free(s);
                } else if (wr == 0) {
                        *drain_met = met;
                        *drain_ms = gr_now_ms() - t0;
                        snprintf(note, note_size, "; GPU memory %s in %llu ms",
                                 met ? "back" : "NOT back", (unsigned long long)(gr_now_ms() - t0));
                        if (!met) {
                                error_msg("the GPU memory did not come back within %.1fs:", (double)r->drain_timeout / 1000);
                                render_status_table(stderr, s, d, NULL, &(struct table_options){ .width = terminal_width(STDERR_FILENO) });
                        }
                        gr_diagnosis_free(d);
                        gr_snapshot_free(s);
                }
        }
        if (r->drm_used)
                wait_drm_back(r, drain_met, drain_ms, note, note_size);
        else
                wait_kfd_back(r, drain_met, drain_ms, note, note_size);
}

/* The one line run writes at its end (not with --quiet) */
static void say_end(const struct run *r, const struct run_end *e, const char *gpu_note)
{
        if (r->quiet)
                return;
        char how[64];
        if (e->why)
                snprintf(how, sizeof(how), "ended: %s", e->why);
        else if (e->child_done && WIFSIGNALED(e->child_status))
                snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(e->child_status));
        else if (e->child_done && WIFEXITED(e->child_status))
                snprintf(how, sizeof(how), "exited %d", WEXITSTATUS(e->child_status));
        else
                snprintf(how, sizeof(how), "exited %d", e->code);
        char left[64] = "";
        if (r->not_ended)
                snprintf(left, sizeof(left), ", %u NOT ended", r->not_ended);
        fprintf(stderr, "gpureap run: '%s' %s%s after %.1fs; %u leftover process%s ended (%u needed SIGKILL)%s, %u reaped%s%s\n",
                r->cmd[0], how, e->remapped ? " (exit 0: --remap-exit)" : "", (double)now_ms_since(r) / 1000,
                r->killed_term, r->killed_term == 1 ? "" : "es", r->killed_kill, left, r->reaped_orphans, gpu_note,
                r->cgroup[0] || (!r->cgroup_tried && !r->no_cgroup) ? "" : "; no cgroup (subreaper only)");
}

/* The signals sent since the last look (and the fatal ones caught): passed on, or one that ends
 * the run noted in e */
static void read_signals(struct run *r, struct run_end *e)
{
        struct signalfd_siginfo si;
        for (size_t i = 0; i < GR_ELEMENTSOF(fatal_signals); i++) /* sent ABRT, SEGV... */
                if (fatal_sent & (1 << i)) {
                        fatal_sent &= ~(1 << i);
                        int sig = taken_signal(r, fatal_signals[i]);
                        if (!e->child_done && sig > 0 && !ending_signal(r, sig))
                                pass_on(r, sig);
                        else if (sig > 0 && ending_signal(r, sig) && !e->got_signal) {
                                e->got_signal = sig; /* rewritten to one that ends the run */
                                e->why = "gpureap was signalled";
                        }
                }
        while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGPIPE && (pid_t)si.ssi_pid == getpid())
                        continue; /* a write of gpureap's own to a reader that went away */
                if ((si.ssi_signo == SIGTTOU || si.ssi_signo == SIGTTIN) && si.ssi_code == SI_KERNEL)
                        continue; /* gpureap's own write to a terminal from the background
                                     (TOSTOP): blocked, the write goes through; not the command's */
                int sig = taken_signal(r, (int)si.ssi_signo);
                if (sig == 0)
                        continue; /* --rewrite-signal S:0 */
                if (sig == SIGCHLD) {
                        reap_children(r, &e->child_status, &e->child_done);
                        if (r->tty.kind != RUN_TTY_NONE && !e->child_done)
                                follow_stop(r, &e->child_status, &e->child_done);
                } else if (r->tty.kind != RUN_TTY_NONE && sig == SIGCONT) {
                        if (!e->child_done)
                                run_tty_resume(&r->tty);
                } else if (r->tty.kind != RUN_TTY_NONE && sig == SIGTSTP) {
                        if (!e->child_done && r->tty.pgid > 0)
                                kill(-r->tty.pgid, SIGTSTP); /* the job stops, gpureap follows */
#ifdef GPUREAP_TEST_HOOKS
                } else if (sig == SIGUSR2 && getenv("GPUREAP_TEST_FAULT_ADDR")) {
                        /* Test seam (tests/integration/run-tty-pty.sh, run-init-scenarios.sh):
                         * a real fault of gpureap's own, at an address the compiler cannot
                         * know, on SIGUSR2. Only in the gpureap-test-hooks build */
                        *(volatile int *)(uintptr_t)strtoull(getenv("GPUREAP_TEST_FAULT_ADDR"), NULL, 0) = 1;
#endif
                } else if (r->tty.kind == RUN_TTY_PTY && sig == SIGWINCH) {
                        run_tty_winch(&r->tty);
                } else {
                        bool ends = ending_signal(r, sig);
                        bool job = sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU || sig == SIGCONT;
                        if (!ends && !e->child_done && job && r->tty.kind == RUN_TTY_NONE)
                                pass_on_job_control(r, sig);
                        else if (!ends && !e->child_done) /* reaped: its PID may be another's already */
                                pass_on(r, sig);
                        if (ends && !e->got_signal) {
                                e->got_signal = sig; /* passed on by the teardown */
                                e->why = "gpureap was signalled";
                        }
                }
        }
}

/* gpureap's child has ended, not reaped yet: a look that leaves it a zombie */
static bool child_ended(const struct run *r)
{
        siginfo_t si = { 0 };
        return waitid(P_PID, (id_t)r->child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == r->child;
}

/* Until the command is done, a watchdog fires or gpureap is signalled: its output relayed,
 * the signals passed on, the tree sampled */
static void supervise(struct run *r, bool want_ready, struct run_end *e)
{
        uint64_t next_sample = r->start_ms + 50, next_port = r->start_ms;
        while (e->code < 0 && !e->child_done) {
                uint64_t now = gr_now_ms();
                if (!want_ready || r->ready)
                        announce_ready(r);
                if (r->max_time && now - r->start_ms >= r->max_time) {
                        e->why = "the maximum time passed";
                        e->ended = "max_time";
                        e->code = EXIT_MAX_TIME;
                        break;
                }
                if (want_ready && !r->ready) {
                        if (r->ready_port && now >= next_port) {
                                r->ready = port_ready(r);
                                next_port = now + 100;
                        }
                        uint64_t paused = r->paused_ms + (r->stopped_at_ms ? now - r->stopped_at_ms : 0);
                        if (!r->ready && now - r->start_ms - paused >= r->ready_timeout) {
                                diagnose_tree(r, "not ready in time");
                                e->why = "not ready in time";
                                e->ended = "not_ready";
                                e->code = EXIT_NOT_READY;
                                break;
                        }
                }
                if (r->stall_timeout && now - r->stall_check_ms >= 1000) {
                        uint64_t cpu = tree_cpu(r);
                        if (cpu != r->last_cpu || r->stopped_at_ms) /* stopped: not stalled */
                                r->last_activity_ms = now;
                        r->last_cpu = cpu;
                        r->stall_check_ms = now;
                        if (now - r->last_activity_ms >= r->stall_timeout) {
                                diagnose_tree(r, "stalled: no output and no CPU time");
                                e->why = "stalled";
                                e->ended = "stalled";
                                e->code = EXIT_STALLED;
                                break;
                        }
                }
                if (now >= next_sample) {
                        /* the cgroup only for commands that live past the first sample: creating
                         * and removing one costs 0.28 ms, a third of a short command's run. Not
                         * for one that has ended already, its SIGCHLD not read yet (gpureap was
                         * slow to get here: a loaded machine, valgrind); what it left is found by
                         * the subreaper */
                        if (!r->no_cgroup && !r->cgroup_tried && !child_ended(r))
                                contain(r);
                        /* the run is ending (moving a young tree of a thousand takes long): the
                         * end looks at them; a listing more here held the end back by 5-15 ms
                         * on the H100 */
                        if (!end_coming(r))
                                sample_gpus(r, SAMPLE_DUE);
                        next_sample = now + 250;
                }
                struct pollfd p[5] = { { .fd = r->sigfd, .events = POLLIN },
                                       { .fd = r->out_fd, .events = POLLIN },
                                       { .fd = r->err_fd, .events = POLLIN } };
                run_tty_poll(&r->tty, &p[3], &p[4]);
                int wait = 250;
                if (want_ready && !r->ready)
                        wait = 100;
                if (next_sample > now && next_sample - now < (uint64_t)wait)
                        wait = (int)(next_sample - now);
                poll(p, 5, wait);
                if (p[1].revents)
                        pump(r, r->out_fd, STDOUT_FILENO);
                if (p[2].revents)
                        pump(r, r->err_fd, STDERR_FILENO);
                if (p[3].revents || p[4].revents)
                        run_tty_relay(&r->tty, p[3].revents);
                read_signals(r, e);
                if (e->got_signal)
                        break;
        }
}

/* What the command's child needs before its exec: everything prepared by gpureap, since the
 * child may share gpureap's memory (a vfork-style start) and must change none of it */
struct command_start {
        struct run *r;
        const sigset_t *old;
        char **envp;
        int out_w, err_w, report_w; /* the pipes' write ends; -1: none */
};

/* The command's environment: gpureap's, with GPUREAP_RUN_PID and GPUREAP_RUN_REF (lets
 * 'status' name a killed supervisor's tree) and without NOTIFY_SOCKET (gpureap run tells systemd, not the command).
 * The markers come first: the scan reads only the first 32 KiB of a process's environ, and an
 * HPC job's environment (module functions, Slurm's variables) is often longer. NULL when out of
 * memory */
static char **command_env(char *run_pid_var, char *run_ref_var)
{
        extern char **environ;
        size_t n = 0;
        while (environ && environ[n])
                n++;
        char **envp = malloc((n + 3) * sizeof(*envp));
        if (!envp)
                return NULL;
        size_t k = 0;
        envp[k++] = run_pid_var;
        if (run_ref_var)
                envp[k++] = run_ref_var;
        for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "GPUREAP_RUN_PID=", 16) != 0 && strncmp(environ[i], "GPUREAP_RUN_REF=", 16) != 0 &&
                    strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0)
                        envp[k++] = environ[i];
        envp[k] = NULL;
        return envp;
}

/* In the child, to the exec. It writes no memory of gpureap's (only its own stack, the pipe's
 * report, and errno). Not instrumented: this frame never returns, and a sanitizer would leave
 * its stack's marks on memory gpureap unmaps */
__attribute__((no_sanitize_address)) static int command_child(void *arg)
{
        const struct command_start *c = arg;
        struct run *r = c->r;
        fatal_uninstall();
        run_tty_child(&r->tty, c->report_w); /* with a pty: returns in the command, a grandchild */
        /* the dispositions are the caller's (gpureap changed none but the five above, PIPE, and
         * an ignored CHLD); the mask too */
        if (r->caller_ignored >> (SIGCHLD - 1) & 1)
                signal(SIGCHLD, SIG_IGN);
        signal(SIGPIPE, r->caller_ignored >> (SIGPIPE - 1) & 1 ? SIG_IGN : SIG_DFL);
        sigprocmask(SIG_SETMASK, c->old, NULL);
        if (c->out_w >= 0)
                dup2(c->out_w, STDOUT_FILENO);
        if (c->err_w >= 0)
                dup2(c->err_w, STDERR_FILENO);
        execvpe(r->cmd[0], r->cmd, c->envp);
        int e = errno;
        child_report(c->report_w, CHILD_EXEC_ERRNO, e);
        _exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

/* The command's child, started: its PID, or -1 (errno set). Without a pty the child shares
 * gpureap's memory until its exec (CLONE_VM | CLONE_VFORK, on a stack of its own, as glibc's
 * posix_spawn does): no page tables copied, no copy-on-write faults after, about a tenth of a
 * millisecond less for a short command. With a pty the child stays on as the shim (a fork) */
static pid_t command_fork(struct command_start *c)
{
        if (c->r->tty.kind == RUN_TTY_PTY) {
                pid_t pid = fork();
                if (pid == 0)
                        command_child(c);
                return pid;
        }
        /* room for execvpe: its PATH buffer (up to PATH_MAX) and, for a script with no #!, a
         * copy of the arguments */
        size_t argc = 0;
        while (c->r->cmd[argc])
                argc++;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t size = ((argc + 3) * sizeof(char *) + 64 * 1024 + page - 1) / page * page + page;
        void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return -1;
        /* a guard page below: a child that ran past its stack faults, never writing gpureap's memory */
        if (mprotect(stack, page, PROT_NONE) < 0) {
                int e = errno;
                munmap(stack, size);
                errno = e;
                return -1;
        }
        /* every signal blocked until the child has put the caller's dispositions back: a handler
         * of gpureap's run in the child would write gpureap's memory (the child restores the
         * caller's mask itself; gpureap's own is put back once the child has exec'd) */
        sigset_t all, mine;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &mine);
        pid_t pid = clone(command_child, (char *)stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &mine, NULL);
        munmap(stack, size);
        errno = e;
        return pid;
}

/* The command started (its output through pipes where asked), and what became of its exec:
 * 0, or minus an exit code (said) */
static int start_command(struct run *r, bool pipe_out, bool pipe_err, const sigset_t *old, const char *ready_log,
                         int *exec_errno, int *fork_errno)
{
        int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, execp[2];
        if ((pipe_out && pipe2(outp, O_CLOEXEC) < 0) || (pipe_err && pipe2(errp, O_CLOEXEC) < 0) ||
            pipe2(execp, O_CLOEXEC) < 0) {
                error_msg("cannot create pipes: %s", strerror(errno));
                return -EXIT_RUN_FAILED;
        }
        if (ready_log && regcomp(&r->ready_re, ready_log, REG_EXTENDED | REG_NOSUB) != 0) {
                error_msg("invalid regular expression '%s'", QUOTED(ready_log)); /* it was valid a moment ago */
                return -EXIT_USAGE;
        }
        char run_pid_var[48], run_ref_var[64];
        snprintf(run_pid_var, sizeof(run_pid_var), "GPUREAP_RUN_PID=%d", (int)getpid());
        /* and which process that number is: its start time (not in a time namespace of its
         * own, where the host reads another). A number alone, the kernel hands out again */
        uint64_t self_start = 0;
        if (gr_proc_self_start_time(&self_start) == 0)
                snprintf(run_ref_var, sizeof(run_ref_var), "GPUREAP_RUN_REF=%d@%llu", (int)getpid(),
                         (unsigned long long)self_start);
        struct command_start c = { .r = r, .old = old, .envp = command_env(run_pid_var, self_start ? run_ref_var : NULL),
                                   .out_w = outp[1], .err_w = errp[1], .report_w = execp[1] };
        if (!c.envp) {
                error_msg("cannot start '%s': out of memory", QUOTED(r->cmd[0]));
                return -EXIT_RUN_FAILED;
        }
        r->start_ms = r->last_activity_ms = r->stall_check_ms = gr_now_ms();
        r->child = command_fork(&c);
        free(c.envp);
        if (r->child < 0) {
                error_msg("cannot fork: %s", strerror(errno));
                return -EXIT_RUN_FAILED;
        }
        r->cmd_pid = r->child;
        run_tty_parent(&r->tty, r->child);
        close(execp[1]);
        if (pipe_out) {
                close(outp[1]);
                r->out_fd = outp[0];
        }
        if (pipe_err) {
                close(errp[1]);
                r->err_fd = errp[0];
        }
        if (r->tty.kind == RUN_TTY_PTY)
                r->out_fd = fcntl(r->tty.master, F_DUPFD_CLOEXEC, 3); /* pump() closes its own */
        /* the pipe closes at the exec (or the exec's failure, told); with a pty the shim tells
         * the command's PID first */
        *exec_errno = *fork_errno = 0;
        struct child_report m;
        while (read(execp[0], &m, sizeof(m)) == (ssize_t)sizeof(m)) {
                if (m.kind == CHILD_PID)
                        r->cmd_pid = r->tty.pgid = m.value;
                else if (m.kind == CHILD_EXEC_ERRNO)
                        *exec_errno = m.value;
                else if (m.kind == CHILD_FORK_ERRNO)
                        *fork_errno = m.value;
        }
        close(execp[0]);
        if (!*exec_errno && !*fork_errno) {
                crash_pgid = r->cmd_pid;
                if (r->tty.kind != RUN_TTY_JOB) { /* taken before anyone could reap it */
                        int fd = gr_pidfd_open(r->cmd_pid);
                        r->group_fd = fd >= 0 ? fd : -1;
                }
        }
        return 0;
}

/* The signals gpureap takes (a signalfd in r->sigfd), the caller's dispositions kept; the mask
 * it had in *old, for the command */
static void take_signals(struct run *r, int pdeathsig, pid_t parent, sigset_t *old)
{
        /* Every signal that would end or stop gpureap by default is taken, through a signalfd:
         * INT, TERM, HUP and QUIT end the tree; the others (USR1, USR2, ALRM, PROF, XCPU, PWR,
         * PIPE, URG, WINCH, real-time...) are passed on. A tree that signals its supervisor must
         * not orphan itself. A signal the caller ignores (nohup's HUP, a shell's trap '' INT, a
         * script's background job's INT and QUIT) keeps its disposition, which the command
         * inherits through the exec, and never ends the run: it is passed on, as tini does (a
         * blocked signal is queued whatever its disposition). PIPE is taken too: gpureap
         * outlives its own output (a reader that exits, | head), and one it raised itself by a
         * write is told apart (its sender is gpureap). */
        struct sigaction caller[_NSIG];
        for (int sig = 1; sig <= SIGRTMAX; sig++)
                if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &caller[sig]) < 0)
                        caller[sig] = (struct sigaction){ .sa_handler = SIG_DFL };
        caller[SIGPIPE] = caller_sigpipe; /* main() put a handler of its own there */
        sigset_t mask, blocked;
        sigemptyset(&mask);
        int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                       SIGPROF, SIGXCPU, SIGXFSZ, SIGPWR, SIGSTKFLT, SIGIO, SIGSYS, SIGTRAP, SIGWINCH,
                       SIGPIPE, SIGURG };
        for (int sig = 1; sig <= SIGRTMAX; sig++)
                if (caller[sig].sa_handler == SIG_IGN)
                        r->caller_ignored |= 1ULL << (sig - 1);
        ignored_at_start = r->caller_ignored;
        if (caller[SIGCHLD].sa_handler == SIG_IGN || (caller[SIGCHLD].sa_flags & SA_NOCLDWAIT))
                signal(SIGCHLD, SIG_DFL); /* else the kernel reaps the children: no status to pass on */
        for (size_t i = 0; i < GR_ELEMENTSOF(sigs); i++)
                sigaddset(&mask, sigs[i]);
        for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
                sigaddset(&mask, sig);
        sigaddset(&mask, SIGCHLD);
        int stops[] = { SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT };
        if (r->tty.kind != RUN_TTY_NONE) {
                /* at a terminal: a TSTP sent to gpureap stops the command's job (and so gpureap),
                 * a CONT (fg, bg) gives it the terminal again; TTOU is only blocked, so that
                 * gpureap may hand the terminal over from the background */
                sigaddset(&mask, SIGTSTP);
                sigaddset(&mask, SIGCONT);
        } else {
                /* no terminal: job control is the command's, passed on (as dumb-init does);
                 * gpureap itself keeps running, to supervise and to pass on the CONT */
                for (size_t i = 0; i < GR_ELEMENTSOF(stops); i++)
                        sigaddset(&mask, stops[i]);
        }
        blocked = mask;
        if (r->tty.kind != RUN_TTY_NONE)
                sigaddset(&blocked, SIGTTOU);
        sigprocmask(SIG_BLOCK, &blocked, old);
        fatal_install(caller);
        if (pdeathsig) {
                /* as tini -p: gpureap's parent gone (its thread that started gpureap), gpureap gets
                 * the signal, and takes it as any other (TERM ends the tree); a parent gone
                 * already is told at once */
                prctl(PR_SET_PDEATHSIG, pdeathsig);
                if (getppid() != parent)
                        kill(getpid(), pdeathsig);
        }
        r->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

}

/* One option of run's (getopt's code c, its optarg): 0, or -1 for a usage error (said) */
static int parse_option(struct run *r, int c, const char **ready_log, int *pdeathsig)
{
        switch (c) {
        case 'F':
                if (!optarg[0]) {
                        error_msg("--ready-file needs a file name");
                        return -1;
                }
                if (output_path_ok("--ready-file", optarg) < 0)
                        return -1;
                if (absolute_path("--ready-file", optarg, r->ready_abs, sizeof(r->ready_abs)) < 0)
                        return -1;
                r->ready_file = r->ready_abs;
                break;
        case 'j':
                if (!optarg[0]) {
                        error_msg("--json needs a file name ('-' for stdout)");
                        return -1;
                }
                if (strcmp(optarg, "-") != 0 && output_path_ok("--json", optarg) < 0)
                        return -1;
                r->json_path = optarg;
                if (strcmp(optarg, "-") != 0) {
                        if (absolute_path("--json", optarg, r->json_abs, sizeof(r->json_abs)) < 0)
                                return -1;
                        r->json_path = r->json_abs;
                }
                break;
        case 'G': if (parse_duration_option(optarg, &r->grace, true) < 0) return -1; break;
        case 'M': if (parse_duration_option(optarg, &r->max_time, false) < 0) return -1; break;
        case 'R': if (parse_duration_option(optarg, &r->ready_timeout, false) < 0) return -1; break;
        case 'S': if (parse_duration_option(optarg, &r->stall_timeout, false) < 0) return -1; break;
        case 'D': if (parse_duration_option(optarg, &r->drain_timeout, true) < 0) return -1; break;
        case 'C': r->no_cgroup = true; break;
        case 'g': r->signal_group = true; break;
        case 'v': r->verbose++; break;
        case 'e': {
                int v;
                if (gr_parse_int(optarg, &v) < 0 || v < 0 || v > 255) {
                        error_msg("invalid exit status '%s' (0 to 255)", QUOTED(optarg));
                        return -1;
                }
                r->remap_exit[v] = true;
                break;
        }
        case 'r': {
                char from[32];
                const char *colon = strchr(optarg, ':');
                int f = -1, t = -1;
                if (colon && (size_t)(colon - optarg) < sizeof(from)) {
                        memcpy(from, optarg, (size_t)(colon - optarg));
                        from[colon - optarg] = '\0';
                        f = parse_signal(from, false);
                        t = parse_signal(colon + 1, true);
                }
                if (f < 0 || t < 0 || f == SIGKILL || f == SIGSTOP || f == SIGCHLD || t == SIGCHLD) {
                        error_msg("invalid --rewrite-signal '%s' (SIGNAL:SIGNAL, as TERM:INT or 15:2; "
                                  ":0 drops it; not KILL, STOP or CHLD)", QUOTED(optarg));
                        return -1;
                }
                r->rewrite[f] = t == 0 ? -1 : t;
                break;
        }
        case 'P':
                *pdeathsig = parse_signal(optarg, false);
                if (*pdeathsig < 0) {
                        error_msg("invalid signal '%s'", QUOTED(optarg));
                        return -1;
                }
                break;
        case 'T': if (tty_when_option(optarg, &r->tty_when) < 0) return -1; break;
        case 'q': r->quiet = true; break;
        case 'p': {
                int v;
                if (gr_parse_int(optarg, &v) < 0 || v < 1 || v > 65535) {
                        error_msg("invalid port '%s'", QUOTED(optarg));
                        return -1;
                }
                r->ready_port = v;
                break;
        }
        case 'l':
                /* checked now (a usage error), compiled once nothing can end the run
                 * before it starts: an early exit leaves nothing allocated */
                if (regcomp(&r->ready_re, optarg, REG_EXTENDED | REG_NOSUB) != 0) {
                        error_msg("invalid regular expression '%s'", QUOTED(optarg));
                        return -1;
                }
                regfree(&r->ready_re);
                *ready_log = optarg;
                r->ready_log_set = true;
                break;
        }
        return 0;
}

/* 0 to go on, 1 when the help was printed, -1 for a usage error (said) */
static int parse_args(struct run *r, int argc, char **argv, const char **ready_log, int *pdeathsig)
{
        static const struct option opts[] = {
                { "grace", required_argument, NULL, 'G' },
                { "max-time", required_argument, NULL, 'M' },
                { "ready-port", required_argument, NULL, 'p' },
                { "ready-log", required_argument, NULL, 'l' },
                { "ready-timeout", required_argument, NULL, 'R' },
                { "stall-timeout", required_argument, NULL, 'S' },
                { "drain-timeout", required_argument, NULL, 'D' },
                { "no-cgroup", no_argument, NULL, 'C' },
                { "quiet", no_argument, NULL, 'q' },
                { "json", required_argument, NULL, 'j' },
                { "ready-file", required_argument, NULL, 'F' },
                { "tty", required_argument, NULL, 'T' },
                { "remap-exit", required_argument, NULL, 'e' },
                { "signal-group", no_argument, NULL, 'g' },
                { "rewrite-signal", required_argument, NULL, 'r' },
                { "parent-death-signal", required_argument, NULL, 'P' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+G:M:p:l:R:S:D:Cqj:F:T:hv", opts, NULL)) != -1) {
                if (c == 'h') {
                        run_usage(stdout);
                        return 1;
                }
                if (c == '?' || c == ':' || !strchr("GMplRSDCqjFTegrPv", c)) {
                        unknown_option(argc, argv, opts, "run");
                        return -1;
                }
                if (parse_option(r, c, ready_log, pdeathsig) < 0)
                        return -1;
        }
        if (optind >= argc) {
                error_msg("no command to run; usage: gpureap run [OPTIONS] -- COMMAND [ARGS...]");
                return -1;
        }
        r->cmd = &argv[optind];
        return 0;
}

/* The command started, or why not (its exit code in e) */
static void run_started(struct run *r, int exec_errno, int fork_errno, struct run_end *e)
{
        if (exec_errno || fork_errno)
                run_tty_restore(&r->tty); /* the terminal back before a word is written to it */
        if (fork_errno) {
                error_msg("cannot fork: %s", strerror(fork_errno));
                e->code = EXIT_RUN_FAILED;
                e->ended = "gpureap_failed";
                e->run_error = "cannot fork";
        } else if (exec_errno) {
                error_msg("cannot run '%s': %s", QUOTED(r->cmd[0]), strerror(exec_errno));
                e->code = exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
                e->ended = exec_errno == ENOENT ? "not_found" : "cannot_execute";
        } else {
                run_tty_started(&r->tty);
        }
}

/* output still in the pipes belongs to the user */
static void run_flush_output(struct run *r)
{
        while (r->out_fd >= 0 || r->err_fd >= 0) {
                struct pollfd p[2] = { { .fd = r->out_fd, .events = POLLIN }, { .fd = r->err_fd, .events = POLLIN } };
                if (poll(p, 2, 0) <= 0)
                        break;
                if (p[0].revents)
                        pump(r, r->out_fd, STDOUT_FILENO);
                if (p[1].revents)
                        pump(r, r->err_fd, STDERR_FILENO);
        }
}

/* The run's exit code once the tree has ended, from how it ended */
static void run_exit_code(const struct run *r, struct run_end *e)
{
        if (e->got_signal) {
                e->code = 128 + e->got_signal;
                e->ended = "gpureap_signalled";
        } else if (e->child_done) {
                e->code = WIFEXITED(e->child_status) ? WEXITSTATUS(e->child_status) : 128 + WTERMSIG(e->child_status);
                e->ended = WIFEXITED(e->child_status) ? "exit" : "signal";
        } else {
                /* the loop ends only with the command done, a signal or a watchdog */
                e->code = EXIT_RUN_FAILED;
                e->ended = "gpureap_failed";
                e->run_error = "the command's end was not seen";
        }
        /* --remap-exit, as tini -e: the command's status (128+N for a signal, also one that
         * gpureap got and passed on: 143 for a TERM), never gpureap's own */
        if ((e->child_done || e->got_signal) && r->remap_exit[e->code]) {
                verbose(r, "exit status %d remapped to 0", e->code);
                e->code = 0;
                e->remapped = true;
        }
}

int cmd_run(int argc, char **argv)
{
        /* zero in the BSS, touched only where written: the 22 KB of it zeroed on the stack were
         * a tenth of the instructions of 'run -- true' (callgrind). One run per process */
        static struct run r;
        r.grace = 5000;
        r.drain_timeout = 30000;
        r.out_fd = r.err_fd = r.sigfd = -1;
        r.cgroup_lock = r.cgroup_kill_fd = r.group_fd = -1;
        /* a stdout or stderr the caller closed (held with /dev/null, program.c) cannot be
         * written: the command's output through gpureap finds its pipe closed, as it would
         * have found its fd without gpureap */
        r.out_broken = std_fd_held(STDOUT_FILENO);
        r.err_broken = std_fd_held(STDERR_FILENO);
        const char *ready_log = NULL;
        int pdeathsig = 0;
        pid_t parent = getppid();
        int pa = parse_args(&r, argc, argv, &ready_log, &pdeathsig);
        if (pa > 0 && (fflush(stdout) != 0 || ferror(stdout))) {
                /* the help not written (a closed or full stdout): gpureap's own failure, as
                 * for --json - (run's codes are the command's; 4 could be one) */
                error_msg("cannot write the output: %s", strerror(errno ? errno : EIO));
                return EXIT_RUN_FAILED;
        }
        if (pa != 0)
                return pa > 0 ? EXIT_CLEAN : EXIT_USAGE;
        bool want_ready = r.ready_port || r.ready_log_set;
        if (want_ready && !r.ready_timeout)
                r.ready_timeout = 600000;
        /* with a watchdog, output goes through gpureap: for the log regex, the stall clock and
         * the last line in a diagnosis */
        bool pipe_output = want_ready || r.stall_timeout;

        if (signalling_env_ok("run") < 0)
                return EXIT_USAGE;
        /* at a terminal: the command as its foreground job, or on a pty of its own */
        int q = run_tty_open(&r.tty, r.tty_when, pipe_output);
        if (q < 0) {
                error_msg("cannot open a pseudo-terminal: %s", strerror(-q));
                return EXIT_RUN_FAILED;
        }
        bool pty = r.tty.kind == RUN_TTY_PTY;
        bool pipe_out = pipe_output && !pty, pipe_err = pipe_output && !(pty && r.tty.err_to_pty);
        r.tty_lines = pty;
        audit_open("run");
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        sigset_t old;
        take_signals(&r, pdeathsig, parent, &old);

        int exec_errno, fork_errno;
        q = start_command(&r, pipe_out, pipe_err, &old, ready_log, &exec_errno, &fork_errno);
        if (q < 0)
                return -q;
        /* the command has its caller's directory; gpureap holds none (a mount stays unmountable
         * while a process has its working directory there) */
        absolute_env();
        library_from_env(); /* the library's paths too */
        if (chdir("/") < 0)
                verbose(&r, "cannot leave the working directory: %s", strerror(errno));

        struct run_end e = { .code = -1 };
        run_started(&r, exec_errno, fork_errno, &e);
        if (e.code < 0)
                supervise(&r, want_ready, &e);
        run_flush_output(&r);
        run_tty_end_relay(&r.tty);
        if (r.announced)
                sd_notify_send("STOPPING=1\nSTATUS=ending the tree, waiting for the GPU memory");
        uint64_t end_t0 = gr_now_ms();
        trace.on = getenv("GPUREAP_RUN_TRACE") != NULL;
        trace_step("the end begins");
        end_tree(&r, e.got_signal, &e.child_status, &e.child_done);
        uint64_t end_ms = gr_now_ms() - end_t0;
        run_tty_restore(&r.tty); /* the job's terminal back to gpureap's group before it writes */
        if (e.code < 0)
                run_exit_code(&r, &e);

        /* the GPUs the tree used: wait until the driver has their memory back */
        char gpu_note[256];
        int drain_met;
        uint64_t drain_ms;
        wait_gpus_back(&r, &drain_met, &drain_ms, gpu_note, sizeof(gpu_note));
        trace_step("the GPU memory verified");
        say_end(&r, &e, gpu_note);
        struct stat rst;
        if (r.ready_file && r.announced && lstat(r.ready_file, &rst) == 0 && S_ISREG(rst.st_mode) &&
            rst.st_dev == r.ready_dev && rst.st_ino == r.ready_ino)
                unlink(r.ready_file); /* not ready any more (and only the file written: never what replaced it) */
        /* a result that could not be written (a full disk) is gpureap's failure: a script that
         * reads it must not take the command's 0 for it */
        if (r.json_path && !write_result(&r, e.code, e.ended, e.run_error, e.got_signal, e.child_done ? &e.child_status : NULL,
                                         end_ms, drain_met, drain_ms)) {
                error_msg("the result was not written; the command's exit status was %d", e.code);
                e.code = EXIT_RUN_FAILED;
        }
        if (r.ready_log_set)
                regfree(&r.ready_re);
        free(r.sampled);
        free(r.end_pids);
        free(r.end_before);
        gr_snapshot_free(r.drm_before);
        free(r.drm_keys);
        trace_step("done");
        trace_print();
        return e.code;
}
