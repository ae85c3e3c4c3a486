#!/usr/bin/env python3
# f-forker.py PIDFILE [--multiprocessing-fork]: a leftover that holds nvidia0 (12 fds: a CUDA
# footprint) and answers SIGTERM by forking: the child keeps the files, the parent exits. Each
# generation records "gen PID" in PIDFILE. The argument makes it an orphaned multiprocessing
# worker by its command line (a sure leftover once its parent is gone).
import os, signal, sys, time
pidfile = sys.argv[1]
dev = os.environ.get("GPUREAP_DEV_DIR", "/dev")
fds = [os.open(dev + "/nvidia0", os.O_RDWR) for _ in range(12)]
fds.append(os.open(dev + "/nvidiactl", os.O_RDWR))
def record():
    with open(pidfile, "a") as f:
        f.write("gen %d\n" % os.getpid())
def on_term(sig, frame):
    if os.fork() > 0:
        os._exit(0)
    record()
signal.signal(signal.SIGTERM, on_term)
record()
while True:
    time.sleep(1)
