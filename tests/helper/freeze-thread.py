#!/usr/bin/env python3
"""freeze-thread.py TID FILE: stop one thread of another process and keep it stopped, its
other threads running on: a thread stuck where nothing else is (PTRACE_SEIZE, then
PTRACE_INTERRUPT). Writes "stopped" to FILE once it is; on SIGTERM lets it go (PTRACE_DETACH)
and exits 0. Exit 77 when this process may not trace it (not root, Yama), 1 on another error."""
import ctypes
import errno
import os
import signal
import sys

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid):
    if libc.ptrace(req, tid, None, None) < 0:
        e = ctypes.get_errno()
        sys.stderr.write("freeze-thread: ptrace %#x %d: %s\n" % (req, tid, os.strerror(e)))
        sys.exit(77 if e == errno.EPERM else 1)


def main():
    tid, ready = int(sys.argv[1]), sys.argv[2]
    signal.signal(signal.SIGTERM, lambda *_: (ptrace(PTRACE_DETACH, tid), sys.exit(0)))
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    ptrace(PTRACE_SEIZE, tid)
    ptrace(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, WALL)  # the stop: from here the thread runs no more
    with open(ready, "w") as f:
        f.write("stopped\n")
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
