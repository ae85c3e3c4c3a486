/* How 'gpureap run' gives its command a terminal, as a shell gives one to a job.
 *
 * At a terminal (stdin is one, and gpureap's process group is its foreground) the command runs as
 * the terminal's foreground job: in gpureap's session, in a process group of its own, which the
 * terminal's Ctrl-C, Ctrl-Z and Ctrl-\ reach directly (gpureap, in its own group, gets none of
 * them). Where a watchdog must read the command's output and that output goes to a terminal, the
 * command gets a pseudo-terminal of its own instead, relayed both ways while gpureap's terminal
 * is in raw mode (Ctrl-Z then is a byte that the pty turns into the command's SIGTSTP). Either way,
 * when the command stops gpureap gives the terminal back to the shell's state and stops itself,
 * so that the shell shows the job stopped; continued in the foreground, it gives the terminal
 * back and continues the command.
 *
 * A pty's session needs a leader that stays (its exit hangs the pty up) and the command in a
 * group of its own below it: a process group whose members' parents are all outside its session
 * is orphaned, and the kernel drops a terminal's SIGTSTP to an orphaned group (seen on Linux 6.x:
 * a command that leads its pty's session ignores Ctrl-Z). The leader, the shim, is a fork of
 * gpureap that waits for the command, stops when it stops and ends as it ends. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"
#include "run-tty.h"

enum { EXIT_SHIM_FAILED = 125 };

#ifndef SYS_close_range
#define SYS_close_range 436 /* Linux 5.9; no libc wrapper needed */
#endif

int tty_when_option(const char *value, enum tty_when *ret)
{
        static const char *const names[] = { "auto", "always", "never" };
        for (size_t i = 0; i < GR_ELEMENTSOF(names); i++)
                if (strcmp(value, names[i]) == 0) {
                        *ret = (enum tty_when)i;
                        return 0;
                }
        error_msg("invalid --tty '%s' (auto, always or never)", QUOTED(value));
        return -1;
}

void child_report(int fd, int kind, int value)
{
        struct child_report m = { kind, value };
        if (write(fd, &m, sizeof(m)) < 0)
                return; /* gpureap is gone: nobody to tell */
}

static bool foreground(const struct run_tty *t)
{
        return t->fd >= 0 && tcgetpgrp(t->fd) == getpgrp();
}

static bool same_terminal(int a, int b)
{
        struct stat x, y;
        return isatty(a) && isatty(b) && fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_rdev == y.st_rdev;
}

/* ---- gpureap's terminal in raw mode, and put back even when gpureap crashes ---- */

static volatile sig_atomic_t guard_fd = -1;
static struct termios guard_modes;

/* gpureap's crash handler (cmd-run.c's, for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) calls it */
void run_tty_crash_restore(void)
{
        int fd = guard_fd;
        if (fd >= 0)
                tcsetattr(fd, TCSANOW, &guard_modes); /* async-signal-safe */
}

static void guard_install(const struct run_tty *t)
{
        guard_fd = -1; /* not half-written while the handler may read it */
        guard_modes = t->modes;
        guard_fd = t->fd;
}

static void copy_size(const struct run_tty *t)
{
        struct winsize ws;
        if (t->fd >= 0 && t->master >= 0 && ioctl(t->fd, TIOCGWINSZ, &ws) == 0)
                ioctl(t->master, TIOCSWINSZ, &ws); /* changed: the kernel tells the command (SIGWINCH) */
}

/* Keys go to the command only while gpureap is in the foreground: a read from the background
 * would stop gpureap (SIGTTIN), a mode change there would be the shell's terminal's */
static void enter_raw(struct run_tty *t)
{
        t->relay = t->input && t->master >= 0 && foreground(t);
        if (!t->relay)
                return;
        copy_size(t);
        if (t->raw || !t->have_modes)
                return;
        struct termios raw = t->modes;
        cfmakeraw(&raw);
        guard_install(t);
        if (tcsetattr(t->fd, TCSANOW, &raw) == 0) /* TCSANOW: a drain could wait forever (^S) */
                t->raw = true;
}

void run_tty_end_relay(struct run_tty *t)
{
        t->relay = false;
        if (!t->raw)
                return;
        tcsetattr(t->fd, TCSANOW, &t->modes);
        t->raw = false;
        guard_fd = -1;
}

/* ---- deciding, and the pty ---- */

static int open_pty(struct run_tty *t)
{
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0)
                return -errno;
        char name[128];
        int s = -1, e = 0;
        if (grantpt(m) < 0 || unlockpt(m) < 0)
                e = errno;
        else if ((e = ptsname_r(m, name, sizeof(name))) == 0 && (s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
                e = errno;
        if (e) {
                close(m);
                return -e;
        }
        /* the command's terminal is set up as gpureap's is (erase, suspend, interrupt keys); a
         * file or a pipe on stdout gets the command's own newlines, not the terminal's \r\n */
        struct termios tm = t->modes;
        if (t->have_modes || tcgetattr(s, &tm) == 0) {
                if (!isatty(STDOUT_FILENO))
                        tm.c_oflag &= ~(tcflag_t)ONLCR;
                tcsetattr(s, TCSANOW, &tm);
        }
        struct winsize ws;
        if (t->fd >= 0 && ioctl(t->fd, TIOCGWINSZ, &ws) == 0)
                ioctl(s, TIOCSWINSZ, &ws);
        /* a command that does not read its input must not block gpureap's relay */
        int fl = fcntl(m, F_GETFL);
        if (fl >= 0)
                fcntl(m, F_SETFL, fl | O_NONBLOCK);
        t->master = m;
        t->slave = s;
        return 0;
}

int run_tty_open(struct run_tty *t, enum tty_when when, bool watch_output)
{
        *t = (struct run_tty){ .fd = -1, .master = -1, .slave = -1 };
        if (when == TTY_NEVER)
                return 0;
        bool interactive = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
        if (when == TTY_AUTO && !interactive)
                return 0;
        t->fd = isatty(STDIN_FILENO) ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO
                : isatty(STDERR_FILENO) ? STDERR_FILENO : -1;
        t->input = t->fd == STDIN_FILENO;
        t->have_modes = t->fd >= 0 && tcgetattr(t->fd, &t->modes) == 0;
        if (when == TTY_ALWAYS || (watch_output && isatty(STDOUT_FILENO))) {
                int q = open_pty(t);
                if (q == 0) {
                        t->kind = RUN_TTY_PTY;
                        t->err_to_pty = same_terminal(STDOUT_FILENO, STDERR_FILENO);
                        return 0;
                }
                if (when == TTY_ALWAYS)
                        return q;
                /* no pty here (a container without /dev/pts): the job, its output piped */
        }
        t->kind = RUN_TTY_JOB;
        return 0;
}

/* ---- the child, the shim ---- */

/* Waits for the command and mirrors it: stopped, it stops (SIGSTOP: its own group is orphaned,
 * a SIGTSTP would be dropped); ended, it ends the same way. The command is left a zombie
 * (WNOWAIT) for gpureap, the subreaper, to reap after the shim: its PID, the number of its
 * process group, stays the command's until gpureap has seen the shim end. */
static _Noreturn void shim(pid_t cmd, int report_fd)
{
        prctl(PR_SET_NAME, "gpureap-tty");
        int moved = chdir("/"); /* the command keeps the caller's directory; the shim holds no mount */
        (void)moved;            /* (where / cannot be entered, it stays: no reason to fail the run) */
        close(report_fd); /* gpureap reads the exec pipe until every writer is gone */
        syscall(SYS_close_range, 0U, ~0U, 0U); /* the rest: the pty's end is the command's alone */
        /* gpureap's signals stay blocked (the ladder's TERM: the shim ends with the command),
         * but a hang-up ends it as it ends a shell: the pty's master closed with gpureap gone
         * (a crash, a SIGKILL), and the kernel then hangs up the command's group too */
        sigset_t hup;
        sigemptyset(&hup);
        sigaddset(&hup, SIGHUP);
        signal(SIGHUP, SIG_DFL);
        sigprocmask(SIG_UNBLOCK, &hup, NULL);
        for (;;) {
                siginfo_t si = { 0 };
                if (waitid(P_PID, (id_t)cmd, &si, WEXITED | WSTOPPED | WNOWAIT) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(EXIT_SHIM_FAILED);
                }
                if (si.si_code == CLD_STOPPED || si.si_code == CLD_TRAPPED) {
                        siginfo_t seen;
                        waitid(P_PID, (id_t)cmd, &seen, WSTOPPED | WNOHANG); /* this stop is told */
                        kill(getpid(), SIGSTOP);
                        continue;
                }
                if (si.si_code == CLD_EXITED)
                        _exit(si.si_status);
                if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
                        int sig = si.si_status;
                        struct rlimit none = { 0, 0 };
                        setrlimit(RLIMIT_CORE, &none); /* the command's core, if any, is its own */
                        signal(sig, SIG_DFL);
                        sigset_t s;
                        sigemptyset(&s);
                        sigaddset(&s, sig);
                        sigprocmask(SIG_UNBLOCK, &s, NULL);
                        raise(sig);
                        _exit(128 + sig);
                }
        }
}

void run_tty_child(struct run_tty *t, int report_fd)
{
        switch (t->kind) {
        case RUN_TTY_NONE:
                setsid();
                return;
        case RUN_TTY_JOB:
                /* as the parent does too: whichever runs first. SIGTTOU is blocked: a group
                 * just made is not the foreground yet */
                setpgid(0, 0);
                tcsetpgrp(t->fd, getpid());
                return;
        case RUN_TTY_PTY:
                break;
        }
        setsid();
        ioctl(t->slave, TIOCSCTTY, 0);
        pid_t cmd = fork();
        if (cmd < 0) {
                child_report(report_fd, CHILD_FORK_ERRNO, errno);
                _exit(EXIT_SHIM_FAILED);
        }
        if (cmd == 0) {
                setpgid(0, 0);
                tcsetpgrp(t->slave, getpid());
                if (t->input)
                        dup2(t->slave, STDIN_FILENO);
                dup2(t->slave, STDOUT_FILENO);
                if (t->err_to_pty)
                        dup2(t->slave, STDERR_FILENO);
                return; /* the slave's own fd and the master are O_CLOEXEC */
        }
        setpgid(cmd, cmd);
        tcsetpgrp(t->slave, cmd);
        child_report(report_fd, CHILD_PID, cmd);
        shim(cmd, report_fd);
}

void run_tty_parent(struct run_tty *t, pid_t child)
{
        if (t->kind == RUN_TTY_JOB) {
                t->pgid = child;
                setpgid(child, child); /* EACCES once it has exec'd: it did it itself */
                tcsetpgrp(t->fd, child);
                t->gave = true;
        } else if (t->kind == RUN_TTY_PTY) {
                t->shim = child;
                close(t->slave);
                t->slave = -1;
        }
}

void run_tty_started(struct run_tty *t)
{
        if (t->kind == RUN_TTY_PTY)
                enter_raw(t);
}

/* ---- stopping and continuing ---- */

/* The terminal back from the command's job: only while it is the command's (or the group it
 * had is gone: one of the tree's own, now ended), never from the shell that took it meanwhile */
static void take_back(struct run_tty *t, bool keep_cmd_modes)
{
        if (!t->gave)
                return;
        pid_t fg = tcgetpgrp(t->fd);
        if (fg == getpgrp()) {
                t->gave = false;
                return;
        }
        if (fg != t->pgid && !(fg > 0 && kill(-fg, 0) < 0 && errno == ESRCH))
                return;
        if (keep_cmd_modes)
                t->have_cmd_modes = tcgetattr(t->fd, &t->cmd_modes) == 0;
        tcsetpgrp(t->fd, getpgrp()); /* SIGTTOU is blocked: asked from the background */
        if (t->have_modes)
                tcsetattr(t->fd, TCSANOW, &t->modes);
        t->gave = false;
}

/* Stop gpureap's whole job, as the terminal's ^Z does: a pipeline's other commands too (a shell
 * shows a job stopped only when none of its processes runs). Returns once continued, or at once
 * where the group is orphaned (no shell to continue it) and the kernel drops the SIGTSTP. */
static void stop_self(void)
{
        sigset_t tstp;
        sigemptyset(&tstp);
        sigaddset(&tstp, SIGTSTP);
        struct timespec zero = { 0, 0 };
        while (sigtimedwait(&tstp, NULL, &zero) > 0)
                ; /* one already waiting would stop it a second time */
        sigprocmask(SIG_UNBLOCK, &tstp, NULL);
        kill(0, SIGTSTP);
        sigprocmask(SIG_BLOCK, &tstp, NULL);
}

void run_tty_suspend(struct run_tty *t)
{
        if (t->kind == RUN_TTY_NONE)
                return;
        if (t->kind == RUN_TTY_PTY)
                run_tty_end_relay(t);
        else
                take_back(t, true);
        stop_self();
        run_tty_resume(t);
}

void run_tty_resume(struct run_tty *t)
{
        if (t->kind == RUN_TTY_NONE || t->pgid <= 0)
                return;
        if (t->kind == RUN_TTY_PTY) {
                enter_raw(t);
                kill(t->shim, SIGCONT);
        } else if (foreground(t)) { /* fg */
                if (t->have_cmd_modes)
                        tcsetattr(t->fd, TCSANOW, &t->cmd_modes);
                tcsetpgrp(t->fd, t->pgid);
                t->gave = true;
        } else if (tcgetpgrp(t->fd) != t->pgid) { /* bg: the shell keeps it */
                t->gave = false;
        }
        kill(-t->pgid, SIGCONT);
}

void run_tty_winch(struct run_tty *t)
{
        if (t->kind == RUN_TTY_PTY)
                copy_size(t);
}

/* ---- keys ---- */

void run_tty_poll(const struct run_tty *t, struct pollfd *in, struct pollfd *out)
{
        *in = (struct pollfd){ .fd = t->relay && t->in_len == 0 ? t->fd : -1, .events = POLLIN };
        *out = (struct pollfd){ .fd = t->in_len > 0 ? t->master : -1, .events = POLLOUT };
}

void run_tty_relay(struct run_tty *t, short in_revents)
{
        if (in_revents && t->in_len == 0) {
                ssize_t n = read(t->fd, t->in, sizeof(t->in));
                if (n > 0) {
                        t->in_len = (size_t)n;
                        t->in_off = 0;
                } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                        t->relay = false; /* hung up */
                }
        }
        while (t->in_off < t->in_len) {
                ssize_t w = write(t->master, t->in + t->in_off, t->in_len - t->in_off);
                if (w < 0 && (errno == EAGAIN || errno == EINTR))
                        return; /* the command reads slower than keys come: POLLOUT */
                if (w <= 0)
                        break; /* nobody reads the pty any more */
                t->in_off += (size_t)w;
        }
        t->in_len = t->in_off = 0;
}

void run_tty_restore(struct run_tty *t)
{
        if (t->kind == RUN_TTY_PTY) {
                run_tty_end_relay(t);
                if (t->master >= 0)
                        close(t->master);
                t->master = -1;
        } else if (t->kind == RUN_TTY_JOB) {
                take_back(t, false);
        }
}
