#!/usr/bin/env python3
"""A process tree that records every signal each of its processes gets, for the tests that hold
'gpureap run' against tini's and dumb-init's scenarios (tests/integration/run-init-scenarios.sh).

usage: sigtree.py DIR PIDS ACTION [KIND...]

The command ("cmd") starts one process of each KIND, then does ACTION:
  exit:N   exit N at once, leaving the others behind
  stay     stay, as the others do
  kill:SIG end itself with SIG (its default action)
KINDs, as the escapees tini and dumb-init leave:
  grp      a child in a process group of its own
  sid      a child in a session of its own (setsid)
  dbl      a grandchild whose parent exited (double fork: reparented to the subreaper)
  ign      a child that does not end on SIGTERM (its handler records it and goes on)
  child    a plain child, in the command's group
  spawn    a child in the command's group whose SIGTERM handler forks a child ("spawned"), born
           after the TERM: that one records its own signals
  leave    a child in the command's group whose SIGTERM handler moves it to a group of its own
  join     a child in a group of its own that joins the command's group once the command has
           recorded its SIGTERM (the group's, which this one did not get)
Each process appends the name of every signal it gets to DIR/ROLE.sig (one a line) and writes
"ROLE PID" to PIDS once its handlers are in place; "cmd" writes DIR/ready once every process has.
On SIGTERM (not "ign") a process stays a little (a second SIGTERM would be recorded), writes
"exit" to its file and exits 0: its handler ran to its end.
"""
import os
import signal
import sys
import time

DIR, PIDS, ACTION = sys.argv[1], sys.argv[2], sys.argv[3]
KINDS = sys.argv[4:]
RECORDED = [s for s in range(1, signal.SIGRTMAX + 1)
            if s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGTSTP, signal.SIGTTIN,
                         signal.SIGTTOU, 32, 33)]  # 32, 33: glibc's own
term_at = None


def name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "SIGRTMIN+%d" % (sig - signal.SIGRTMIN)


def note(role, text):
    fd = os.open(os.path.join(DIR, role + ".sig"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, (text + "\n").encode())
    os.close(fd)


def handlers(role, ignore_term):
    def on(sig, frame):
        global term_at
        note(role, name(sig))
        if sig == signal.SIGTERM and not ignore_term and term_at is None:
            term_at = time.monotonic()
            if role == "spawn":
                spawn_child()
            if role == "leave":
                os.setpgid(0, 0)
    for s in RECORDED:
        signal.signal(s, on)
    # the handlers are in place: only now may the test signal it
    fd = os.open(PIDS, os.O_WRONLY | os.O_APPEND)
    os.write(fd, ("%s %d\n" % (role, os.getpid())).encode())
    os.close(fd)


def spawn_child():
    # its signals blocked until its own handlers are in place: none is taken for its parent's
    old = signal.pthread_sigmask(signal.SIG_BLOCK, RECORDED)
    if os.fork() == 0:
        global term_at
        term_at = None
        handlers("spawned", False)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        live_loop("spawned")
    signal.pthread_sigmask(signal.SIG_SETMASK, old)


def live_loop(role):
    while True:
        if term_at is not None and time.monotonic() - term_at > 0.3:
            note(role, "exit")
            os._exit(0)
        time.sleep(0.02)


def live(role, ignore_term=False):
    handlers(role, ignore_term)
    while True:
        if role == "join" and os.getpgid(0) != CMD_GROUP:
            try:
                with open(os.path.join(DIR, "cmd.sig")) as f:
                    if "SIGTERM" in f.read().split():
                        os.setpgid(0, CMD_GROUP)
            except OSError:
                pass
        if term_at is not None and time.monotonic() - term_at > 0.3:
            note(role, "exit")
            os._exit(0)
        time.sleep(0.005 if role == "join" else 0.02)


CMD_GROUP = os.getpgid(0)


def start(kind):
    pid = os.fork()
    if pid:
        if kind == "dbl":
            os.waitpid(pid, 0)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if kind in ("grp", "join"):
        os.setpgid(0, 0)
    elif kind == "sid":
        os.setsid()
    elif kind == "dbl":
        if os.fork():
            os._exit(0)
    live(kind, ignore_term=kind == "ign")


for k in KINDS:
    start(k)
if ACTION == "stay":
    handlers("cmd", False)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    with open(PIDS) as f:
        roles = {line.split()[0] for line in f if line.split()}
    if all(k in roles for k in KINDS) and (ACTION != "stay" or "cmd" in roles):
        break
    time.sleep(0.01)
open(os.path.join(DIR, "ready"), "w").close()
if ACTION.startswith("exit:"):
    os._exit(int(ACTION[5:]))
if ACTION.startswith("kill:"):
    sig = getattr(signal, "SIG" + ACTION[5:])
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    time.sleep(5)
    os._exit(99)
while True:
    if term_at is not None and time.monotonic() - term_at > 0.3:
        note("cmd", "exit")
        os._exit(0)
    time.sleep(0.02)
