#!/bin/bash
# contrib/kubernetes: the YAML parses, and the command, flags, port, paths and probe the
# manifests name are those of the gpureap under test (asked: serve --help, check --help), so
# that a change of either fails here. The NPD ConfigMap carries contrib/node-problem-detector's
# plugin config unchanged.
set -eu
: "${GPUREAP:?}" "${SRCDIR:?}"
python3 -c 'import yaml' 2>/dev/null || { echo "1..0 # SKIP python3-yaml is not installed"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-k8s.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$GPUREAP" serve --help >"$T/serve-help"
"$GPUREAP" check --help >"$T/check-help"
"$GPUREAP" --version >"$T/version" 2>&1 || true
python3 - "$SRCDIR/contrib" "$T" <<'PY'
import json, re, sys, yaml, os
contrib, t = sys.argv[1], sys.argv[2]
serve_help = open(t + "/serve-help").read()
check_help = open(t + "/check-help").read()
n = 0
def ok(cond, what):
    global n
    n += 1
    if not cond:
        print("not ok %d - %s" % (n, what)); sys.exit(1)
    print("ok %d - %s" % (n, what))
k8s = contrib + "/kubernetes"
docs = {}
for d, _, files in os.walk(k8s):
    for f in files:
        if f.endswith(".yaml"):
            p = os.path.join(d, f)
            docs[os.path.relpath(p, k8s)] = [x for x in yaml.safe_load_all(open(p)) if x]
ok(len(docs) >= 6, "every manifest parses as YAML (%d files)" % len(docs))
port = int(re.search(r"default\s+[0-9.]+:(\d+)", serve_help).group(1))
sock = re.search(r"--socket PATH.*\(default (\S+),", serve_help).group(1)
flags = set(re.findall(r"(--[a-z][a-z-]+)", serve_help))
ds = docs["base/daemonset.yaml"][0]
spec = ds["spec"]["template"]["spec"]
c = spec["containers"][0]
ok(ds["kind"] == "DaemonSet" and spec["hostPID"] is True, "a DaemonSet with hostPID")
ok(c["command"] == ["gpureap", "serve"], "it runs 'gpureap serve'")
def check_args(args, what):
    for a in args:
        if a.startswith("--"):
            ok(a in flags, "%s: serve takes %s" % (what, a))
    ok(args[args.index("--listen") + 1] == ":%d" % port, "%s: --listen on serve's default port %d" % (what, port))
    ok(args[args.index("--socket") + 1] == sock, "%s: the socket is serve's default %s" % (what, sock))
check_args(c["args"], "base")
ok([p["containerPort"] for p in c["ports"]] == [port], "the container port is %d" % port)
for probe in ("readinessProbe", "livenessProbe"):
    ok(c[probe]["httpGet"]["path"] == "/healthz" and c[probe]["httpGet"]["port"] == "metrics", probe + " on /healthz")
ok("/healthz" in serve_help, "serve --help names /healthz")
ann = ds["spec"]["template"]["metadata"]["annotations"]
ok(ann["prometheus.io/port"] == str(port) and ann["prometheus.io/path"] == "/metrics", "the scrape annotations name port %d and /metrics" % port)
caps = c["securityContext"]["capabilities"]
ok(caps["drop"] == ["ALL"] and sorted(caps["add"]) == ["DAC_READ_SEARCH", "SYS_PTRACE"], "base: only SYS_PTRACE and DAC_READ_SEARCH, no KILL")
ok(c["securityContext"]["readOnlyRootFilesystem"] is True and c["securityContext"]["allowPrivilegeEscalation"] is False, "read-only root, no privilege escalation")
mounts = {m["name"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
ok(mounts["dev"]["mountPath"] == "/dev" == vols["dev"] and mounts["dev"]["readOnly"], "/dev mounted read-only at /dev")
ok(mounts["pod-resources"]["mountPath"] == "/var/lib/kubelet/pod-resources" == vols["pod-resources"] and mounts["pod-resources"]["readOnly"], "the kubelet's pod-resources directory read-only")
ok(mounts["run"]["mountPath"] == os.path.dirname(sock) == vols["run"], "the socket's directory is a hostPath")
ckpt = re.search(r"device checkpoint\s+(\S+)", serve_help).group(1)
ok(mounts["device-plugins"]["mountPath"] == os.path.dirname(ckpt) == vols["device-plugins"] and mounts["device-plugins"]["readOnly"],
   "the device checkpoint's directory read-only (%s)" % os.path.dirname(ckpt))
patch = docs["reap/daemonset-reap.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
check_args(patch["args"], "reap")
ok("--reap-after" in patch["args"], "reap: the policy is on")
ok("KILL" in patch["securityContext"]["capabilities"]["add"], "reap: CAP_KILL only here")
kz = docs["reap/kustomization.yaml"][0]
ok(kz["resources"] == ["../base"], "reap: an overlay of the base")
cm = docs["node-problem-detector/gpureap-monitor-configmap.yaml"][0]
plugin = json.loads(cm["data"]["gpureap-monitor.json"])
ok(plugin == json.load(open(contrib + "/node-problem-detector/gpureap-monitor.json")), "the NPD ConfigMap is contrib/node-problem-detector's config")
rule = plugin["rules"][0]
ok(rule["args"][0] == "check" and "--format" in check_help and "npd" in check_help, "NPD runs 'gpureap check --format npd'")
cf = open(k8s + "/Containerfile").read()
ok(not re.search(r"\b(curl|wget|pip|npm|git clone|ADD https?:)", cf), "the Containerfile downloads nothing but Debian packages")
ok("EXPOSE %d" % port in cf and ('"--listen", ":%d"' % port) in cf, "the Containerfile names port %d" % port)
print("1..%d" % n)
PY
if command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
        kubectl kustomize "$SRCDIR/contrib/kubernetes/reap" >"$T/reap.yaml"
        grep -q -- "- --reap-after" "$T/reap.yaml" && grep -q -- "- KILL" "$T/reap.yaml" || { echo "not ok - kustomize reap"; exit 1; }
        echo "# kubectl kustomize renders the reap overlay"
fi
