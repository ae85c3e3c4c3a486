"""Models of how real launchers start their workers, for the scenario corpus (corpus.py,
run-corpus.py). Python 3 standard library only.

Each model builds the process tree that the real launcher builds, faithful in what /proc shows:
parent, process group, session, controlling terminal, cmdline and comm, environment, cgroup,
listening sockets. The facts come from DESIGN.md ("How real launchers leave their workers",
measured on an H200 with PyTorch 2.11) and from the launchers' sources:

  SGLang   python3 -m sglang.launch_server: the main process (tokenizer manager, HTTP server:
           listens) starts one scheduler per TP rank and a detokenizer with multiprocessing
           'spawn'; each child sets its title with setproctitle (sglang::scheduler_TP0,
           sglang::detokenizer). The schedulers hold the GPU.
  vLLM     python3 -m vllm.entrypoints.openai.api_server (listens) -> engine core (spawn,
           VLLM::EngineCore) -> workers spawned by the engine core (VLLM::Worker_TP0...).
  torchrun the elastic agent holds NVML's device files (no context) and hosts the store on
           MASTER_PORT; each worker is `python -u train.py` started with
           Popen(start_new_session=True) and torchelastic's environment. On a failed worker the
           agent stops the others (SIGTERM) and exits (max_restarts 0).
  Ray      `ray start` starts the raylet in its own session and exits; the raylet (listens)
           starts workers (ray::IDLE; an actor's worker is ray::TrainWorker and holds the GPU).
  and the plain ways: a shell's jobs, nohup, setsid, Popen(start_new_session=True), a double
  fork, a systemd service, a Slurm step, a Kubernetes pod, a container's init (PID namespace),
  the ghost (a child forked after CUDA init), a holder in state D.

Every process appends "ROLE PID" (its host PID) to $GPUREAP_SCENARIO_PIDFILE in one write, and
"ROLE:port N" for a port it listens on, so the runner knows who is who.

GPU memory: by default the fake driver's model of a context (tests/fake-nvml/fake-ctx.h: the
device files of $GPUREAP_DEV_DIR opened and mapped as CUDA does, a token file in
$GPUREAP_FAKE_CTX_DIR with an OFD lock); with GPUREAP_SCENARIO_CUDA=1 real memory taken with
torch (imported only then).

Every process is started from a small entry point (install_entry_points) so that its command line
is the real launcher's: `python3 -m sglang.launch_server ...`, `python3 .../bin/torchrun ...`."""
import ctypes
import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import shutil
import time

CUDA = os.environ.get("GPUREAP_SCENARIO_CUDA") == "1"
PR_SET_NAME = 15
PYTHON = sys.executable  # the interpreter itself (an entry point may run under a renamed copy)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_held = []  # what keeps the GPU memory (fds, maps, tensors) alive


# ---- who is who ---------------------------------------------------------------------------

def host_pid():
    """The PID the host (and the driver) knows this process by: NSpid's first field. Inside a
    container with its own /proc (unshare --mount-proc) that /proc only knows the namespace's
    numbers, so the runner hands down an fd of the host's /proc, where "self" still resolves
    in the host's namespace."""
    fd = os.environ.get("GPUREAP_SCENARIO_HOST_PROC_FD")
    if fd:
        sfd = os.open("self/status", os.O_RDONLY, dir_fd=int(fd))
        with os.fdopen(sfd) as f:
            status = f.read()
    else:
        with open("/proc/self/status") as f:
            status = f.read()
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[1])
    return os.getpid()


def record(role, pid=None):
    line = f"{role} {pid if pid is not None else host_pid()}\n".encode()
    fd = os.open(os.environ["GPUREAP_SCENARIO_PIDFILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, line)  # one write: lines of concurrent processes never interleave
    finally:
        os.close(fd)


def recorded(role, timeout=20.0):
    """The value recorded for ROLE (waits, bounded: for a peer that records itself later)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(os.environ["GPUREAP_SCENARIO_PIDFILE"]) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == role:
                    return int(parts[1])
        time.sleep(0.01)
    raise SystemExit(f"launchers: '{role}' was never recorded")


def opts():
    """Knobs of the models that no real launcher has, from $GPUREAP_SCENARIO_OPTS (a,b=1,...);
    kept out of argv so that command lines stay the real ones."""
    out = {}
    for item in os.environ.get("GPUREAP_SCENARIO_OPTS", "").split(","):
        if item:
            k, _, v = item.partition("=")
            out[k] = v
    return out


def gpus():
    return [int(g) for g in os.environ.get("GPUREAP_SCENARIO_GPUS", "0").split(",")]


def gpu_for(rank):
    g = gpus()
    return g[rank % len(g)]


def mib():
    return int(os.environ.get("GPUREAP_SCENARIO_MIB", "512" if CUDA else "256"))


# ---- process titles, as setproctitle sets them ---------------------------------------------

def _stat_fields():
    with open("/proc/self/stat", "rb") as f:
        s = f.read()
    return s[s.rindex(b")") + 2:].split()  # [0] is field 3 (state)


def set_title(title, comm=None):
    """What setproctitle.setproctitle(title) does on Linux (SGLang, vLLM and Ray call it): comm
    set with prctl(PR_SET_NAME) (15 bytes), and the title written over the memory of the
    original argv and environment strings, padded with NULs, after the environment was copied
    elsewhere. So /proc/PID/cmdline shows the title and /proc/PID/environ no variable at all
    (NULs, or the end of a long title), unless SPT_NOENV is set, which these launchers do not.
    The area's bounds come from /proc/self/stat (arg_start, arg_end, env_start, env_end: fields
    48-51)."""
    f = _stat_fields()
    arg_start, arg_end, env_start, env_end = (int(f[i]) for i in (45, 46, 47, 48))
    # the C environment moves to the heap first: exec'd children still get it
    env = dict(os.environ)
    _libc.clearenv()
    for k, v in env.items():
        _libc.setenv(os.fsencode(k), os.fsencode(v), 1)
    # like setproctitle: one area from argv[0] to the end of the environment when contiguous
    end = env_end if env_start == arg_end else arg_end
    if end == arg_end and env_end > env_start:
        ctypes.memset(env_start, 0, env_end - env_start)
    t = title.encode()
    n = end - arg_start
    ctypes.memmove(arg_start, t[:n - 1] + b"\0" * (n - min(len(t), n - 1)), n)
    name = (comm or title).encode()[:15]
    _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


# ---- holding a GPU -------------------------------------------------------------------------

def _open_dev(name):
    d = os.environ.get("GPUREAP_DEV_DIR") or "/dev"
    fd = os.open(os.path.join(d, name), os.O_RDWR)
    os.set_inheritable(fd, True)  # like gpuhold's: forks and execs keep them, as with CUDA
    _held.append(fd)
    return fd


def _map(fd, times):
    for _ in range(times):
        a = _libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if a in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")


def _fake_context(gpu, size_mib):
    """The fake driver's context (fake-ctx.h): a token with an OFD lock held on an open file
    that forks inherit, so it lives as long as any process holds that open file."""
    d = os.environ["GPUREAP_FAKE_CTX_DIR"]
    pid = host_pid()
    seq = 0
    while True:
        path = f"{d}/ctx-{pid}-{gpu}-{seq}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            seq += 1
    os.fchmod(fd, 0o666)  # a non-root gpureap's fake NVML opens it read-write to test the lock
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))
    # the lock is taken before the content exists: the fake skips tokens it cannot parse yet
    os.write(fd, f"pid={pid} gpu={gpu} mib={size_mib}\n".encode())
    os.set_inheritable(fd, True)
    _held.append(fd)


def hold_gpu(gpu, size_mib=None):
    """Create a context on GPU index GPU (minor = index), as CUDA does."""
    size_mib = size_mib or mib()
    if CUDA:
        import torch  # only in this mode: the corpus runs without it on the fake driver
        dev = gpu % torch.cuda.device_count()
        torch.cuda.set_device(dev)
        x = torch.empty(size_mib << 20, dtype=torch.uint8, device=f"cuda:{dev}")
        x.fill_(1)
        torch.cuda.synchronize()
        _held.append(x)
        return
    # gpuhold's 'cuda' verb: nvidiactl, nvidia-uvm x2, nvidia<N> x3, 40 maps, the context
    _open_dev("nvidiactl")
    _open_dev("nvidia-uvm")
    _open_dev("nvidia-uvm")
    g = _open_dev(f"nvidia{gpu}")
    _open_dev(f"nvidia{gpu}")
    _open_dev(f"nvidia{gpu}")
    _map(g, 40)
    _fake_context(gpu, size_mib)


def hold_monitor(indexes):
    """An NVML-only client (gpuhold's 'monitor'): device files and a few maps, no context."""
    if CUDA:
        return  # the real torchrun is used there
    _open_dev("nvidiactl")
    for gpu in indexes:
        g = _open_dev(f"nvidia{gpu}")
        _open_dev(f"nvidia{gpu}")
        _open_dev(f"nvidia{gpu}")
        _map(g, 4)
    _open_dev("nvidia-uvm")
    _open_dev("nvidia-uvm")


def listen(role, port=0):
    """Listen on 127.0.0.1:PORT (0: any free port) and record "ROLE:port N"."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    _held.append(s)
    record(f"{role}:port", s.getsockname()[1])
    return s


# ---- waiting ------------------------------------------------------------------------------

def sleep_forever():
    while True:
        signal.pause()


def reap_children(on_exit=None):
    """What a launcher's main loop does for our purpose: reap its children as they end (so a
    killed child does not linger as a zombie), optionally react, and sleep when none are left."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            sleep_forever()
        if on_exit:
            on_exit(pid, status)


def daemonize():
    """fork + setsid, the parent exits once the daemon is set up (what systemd's Type=simple
    start, `ray start` or a daemon(3) gives: PPID 1, its own session). Returns a function the
    daemon calls when it is ready."""
    r, w = os.pipe()
    if os.fork() > 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    os.setsid()

    def ready():
        os.write(w, b"1")
        os.close(w)
    return ready


def enter_cgroup():
    """Move into $GPUREAP_SCENARIO_CGROUP (a manager puts a process there before it runs); hand
    $GPUREAP_SCENARIO_CHILD_CGROUP down to the processes this one starts."""
    cg = os.environ.pop("GPUREAP_SCENARIO_CGROUP", None)
    if cg:
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    child = os.environ.pop("GPUREAP_SCENARIO_CHILD_CGROUP", None)
    if child:
        os.environ["GPUREAP_SCENARIO_CGROUP"] = child


def popen(args, **kw):
    """subprocess.Popen that hands the host's /proc (see host_pid) down to the child."""
    fd = os.environ.get("GPUREAP_SCENARIO_HOST_PROC_FD")
    if fd:
        kw["pass_fds"] = tuple(kw.get("pass_fds", ())) + (int(fd),)
    return subprocess.Popen(args, **kw)


def die_with_parent():
    """prctl(PR_SET_PDEATHSIG, SIGKILL): what SGLang's kill_itself_when_parent_died() does."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def _spawn_context():
    import multiprocessing
    return multiprocessing.get_context("spawn")


def _record_tracker():
    # spawn starts multiprocessing's resource tracker: recorded so the runner can clean it up
    from multiprocessing import resource_tracker
    pid = getattr(resource_tracker._resource_tracker, "_pid", None)
    if pid:
        record("mp-tracker", pid)


def _arg(argv, name, default):
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


# ---- SGLang -------------------------------------------------------------------------------

def sglang_launch_server(argv):
    tp = int(_arg(argv, "--tp-size", "2"))
    record("main")
    ctx = _spawn_context()
    # SGLang starts the schedulers first, then the detokenizer, then serves HTTP in the main
    for rank in range(tp):
        ctx.Process(target=sglang_scheduler, args=(rank,)).start()
    ctx.Process(target=sglang_detokenizer).start()
    _record_tracker()
    listen("main", int(_arg(argv, "--port", "0")))
    reap_children()


def sglang_scheduler(rank):
    set_title(f"sglang::scheduler_TP{rank}")  # the first thing run_scheduler_process does
    if "pdeathsig" in opts():
        die_with_parent()
    hold_gpu(gpu_for(rank))
    record(f"scheduler_TP{rank}")
    sleep_forever()


def sglang_detokenizer():
    set_title("sglang::detokenizer")
    if "pdeathsig" in opts():
        die_with_parent()
    record("detokenizer")
    sleep_forever()


# ---- plain torch.multiprocessing spawn (mp.spawn, no titles) -------------------------------

def mp_train(argv):
    n = int(_arg(argv, "--nprocs", "2"))
    record("main")
    ctx = _forkserver_context() if "forkserver" in opts() else _spawn_context()
    for rank in range(n):
        ctx.Process(target=mp_worker, args=(rank,)).start()
    if "forkserver" in opts():
        from multiprocessing import forkserver
        record("forkserver", forkserver._forkserver._forkserver_pid)
    _record_tracker()
    reap_children()


def _forkserver_context():
    import multiprocessing
    return multiprocessing.get_context("forkserver")


def mp_worker(rank):
    hold_gpu(gpu_for(rank))
    record(f"rank{rank}")
    sleep_forever()


# ---- vLLM ---------------------------------------------------------------------------------

def vllm_api_server(argv):
    tp = int(_arg(argv, "--tensor-parallel-size", "2"))
    record("api_server")
    _spawn_context().Process(target=vllm_engine_core, args=(tp,)).start()
    _record_tracker()
    listen("api_server", int(_arg(argv, "--port", "0")))
    reap_children()


def vllm_engine_core(tp):
    set_title("VLLM::EngineCore")
    record("engine_core")
    ctx = _spawn_context()
    keep = []
    for rank in range(tp):  # the multiproc executor's workers are the engine core's children
        death_r, death_w = ctx.Pipe(duplex=False) if "death-pipe" in opts() else (None, None)
        ctx.Process(target=vllm_worker, args=(rank, death_r)).start()
        keep.append(death_w)  # only the engine core holds the writing end
    reap_children()


def vllm_worker(rank, death_pipe=None):
    set_title(f"VLLM::Worker_TP{rank}")
    if death_pipe is not None:
        # vLLM's WorkerProc.monitor_death_pipe: the pipe ends when the engine core does
        import threading

        def watch():
            try:
                death_pipe.recv()
            except EOFError:
                pass
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    hold_gpu(gpu_for(rank))
    record(f"Worker_TP{rank}")
    sleep_forever()


# ---- torchrun -----------------------------------------------------------------------------

def torchrun(argv):
    """torch.distributed.run with the static/standalone rendezvous: the agent hosts the store,
    starts the workers in their own sessions, watches them."""
    n = int(_arg(argv, "--nproc-per-node", "2"))
    i = next(i for i, a in enumerate(argv) if a.endswith(".py"))
    script, script_args = argv[i:i + 1], argv[i + 1:]
    hold_monitor(sorted(set(gpus())))  # the agent initialises NVML: device files, no context
    store = listen("agent")
    port = store.getsockname()[1]
    record("agent")
    run_id = "r" + os.urandom(6).hex()
    workers = {}
    for rank in range(n):
        env = dict(os.environ)
        env.update({
            "LOCAL_RANK": str(rank), "RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
            "ROLE_NAME": "default", "LOCAL_WORLD_SIZE": str(n), "WORLD_SIZE": str(n),
            "GROUP_WORLD_SIZE": "1", "ROLE_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": run_id,
            "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCHELASTIC_ERROR_FILE": f"/tmp/torchelastic_{run_id}/attempt_0/{rank}/error.json",
            "OMP_NUM_THREADS": "1",
        })
        p = subprocess.Popen([sys.executable, "-u"] + script + script_args, env=env,
                             start_new_session=True)
        workers[p.pid] = p

    def on_exit(pid, status):
        if pid not in workers:
            return
        del workers[pid]
        if os.waitstatus_to_exitcode(status) == 0:
            return
        # a worker failed: with max_restarts 0 the agent stops the rest and fails
        for p in workers.values():
            p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for p in workers.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        os._exit(1)
    reap_children(on_exit)


def elastic_worker(argv):
    """train_ddp.py, as torchrun runs it (python -u train_ddp.py)."""
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    o = opts()
    if o.get("dstate-rank") == str(rank):
        # this rank is stuck in a driver call: gpuhold holds the GPU and sits in D (same PID,
        # same environment)
        g = str(gpu_for(local))
        pf = os.environ["GPUREAP_SCENARIO_PIDFILE"]
        os.execv(os.environ["GPUHOLD"], [os.environ["GPUHOLD"], "pidfile", pf, f"rank{rank}",
                                         "cuda", g, g, str(mib()), "dstate", pf, f"rank{rank}-vfork"])
    hold_gpu(gpu_for(local))
    if "nccl" in o:
        # init_process_group: NCCL's bootstrap listens in every rank on an ephemeral port and
        # the ranks connect to each other (here: each rank > 0 to rank 0)
        listen(f"rank{rank}")
        if rank > 0:
            c = socket.create_connection(("127.0.0.1", recorded("rank0:port")))
            _held.append(c)
    if o.get("dataloader-rank") == str(rank):
        _fork_loader(f"rank{rank}-loader")
    record(f"rank{rank}")
    sleep_forever()


def _fork_loader(role):
    """A DataLoader worker: forked (the default start method on Linux) after CUDA was
    initialised, so it inherits the device files and the context's open file; it never touches
    CUDA itself."""
    if os.fork() == 0:
        record(role)
        sleep_forever()


# ---- Ray ----------------------------------------------------------------------------------

RAYLET = ("/usr/local/lib/python3/dist-packages/ray/core/src/ray/raylet/raylet "
          "--raylet_socket_name=/tmp/ray/session_latest/sockets/raylet "
          "--store_socket_name=/tmp/ray/session_latest/sockets/plasma_store "
          "--node_ip_address=127.0.0.1 --node_manager_port=0 --num_prestart_python_workers=1")


def ray_cli(argv):
    """`ray start --head`: starts the raylet in its own session and exits."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
    r, w = os.pipe()
    subprocess.Popen([sys.executable, os.path.join(here, "py", "raylet.py")],
                     start_new_session=True, pass_fds=(w,),
                     env=dict(os.environ, GPUREAP_SCENARIO_READY_FD=str(w)))
    os.close(w)
    os.read(r, 1)
    print("Ray runtime started.")


def raylet(argv):
    ready = os.environ.pop("GPUREAP_SCENARIO_READY_FD", None)
    set_title(RAYLET, comm="raylet")  # a C++ program: comm is its file name
    listen("raylet")
    record("raylet")
    worker = os.path.join(os.getcwd(), "default_worker.py")
    n = int(opts().get("actors", "2"))
    for i in range(n + 1):  # one prestarted idle worker, one worker per GPU actor
        role = "idle_worker" if i == n else f"train_worker{i}"
        subprocess.Popen([sys.executable, worker, "--node-ip-address=127.0.0.1",
                          "--worker-type=WORKER", f"--worker-launch-time-ms={int(time.time() * 1000)}"],
                         env=dict(os.environ, GPUREAP_SCENARIO_RAY_ROLE=role))
    for i in range(n + 1):
        recorded("idle_worker" if i == n else f"train_worker{i}")
    if ready:
        os.write(int(ready), b"1")
        os.close(int(ready))
    reap_children()


def ray_worker(argv):
    role = os.environ.pop("GPUREAP_SCENARIO_RAY_ROLE")
    set_title("ray::IDLE")
    if role.startswith("train_worker"):
        # an actor was placed here: the worker takes the actor's name and its GPU
        set_title("ray::TrainWorker")
        hold_gpu(gpu_for(int(role[len("train_worker"):])))
    record(role)
    sleep_forever()


# ---- plain processes ------------------------------------------------------------------------

def plain_worker(argv):
    """w.py GPU (a shell's job), worker.py (a launcher's worker), serve.py (a server), train.py
    (a trainer; with --loaders N it forks DataLoader workers after CUDA init: the ghost)."""
    name = os.path.basename(sys.argv[0])
    if name == "w.py":
        gpu = int(argv[0]) if argv else 0
        hold_gpu(gpu)
        record(f"w{gpu}")
        sleep_forever()
    if name == "serve.py":
        hold_gpu(gpus()[0])
        if _arg(argv, "--port", None) is not None:
            listen("server", int(_arg(argv, "--port", "0")))
        record("server")
        reap_children()
    if name == "train.py":
        hold_gpu(gpus()[0])
        for i in range(int(_arg(argv, "--loaders", "0"))):
            _fork_loader(f"loader{i}")
        record("trainer")
        reap_children()
    # worker.py
    hold_gpu(gpus()[0])
    if "worker-loader" in opts():
        _fork_loader("worker-loader")
    record("worker")
    reap_children()


def launch(argv):
    """launch.py MODE: small launchers that start workers in the plain ways."""
    mode = argv[0]
    here = os.getcwd()
    worker = [sys.executable, os.path.join(here, "worker.py")]
    record("launcher")
    if mode == "setsid":  # `setsid python3 worker.py`: setsid(1) calls setsid() and execs
        popen(["setsid"] + worker)
    elif mode == "new-session":
        popen(worker, start_new_session=True)
    elif mode == "new-group":  # Popen(process_group=0), new in Python 3.11
        popen(worker, process_group=0)
    elif mode == "child":
        popen(worker)
    elif mode == "double-fork":
        if "--listen" in argv:
            listen("launcher")  # before the forks: the workers inherit the socket
        for gpu in gpus():
            r, w = os.pipe()
            child = os.fork()
            if child == 0:
                if os.fork() == 0:
                    hold_gpu(gpu)
                    record(f"w{gpu}")
                    os.write(w, b"1")
                    sleep_forever()
                os._exit(0)  # the worker is reparented to PID 1 at once
            os.waitpid(child, 0)
            os.close(w)
            os.read(r, 1)
            os.close(r)
    elif mode == "dstate":  # a worker stuck in a (killable) driver call
        g = str(gpus()[0])
        pf = os.environ["GPUREAP_SCENARIO_PIDFILE"]
        subprocess.Popen([os.environ["GPUHOLD"], "pidfile", pf, "worker", "cuda", g, g, str(mib()),
                          "dstate", pf, "worker-vfork"])
    reap_children()


def llm_serve(argv):
    """llm_serve.py: a systemd service's main process (Type=simple: PPID 1, its own session, in
    the unit's cgroup), which listens and forks a worker (gunicorn-like) or, with
    --spawn-worker, starts it with multiprocessing spawn."""
    ready = daemonize() if "--daemon" in argv else None
    listen("main")
    record("main")
    if "--spawn-worker" in argv:
        _spawn_context().Process(target=service_worker).start()
        _record_tracker()
    elif os.fork() == 0:
        service_worker()
    recorded("worker")
    if ready:
        ready()
    reap_children()


def service_worker():
    hold_gpu(gpus()[0])
    record("worker")
    sleep_forever()


def stepd(argv):
    """slurmstepd for job 4242 step 0: a daemon in the step's cgroup, its task in task_0."""
    ready = daemonize()
    set_title("slurmstepd: [4242.0]", comm="slurmstepd")
    record("slurmstepd")
    env = dict(os.environ, SLURM_JOB_ID="4242", SLURM_JOBID="4242", SLURM_STEP_ID="0",
               SLURM_STEPID="0", SLURM_PROCID="0", SLURM_LOCALID="0", SLURM_NTASKS="1",
               SLURM_NODEID="0", SLURM_CPUS_ON_NODE="2")
    subprocess.Popen([sys.executable, os.path.join(os.getcwd(), "worker.py")], env=env,
                     process_group=0)
    recorded("worker")
    ready()
    reap_children()


def containerd_shim(argv):
    """containerd-shim-runc-v2 of a pod's container: a daemon in containerd's service cgroup;
    the container's process (in the pod's scope) leads its own session, as runc starts it."""
    ready = daemonize()
    cid = os.environ["GPUREAP_SCENARIO_CONTAINER_ID"]
    set_title(f"/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id {cid} "
              "-address /run/containerd/containerd.sock", comm="containerd-shim")
    record("shim")
    # the container's process runs the interpreter itself, not the shim's copy of it
    subprocess.Popen([PYTHON, os.path.join(os.getcwd(), "worker.py")], start_new_session=True)
    recorded("worker")
    ready()
    reap_children()


def container_init(argv):
    """init.py: the application as PID 1 of its container (a launcher, not a known init): it
    starts a worker and reaps."""
    record("nsinit")
    popen([sys.executable, os.path.join(os.getcwd(), "worker.py")])
    reap_children()


def pause(argv):
    """pause.py: Kubernetes' pause container as PID 1 of a pod that shares its PID namespace
    (shareProcessNamespace): it reaps whatever is reparented to it. The pod's launcher runs a
    worker."""
    set_title("/pause", comm="pause")
    record("pause")
    popen([sys.executable, os.path.join(os.getcwd(), "launch.py"), "child"])
    reap_children()


MODELS = {
    "sglang": sglang_launch_server, "vllm": vllm_api_server, "mp-train": mp_train,
    "torchrun": torchrun, "elastic-worker": elastic_worker, "ray": ray_cli, "raylet": raylet,
    "ray-worker": ray_worker, "plain": plain_worker, "launch": launch, "llm-serve": llm_serve,
    "slurmstepd": stepd, "containerd-shim": containerd_shim, "container-init": container_init, "pause": pause,
}


def main(name, model):
    """Called by every entry point. A spawn child imports the entry module again as
    __mp_main__: then nothing runs here."""
    if name != "__main__":
        return
    enter_cgroup()
    MODELS[model](sys.argv[1:])


# ---- entry points -------------------------------------------------------------------------

ENTRY_POINTS = {
    # path under the entry directory: model
    "py/sglang/launch_server.py": "sglang",
    "py/vllm/entrypoints/openai/api_server.py": "vllm",
    "py/mp_train.py": "mp-train",
    "py/train_ddp.py": "elastic-worker",
    "py/raylet.py": "raylet",
    "py/default_worker.py": "ray-worker",
    "py/w.py": "plain", "py/worker.py": "plain", "py/serve.py": "plain", "py/train.py": "plain",
    "py/launch.py": "launch",
    "py/llm_serve.py": "llm-serve",
    "py/slurmstepd.py": "slurmstepd",
    "py/containerd_shim.py": "containerd-shim",
    "py/init.py": "container-init",
    "py/pause.py": "pause",
    "bin/torchrun": "torchrun",
    "bin/ray": "ray",
}


# entry points whose model is another program than python: run by a copy of the interpreter
# under that program's name
OWN_EXECUTABLES = {"py/containerd_shim.py": "containerd-shim-runc-v2"}


def entry_interpreter(root, script):
    """The interpreter an entry point of ROOT/py runs under when it is not python itself."""
    path = os.path.join(root, "bin", OWN_EXECUTABLES.get("py/" + script, ""))
    return path if "py/" + script in OWN_EXECUTABLES and os.path.exists(path) else None


def install_entry_points(root, python):
    """Write the entry points under ROOT: ROOT/py goes on PYTHONPATH and is the working
    directory, ROOT/bin holds the console scripts (run as `python3 ROOT/bin/torchrun`, the
    command line a console script has)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for rel, model in ENTRY_POINTS.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        d = os.path.dirname(rel)
        while d.startswith("py/"):  # packages
            open(os.path.join(root, d, "__init__.py"), "a").close()
            d = os.path.dirname(d)
        interpreter = python
        if rel in OWN_EXECUTABLES:
            # what runs is what gpureap judges an init by (/proc/PID/exe): the model runs as
            # an executable of the program's own name, a copy of the interpreter
            interpreter = os.path.join(root, "bin", OWN_EXECUTABLES[rel])
            os.makedirs(os.path.dirname(interpreter), exist_ok=True)
            if not os.path.exists(interpreter):
                shutil.copy2(os.path.realpath(python), interpreter)
        with open(path, "w") as f:
            f.write(f"#!{interpreter}\nimport sys\nsys.path.insert(0, {here!r})\n"
                    f"import launchers\nlaunchers.PYTHON = {python!r}\nlaunchers.main(__name__, {model!r})\n")
        os.chmod(path, 0o755)
    w = os.path.join(root, "py", "w.sh")
    with open(w, "w") as f:  # a shell script that starts two workers with & and waits
        f.write('echo "script $$" >>"$GPUREAP_SCENARIO_PIDFILE"\n'
                "python3 w.py 0 & python3 w.py 1 & wait\n")


# ---- an interactive login shell on a pseudo-terminal ----------------------------------------

class InteractiveShell:
    """What sshd gives a user: bash as a login shell on a pseudo-terminal, leading its own
    session with the terminal as its controlling terminal, running jobs with job control (each
    job its own process group). exit() is the user typing 'exit' (background jobs live on, no
    SIGHUP without huponexit); hangup() is the connection dropping (the terminal hangs up: bash
    gets SIGHUP and sends SIGHUP to every job, which kills all but nohup'd ones)."""

    def __init__(self, env, cwd, log=None):
        import pty
        self.log = log  # what the terminal shows goes there (the tail of a failed scenario)
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.chdir(cwd)
                os.execve("/bin/bash", ["-bash", "--norc", "--noprofile", "-i"], env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        os.set_blocking(fd, False)
        self.run("unset HISTFILE")

    def run(self, line):
        os.write(self.fd, (line + "\n").encode())
        self.drain()

    def drain(self):
        """Read what bash wrote (prompts, echo), so that it never blocks on a full terminal."""
        if self.fd is None:
            return
        try:
            while True:
                b = os.read(self.fd, 65536)
                if not b:
                    break
                if self.log:
                    self.log.write(b.decode(errors="replace"))
        except (BlockingIOError, OSError):
            pass

    def exit(self):
        self.run("exit")

    def hangup(self):
        os.close(self.fd)
        self.fd = None

    def reap(self):
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == self.pid
        except ChildProcessError:
            return True
