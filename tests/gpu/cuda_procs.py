"""Real CUDA process trees for tests/gpu/ghost.sh (run by hand on an NVIDIA machine).

  cuda_procs.py ghost PIDFILE GIB        allocate GIB on the GPU, fork a child that never
                                         touches CUDA (it inherits the device fds), both sleep
  cuda_procs.py launcher PIDFILE N GIB   a launcher without CUDA starts N CUDA workers; worker 0
                                         double-forks, so its CUDA process is reparented at once
  cuda_procs.py map-keeper PIDFILE GIB   allocate GIB, fork a child that closes every fd above 2
                                         (keeping the mappings) and sleeps; the parent sleeps
  cuda_procs.py footprint                print the NVIDIA fds and mappings of a process after
                                         cuInit alone, after a context, and of a fork after it
  cuda_procs.py thread-table PIDFILE GIB allocate GIB, then a thread takes a copy of the file
                                         table (unshare(CLONE_FILES)) and the main thread closes
                                         its own /dev/nvidia* fds: the process lives on, holding
                                         the GPU only through that thread's table
Each process appends "ROLE PID" to PIDFILE once it is set up. Memory is taken with plain
allocations (torch tensors), never managed memory."""
import os
import subprocess
import sys
import time


def record(pidfile, role):
    with open(pidfile, "a") as f:
        f.write(f"{role} {os.getpid()}\n")


def sleep_forever():
    while True:
        time.sleep(3600)


def allocate(gib):
    import torch
    x = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    return x


def ghost(pidfile, gib):
    x = allocate(gib)
    child = os.fork()
    if child == 0:
        record(pidfile, "child")
        sleep_forever()
    record(pidfile, "owner")
    sleep_forever()
    del x


def worker(pidfile, role, gib):
    x = allocate(gib)
    record(pidfile, role)
    sleep_forever()
    del x


def launcher(pidfile, n, gib):
    record(pidfile, "launcher")
    for i in range(n):
        if i == 0:
            # double fork: the CUDA worker's parent exits at once
            code = ("import os,sys\n"
                    "if os.fork() == 0:\n"
                    f"    sys.argv = ['x', 'worker', {pidfile!r}, 'worker0', '{gib}']\n"
                    f"    exec(open({__file__!r}).read())\n"
                    "os._exit(0)\n")
            subprocess.Popen([sys.executable, "-c", code]).wait()
        else:
            subprocess.Popen([sys.executable, __file__, "worker", pidfile, f"worker{i}", str(gib)])
    sleep_forever()


def map_keeper(pidfile, gib):
    x = allocate(gib)
    child = os.fork()
    if child == 0:
        os.closerange(3, 65536)
        record(pidfile, "keeper")
        sleep_forever()
    record(pidfile, "owner")
    sleep_forever()
    del x


def nvidia_footprint(pid="self"):
    fds = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/dev/nvidia")
        except OSError:
            pass
    with open(f"/proc/{pid}/maps") as f:
        maps = sum(" /dev/nvidia" in line for line in f)
    gpu_fds = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
            gpu_fds += t.startswith("/dev/nvidia") and t[11:].isdigit()
        except OSError:
            pass
    return f"nvidia fds {fds} (on /dev/nvidiaN: {gpu_fds}), nvidia mappings {maps}"


def footprint():
    import ctypes
    cuda = ctypes.CDLL("libcuda.so.1")
    print("cuInit:", cuda.cuInit(0), nvidia_footprint(), flush=True)
    x = allocate(0.25)
    print("with a context (torch, 256 MiB):", nvidia_footprint(), flush=True)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.read(r, 1)
        os._exit(0)
    print("its fork:", nvidia_footprint(child), flush=True)
    os.write(w, b"x")
    os.waitpid(child, 0)
    del x


def thread_table(pidfile, gib):
    import ctypes
    import threading
    x = allocate(gib)
    libc = ctypes.CDLL(None, use_errno=True)
    copied = threading.Event()

    def keeper():
        if libc.unshare(0x400) != 0:  # CLONE_FILES
            sys.exit("unshare(CLONE_FILES): errno %d" % ctypes.get_errno())
        copied.set()
        sleep_forever()

    threading.Thread(target=keeper, daemon=True).start()
    copied.wait()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd).startswith("/dev/nvidia"):
                os.close(int(fd))
        except OSError:
            pass
    record(pidfile, "owner")
    sleep_forever()
    del x


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "ghost":
        ghost(sys.argv[2], float(sys.argv[3]))
    elif mode == "launcher":
        launcher(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "map-keeper":
        map_keeper(sys.argv[2], float(sys.argv[3]))
    elif mode == "footprint":
        footprint()
    elif mode == "thread-table":
        thread_table(sys.argv[2], float(sys.argv[3]))
    elif mode == "worker":
        worker(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(f"unknown mode {mode}")
