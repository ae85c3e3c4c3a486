#!/usr/bin/env python3
# trace-teardown.py GPUREAP TEARDOWN N [RUNS]: the tree of bench/teardown (--sleepers N) under
# gpureap run with GPUREAP_RUN_TRACE=1, SIGTERM once all are there; prints the monotonic times of
# the kill and of the supervisor's exit beside gpureap's own trace of its end (docs/benchmarks.md)
import os, sys, time, subprocess, tempfile
g, td, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for run in range(int(sys.argv[4]) if len(sys.argv) > 4 else 3):
    r, w = os.pipe()
    env = dict(os.environ, GPUREAP_RUN_TRACE="1")
    err = tempfile.TemporaryFile()
    p = subprocess.Popen([g, "run", "--quiet", "--", td, "--sleepers", str(n), str(w)], pass_fds=(w,), env=env, stderr=err)
    os.close(w)
    got = 0
    while got < 4 * n:
        b = os.read(r, 65536)
        if not b: break
        got += len(b)
    t0 = time.monotonic_ns() // 1000
    p.terminate()
    p.wait()
    t1 = time.monotonic_ns() // 1000
    os.close(r)
    err.seek(0)
    lines = err.read().decode().splitlines()
    start = [int(l.split()[6]) for l in lines if "began at" in l]
    if start:
        print("kill -> end begins %.3f ms; kill -> supervisor reaped %.3f ms" % ((start[0] - t0) / 1000, (t1 - t0) / 1000))
    print("\n".join(l for l in lines if "trace:" in l and "began at" not in l))
