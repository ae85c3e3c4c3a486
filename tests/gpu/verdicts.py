"""Checks gpureap's verdicts on a real GPU (tests/gpu/ghost.sh, orphans.sh).
  verdicts.py ghost STATUS_JSON GHOST CHILD       dirty; one ghost finding: CHILD holds GHOST's memory
  verdicts.py monitor STATUS_JSON MONITOR         MONITOR is a monitor, in no leftover finding
  verdicts.py busy STATUS_JSON                    every GPU with owners is busy, nothing is a leftover
  verdicts.py orphans STATUS_JSON LAUNCHER PID... dirty; the PIDs are leftovers (sure or likely) in
                                                  orphan findings, none judged live
Prints PASS/FAIL lines; exits 1 when any failed."""
import json
import sys

failed = 0


def check(ok, what):
    global failed
    print(("PASS " if ok else "FAIL ") + what)
    failed += 0 if ok else 1


mode, path = sys.argv[1], sys.argv[2]
s = json.load(open(path))
args = [int(a) for a in sys.argv[3:]]
findings = s.get("findings") or []
states = [g["state"] for g in s["gpus"]]
leftover_pids = {p for f in findings if f["leftover"] for p in f["pids"]}
verdict = {p["pid"]: p.get("verdict") for p in s["processes"]}
for f in findings:
    print(f"INFO {f['kind']}: {f['explanation']} | next: {f['next_step']}")

if mode == "ghost":
    ghost, child = args
    ghosts = [f for f in findings if f["kind"] == "ghost"]
    check(states[0] == "dirty", f"GPU 0 is dirty ({states[0]})")
    check(len(ghosts) == 1 and ghosts[0]["pids"] == [child] and ghosts[0]["related_pid"] == ghost,
          f"one ghost finding: {child} holds the memory of {ghost}")
    check(bool(ghosts) and ghosts[0]["next_step"] == f"gpureap reap --gpu 0 --pid {child}", "next step: reap the child")
    check((verdict.get(child) or {}).get("role") == "hidden_holder", "the child's role is hidden_holder")
elif mode == "monitor":
    mon = args[0]
    check((verdict.get(mon) or {}).get("role") == "monitor", f"{mon} (nvidia-smi -l) is a monitor")
    check(mon not in leftover_pids, f"{mon} is in no leftover finding")
elif mode == "busy":
    check(all(st in ("busy", "clean") for st in states), f"states {states}")
    check(not leftover_pids, f"no leftover: {sorted(leftover_pids)}")
elif mode == "orphans":
    launcher, pids = args[0], args[1:]
    orphans = [f for f in findings if f["kind"] == "orphan"]
    got = sorted(p for f in orphans for p in f["pids"])
    check(states[0] == "dirty", f"GPU 0 is dirty ({states[0]})")
    check(got == sorted(pids), f"orphan findings list the workers: {got}")
    for p in pids:
        v = verdict.get(p) or {}
        print(f"INFO worker {p}: {v.get('judgement')} ({v.get('confidence')})")
    check(all((verdict.get(p) or {}).get("judgement") == "leftover" and
              (verdict.get(p) or {}).get("confidence") in ("sure", "likely") for p in pids),
          "every worker is a leftover, sure or likely (its launcher led the group and is gone)")
sys.exit(1 if failed else 0)
