#!/usr/bin/env python3
# f-forker.py PIDFILE [--multiprocessing-fork]: a leftover that holds nvidia0 (12 fds: a CUDA
# footprint) and answers SIGTERM by forking: the child keeps the files, the parent exits. Each
# generation records "gen PID" in PIDFILE. The argument makes it an orphaned multiprocessing
# worker by its command line (a sure leftover once its parent is gone). F_FORKER_DRM names an
# AMD or Intel GPU's render node (DEVDIR/dri/renderD128, by name in a test's device directory),
# which gpureap does not reap, got another way each:
#   1       the parent opens it before it forks: the child is born holding it ("drm CHILD")
#   late    the child ignores SIGTERM and opens it 200 ms later, before the SIGKILL ("drm CHILD")
#   thread  no fork: a thread of the leftover itself, with a file table of its own
#           (unshare(CLONE_FILES)), opens it at the start ("drm PID" too)
import ctypes, os, signal, sys, threading, time
pidfile = sys.argv[1]
dev = os.environ.get("GPUREAP_DEV_DIR", "/dev")
fds = [os.open(dev + "/nvidia0", os.O_RDWR) for _ in range(12)]
fds.append(os.open(dev + "/nvidiactl", os.O_RDWR))
drm = os.environ.get("F_FORKER_DRM", "")
def record(role="gen", pid=None):
    with open(pidfile, "a") as f:
        f.write("%s %d\n" % (role, pid or os.getpid()))
def on_term(sig, frame):
    if drm == "1": # opened before the fork: the child is born holding it
        fds.append(os.open(dev + "/dri/renderD128", os.O_RDWR))
    if drm == "late": # the child ignores TERM from its first instruction: a TERM that came
        # before it could (a loaded machine) made it fork again and exit, the test's one
        # "drm" child gone and another holding the file (a CI run under ASan)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    child = os.fork()
    if child > 0:
        if drm: # the parent names it: the child may be signalled before it could
            record("drm", child)
        os._exit(0)
    if drm == "1":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    elif drm == "late":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        time.sleep(0.2)
        fds.append(os.open(dev + "/dri/renderD128", os.O_RDWR))
    else:
        record()
if drm == "thread":
    opened = threading.Event()
    def own_table():
        CLONE_FILES = 0x400
        if ctypes.CDLL(None, use_errno=True).unshare(CLONE_FILES) != 0:
            sys.exit("unshare(CLONE_FILES): errno %d" % ctypes.get_errno())
        os.open(dev + "/dri/renderD128", os.O_RDWR)
        opened.set()
        while True:
            time.sleep(1)
    threading.Thread(target=own_table, daemon=True).start()
    opened.wait()
    record("drm")
else:
    signal.signal(signal.SIGTERM, on_term)
record()
while True:
    time.sleep(1)
