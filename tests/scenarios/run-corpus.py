#!/usr/bin/env python3
"""Runs the scenario corpus (corpus.py) and checks gpureap's verdicts and plans against it.

  run-corpus.py [--table FILE.md] [--only NAME,...] [--list]        the fake driver (CI)
  run-corpus.py --cuda --fixtures DIR [--table FILE.md] [--only ...] a real NVIDIA GPU

Environment: GPUREAP (the binary), GPUHOLD and FAKE_NVML (fake driver), as the integration
tests get them (tests/meson.build).

For each scenario: a private fake environment like tests/integration/lib.sh (device files,
context directory, the fake NVML's scenario file with the GPUs used), the tree started
(launchers.py), every role awaited in the pid file, the kill applied, the tree awaited until it
has settled (see settle()), then `gpureap status --json`, `reap --dry-run --json` and
`reap --dry-run --likely --json` compared with the expectations. One TAP line per check; at the
end the corpus figures, and a Markdown table of every row to --table.

Everything started is killed at the end of each scenario, even on failure or SIGTERM: the
recorded roles and the runner's own children through the pidfds taken when each was first seen,
and any process that still carries this scenario's pid file in its environment (our descendants
only: the path is unique). Exit 0 all passed, 1 a check failed, 77 nothing failed but some
scenarios could not run here (said in the output)."""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True  # never leave __pycache__ in the source tree

# The launchers' verdicts rest on their signals: every signal at its default and none blocked,
# whatever the caller left (nohup, "trap '' INT", a blocked mask; tests/integration/signals.sh)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for _s in signal.valid_signals():
    if _s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ) and \
            signal.getsignal(_s) == signal.SIG_IGN:
        signal.signal(_s, signal.SIG_DFL)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import launchers  # noqa: E402

OTHER_UID = 4242
SETPRIV = ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups"]
HIDEPID = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
           'mount -t proc -o hidepid=invisible proc /proc && exec "$@"', "sh"]


class Stop(BaseException):
    """SIGTERM or SIGINT (meson's timeout): unwind so that every scenario's cleanup runs."""


def on_signal(signum, frame):
    raise Stop(signal.Signals(signum).name)


# ---- /proc ---------------------------------------------------------------------------------

def stat(pid):
    """(state, ppid, start time) of PID, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read()
    except OSError:
        return None
    if b")" not in s:
        return None
    rest = s[s.rindex(b")") + 2:].split()
    return rest[0].decode(), int(rest[1]), int(rest[19])


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.startswith("cgroup2 "):
                return left.split()[4]
    return None


def own_cgroup():
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return None


# ---- TAP and figures -----------------------------------------------------------------------

class Report:
    def __init__(self):
        self.n = 0
        self.failed = 0
        self.skipped = []
        self.rows = []  # (scenario, kill, role, expected, got, ok)
        self.fig = {"live_default": [], "live_likely": [], "live_sure_leftover": [], "leftovers": [],
                    "found": [], "found_expected": [], "scenarios": 0}

    def check(self, ok, what, detail=None):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {what}")
        if not ok:
            self.failed += 1
            if detail:
                for line in str(detail).splitlines():
                    print(f"#   {line}")
        return ok

    def skip(self, name, why):
        self.n += 1
        self.skipped.append((name, why))
        print(f"ok {self.n} - {name} # SKIP {why}")

    def note(self, text):
        for line in text.splitlines():
            print(f"# {line}")


# ---- one scenario --------------------------------------------------------------------------

class Run:
    """The private environment and the processes of one scenario."""

    def __init__(self, scn, cfg):
        self.scn, self.cfg = scn, cfg
        self.T = tempfile.mkdtemp(prefix=f"gpureap-scen-{scn.name}.")
        try:
            self._setup()
        except BaseException:
            shutil.rmtree(self.T, ignore_errors=True)
            raise

    def _setup(self):
        scn, cfg = self.scn, self.cfg
        os.chmod(self.T, 0o755)  # another uid's tree and a non-root gpureap come in
        self.pidfile = os.path.join(self.T, "pids")
        open(self.pidfile, "w").close()
        os.chmod(self.pidfile, 0o666)
        self.log = open(os.path.join(self.T, "log"), "w")
        os.mkdir(os.path.join(self.T, "tmp"))
        os.chmod(os.path.join(self.T, "tmp"), 0o1777)
        self.popens, self.shell, self.cgroups, self.hostproc = [], None, [], None
        self.ident = {}  # pid: (pidfd, start time), from the first sight of each process
        self.python = cfg.python_user if scn.start.how == "user" else cfg.python
        launchers.install_entry_points(self.T, self.python)
        bindir = os.path.join(self.T, "bin")
        # a pasted next step says 'gpureap ...': the one under test comes first on PATH
        os.symlink(cfg.gpureap, os.path.join(bindir, "gpureap"))
        py3 = os.path.join(bindir, "python3")
        if os.path.exists(os.path.join(os.path.dirname(os.path.dirname(self.python)), "pyvenv.cfg")):
            # a virtual environment's python behind a symlink elsewhere does not find its
            # pyvenv.cfg (nor torch): exec it by its own path
            with open(py3, "w") as f:
                f.write(f'#!/bin/sh\nexec {shlex.quote(self.python)} "$@"\n')
            os.chmod(py3, 0o755)
        else:
            os.symlink(self.python, py3)
        self.env = self._env(bindir)

    def _env(self, bindir):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUREAP_", "TORCHELASTIC_", "SLURM_"))
               and k not in ("LOCAL_RANK", "RANK", "GROUP_RANK", "WORLD_SIZE", "PYTHONPATH",
                             "PYTHONDONTWRITEBYTECODE")}
        # GPUREAP_RUN_PID above all: a corpus run under `gpureap run` must not mark its trees
        env.update({
            "PATH": bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
            # byte code goes to one temporary directory of the run (shared by the scenarios:
            # compiled once), never into the source tree; PYTHONDONTWRITEBYTECODE would add -B
            # to every spawned child's command line
            "PYTHONPATH": os.path.join(self.T, "py"), "PYTHONPYCACHEPREFIX": self.cfg.pycache,
            # multiprocessing's forkserver leaves its socket directory (pymp-*) behind when it
            # is SIGKILLed: temporary files go to the scenario's directory
            "HOME": self.T, "TMPDIR": os.path.join(self.T, "tmp"), "GPUREAP": self.cfg.gpureap,
            "GPUREAP_SCENARIO_PIDFILE": self.pidfile,
            "GPUREAP_SCENARIO_GPUS": ",".join(str(g) for g in self.scn.start.gpus),
            "GPUREAP_SCENARIO_OPTS": self.scn.start.opts,
        })
        if self.cfg.gpuhold:
            env["GPUHOLD"] = self.cfg.gpuhold
        if self.cfg.cuda:
            # CUDA's device order as NVML's (PCI bus order), so "GPU 1" is the same for both
            env.update({"GPUREAP_SCENARIO_CUDA": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
            return env
        dev, ctx = os.path.join(self.T, "dev"), os.path.join(self.T, "ctx")
        os.mkdir(dev)
        os.mkdir(ctx)
        os.chmod(ctx, 0o1777)
        n = max(self.scn.start.gpus) + 1
        for f in ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"] + [f"nvidia{i}" for i in range(n)]:
            p = os.path.join(dev, f)
            with open(p, "wb") as fh:
                fh.truncate(4096)
            os.chmod(p, 0o666)
        scenario = os.path.join(self.T, "scenario")
        with open(scenario, "w") as f:
            f.write(f"contexts {ctx}\n" + "".join(f"gpu {i} minor={i}\n" for i in range(n)))
        env.update({"GPUREAP_DEV_DIR": dev, "GPUREAP_FAKE_CTX_DIR": ctx,
                    "GPUREAP_NVML_LIBRARY": self.cfg.fake_nvml,
                    "GPUREAP_FAKE_NVML_SCENARIO": scenario})
        return env

    # -- roles

    def roles(self):
        out = {}
        with open(self.pidfile) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    out[parts[0]] = int(parts[1])
        return out

    def record(self, role, pid):
        with open(self.pidfile, "a") as f:
            f.write(f"{role} {pid}\n")

    def pids(self):
        """Every process role (ports are not processes)."""
        return {r: p for r, p in self.roles().items() if ":" not in r}

    # PIDs are reused (pid_max is 32768 here, and other tests fork a lot): each process is
    # known by a pidfd and its start time from the first poll that sees it, so a gone process
    # is never mistaken for a new one with its number, and only our own processes are signalled

    def track(self):
        pids = set(self.pids().values()) | {p.pid for p in self.popens}
        if self.shell:
            pids.add(self.shell.pid)
        for pid in pids - set(self.ident):
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            st = stat(pid)
            if st:
                self.ident[pid] = (fd, st[2])
            else:
                os.close(fd)

    def state(self, pid):
        """stat() of our process PID, None once it is gone (or its number names another)."""
        st = stat(pid)
        known = self.ident.get(pid)
        return None if not st or (known and known[1] != st[2]) else st

    def signal(self, pid, sig):
        known = self.ident.get(pid)
        if known:
            try:
                signal.pidfd_send_signal(known[0], sig)
            except OSError:
                pass

    # -- start

    def _cgroup(self, rel, fill):
        path = os.path.join(self.cfg.cgroup_base, rel.format(**fill))
        os.makedirs(path, exist_ok=True)
        d = path
        while d != self.cfg.cgroup_base:
            if d not in self.cgroups:
                self.cgroups.append(d)
            d = os.path.dirname(d)
        return path

    def start(self):
        s = self.scn.start
        env = dict(self.env)
        fill = {"id": uuid.uuid4().hex[:8], "pod": str(uuid.uuid4()).replace("-", "_"),
                "cid": uuid.uuid4().hex + uuid.uuid4().hex}
        env["GPUREAP_SCENARIO_CONTAINER_ID"] = fill["cid"]
        if s.cgroup:
            env["GPUREAP_SCENARIO_CGROUP"] = self._cgroup(s.cgroup, fill)
        if s.child_cgroup:
            env["GPUREAP_SCENARIO_CHILD_CGROUP"] = self._cgroup(s.child_cgroup, fill)
        cwd = os.path.join(self.T, "py")
        if s.how == "shell":
            self.shell = launchers.InteractiveShell(env, cwd, self.log)
            self.record("shell", self.shell.pid)
            self.shell.run(s.cmd)
            return
        if s.how == "ssh":
            # `ssh host 'CMD &'`: sshd runs the command's shell as a session leader, without a
            # terminal or job control; the shell exits at once
            p = subprocess.Popen(["/bin/sh", "-c", s.cmd], cwd=cwd, env=env,
                                 stdin=subprocess.DEVNULL, stdout=self.log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            self.popens.append(p)
            return
        cmd = [self.python] + list(s.cmd)
        # an entry point that is another program than python runs under its own name (the
        # runtime's shim: gpureap judges an init by its executable)
        own = launchers.entry_interpreter(self.T, s.cmd[0]) if s.cmd else None
        if own:
            cmd[0] = own
        pass_fds = ()
        if self.cfg.cuda and s.cuda_cmd:
            # the real program (our bin/ comes first on the trees' PATH: look it up without it)
            real = shutil.which(s.cuda_cmd[0], path=os.environ.get("PATH"))
            if not real:
                raise RuntimeError(f"'{s.cuda_cmd[0]}' is not installed")
            cmd = [real] + list(s.cuda_cmd[1:])
        if s.how == "user":
            cmd = SETPRIV + cmd
        elif s.how in ("container", "tini"):
            # the host's /proc, for the host PIDs (the namespace mounts its own /proc)
            self.hostproc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
            env["GPUREAP_SCENARIO_HOST_PROC_FD"] = str(self.hostproc)
            pass_fds = (self.hostproc,)
            ns = ["unshare", "--pid", "--fork", "--mount-proc"]
            cmd = ns + (["tini", "-s", "--"] if s.how == "tini" else []) + cmd
        elif s.how == "supervised":
            cmd = [self.cfg.gpureap, "run", "--"] + cmd
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
                             stderr=subprocess.STDOUT, process_group=0, pass_fds=pass_fds)
        self.popens.append(p)
        if s.how in ("container", "tini"):
            self.record("runtime", p.pid)
        if s.how == "supervised":
            self.record("supervisor", p.pid)
        if self.cfg.cuda and s.cuda_cmd and s.cuda_cmd[0] == "torchrun":
            self.record("agent", p.pid)  # the real agent records nothing itself
        if s.how == "tini":
            self.record("nsinit", self.wait_for(lambda: (children(p.pid) or [None])[0], "tini"))

    def poll(self):
        """Reap our own children (a killed child must not stay a zombie) and drain the shell."""
        self.track()
        for p in self.popens:
            p.poll()
        if self.shell:
            self.shell.drain()
            self.shell.reap()

    def wait_for(self, fn, what, timeout=None, exits_ok=False, explain=None):
        """Poll FN until it gives something, bounded (no fixed sleeps). A launcher that fails
        while the tree comes up ends the wait at once (after the kill, exits are expected)."""
        deadline = time.monotonic() + (timeout or self.cfg.timeout)
        while True:
            v = fn()
            if v:
                return v
            self.poll()
            for p in self.popens:
                if p.returncode not in (None, 0) and not exits_ok:
                    raise RuntimeError(f"{what}: '{' '.join(p.args)}' exited {p.returncode}\n"
                                       + self.log_tail())
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not within {timeout or self.cfg.timeout} s"
                                   f"{': ' + explain() if explain else ''}\n" + self.log_tail())
            time.sleep(0.01)

    def log_tail(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            lines = f.read().splitlines()[-15:]
        with open(self.pidfile) as f:
            return "recorded: " + " ".join(f.read().split("\n")) + "\n" + "\n".join(lines)

    # -- kill and settle

    def apply(self, actions):
        """Apply the kill actions; returns what settle() must see."""
        self.track()
        before = {pid: st[1] for pid in self.pids().values() if (st := self.state(pid))}
        killed = []
        want_state = {}
        for a in actions:
            verb, _, role = a.partition(":")
            if verb in ("kill", "stop"):
                pid = self.pids()[role]
                self.signal(pid, signal.SIGKILL if verb == "kill" else signal.SIGSTOP)
                if verb == "kill":
                    killed.append(pid)
                else:
                    # stopped is a state reached a little later: the next action must find it
                    # (the kernel's orphaned-group SIGHUP looks for stopped members at the kill)
                    want_state[pid] = "T"
                    self.wait_for(lambda: (self.state(pid) or ("",))[0] == "T", f"{role} stopped")
            elif verb == "exit":
                self.shell.exit()
                killed.append(self.shell.pid)
            elif verb == "hangup":
                self.shell.hangup()
                killed.append(self.shell.pid)
            else:
                raise ValueError(f"unknown action {a}")
        return before, killed, want_state

    def settle(self, before, killed, want_state):
        """The tree has settled when: every killed process and every role that must end because
        of it is gone from /proc (not even a zombie: the reparenting of its children is done
        before it becomes one, and its parent reaped it); every live role whose parent was
        killed shows its new parent; every role awaited in a state (D, T) is in it. Polled every
        10 ms with a bound."""
        roles = self.pids()
        gone = set(killed) | {roles[r] for r in self.scn.gone}
        states = {pid: st for pid, st in want_state.items() if pid not in gone}
        states.update({roles[r]: st for r, st in self.scn.states.items()})

        def pending():
            out = []
            for pid in gone:
                st = self.state(pid)
                if st:
                    out.append(f"{pid} still there ({st[0]})")
            for pid, ppid in before.items():
                st = self.state(pid)
                if pid not in gone and st and ppid in gone and st[1] == ppid:
                    out.append(f"{pid} not reparented yet")
            for pid, want in states.items():
                st = self.state(pid)
                if not st or st[0] != want:
                    out.append(f"{pid} in state {st and st[0]}, not {want}")
            return out
        self.wait_for(lambda: not pending(), "settle", exits_ok=True,
                      explain=lambda: "; ".join(pending()))
        if self.cfg.cuda:
            self.wait_drained(gone)

    def wait_drained(self, gone):
        """On a real GPU a killed holder's memory takes ~100 ms to come back, during which the
        driver still lists it: wait until no listed context belongs to a gone process."""
        def drained():
            s = self.status()
            listed = {o["pid"] for g in s.get("gpus", []) for o in (g.get("context_owners") or [])}
            return not (listed & gone)
        try:
            self.wait_for(drained, "drain", timeout=30)
        except RuntimeError as e:
            print(f"# {self.scn.name}: {e}".splitlines()[0])

    # -- gpureap

    def gpureap(self, *args):
        cmd = [self.cfg.gpureap] + list(args)
        if self.scn.view in ("user", "hidepid"):
            cmd = SETPRIV + cmd
        if self.scn.view == "hidepid":
            # a /proc mounted with hidepid (in a mount namespace of its own): other users'
            # processes are invisible, dead and hidden look the same
            cmd = HIDEPID + cmd
        r = subprocess.run(cmd, env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {"_error": f"exit {r.returncode}, not JSON: {r.stdout[:200]!r} {r.stderr[:300]!r}"}

    def status(self):
        return self.gpureap("status", "--json")

    def plans(self):
        extra = list(self.scn.plan_args)
        if self.cfg.cuda:
            # on a shared machine every reap is limited to our own processes
            extra += ["--pid", ",".join(str(p) for p in self.pids().values() if self.state(p))]
        return (self.gpureap("reap", "--dry-run", "--json", *extra),
                self.gpureap("reap", "--dry-run", "--likely", "--json", *extra))

    # -- cleanup

    def tagged(self):
        """Our processes that were never recorded: they carry this scenario's pid file in their
        environment (set by the runner for its trees only)."""
        tag = f"GPUREAP_SCENARIO_PIDFILE={self.pidfile}\0".encode()
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit() and int(d) != os.getpid():
                try:
                    with open(f"/proc/{d}/environ", "rb") as f:
                        if tag in f.read():
                            out.append(int(d))
                except OSError:
                    pass
        return out

    def kill_strays(self):
        """SIGKILL the tagged processes we do not know yet: through a pidfd opened first, then
        the tag checked again, so a number reused in between is never signalled."""
        found = [p for p in self.tagged() if p not in self.ident]
        for pid in found:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            if pid in self.tagged():
                try:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass
            os.close(fd)
        return found

    def cleanup(self):
        """SIGKILL (which also ends stopped and killable-D processes) every process of the
        scenario, wait until they are gone, remove its cgroups and its directory."""
        self.track()
        if self.shell and self.shell.fd is not None:
            self.shell.hangup()
        for pid in self.ident:
            self.signal(pid, signal.SIGKILL)
        strays = set(self.kill_strays())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            self.poll()  # reaps our children
            strays |= set(self.kill_strays())
            left = [p for p in self.ident if (self.state(p) or ("Z",))[0] != "Z"]
            if not left and not self.tagged():
                break
            time.sleep(0.01)
        for p in self.popens:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.shell:
            try:
                os.waitpid(self.shell.pid, 0)
            except ChildProcessError:
                pass
        for fd, _ in self.ident.values():
            os.close(fd)
        self.ident.clear()
        # the leaf cgroup that gpureap run made under the runner's own cgroup
        sup = self.pids().get("supervisor")
        if sup and self.cfg.cgroup_mount:
            self.cgroups.insert(0, os.path.join(self.cfg.cgroup_mount + self.cfg.own_cgroup,
                                                f"gpureap-run-{sup}"))
        for d in sorted(self.cgroups, key=len, reverse=True):
            rmdir_cgroup(d)
        if self.hostproc is not None:
            os.close(self.hostproc)
        self.log.close()
        if not self.cfg.keep:
            shutil.rmtree(self.T, ignore_errors=True)
        return sorted(strays)


def rmdir_cgroup(d):
    """Remove a cgroup once its processes have left it: a killed process leaves only when it is
    reaped, and this VM's PID 1 reaps orphans up to ~1.5 s late (more under load)."""
    deadline = time.monotonic() + 30
    while os.path.isdir(d):
        try:
            os.rmdir(d)
        except OSError:
            if time.monotonic() > deadline:
                print(f"# could not remove cgroup {d}")
                return
            time.sleep(0.01)


# ---- checking ------------------------------------------------------------------------------

def as_set(v):
    return set(v) if isinstance(v, tuple) else {v}


def plan_expect(e, which):
    """Is the role expected in the plan (True/False), or does it follow the verdict (None)?"""
    v = e.default if which == "default" else e.likely
    if v != corpus.AUTO:
        return v
    js, cs = as_set(e.judgement), as_set(e.confidence)
    if js != {"leftover"}:
        return False if "leftover" not in js else None
    ok = {"sure"} if which == "default" else {"sure", "likely"}
    return True if cs <= ok else (False if not (cs & ok) else None)


def confidences(e):
    if e.confidence is not None:
        return as_set(e.confidence)
    return {"unsure"} if as_set(e.judgement) == {"unsure"} else None


def show(e):
    j = "/".join(str(x) if x else "not judged" for x in sorted(as_set(e.judgement), key=str))
    c = confidences(e)
    return f"{j} {'/'.join(sorted(c))}" if c and e.judgement else j


def verdict_text(v):
    return f"{v.get('judgement')} {v.get('confidence')}" if v else "not judged"


def plan_flags(d, lk):
    """Which plans hold it (None: as its verdict says)."""
    if d is None or lk is None:
        return "plans as its verdict"
    return ", ".join(x for x, y in (("default plan", d), ("--likely", lk)) if y) or "no plan"


def check_scenario(rep, run, s, plans, cfg):
    scn = run.scn
    name = scn.name
    roles = run.pids()
    procs = {p.get("pid"): p for p in s.get("processes") or []}
    default, likely = plans
    tgt = {t.get("pid") for t in ((default.get("plan") or {}).get("targets") or [])}
    tgt_l = {t.get("pid") for t in ((likely.get("plan") or {}).get("targets") or [])}
    spared = {t.get("pid") for t in ((default.get("plan") or {}).get("spared") or [])}
    kill = ", ".join(kill_text(a) for a in scn.kill) or "none"

    rep.check(s.get("schema_version") == 4, f"{name}: status --json has schema_version 4",
              s.get("_error") or f"schema_version {s.get('schema_version')}")
    for label, p in (("reap --dry-run", default), ("reap --dry-run --likely", likely)):
        rep.check(isinstance(p.get("plan"), dict) and isinstance(p["plan"].get("targets"), list),
                  f"{name}: {label} --json has a plan with targets", p.get("_error") or str(p)[:300])

    # the GPUs
    ngpus = len(s.get("gpus") or [])
    got_state = {g.get("index"): g.get("state") for g in s.get("gpus") or []}
    want_state = {}
    for i, st in scn.gpus.items():
        idx = i % ngpus if cfg.cuda and ngpus else i
        want_state[idx] = merge_states(want_state.get(idx), as_set(st))
    for i, st in sorted(want_state.items()):
        ok = rep.check(got_state.get(i) in st, f"{name}: GPU {i} is {'/'.join(sorted(st))}",
                       f"got {got_state.get(i)}")
        rep.rows.append((name, kill, f"GPU {i}", "/".join(sorted(st)), str(got_state.get(i)), ok))

    # every role
    for role, e in scn.expect.items():
        pid = roles.get(role)
        v = (procs.get(pid) or {}).get("verdict") if pid else None
        js = as_set(e.judgement)
        got_j = v.get("judgement") if v else None
        ok = rep.check(got_j in js, f"{name}: {role} ({pid}) is {show(e)}",
                       f"got {verdict_text(v)}; {evidence_text(v)}")
        cs = confidences(e)
        if v and cs and e.judgement is not None:
            ok &= rep.check(v.get("confidence") in cs,
                            f"{name}: {role} confidence {'/'.join(sorted(cs))}",
                            f"got {v.get('confidence')}; {evidence_text(v)}")
        if v and e.role:
            ok &= rep.check(v.get("role") == e.role, f"{name}: {role} has role {e.role}",
                            f"got {v.get('role')}")
        for key, lean in (e.evidence or {}).items():
            items = [x for x in (v or {}).get("evidence") or [] if x.get("key") == key]
            ok &= rep.check(any(lean == "*" or x.get("lean") == lean for x in items),
                            f"{name}: {role} has evidence {key} ({lean})", evidence_text(v))
        if cfg.cuda:
            # the real machine's plans are limited with --pid: what the plans would kill follows
            # from the verdict, as "What reap kills" says
            in_d, in_l = would_plan(v, "default"), would_plan(v, "likely")
        else:
            in_d, in_l = pid in tgt, pid in tgt_l
        for which, got_in, label in (("default", in_d, "reap --dry-run"),
                                     ("likely", in_l, "reap --dry-run --likely")):
            want = plan_expect(e, which)
            if want is None:
                want = would_plan(v, which)
            ok &= rep.check(got_in == want, f"{name}: {role} {'in' if want else 'not in'} the plan of {label}",
                            f"targets {sorted(tgt if which == 'default' else tgt_l)}")
        exp = show(e)
        if e.judgement:
            exp += "; " + plan_flags(plan_expect(e, "default"), plan_expect(e, "likely"))
        if e.truth not in js:
            exp += {"leftover": " (really a leftover)", "live": " (really live)",
                    "either": " (debatable)"}[e.truth]
        got = verdict_text(v) + "; " + plan_flags(in_d, in_l)
        rep.rows.append((name, kill, role, exp, got, ok))
        figures(rep, name, role, e, v, in_d, in_l)

    # the recorded processes that hold no GPU: never judged, never a target
    for role, pid in roles.items():
        if role in scn.expect:
            continue
        v = (procs.get(pid) or {}).get("verdict")
        if run.state(pid):
            rep.check(v is None, f"{name}: {role} ({pid}) holds no GPU: not judged", verdict_text(v))
        if cfg.cuda:  # the plans there are limited with --pid: each asked PID is in them
            targeted = would_plan(v, "default") or would_plan(v, "likely")
        else:
            targeted = pid in tgt or pid in tgt_l
        rep.check(not targeted, f"{name}: {role} ({pid}) is no target")

    ours = set(roles.values())
    judged = {pid for pid, p in procs.items() if p.get("verdict")}
    if not cfg.cuda:
        rep.check(judged <= ours, f"{name}: only the scenario's processes are judged",
                  f"unknown: {sorted(judged - ours)}")
        rep.check((judged & ours) - tgt <= spared,
                  f"{name}: every holder not planned is spared with a reason",
                  f"neither target nor spared: {sorted((judged & ours) - tgt - spared)}")
        for t in ((default.get("plan") or {}).get("targets") or []):
            rep.check(bool(t.get("reason")), f"{name}: target {t.get('pid')} has a reason", str(t))
        for t in ((default.get("plan") or {}).get("spared") or []):
            if t.get("pid") in ours:
                rep.check(bool(t.get("reason")), f"{name}: spared {t.get('pid')} has a reason", str(t))
    else:
        rep.check((tgt | tgt_l) <= ours, f"{name}: the plans (limited with --pid) hold only our PIDs",
                  f"{sorted((tgt | tgt_l) - ours)}")

    # findings
    findings = s.get("findings") or []
    kinds = {f.get("kind") for f in findings}
    for k in scn.findings:
        rep.check(k in kinds, f"{name}: a '{k}' finding", f"kinds {sorted(kinds, key=str)}")
    left = {role for role, e in scn.expect.items() if as_set(e.judgement) == {"leftover"}}
    maybe_left = {role for role, e in scn.expect.items() if "leftover" in as_set(e.judgement)}
    in_left = {p for f in findings if f.get("leftover") for p in f.get("pids") or []}
    for role in sorted(left):
        rep.check(roles.get(role) in in_left, f"{name}: {role} is in a leftover finding",
                  findings_text(findings))
    not_left = {roles[r] for r in roles if r not in maybe_left}
    rep.check(not (in_left & not_left), f"{name}: no live or unsure process in a leftover finding",
              findings_text(findings))
    if scn.never_sure:
        rep.check(all(f.get("confidence") != "sure" for f in findings), f"{name}: no finding is sure",
                  findings_text(findings))
    if scn.next_step:
        rep.check(any(re.search(scn.next_step, f.get("next_step") or "") for f in findings),
                  f"{name}: a next step says /{scn.next_step}/", findings_text(findings))


def would_plan(v, which):
    """Does a verdict put its process in the default (or --likely) plan?"""
    ok = {"sure"} if which == "default" else {"sure", "likely"}
    return bool(v) and v.get("judgement") == "leftover" and v.get("confidence") in ok


def merge_states(old, new):
    """Two expected GPUs on one real GPU: the stronger state wins."""
    if old is None:
        return new
    order = ["dirty", "busy", "stale", "clean"]
    best = min(list(old) + list(new), key=order.index)
    return {best}


def figures(rep, name, role, e, v, in_default, in_likely):
    j, c = (v or {}).get("judgement"), (v or {}).get("confidence")
    where = f"{name}/{role}"
    if e.truth == "live":
        if in_default:
            rep.fig["live_default"].append(where)
        if in_likely:
            rep.fig["live_likely"].append(where)
        if j == "leftover" and c == "sure":
            rep.fig["live_sure_leftover"].append(where)
    if e.truth == "leftover":
        rep.fig["leftovers"].append(where)
        if j == "leftover" and c in ("sure", "likely"):
            rep.fig["found"].append(where)
        if as_set(e.judgement) == {"leftover"}:
            rep.fig["found_expected"].append(where)


def kill_text(a):
    verb, _, role = a.partition(":")
    return {"kill": f"SIGKILL {role}", "stop": f"SIGSTOP {role}", "exit": "the shell exits",
            "hangup": "the terminal hangs up"}[verb]


def evidence_text(v):
    if not v:
        return "no verdict"
    items = v.get("evidence") or []
    return "evidence: " + "; ".join(f"{x.get('key')}={x.get('value')} ({x.get('lean')})" for x in items) \
        + f" | reason: {v.get('reason')}"


def findings_text(findings):
    return "\n".join(f"{f.get('kind')} gpu {f.get('gpu')} pids {f.get('pids')} {f.get('confidence')} "
                     f"leftover={f.get('leftover')} next: {f.get('next_step')}" for f in findings) or "no findings"


# ---- the machine ---------------------------------------------------------------------------

class Config:
    pass


def can_run(argv):
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def python_prefix(python):
    r = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True)
    return r.stdout.strip()


def kernel_hups_orphaned_groups():
    """POSIX and Linux: when a process group becomes orphaned and has a stopped member, every
    member gets SIGHUP and SIGCONT. A probe: a group of two sleepers, one stopped, whose leader is
    SIGKILLed; true when the running one is ended too. (One kernel of this project's CI machine
    kind, 6.18.44-fc-v1252, ended only the stopped one.)"""
    p = subprocess.Popen(["bash", "-c", 'sleep 30 & a=$!; sleep 30 & b=$!; kill -STOP $b; echo $a $b; wait'],
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, process_group=0, text=True)
    kids = []
    try:
        kids = [int(x) for x in p.stdout.readline().split()]
        time.sleep(0.2)
        p.kill()
        p.wait()
        end = time.monotonic() + 2
        while time.monotonic() < end:
            if all(proc_state(k) in (None, "Z") for k in kids):
                return True
            time.sleep(0.02)
        return False
    finally:
        for k in kids:  # the probe's own sleepers, by PID
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return None


def machine(cfg, scenarios):
    """What this machine can run: the reasons to skip, by need. Only what the chosen scenarios
    need is tried (the corpus' own cgroup is made only then)."""
    want = {n for scn in scenarios for n in needs(scn)}
    why = {}
    root = os.geteuid() == 0
    if not root:
        why["user"] = why["hidepid"] = ("not root: cannot start another user's tree or run "
                                        "gpureap as another user")
        why["container"] = why["tini"] = "not root: no PID namespace with its own /proc"
    if root and want & {"container", "tini"} and not can_run(
            ["unshare", "--pid", "--fork", "--mount-proc", "true"]):
        why["container"] = why["tini"] = "unshare --pid --fork --mount-proc fails here"
    if root and "hidepid" in want and not can_run(HIDEPID + ["true"]):
        why["hidepid"] = "cannot mount a /proc with hidepid in a mount namespace"
    if "tini" in want and "tini" not in why and not shutil.which("tini"):
        why["tini"] = "tini is not installed"
    if "orphan-hup" in want and not kernel_hups_orphaned_groups():
        why["orphan-hup"] = (f"this kernel ({os.uname().release}) did not end the running members of "
                             "an orphaned process group with a stopped member (probe): the "
                             "scenario's premise does not hold here")
    if "shell" in want and not os.access("/bin/bash", os.X_OK):
        why["shell"] = "/bin/bash is not installed"
    if root and "user" in want:
        # the same interpreter as for root (a python under /root may not even be reachable)
        cfg.python_user = next((p for p in (cfg.python, "/usr/bin/python3") if os.path.exists(p)
                                and can_run(SETPRIV + [p, "-c", f"import sys; assert sys.prefix == "
                                                       f"{python_prefix(p)!r}"])), None)
        if not cfg.python_user:
            why["user"] = f"no python3 that uid {OTHER_UID} may run"
    cfg.cgroup_mount = cgroup2_mount()
    cfg.own_cgroup = own_cgroup() or "/"
    cfg.cgroup_base = None
    if "cgroup" not in want:
        pass
    elif not cfg.cgroup_mount:
        why["cgroup"] = "no cgroup v2 mounted"
    else:
        base = os.path.join(cfg.cgroup_mount, f"gpureap-scenarios-{os.getpid()}")
        try:
            os.mkdir(base)
            cfg.cgroup_base = base
        except OSError as e:
            why["cgroup"] = f"cgroup v2 at {cfg.cgroup_mount} is not writable ({e.strerror})"
    return why


def needs(scn):
    n = []
    if scn.start.cgroup or scn.start.child_cgroup:
        n.append("cgroup")
    if scn.start.how in ("user", "container", "tini", "shell"):
        n.append(scn.start.how)
    if scn.start.how == "ssh":
        n.append("shell")
    if scn.view in ("user", "hidepid"):
        n.append("user")
    if scn.view == "hidepid":
        n.append("hidepid")
    if scn.name == "sglang-stopped-then-main-killed":
        n.append("orphan-hup")  # the kernel's SIGHUP to an orphaned group is what it tests
    return n


# ---- main ----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="write the Markdown table of every row here")
    ap.add_argument("--only", help="comma separated scenario names")
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument("--cuda", action="store_true", help="real GPU memory (GPUREAP_SCENARIO_CUDA=1), real NVML")
    ap.add_argument("--fixtures", help="save each status --json and plan here")
    ap.add_argument("--gpureap", default=os.environ.get("GPUREAP"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--ps", action="store_true", help="show the settled tree (ps) of each scenario")
    ap.add_argument("--timeout", type=float, help="seconds a tree may take to come up (20; 180 with --cuda)")
    a = ap.parse_args()
    scenarios = [s for s in corpus.SCENARIOS if not a.cuda or s.cuda]
    if a.only:
        names = a.only.split(",")
        unknown = set(names) - {s.name for s in corpus.SCENARIOS}
        if unknown:
            sys.exit(f"run-corpus: unknown scenario {sorted(unknown)}")
        scenarios = [s for s in scenarios if s.name in names]
    if a.list:
        for s in scenarios:
            print(f"{s.name:42} {s.about}")
        return 0
    if not a.gpureap:
        sys.exit("run-corpus: set GPUREAP (or --gpureap)")
    cfg = Config()
    cfg.cuda, cfg.keep, cfg.ps = a.cuda, a.keep, a.ps
    cfg.gpureap = os.path.abspath(a.gpureap)
    cfg.gpuhold = os.environ.get("GPUHOLD")
    cfg.fake_nvml = os.environ.get("FAKE_NVML")
    cfg.python = os.environ.get("GPUREAP_SCENARIO_PYTHON", sys.executable)
    cfg.python_user = None
    cfg.timeout = a.timeout or (180 if a.cuda else 20)
    cfg.pycache = tempfile.mkdtemp(prefix="gpureap-scenarios-pycache.")
    os.chmod(cfg.pycache, 0o1777)  # another uid's trees write there too
    if not a.cuda and not (cfg.gpuhold and cfg.fake_nvml):
        sys.exit("run-corpus: set GPUHOLD and FAKE_NVML (tests/meson.build does)")
    if a.fixtures:
        os.makedirs(a.fixtures, exist_ok=True)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    rep = Report()
    why = machine(cfg, scenarios)
    started = time.monotonic()
    try:
        for scn in scenarios:
            missing = [why[n] for n in needs(scn) if n in why]
            if missing:
                rep.skip(scn.name, missing[0])
                continue
            run_one(rep, scn, cfg, a.fixtures)
    except Stop as e:
        rep.check(False, f"interrupted by {e}")
    finally:
        if cfg.cgroup_base:
            rmdir_cgroup(cfg.cgroup_base)
        shutil.rmtree(cfg.pycache, ignore_errors=True)
    summary(rep, a.table, time.monotonic() - started, cfg)
    if rep.failed:
        return 1
    # skipped scenarios are named in the output; the corpus is a skip only when none could run
    return 77 if rep.skipped and len(rep.skipped) == len(scenarios) else 0


def run_one(rep, scn, cfg, fixtures):
    rep.fig["scenarios"] += 1
    t0 = time.monotonic()
    phases = ""
    run = None
    try:
        run = Run(scn, cfg)
        run.start()
        up = set(scn.expect) | set(scn.wait) | {a.partition(":")[2] for a in scn.kill if ":" in a}
        if cfg.cuda and scn.start.cuda_cmd:
            up.discard("agent:port")  # a real torchrun does not record its port
        # a detaching launcher is up when its first process has exited (its daemon is set up)
        run.wait_for(lambda: up <= set(run.roles()) and (
            not scn.start.detach or all(p.returncode == 0 for p in run.popens)),
            "the tree never came up (roles " + ", ".join(sorted(up)) + ")")
        t_up = time.monotonic()
        run.settle(*run.apply(scn.kill))
        t_settled = time.monotonic()
        if cfg.ps:
            show_tree(run)
        s = run.status()
        plans = run.plans()
        if fixtures:
            for suffix, doc in (("status", s), ("plan", plans[0]), ("plan-likely", plans[1])):
                with open(os.path.join(fixtures, f"{scn.name}.{suffix}.json"), "w") as f:
                    json.dump(doc, f, indent=1)
            with open(os.path.join(fixtures, f"{scn.name}.pids"), "w") as f:
                f.write("".join(f"{r} {p}\n" for r, p in run.roles().items()))
        t_checked = time.monotonic()
        check_scenario(rep, run, s, plans, cfg)
        phases = f"(up {t_up - t0:.2f}, settle {t_settled - t_up:.2f}, gpureap {t_checked - t_settled:.2f})"
    except Exception as e:  # a broken scenario fails, the corpus goes on
        rep.check(False, f"{scn.name}: the scenario ran", f"{type(e).__name__}: {e}")
        for role in scn.expect:
            rep.rows.append((scn.name, ", ".join(kill_text(x) for x in scn.kill) or "none", role,
                             show(scn.expect[role]), "did not run", False))
    finally:
        # a SIGTERM now (meson's timeout) waits until this scenario's processes are gone
        sigs = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
        signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
        try:
            strays = run.cleanup() if run else []
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
        rep.note(f"{scn.name}: {time.monotonic() - t0:.2f} s {phases}")
        if strays:
            rep.note(f"{scn.name}: killed {len(strays)} unrecorded processes of the tree: {strays}")


def show_tree(run):
    pids = sorted(p for p in run.pids().values() if run.state(p))
    names = {p: r for r, p in run.pids().items()}
    out = subprocess.run(["ps", "-o", "pid,ppid,pgid,sid,tty,stat,comm,args", "-p",
                          ",".join(map(str, pids)) or "1"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid = line.split()[0]
        role = names.get(int(pid), "") if pid.isdigit() else "ROLE"
        print(f"#   {role:16} {line[:150]}")


def summary(rep, table, elapsed, cfg):
    f = rep.fig
    missed = sorted(set(f["leftovers"]) - set(f["found"]))
    by_contract = sorted(set(f["leftovers"]) - set(f["found_expected"]))
    lines = [
        f"scenarios run: {f['scenarios']}, skipped: {len(rep.skipped)}, checks: {rep.n}, "
        f"failed: {rep.failed}, {elapsed:.1f} s",
        f"live jobs in the default plan: {len(f['live_default'])} (must be 0)"
        + "".join(f" {x}" for x in f["live_default"]),
        f"live jobs called leftover, sure: {len(f['live_sure_leftover'])} (must be 0)"
        + "".join(f" {x}" for x in f["live_sure_leftover"]),
        f"live jobs in the --likely plan: {len(f['live_likely'])}"
        + "".join(f" {x}" for x in f["live_likely"]),
        f"leftovers of killed launchers found (sure or likely): {len(f['found'])} of "
        f"{len(f['leftovers'])}; the contract finds {len(f['found_expected'])}",
    ]
    if by_contract:
        lines.append("leftovers the contract itself does not find: " + ", ".join(by_contract))
    if missed:
        lines.append("leftovers not found in this run: " + ", ".join(missed))
    for name, w in rep.skipped:
        lines.append(f"skipped {name}: {w}")
    rep.check(not f["live_default"], "figure: no live job in the default plan", f["live_default"])
    rep.check(not f["live_sure_leftover"], "figure: no live job called a leftover with sure",
              f["live_sure_leftover"])
    rep.check(set(f["found_expected"]) <= set(f["found"]),
              "figure: every leftover the contract finds is found",
              sorted(set(f["found_expected"]) - set(f["found"])))
    for line in lines:
        print(f"# {line}")
    print(f"1..{rep.n}")
    if table:
        write_table(table, rep, lines, cfg)


def write_table(path, rep, lines, cfg):
    md = ["# The scenario corpus", "",
          "Generated by `tests/scenarios/run-corpus.py` (see tests/scenarios/README.md); do not edit.",
          f"Run on {'a real GPU (GPUREAP_SCENARIO_CUDA=1)' if cfg.cuda else 'the fake driver'}, "
          f"{time.strftime('%Y-%m-%d')}.", "", "## Figures", ""]
    md += [f"- {line}" for line in lines]
    md += ["", "## Scenarios", ""]
    for s in corpus.SCENARIOS:
        if not cfg.cuda or s.cuda:
            md.append(f"- **{s.name}**: {s.about}")
    md += ["", "## Every row", "", "| scenario | kill | role | expected | got | |", "| --- | --- | --- | --- | --- | --- |"]
    for name, kill, role, exp, got, ok in rep.rows:
        md.append(f"| {name} | {kill} | {role} | {exp} | {got} | {'ok' if ok else '**FAIL**'} |")
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    sys.exit(main())
