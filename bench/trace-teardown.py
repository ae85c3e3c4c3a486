#!/usr/bin/env python3
# trace-teardown.py GPUREAP TEARDOWN N [RUNS] [exit] [age=MS]: the tree of bench/teardown (--sleepers N)
# under gpureap run with GPUREAP_RUN_TRACE=1; once all are there, SIGTERM to gpureap (or, with
# "exit", SIGUSR1 to the command, which then exits and leaves them); prints the monotonic times
# of that signal and of the supervisor's exit beside gpureap's own trace of its end
# (docs/benchmarks.md); with age=MS the signal comes MS after the tree is all there (an old tree,
# sampled and in gpureap's cgroup)
import os, signal, struct, subprocess, sys, tempfile, time
g, td, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
exit_mode = "exit" in sys.argv[5:]
age_s = next((int(a[4:]) / 1000 for a in sys.argv[5:] if a.startswith("age=")), 0)
for run in range(runs):
    r, w = os.pipe()
    env = dict(os.environ, GPUREAP_RUN_TRACE="1")
    err = tempfile.TemporaryFile()
    cmd = [g, "run", "--quiet", "--", td, "--sleepers", str(n), str(w)] + (["exit"] if exit_mode else [])
    p = subprocess.Popen(cmd, pass_fds=(w,), env=env, stderr=err)
    os.close(w)
    data = b""
    want = 4 * (n + (1 if exit_mode else 0))
    while len(data) < want:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    if age_s:
        time.sleep(age_s)
    t0 = time.monotonic_ns() // 1000
    if exit_mode:
        os.kill(struct.unpack("i", data[:4])[0], signal.SIGUSR1)
    else:
        p.terminate()
    p.wait()
    t1 = time.monotonic_ns() // 1000
    os.close(r)
    err.seek(0)
    lines = err.read().decode().splitlines()
    start = [int(l.split()[6]) for l in lines if "began at" in l]
    if start:
        print("signal -> end begins %.3f ms; signal -> supervisor reaped %.3f ms" % ((start[0] - t0) / 1000, (t1 - t0) / 1000))
    print("\n".join(l for l in lines if "trace:" in l and "began at" not in l))
