#!/usr/bin/env python3
"""A terminal and a shell with job control, for the tests of 'gpureap run' at a terminal.

usage: ptyjob.py DIR [--size ROWS COLS] [--bg] -- COMMAND [ARGS...]

The terminal is a pseudo-terminal; what it shows is appended to DIR/screen. Its session leader
is a small shell that starts COMMAND as a job (a process group of its own, the terminal's
foreground unless --bg) and follows it as bash does: a stopped job gives the terminal back to
the shell, 'fg' gives it to the job again and continues it. The test drives it by lines written
to the FIFO DIR/ctl:

  keys HEX        type these bytes (hex) at the terminal: 1a is Ctrl-Z, 03 is Ctrl-C
  fg | bg         continue the job in the foreground / in the background
  size ROWS COLS  resize the terminal (the kernel sends SIGWINCH to its foreground group)
  modes NAME      write the terminal's modes now (termios, as the shell sees them) to DIR/NAME

and reads what happened from DIR/events, a line each: "job PID", "stopped SIG", "exit N" or
"signal N", "foreground shell|job|other PGID" (whose the terminal is after the job ended: the
shell's, the job's own group, or another group). The modes
before the job started and after it ended are in DIR/modes.before and DIR/modes.after.
Everything is bounded: after 60 s the job is killed (by its PID) and the helper fails.
"""
import errno
import fcntl
import os
import select
import signal
import struct
import sys
import termios
import time

DEADLINE = 60.0


def modes_text(fd):
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(fd)
    ccs = ",".join("%d" % (c if isinstance(c, int) else ord(c)) for c in cc)
    return "iflag=%x oflag=%x cflag=%x lflag=%x cc=%s\n" % (iflag, oflag, cflag, lflag, ccs)


def write_file(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def event(d, line):
    with open(os.path.join(d, "events"), "a") as f:
        f.write(line + "\n")


def shell(d, argv, bg, cmds):
    """The session leader on the pty: start the job, follow it, obey the commands"""
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # it takes the terminal back from the background
    signal.signal(signal.SIGTTIN, signal.SIG_IGN)
    signal.signal(signal.SIGTSTP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    write_file(os.path.join(d, "modes.before"), modes_text(0))
    me = os.getpgrp()
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        if not bg:
            os.tcsetpgrp(0, os.getpid())
        for s in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP, signal.SIGINT, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    if not bg:
        try:
            os.tcsetpgrp(0, job)
        except OSError:
            pass
    event(d, "job %d" % job)
    buf = b""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        r, _, _ = select.select([cmds], [], [], 0.01)
        if r:
            data = os.read(cmds, 4096)
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                w = line.decode().split()
                if not w:
                    continue
                if w[0] == "fg":
                    os.tcsetpgrp(0, job)
                    os.killpg(job, signal.SIGCONT)
                elif w[0] == "bg":
                    os.killpg(job, signal.SIGCONT)
                elif w[0] == "modes":
                    write_file(os.path.join(d, w[1]), modes_text(0))
        pid, st = os.waitpid(job, os.WNOHANG | os.WUNTRACED)
        if pid == 0:
            continue
        if os.WIFSTOPPED(st):
            os.tcsetpgrp(0, me)
            event(d, "stopped %d" % os.WSTOPSIG(st))
            continue
        fg = os.tcgetpgrp(0)
        write_file(os.path.join(d, "modes.after"), modes_text(0))
        if os.WIFEXITED(st):
            event(d, "exit %d" % os.WEXITSTATUS(st))
        else:
            event(d, "signal %d" % os.WTERMSIG(st))
        event(d, "foreground %s" % ("shell" if fg == me else "job" if fg == job else "other %d" % fg))
        os._exit(0)
    event(d, "deadline")
    os.kill(job, signal.SIGKILL)
    os._exit(1)


def main():
    args = sys.argv[1:]
    d = args.pop(0)
    rows, cols, bg = 24, 80, False
    while args and args[0] != "--":
        if args[0] == "--size":
            rows, cols = int(args[1]), int(args[2])
            args = args[3:]
        elif args[0] == "--bg":
            bg = True
            args = args[1:]
        else:
            sys.exit("ptyjob.py: unknown option " + args[0])
    argv = args[1:]
    os.makedirs(d, exist_ok=True)
    ctl_path = os.path.join(d, "ctl")
    os.mkfifo(ctl_path)
    ctl = os.open(ctl_path, os.O_RDWR | os.O_NONBLOCK)  # never at EOF: the test opens it each time
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    cmd_r, cmd_w = os.pipe()
    leader = os.fork()
    if leader == 0:
        os.close(master)
        os.close(cmd_w)
        os.close(ctl)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.close(slave)
        try:
            shell(d, argv, bg, cmd_r)
        finally:
            os._exit(1)
    os.close(slave)
    os.close(cmd_r)
    screen = open(os.path.join(d, "screen"), "ab", buffering=0)
    buf = b""
    end = time.monotonic() + DEADLINE + 5
    done = False
    while time.monotonic() < end:
        r, _, _ = select.select([master, ctl], [], [], 0.05)
        if master in r:
            try:
                data = os.read(master, 4096)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                data = b""
            if data:
                screen.write(data)
            elif done:
                break
        if ctl in r:
            try:
                buf += os.read(ctl, 4096)
            except BlockingIOError:
                pass
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                w = line.decode().split()
                if not w:
                    continue
                if w[0] == "keys":
                    os.write(master, bytes.fromhex(w[1]))
                elif w[0] == "size":
                    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", int(w[1]), int(w[2]), 0, 0))
                else:
                    os.write(cmd_w, line + b"\n")
        if not done:
            pid, st = os.waitpid(leader, os.WNOHANG)
            if pid == leader:
                done = True
                end = min(end, time.monotonic() + 2)  # what is left on the screen
                if not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
                    sys.exit(1)
    sys.exit(0 if done else 1)


if __name__ == "__main__":
    main()
