#!/usr/bin/env python3
# f-forker.py PIDFILE [--multiprocessing-fork]: a leftover that holds nvidia0 (12 fds: a CUDA
# footprint) and answers SIGTERM by forking: the child keeps the files, the parent exits. Each
# generation records "gen PID" in PIDFILE. The argument makes it an orphaned multiprocessing
# worker by its command line (a sure leftover once its parent is gone). With F_FORKER_DRM=1 the
# parent opens DEVDIR/dri/renderD128 before it forks (an AMD or Intel GPU's render node, by name in a test's
# device directory), which gpureap does not reap: it records "drm PID" instead of "gen PID".
import os, signal, sys, time
pidfile = sys.argv[1]
dev = os.environ.get("GPUREAP_DEV_DIR", "/dev")
fds = [os.open(dev + "/nvidia0", os.O_RDWR) for _ in range(12)]
fds.append(os.open(dev + "/nvidiactl", os.O_RDWR))
drm = os.environ.get("F_FORKER_DRM") == "1"
def record(role="gen"):
    with open(pidfile, "a") as f:
        f.write("%s %d\n" % (role, os.getpid()))
def on_term(sig, frame):
    if drm: # opened before the fork: the child is born holding it
        fds.append(os.open(dev + "/dri/renderD128", os.O_RDWR))
    child = os.fork()
    if child > 0:
        if drm: # the parent names it: the child may be signalled before it could
            with open(pidfile, "a") as f:
                f.write("drm %d\n" % child)
        os._exit(0)
    if drm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return
    record()
signal.signal(signal.SIGTERM, on_term)
record()
while True:
    time.sleep(1)
