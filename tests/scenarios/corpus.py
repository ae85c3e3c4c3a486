"""The scenario corpus: real process trees (launchers.py), a kill applied once they are up, and
what gpureap must say then, role by role. Every expectation is derived from docs/verdicts.md
(the step of "The judgement, step by step" is named in the comment); where that contract gives an
answer that looks wrong, the expectation still follows the contract and `truth` says what the
process really is, so the figures show the gap (see the README).

An expectation (E) per role that holds a GPU:
  judgement   live | leftover | unsure, or None: not judged (a non-root gpureap cannot see it);
              a tuple accepts any of them
  confidence  sure | likely | unsure, or a tuple (None: unsure for unsure, else any)
  truth       what the process really is: live (in use), leftover (nobody will use it again) or
              either (debatable: a manager's, a container's); the figures count live and leftover
  default     in the plan of `reap --dry-run` (auto: leftover and sure, per "What reap kills";
              None: whatever the verdict gpureap gave implies)
  likely      in the plan of `reap --dry-run --likely` (auto: leftover, sure or likely)
  role        verdict.role when it matters (monitor, hidden_holder)
  evidence    {key: lean}: evidence items the verdict must carry ("*": any lean)
A recorded role without an expectation holds no GPU: its verdict must be null and it is never
a target.

The kill actions: "kill:ROLE" (SIGKILL), "stop:ROLE" (SIGSTOP), "exit" (the user types exit in the
login shell), "hangup" (the login shell's terminal hangs up, as when ssh drops)."""
from dataclasses import dataclass, field

AUTO = "auto"


@dataclass
class E:
    judgement: object
    confidence: object = None
    truth: str = None
    default: object = AUTO
    likely: object = AUTO
    role: str = None
    evidence: dict = None


def live(confidence="sure", truth="live", **kw):
    return E("live", confidence, truth, **kw)


def leftover(confidence="sure", truth="leftover", **kw):
    return E("leftover", confidence, truth, **kw)


def unsure(truth, **kw):
    return E("unsure", "unsure", truth, **kw)


def monitor():
    # "monitors are NVML-only clients: always live, never a target"
    return E("live", ("sure", "likely"), "live", default=False, likely=False, role="monitor")


@dataclass
class Start:
    """How the tree is started. cmd: the arguments after python3 (in the entry directory), or
    for how="shell" the line typed into the login shell.
      job         a job of an interactive shell: the runner's child, leading its own group
      shell       typed into a login shell on a pseudo-terminal (launchers.InteractiveShell)
      ssh         `sh -c CMD` as sshd runs a command: its own session, no terminal, no job
                  control
      user        a job run as uid 4242 (setpriv), as root
      container   unshare --pid --fork --mount-proc python3 CMD (the runner records 'runtime')
      tini        unshare --pid --fork --mount-proc tini -s -- python3 CMD ('runtime', 'nsinit')
      supervised  gpureap run -- python3 CMD (the runner records 'supervisor')
    cgroup / child_cgroup: directories under the corpus' own cgroup, entered by the first process
    / by the processes it starts ({id}, {pod}, {cid} are filled in)."""
    cmd: object
    how: str = "job"
    gpus: tuple = (0,)
    opts: str = ""
    cgroup: str = None
    child_cgroup: str = None
    cuda_cmd: list = None  # with GPUREAP_SCENARIO_CUDA=1: a real program instead (torchrun)
    detach: bool = False   # the first process exits once the tree is up (a daemon, ray start)


@dataclass
class Scenario:
    name: str
    about: str
    start: Start
    kill: list
    expect: dict
    gpus: dict
    wait: tuple = ()          # roles to wait for before the kill, besides the expected ones
    gone: tuple = ()          # roles that end because of the kill (besides the killed ones)
    states: dict = field(default_factory=dict)  # role: state letter reached after the kill
    findings: tuple = ()      # kinds that must be among the findings
    view: str = "root"        # user: gpureap itself runs as uid 4242; hidepid: and sees a
                              # /proc mounted with hidepid
    plan_args: tuple = ()
    next_step: str = None     # a regex that some finding's next_step must match
    never_sure: bool = False  # no finding may be sure
    cuda: bool = False        # in the subset run on a real GPU (tests/gpu/scenarios.sh)


SGLANG = ["-m", "sglang.launch_server", "--model-path", "/models/Llama-3.1-8B-Instruct",
          "--tp-size", "2", "--port", "0"]
SGLANG_UP = ("main", "main:port", "detokenizer", "mp-tracker")
VLLM = ["-m", "vllm.entrypoints.openai.api_server", "--model", "/models/Llama-3.1-8B-Instruct",
        "--tensor-parallel-size", "2", "--port", "0"]
VLLM_UP = ("api_server", "api_server:port", "engine_core", "mp-tracker")
TORCHRUN = ["../bin/torchrun", "--nproc-per-node", "2", "train_ddp.py"]
REAL_TORCHRUN = ["torchrun", "--standalone", "--nproc-per-node", "2", "--max-restarts", "0",
                 "train_ddp.py"]
MP_TRAIN = ["mp_train.py", "--nprocs", "2"]
SERVICE = "system.slice/llm-test-{id}.service"
SLURM_STEP = "slurm/uid_0/job_4242/step_0"
POD = ("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{pod}.slice/"
       "cri-containerd-{cid}.scope")
TWO = (0, 1)
BUSY2 = {0: "busy", 1: "busy"}
DIRTY2 = {0: "dirty", 1: "dirty"}
CLEAN2 = {0: "clean", 1: "clean"}
NOT_ROOT = r"sudo|as root|root"

SCENARIOS = [
    # ---- SGLang: schedulers through multiprocessing spawn, with process titles -------------
    Scenario("sglang-live", "a running SGLang server: nothing to kill",
             Start(SGLANG, gpus=TWO), [],
             # step 3: the parent (the main process) is alive
             {"scheduler_TP0": live(), "scheduler_TP1": live()}, BUSY2, wait=SGLANG_UP, cuda=True),
    Scenario("sglang-main-killed",
             "SGLang's main process SIGKILLed: its schedulers live on (the children do not set "
             "PDEATHSIG here; sglang-main-killed-pdeathsig is the case where they do)",
             Start(SGLANG, gpus=TWO), ["kill:main"],
             # step 4.1: title sglang::scheduler_TP0 and the launcher gone
             {"scheduler_TP0": leftover(evidence={"worker": "leftover"}),
              "scheduler_TP1": leftover(evidence={"worker": "leftover"})},
             DIRTY2, wait=SGLANG_UP, findings=("orphan",), cuda=True),
    Scenario("sglang-main-killed-pdeathsig",
             "SGLang's main process SIGKILLed, its children set PDEATHSIG as current SGLang does "
             "(kill_itself_when_parent_died): the kernel ends them",
             Start(SGLANG, gpus=TWO, opts="pdeathsig"), ["kill:main"], {}, CLEAN2,
             wait=SGLANG_UP + ("scheduler_TP0", "scheduler_TP1"),
             gone=("scheduler_TP0", "scheduler_TP1", "detokenizer")),
    Scenario("sglang-scheduler-killed", "one scheduler SIGKILLed: the other one is live",
             Start(SGLANG, gpus=TWO), ["kill:scheduler_TP1"],
             {"scheduler_TP0": live()}, {0: "busy", 1: "clean"}, wait=SGLANG_UP),
    Scenario("sglang-detokenizer-killed", "the detokenizer SIGKILLed: the schedulers' parent lives",
             Start(SGLANG, gpus=TWO), ["kill:detokenizer"],
             {"scheduler_TP0": live(), "scheduler_TP1": live()}, BUSY2, wait=SGLANG_UP),
    Scenario("sglang-scheduler-stopped", "a scheduler stopped (SIGSTOP) in a live server",
             Start(SGLANG, gpus=TWO), ["stop:scheduler_TP1"],
             # state is a fact, never a verdict; step 3
             {"scheduler_TP0": live(), "scheduler_TP1": live(evidence={"state": "neutral"})},
             BUSY2, wait=SGLANG_UP, states={"scheduler_TP1": "T"}, findings=("stopped",)),
    Scenario("sglang-stopped-then-main-killed",
             "a scheduler stopped, then the main process killed: the kernel sends SIGHUP and "
             "SIGCONT to the orphaned process group, which ends every worker",
             Start(SGLANG, gpus=TWO), ["stop:scheduler_TP1", "kill:main"],
             {}, CLEAN2, wait=SGLANG_UP + ("scheduler_TP0", "scheduler_TP1"),
             gone=("scheduler_TP0", "scheduler_TP1", "detokenizer", "mp-tracker")),
    Scenario("mp-spawn-main-killed", "torch.multiprocessing spawn without titles, launcher killed",
             Start(MP_TRAIN, gpus=TWO), ["kill:main"],
             # step 4.1: spawn_main ... --multiprocessing-fork in the command line
             {"rank0": leftover(), "rank1": leftover()}, DIRTY2, wait=("main", "mp-tracker"),
             findings=("orphan",)),
    Scenario("mp-forkserver-main-killed",
             "multiprocessing forkserver, launcher killed: the fork server lives on (its "
             "children hold its 'alive' pipe) with the workers",
             Start(MP_TRAIN, gpus=TWO, opts="forkserver"), ["kill:main"],
             # step 3 -> 4.1: the root is the fork server (multiprocessing.forkserver in its
             # command line), reparented
             {"rank0": leftover(evidence={"ancestor": "leftover"}),
              "rank1": leftover(evidence={"ancestor": "leftover"})},
             DIRTY2, wait=("main", "forkserver", "mp-tracker"), findings=("orphan",)),

    # ---- vLLM: API server -> engine core -> workers ---------------------------------------
    Scenario("vllm-live", "a running vLLM server", Start(VLLM, gpus=TWO), [],
             {"Worker_TP0": live(), "Worker_TP1": live()}, BUSY2, wait=VLLM_UP),
    Scenario("vllm-api-server-killed", "the API server SIGKILLed: engine core and workers live on",
             Start(VLLM, gpus=TWO), ["kill:api_server"],
             # step 3 -> 4.1: the root is the engine core (title VLLM::EngineCore, launcher gone)
             {"Worker_TP0": leftover(evidence={"ancestor": "leftover"}),
              "Worker_TP1": leftover(evidence={"ancestor": "leftover"})},
             DIRTY2, wait=VLLM_UP, findings=("orphan",), cuda=True),
    Scenario("vllm-engine-core-killed", "the engine core SIGKILLed, the API server still up",
             Start(VLLM, gpus=TWO), ["kill:engine_core"],
             # step 4.1: title VLLM::Worker_TP0, its launcher (the engine core) gone
             {"Worker_TP0": leftover(), "Worker_TP1": leftover()}, DIRTY2, wait=VLLM_UP,
             findings=("orphan",)),
    Scenario("vllm-engine-core-killed-death-pipe",
             "the engine core SIGKILLed; the workers watch a death pipe as vLLM v1's do, and exit",
             Start(VLLM, gpus=TWO, opts="death-pipe"), ["kill:engine_core"], {}, CLEAN2,
             wait=VLLM_UP + ("Worker_TP0", "Worker_TP1"), gone=("Worker_TP0", "Worker_TP1")),
    Scenario("vllm-worker-killed", "one worker SIGKILLed", Start(VLLM, gpus=TWO),
             ["kill:Worker_TP1"], {"Worker_TP0": live()}, {0: "busy", 1: "clean"}, wait=VLLM_UP),

    # ---- torchrun: the elastic agent, workers in their own sessions ------------------------
    Scenario("torchrun-live", "torchrun and its two workers running",
             Start(TORCHRUN, gpus=TWO, cuda_cmd=REAL_TORCHRUN), [],
             {"agent": monitor(), "rank0": live(), "rank1": live()}, BUSY2, wait=("agent:port",),
             cuda=True),
    Scenario("torchrun-agent-killed", "torchrun's agent SIGKILLed: its workers live on",
             Start(TORCHRUN, gpus=TWO, cuda_cmd=REAL_TORCHRUN), ["kill:agent"],
             # step 4.2: TORCHELASTIC_RUN_ID in the environment, not listening
             {"rank0": leftover(evidence={"worker": "leftover"}),
              "rank1": leftover(evidence={"worker": "leftover"})},
             DIRTY2, wait=("agent:port",), findings=("orphan",), cuda=True),
    Scenario("torchrun-worker-killed",
             "a worker SIGKILLed: the agent stops the other one and exits (max_restarts 0)",
             Start(TORCHRUN, gpus=TWO), ["kill:rank1"], {}, CLEAN2,
             wait=("agent", "agent:port", "rank0"), gone=("agent", "rank0")),
    Scenario("torchrun-nccl-agent-killed",
             "torchrun's agent killed after init_process_group: every rank listens (NCCL's "
             "bootstrap) and rank 1 is connected to rank 0",
             Start(TORCHRUN, gpus=TWO, opts="nccl"), ["kill:agent"],
             # step 4.2: a worker marker from its environment; every rank listens (NCCL), but
             # torchrun's own workers lead their sessions: sure leftovers
             {"rank0": leftover(), "rank1": leftover()}, DIRTY2,
             wait=("agent:port", "rank0:port", "rank1:port"), findings=("orphan",)),
    Scenario("torchrun-dstate-agent-killed",
             "torchrun's agent killed while a worker sits in state D (killable)",
             Start(TORCHRUN, gpus=TWO, opts="dstate-rank=1"), ["kill:agent"],
             # step 4.2 for both; the state is a fact, not a verdict
             {"rank0": leftover(), "rank1": leftover(evidence={"state": "neutral"})}, DIRTY2,
             wait=("agent:port", "rank1-vfork"), states={"rank1": "D"}, findings=("orphan",)),
    Scenario("torchrun-dataloader-agent-killed",
             "torchrun's agent killed; rank 0 has a forked DataLoader worker holding its files",
             Start(TORCHRUN, gpus=TWO, opts="dataloader-rank=0"), ["kill:agent"],
             # ranks: step 4.2; the loader: step 3, its root (rank 0) is a leftover
             {"rank0": leftover(), "rank1": leftover(),
              "rank0-loader": leftover(evidence={"ancestor": "leftover"})},
             DIRTY2, wait=("agent:port",), findings=("orphan",)),

    # ---- Ray: the raylet's workers ---------------------------------------------------------
    Scenario("ray-live", "a Ray node with two GPU actors",
             Start(["../bin/ray", "start", "--head", "--num-gpus=2"], gpus=TWO, detach=True), [],
             {"train_worker0": live(), "train_worker1": live()}, BUSY2,
             wait=("raylet", "raylet:port", "idle_worker")),
    Scenario("ray-raylet-killed", "the raylet SIGKILLed: its actors' workers live on",
             Start(["../bin/ray", "start", "--head", "--num-gpus=2"], gpus=TWO, detach=True), ["kill:raylet"],
             # step 4.1: title ray::TrainWorker, its launcher gone
             {"train_worker0": leftover(), "train_worker1": leftover()}, DIRTY2,
             wait=("raylet", "raylet:port", "idle_worker"), findings=("orphan",)),
    Scenario("ray-worker-killed", "one actor's worker SIGKILLed",
             Start(["../bin/ray", "start", "--head", "--num-gpus=2"], gpus=TWO, detach=True),
             ["kill:train_worker1"], {"train_worker0": live()}, {0: "busy", 1: "clean"},
             wait=("raylet", "raylet:port", "idle_worker")),

    # ---- a shell script with &, a job of a login shell ------------------------------------
    Scenario("shell-jobs-live", "`bash w.sh &` in a login shell, w.sh: `python3 w.py & python3 w.py & wait`",
             Start("bash w.sh &", how="shell", gpus=TWO), [],
             {"w0": live(), "w1": live()}, BUSY2, wait=("script",)),
    Scenario("shell-script-killed", "the script SIGKILLed: its two workers live on",
             Start("bash w.sh &", how="shell", gpus=TWO), ["kill:script"],
             # step 4.8: reparented, in the script's process group, whose leader is gone
             {"w0": leftover("likely"), "w1": leftover("likely")}, DIRTY2, wait=("script",),
             findings=("orphan",), cuda=True),
    Scenario("shell-exits-script-lives", "the user exits the login shell: the script runs on",
             Start("bash w.sh &", how="shell", gpus=TWO), ["exit"],
             # step 3: the parent (the script) is alive; its root (the script: 4.6) is unsure
             {"w0": live(), "w1": live()}, BUSY2, wait=("script",)),
    Scenario("shell-job-worker-killed", "one of the script's workers SIGKILLed",
             Start("bash w.sh &", how="shell", gpus=TWO), ["kill:w1"],
             {"w0": live()}, {0: "busy", 1: "clean"}, wait=("script",)),

    # ---- nohup from a login shell that then goes away -------------------------------------
    Scenario("nohup-server-hangup",
             "`nohup python3 serve.py --port 0 &`, then the terminal hangs up: a live server",
             Start("nohup python3 serve.py --port 0 >/dev/null 2>&1 &", how="shell"), ["hangup"],
             # step 4.4: it listens on a port of its own
             {"server": live("likely", evidence={"listening": "live"})}, {0: "busy"},
             wait=("server:port",), cuda=True),
    Scenario("nohup-trainer-exit",
             "`nohup python3 train.py &`, then the user exits the login shell: a live trainer",
             Start("nohup python3 train.py >/dev/null 2>&1 &", how="shell"), ["exit"],
             # step 4.6: its own process group, its session leader gone
             {"trainer": unsure("live")}, {0: "busy"}, findings=("suspect",), cuda=True),
    Scenario("nohup-trainer-ssh",
             "`ssh host 'nohup python3 train.py &'`: no job control, the command's shell exits at "
             "once; a live trainer",
             Start("nohup python3 train.py >/dev/null 2>&1 &", how="ssh", detach=True), [],
             # step 4.9: in the dead shell's process group (it leads neither its group nor its
             # session), but it ignores SIGHUP as nohup set it: unsure, never a leftover
             {"trainer": unsure("live")}, {0: "busy"}, findings=("suspect",)),
    Scenario("ssh-launcher-live",
             "`ssh host 'python3 mp_train.py &'`: a live spawn launcher in the dead shell's group",
             Start("python3 mp_train.py --nprocs 2 >/dev/null 2>&1 &", how="ssh", gpus=TWO,
                   detach=True), [],
             # step 3: the root (the live launcher) holds no GPU and has live children: lineage
             # alone does not make it a leftover, its workers live
             {"rank0": live(), "rank1": live()},
             BUSY2, wait=("main", "mp-tracker")),
    Scenario("background-server-hangup",
             "`python3 serve.py &` without nohup, then the terminal hangs up: bash's SIGHUP ends it",
             Start("python3 serve.py --port 0 >/dev/null 2>&1 &", how="shell"), ["hangup"],
             {}, {0: "clean"}, wait=("server", "server:port"), gone=("server",)),

    # ---- setsid and new sessions ----------------------------------------------------------
    Scenario("setsid-launcher-killed", "a launcher ran `setsid python3 worker.py`, then was killed",
             Start(["launch.py", "setsid"]), ["kill:launcher"],
             # step 4.5: it leads its own session, no marker: a daemon looks the same
             {"worker": unsure("leftover")}, {0: "busy"}, wait=("launcher",),
             findings=("suspect",)),
    Scenario("new-session-live", "Popen(start_new_session=True) by a live launcher",
             Start(["launch.py", "new-session"]), [], {"worker": live()}, {0: "busy"},
             wait=("launcher",)),
    Scenario("new-session-launcher-killed",
             "Popen(start_new_session=True), launcher killed, no worker marker",
             Start(["launch.py", "new-session"]), ["kill:launcher"],
             {"worker": unsure("leftover")}, {0: "busy"}, wait=("launcher",),
             findings=("suspect",), cuda=True),
    Scenario("new-session-loader-launcher-killed",
             "as above, the worker has a forked DataLoader worker holding its files",
             Start(["launch.py", "new-session"], opts="worker-loader"), ["kill:launcher"],
             # the worker: 4.6 unsure. The loader: step 3, its root holds the GPU and is unsure:
             # unsure too
             {"worker": unsure("leftover"), "worker-loader": unsure("leftover")},
             {0: "busy"}, wait=("launcher",)),

    Scenario("new-group-launcher-killed",
             "Popen(process_group=0) (Python 3.11), launcher killed: the worker leads its own "
             "group in the user's live session",
             Start(["launch.py", "new-group"]), ["kill:launcher"],
             # step 4.7: it leads its own process group (a leader that is another process is
             # what 4.8 needs); its session leader lives: unsure
             {"worker": unsure("leftover")}, {0: "busy"}, wait=("launcher",)),

    # ---- double fork ----------------------------------------------------------------------
    Scenario("double-fork-live", "a live launcher whose workers were double-forked",
             Start(["launch.py", "double-fork"], gpus=TWO), [],
             # step 4.7: reparented, the process group's leader (the launcher) alive
             {"w0": live("likely"), "w1": live("likely")}, BUSY2, wait=("launcher",), cuda=True),
    Scenario("double-fork-launcher-killed", "the launcher of double-forked workers killed",
             Start(["launch.py", "double-fork"], gpus=TWO), ["kill:launcher"],
             # step 4.8
             {"w0": leftover("likely"), "w1": leftover("likely")}, DIRTY2, wait=("launcher",),
             findings=("orphan",), cuda=True),
    Scenario("double-fork-shared-port-launcher-killed",
             "the first seed: a server with double-forked workers that inherited its listening "
             "socket, killed",
             Start(["launch.py", "double-fork", "--listen"], gpus=TWO), ["kill:launcher"],
             # 4.4 does not apply (the port is inherited, shared by a dead group): step 4.8
             {"w0": leftover("likely", evidence={"listening": "neutral"}),
              "w1": leftover("likely", evidence={"listening": "neutral"})},
             DIRTY2, wait=("launcher", "launcher:port"), findings=("orphan",)),

    # ---- managers: systemd, Slurm, Kubernetes ---------------------------------------------
    Scenario("systemd-service-live", "a systemd service's main process and its forked worker",
             Start(["llm_serve.py", "--daemon"], cgroup=SERVICE, detach=True), [], {"worker": live()},
             {0: "busy"}, wait=("main",)),
    Scenario("systemd-service-main-killed", "the service's main process SIGKILLed",
             Start(["llm_serve.py", "--daemon"], cgroup=SERVICE, detach=True), ["kill:main"],
             # step 4.3: a systemd service's cgroup (systemd owns what is left in it)
             {"worker": live("likely", truth="either", evidence={"cgroup": "live"})},
             {0: "busy"}, wait=("main",)),
    Scenario("systemd-service-spawn-main-killed",
             "the service's main killed; its worker was started with multiprocessing spawn",
             Start(["llm_serve.py", "--daemon", "--spawn-worker"], cgroup=SERVICE, detach=True), ["kill:main"],
             # step 4.1 comes before 4.3: a worker marker with its launcher gone
             {"worker": leftover()}, {0: "dirty"}, wait=("main", "mp-tracker"),
             findings=("orphan",)),
    Scenario("slurm-step-live", "a Slurm step: slurmstepd and its task",
             Start(["slurmstepd.py"], cgroup=SLURM_STEP, child_cgroup=SLURM_STEP + "/task_0", detach=True), [],
             {"worker": live()}, {0: "busy"}, wait=("slurmstepd",)),
    Scenario("slurm-stepd-killed", "slurmstepd SIGKILLed, its task lives on in the job's cgroup",
             Start(["slurmstepd.py"], cgroup=SLURM_STEP, child_cgroup=SLURM_STEP + "/task_0", detach=True),
             ["kill:slurmstepd"],
             # a Slurm job's cgroup says where it runs, not whether it is used (neutral); it
             # leads its own session: step 4.6, unsure
             {"worker": unsure("either", evidence={"cgroup": "neutral"})},
             {0: "busy"}, wait=("slurmstepd",)),
    Scenario("k8s-pod-live", "a Kubernetes pod's container process under its containerd shim",
             Start(["containerd_shim.py"], cgroup="system.slice/containerd.service",
                   child_cgroup=POD, detach=True), [],
             # its parent, the shim, is a subreaper: the worker is its own root, started by a
             # live container runtime: live, likely
             {"worker": live("likely")}, {0: "busy"}, wait=("shim",)),
    Scenario("k8s-shim-killed", "the containerd shim SIGKILLed: the container's process lives on",
             Start(["containerd_shim.py"], cgroup="system.slice/containerd.service",
                   child_cgroup=POD, detach=True), ["kill:shim"],
             # a pod's cgroup is neutral evidence; its runtime gone, it leads its own session:
             # step 4.6, unsure
             {"worker": unsure("either", evidence={"cgroup": "neutral"})},
             {0: "busy"}, wait=("shim",)),

    # ---- a container's init (another PID namespace) ---------------------------------------
    Scenario("container-live", "an application as PID 1 of a container, with its worker",
             # its parent is the container's PID 1, not a known init: its launcher, live, likely
             Start(["init.py"], how="container"), [], {"worker": live("likely")}, {0: "busy"},
             wait=("runtime", "nsinit")),
    Scenario("container-runtime-killed",
             "the container's runtime (unshare) SIGKILLed: its init and worker live on",
             Start(["init.py"], how="container"), ["kill:runtime"],
             # step 3: the root (the container's init) holds no GPU: its worker's parent, the
             # container's PID 1, is alive: live, likely
             {"worker": live("likely", truth="either")}, {0: "busy"},
             wait=("runtime", "nsinit")),
    Scenario("container-tini-runtime-killed",
             "tini as the container's init, the runtime SIGKILLed",
             Start(["worker.py"], how="tini"), ["kill:runtime"],
             # tini is init-like: the worker is its own root, leading its own group: step 4.7,
             # unsure
             {"worker": unsure("either")}, {0: "busy"}, wait=("runtime", "nsinit")),
    Scenario("k8s-shared-pidns-launcher-killed",
             "a pod sharing its PID namespace: pause is its PID 1; the pod's launcher killed, its "
             "worker is reparented to pause",
             Start(["pause.py"], how="container"), ["kill:launcher"],
             # pause is an init (Kubernetes' pod sandbox): the worker is its own root, with no
             # marker and its own session: unsure
             {"worker": unsure("leftover")}, {0: "busy"}, wait=("runtime", "pause", "launcher")),
    Scenario("container-init-killed",
             "the container's init SIGKILLed: the kernel ends its PID namespace",
             Start(["init.py"], how="container"), ["kill:nsinit"], {}, {0: "clean"},
             wait=("runtime", "worker"), gone=("worker", "runtime")),

    # ---- another user, a non-root view ----------------------------------------------------
    Scenario("other-user-main-killed",
             "uid 4242's spawn launcher killed: leftovers, but another user's (no --all-users)",
             Start(MP_TRAIN, how="user", gpus=TWO), ["kill:main"],
             {"rank0": leftover(default=False, likely=False),
              "rank1": leftover(default=False, likely=False)},
             DIRTY2, wait=("main", "mp-tracker"), findings=("orphan",)),
    Scenario("other-user-main-killed-all-users", "the same, reaped with --all-users as root",
             Start(MP_TRAIN, how="user", gpus=TWO), ["kill:main"],
             {"rank0": leftover(), "rank1": leftover()}, DIRTY2, wait=("main", "mp-tracker"),
             plan_args=("--all-users",), findings=("orphan",)),
    Scenario("nonroot-view-ghost",
             "a ghost of root's, seen by a non-root gpureap: it cannot see the hidden holder",
             Start(["train.py", "--loaders", "1"]), ["kill:trainer"],
             # it cannot read the child's fds: never sure, the next step says to run as root
             {"loader0": E(None, truth="leftover")}, {0: ("stale", "dirty")}, wait=("trainer",),
             view="user", next_step=NOT_ROOT, never_sure=True),
    Scenario("nonroot-view-sglang-live", "a live SGLang server of root's, seen by a non-root gpureap",
             Start(SGLANG, gpus=TWO), [],
             {"scheduler_TP0": E(("live", None), ("sure", "likely"), "live"),
              "scheduler_TP1": E(("live", None), ("sure", "likely"), "live")},
             BUSY2, wait=SGLANG_UP, view="user"),
    Scenario("nonroot-view-torchrun-agent-killed",
             "torchrun's agent killed, seen by a non-root gpureap (it cannot read the environment)",
             Start(TORCHRUN, gpus=TWO), ["kill:agent"],
             # without the environment the marker is missing: 4.5 at most, never sure
             {"rank0": E(("unsure", None), "unsure", "leftover"),
              "rank1": E(("unsure", None), "unsure", "leftover")},
             BUSY2, wait=("agent:port",), view="user", never_sure=True),

    Scenario("hidepid-view-double-fork-launcher-killed",
             "uid 4242's double-forked workers, launcher killed, seen by uid 4242's gpureap "
             "through a /proc mounted with hidepid",
             Start(["launch.py", "double-fork"], how="user", gpus=TWO), ["kill:launcher"],
             # step 5: with processes hidden, the "gone" of 4.8 is unsure
             {"w0": unsure("leftover"), "w1": unsure("leftover")}, BUSY2, wait=("launcher",),
             view="hidepid", never_sure=True, next_step=NOT_ROOT),

    # ---- the ghost -------------------------------------------------------------------------
    Scenario("ghost", "a trainer forked a DataLoader worker after CUDA init, then was killed",
             Start(["train.py", "--loaders", "1"]), ["kill:trainer"],
             # step 2: one ghost, one candidate
             {"loader0": leftover(role="hidden_holder", evidence={"ghost": "leftover"})},
             {0: "dirty"}, wait=("trainer",), findings=("ghost",), cuda=True),
    Scenario("ghost-two-loaders", "the ghost with two forked DataLoader workers",
             Start(["train.py", "--loaders", "2"]), ["kill:trainer"],
             # step 2: both hold the ghost's memory; "tied by lineage among several: likely"
             {"loader0": leftover(("sure", "likely"), default=None, role="hidden_holder"),
              "loader1": leftover(("sure", "likely"), default=None, role="hidden_holder")},
             {0: "dirty"}, wait=("trainer",), findings=("ghost",)),
    Scenario("ghost-live", "the trainer and its forked DataLoader worker, alive",
             Start(["train.py", "--loaders", "1"]), [],
             {"trainer": live(), "loader0": live()}, {0: "busy"}, cuda=True),

    # ---- gpureap run ----------------------------------------------------------------------
    Scenario("run-live", "`gpureap run -- python3 mp_train.py`, running",
             Start(MP_TRAIN, how="supervised", gpus=TWO), [],
             # step 1: GPUREAP_RUN_PID names a live gpureap
             {"rank0": live(evidence={"run_supervisor": "live"}),
              "rank1": live(evidence={"run_supervisor": "live"})},
             BUSY2, wait=("supervisor", "main")),
    Scenario("run-supervisor-killed", "`gpureap run` SIGKILLed: its tree carries GPUREAP_RUN_PID",
             Start(MP_TRAIN, how="supervised", gpus=TWO), ["kill:supervisor"],
             # step 1: its supervisor is gone, though the launcher (mp_train.py) still runs and
             # is the workers' parent: see the README
             {"rank0": leftover(truth="either", evidence={"run_supervisor": "leftover"}),
              "rank1": leftover(truth="either", evidence={"run_supervisor": "leftover"})},
             DIRTY2, wait=("supervisor", "main"), findings=("orphan",), cuda=True),

    # ---- process state --------------------------------------------------------------------
    Scenario("dstate-live", "a live job whose worker sits in state D (a killable driver call)",
             Start(["launch.py", "dstate"]), [],
             # step 3: the parent is alive; D is a fact, not a verdict
             {"worker": live(evidence={"state": "neutral"})}, {0: "busy"},
             wait=("launcher", "worker-vfork"), states={"worker": "D"},
             findings=("uninterruptible",)),
]
