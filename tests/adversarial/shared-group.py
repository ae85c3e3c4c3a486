#!/usr/bin/env python3
"""A process group shared by a leftover and a live job (tests/adversarial/reap-shared-group.sh).

  shared-group.py PIDFILE DELAY [L_UID]

The group's leader P exits at once. In the group: L, a sure leftover (the GPUREAP_RUN_PID of a
supervisor that is gone) that holds GPU 0 and ignores SIGTERM (run as L_UID when given); Q, a
live launcher that holds nothing, and its child J, which holds GPU 0: a live job. After DELAY
seconds (DELAY >= 0) Q forks J2, holding GPU 0: the live job's new worker. Each records
"ROLE PID" in PIDFILE."""
import os
import sys
import time

pidfile, delay = sys.argv[1], float(sys.argv[2])
l_uid = sys.argv[3] if len(sys.argv) > 3 else None
gpuhold = os.environ["GPUHOLD"]


def rec(role, pid):
    with open(pidfile, "a") as f:
        f.write(f"{role} {pid}\n")


p = os.fork()
if p == 0:
    os.setpgid(0, 0)
    rec("P", os.getpid())
    if os.fork() == 0:
        env = dict(os.environ, GPUREAP_RUN_PID="999999")
        argv = [gpuhold, "pidfile", pidfile, "L", "ignore-term", "cuda", "0", "0", "100", "sleep"]
        if l_uid:
            argv = ["setpriv", "--reuid", l_uid, "--regid", l_uid, "--clear-groups"] + argv
        os.execvpe(argv[0], argv, env)
    if os.fork() == 0:
        rec("Q", os.getpid())
        if os.fork() == 0:
            os.execv(gpuhold, [gpuhold, "pidfile", pidfile, "J", "cuda", "0", "0", "200", "sleep"])
        if delay >= 0:
            time.sleep(delay)
            if os.fork() == 0:
                os.execv(gpuhold, [gpuhold, "pidfile", pidfile, "J2", "cuda", "0", "0", "300", "sleep"])
        while True:
            time.sleep(100)
    time.sleep(0.2)
    os._exit(0)
os.waitpid(p, 0)
