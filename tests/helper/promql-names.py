#!/usr/bin/env python3
"""What the shipped Prometheus rules and Grafana dashboard read, for the tests to hold against
gpureap's real output (tests/integration/prometheus-rules-dashboard.sh). No YAML library: the
rules and rules-test files are read for their 'expr:' and 'series:' keys only, as written there.

  promql-names.py exprs-rules FILE       each rule's expr, on one line
  promql-names.py exprs-dashboard FILE   each query of a Grafana dashboard (panels, variables)
  promql-names.py names                  the metric names of the PromQL expressions on stdin
  promql-names.py series-test FILE       NAME<TAB>LABEL,LABEL... of each input series of a
                                         'promtool test rules' file
  promql-names.py series-text            the same for the Prometheus text format on stdin
"""
import json
import re
import sys

# words of PromQL that are no metric (aggregations and functions are known by their '(')
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "inf", "nan"}
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def key_values(path, key):
    """The values of KEY: in a YAML file, a plain or quoted scalar or a block scalar (| or >)"""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    pat = re.compile(r"^(\s*)(?:- )?" + key + r":\s*(.*)$")
    while i < len(lines):
        m = pat.match(lines[i])
        i += 1
        if not m:
            continue
        indent, rest = len(m.group(1)), m.group(2).strip()
        if rest[:1] in ("|", ">"):
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i].strip())
                i += 1
            out.append(" ".join(b for b in block if b))
        elif rest[:1] in ("'", '"') and rest[-1:] == rest[:1]:
            out.append(rest[1:-1].replace("''", "'") if rest[0] == "'" else json.loads(rest))
        else:
            out.append(rest)
    return out


def dashboard_exprs(path):
    d = json.load(open(path, encoding="utf-8"))
    out = []

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get("expr"), str):
                out.append(o["expr"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(d.get("panels", []))
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        # label_values(SELECTOR, LABEL) reads SELECTOR; label_values(LABEL) reads no metric
        m = re.match(r"^\s*label_values\(\s*(.*?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", q)
        if m:
            out.append(m.group(1))
        elif not re.match(r"^\s*label_values\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", q):
            out.append(re.sub(r"^\s*query_result\((.*)\)\s*$", r"\1", q))
    return out


def names(expr):
    e = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`', '""', expr)  # strings
    e = re.sub(r"\{[^}]*\}", " ", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                      # ranges and subqueries
    e = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?[A-Za-z0-9_]+\}?", " ", e)           # Grafana's variables
    found = set()
    for m in IDENT.finditer(e):
        w = m.group(0)
        before = e[m.start() - 1] if m.start() else " "
        if before.isdigit() or before == ".":              # 1e3, 5m
            continue
        if e[m.end():].lstrip().startswith("(") or w.lower() in KEYWORDS:
            continue
        found.add(w)
    return found


def selector_labels(sel):
    """NAME{a="x",b="y"} -> (NAME, [a, b])"""
    m = re.match(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{(.*)\})?", sel)
    if not m:
        return None
    body = re.sub(r'"(?:\\.|[^"\\])*"', '""', m.group(2) or "")
    return m.group(1), sorted(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*=", body))


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "exprs-rules":
        for e in key_values(sys.argv[2], "expr"):
            print(e)
    elif cmd == "exprs-dashboard":
        for e in dashboard_exprs(sys.argv[2]):
            print(" ".join(e.split()))
    elif cmd == "names":
        found = set()
        for line in sys.stdin:
            if line.strip():
                found |= names(line)
        for n in sorted(found):
            print(n)
    elif cmd in ("series-test", "series-text"):
        items = key_values(sys.argv[2], "series") if cmd == "series-test" else \
            [l for l in sys.stdin.read().split("\n") if l.strip() and not l.startswith("#")]
        seen = set()
        for s in items:
            r = selector_labels(s)
            if r and (r[0], tuple(r[1])) not in seen:
                seen.add((r[0], tuple(r[1])))
                print(r[0] + "\t" + ",".join(r[1]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
