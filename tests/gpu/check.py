"""Checks for tests/gpu/ghost.sh: compare gpureap's JSON with nvidia-smi's answers.
  check.py ghost STATUS_JSON SMI_CSV OWNER CHILD
  check.py live STATUS_JSON SMI_CSV OWNER
Prints one PASS/FAIL line a check; exits 1 when any failed."""
import json
import sys

failed = 0


def check(ok, what):
    global failed
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failed += 1


def smi_apps(path):
    apps = {}
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            apps[int(parts[0])] = parts[1:]
    return apps


mode, status_path, smi_path, owner = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = json.load(open(status_path))
apps = smi_apps(smi_path)
gpus = s["gpus"]
owners = {o["pid"]: o for g in gpus for o in (g["context_owners"] or [])}
holders = {h["pid"] for g in gpus for h in g["holders"]}
check(s["driver"]["status"] == "ok", "driver read: " + str(s["driver"].get("driver_version")))
check(set(owners) == set(apps), f"context owners match nvidia-smi --query-compute-apps: {sorted(owners)} vs {sorted(apps)}")
check(owner in owners, f"owner {owner} listed by gpureap")
for pid, o in owners.items():
    smi_mib = apps.get(pid, ["?"])[0]
    mine = o["used_memory"]
    mine_mib = None if mine is None else mine // (1 << 20)
    check(str(mine_mib) == smi_mib or smi_mib.startswith("[N/A"), f"owner {pid} memory {mine_mib} MiB, nvidia-smi says {smi_mib}")
if mode == "live":
    check(owners[owner]["process"] == "alive", "the owner is alive")
    check(owner in holders, "the owner holds the device file")
else:
    child = int(sys.argv[5])
    check(owners.get(owner, {}).get("process") == "not_found", "the dead owner is listed as not found (the ghost)")
    check(child in holders, f"the forked child {child} is a holder")
    check(child not in owners, "the child is not a context owner")
    procs = {p["pid"]: p for p in s["processes"]}
    if child in procs:
        d = procs[child]["devices"]
        print(f"INFO child footprint: fds={d['fds']} ctl={d['ctl']} uvm={d['uvm']} maps={d['maps']} gpus={d['gpus']} ppid={procs[child]['ppid']}")
for g in gpus:
    print(f"INFO gpu {g['index']} {g['name']} used={g['memory']['used']} reserved={g['memory']['reserved']} api={g['memory']['api']} entry_bytes={g['process_entry_bytes']}")
sys.exit(1 if failed else 0)
