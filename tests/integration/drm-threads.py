# A live job for tests/integration/reap-drm.sh: N threads, each with a file table of its own
# (unshare(CLONE_FILES)); the last one opens FILE in its table only. Writes the TID of that
# thread to OUT, then sleeps until killed.
#   python3 drm-threads.py N FILE OUT
import ctypes
import os
import sys
import threading
import time

CLONE_FILES = 0x400
libc = ctypes.CDLL(None, use_errno=True)
n, path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ready = threading.Semaphore(0)
keep = []


def thread(last):
    if libc.unshare(CLONE_FILES) != 0:
        sys.exit("unshare: errno %d" % ctypes.get_errno())
    if last:
        keep.append(os.open(path, os.O_RDWR))
        with open(out + ".tmp", "w") as f:
            f.write("%d %d\n" % (threading.get_native_id(), keep[0]))
    ready.release()
    while True:
        time.sleep(100)


for i in range(n):
    threading.Thread(target=thread, args=(i == n - 1,), daemon=True).start()
    ready.acquire()
os.rename(out + ".tmp", out)
while True:
    time.sleep(100)
