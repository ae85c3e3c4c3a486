#!/usr/bin/env python3
# f-environ-cut.py VAR KEEP -- CMD...: exec CMD with our environment reordered and padded so that
# /proc/PID/environ is longer than gpureap's 32 KiB read and the entry VAR=VALUE is cut by the
# read after KEEP characters of VALUE (VAR last but for one trailing variable).
import os, sys
var, keep = sys.argv[1], int(sys.argv[2])
cmd = sys.argv[sys.argv.index("--") + 1:]
LIMIT = 32767  # gr_read_file_at reads size - 1 bytes of the 32768-byte buffer
env = [(k, v) for k, v in os.environ.items() if k not in (var, "PAD")]
value = os.environ[var]
assert 0 < keep < len(value), (keep, value)
base = sum(len(k) + 1 + len(v) + 1 for k, v in env)
# PAD=xxx<NUL> then the others, then VAR=VALUE: VAR's entry starts at base + len("PAD=") + n + 1
start_wanted = LIMIT - keep - len(var) - 1
n = start_wanted - base - len("PAD=") - 1
assert n > 0, n
envp = {"PAD": "x" * n}
envp.update(env)
envp[var] = value
envp["TRAILER"] = "y" * 64
os.execve(cmd[0], cmd, envp)
