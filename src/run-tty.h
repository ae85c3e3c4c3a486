/* How 'gpureap run' gives its command a terminal (src/run-tty.c) */
#ifndef GPUREAP_RUN_TTY_H
#define GPUREAP_RUN_TTY_H

#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>
#include <termios.h>

/* --tty=WHEN */
enum tty_when { TTY_AUTO, TTY_ALWAYS, TTY_NEVER };
int tty_when_option(const char *value, enum tty_when *ret); /* -1: message printed */

enum run_tty_kind {
        RUN_TTY_NONE, /* a session of its own and no terminal: as under systemd, Slurm, CI */
        RUN_TTY_JOB,  /* the foreground job of gpureap's terminal, in gpureap's session */
        RUN_TTY_PTY,  /* a pseudo-terminal of its own, relayed to gpureap's */
};

struct run_tty {
        enum run_tty_kind kind;
        int fd;                   /* gpureap's terminal (stdin, else stdout, else stderr); -1 */
        bool input;               /* fd is stdin: keys come from it */
        struct termios modes;     /* fd's modes at the start, put back whenever gpureap leaves */
        bool have_modes;
        struct termios cmd_modes; /* job: the command's own while it is stopped */
        bool have_cmd_modes;
        bool gave;                /* job: the foreground was given to the command */
        bool raw;                 /* pty: fd is in raw mode now */
        bool relay;               /* pty: keys are relayed to the command now */
        bool err_to_pty;          /* pty: stderr goes there too (stdout and stderr one terminal) */
        int master, slave;
        char in[4096];            /* pty: keys the command has not taken yet */
        size_t in_len, in_off;
        pid_t pgid;               /* the command's process group (its PID) */
        pid_t shim;               /* pty: the pty session's leader, gpureap's child */
};

/* What the child and the shim tell gpureap on the exec pipe before it closes */
enum { CHILD_PID = 1, CHILD_EXEC_ERRNO, CHILD_FORK_ERRNO };
struct child_report {
        int kind;
        int value;
};
void child_report(int fd, int kind, int value);

/* Decide the kind (watch_output: a watchdog reads the output) and open the pty; -errno when
 * --tty=always cannot have one */
int run_tty_open(struct run_tty *t, enum tty_when when, bool watch_output);
/* In the forked child, before the exec. With a pty the child becomes the shim and never
 * returns: the command, its child, returns */
void run_tty_child(struct run_tty *t, int report_fd);
void run_tty_parent(struct run_tty *t, pid_t child);
/* The command runs: a pty's relay starts */
void run_tty_started(struct run_tty *t);
/* The command stopped: the terminal goes back, gpureap stops itself; returns once continued */
void run_tty_suspend(struct run_tty *t);
/* gpureap was continued (fg, bg): the terminal to the command again if it is gpureap's */
void run_tty_resume(struct run_tty *t);
void run_tty_winch(struct run_tty *t);
/* The relay's poll entries, and what they said */
void run_tty_poll(const struct run_tty *t, struct pollfd *in, struct pollfd *out);
void run_tty_relay(struct run_tty *t, short in_revents);
/* The relay is over: gpureap's terminal in its own modes again (idempotent) */
void run_tty_end_relay(struct run_tty *t);
/* The tree is gone: the terminal's foreground and modes back as they were; the pty closed */
void run_tty_restore(struct run_tty *t);
/* gpureap is dying of a fault: the terminal's modes back if it is raw (async-signal-safe) */
void run_tty_crash_restore(void);

#endif
