#!/bin/bash
# The kubelet client (lib/kubelet/, the gpureap-kubelet.so module) against the fake kubelet on
# a real unix socket: List's devices with their pod, namespace and container (UUID, MIG- and
# time-sliced ::N IDs), no socket (not asked, nothing loaded), a kubelet that accepts and never
# answers (the deadline holds), and a module that cannot be loaded.
. "$TESTLIB"
[ -n "${KUBELET_MODULE:-}" ] || { echo "1..0 # SKIP built without the kubelet module (nghttp2, protobuf-c)"; exit 77; }
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || { echo "1..0 # SKIP no python3-grpcio"; exit 77; }

cat >"$T/pods.json" <<'JSON'
{"pods": [
  {"name": "train-0", "namespace": "ml", "containers": [
     {"name": "worker", "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-00000000-0000-0000-0000-000000000000"]}]},
     {"name": "sidecar"}]},
  {"name": "infer-1", "namespace": "serving", "containers": [
     {"name": "server", "devices": [{"resource": "nvidia.com/mig-1g.10gb", "ids": ["MIG-11111111-2222-3333-4444-555555555555"]}]}]},
  {"name": "notebook", "namespace": "lab", "containers": [
     {"name": "jupyter", "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-22222222-0000-0000-0000-000000000002::3"]}]}]},
  {"name": "cpu-only", "namespace": "default", "containers": [{"name": "c"}]}],
 "allocatable": [{"resource": "nvidia.com/gpu", "ids": ["GPU-00000000-0000-0000-0000-000000000000"]}]}
JSON
start_kubelet() { # SOCKET ARGS...
        local sock=$1; shift
        rm -f "$T/kubelet.ready"
        /usr/bin/python3 "$FAKE_KUBELET" "$sock" "$T/pods.json" --ready "$T/kubelet.ready" --log "$T/kubelet.log" "$@" 2>"$T/kubelet.err" &
        LAUNCHED="$LAUNCHED $!"
        for _ in $(seq 1 300); do [ -s "$T/kubelet.ready" ] && return 0; sleep 0.05; done
        fail "the fake kubelet did not start: $(cat "$T/kubelet.err")"
}
ask() { "$KUBELET_ASK" "$@" >"$T/out" 2>"$T/err"; }

start_kubelet "$T/kubelet.sock"
ask "$T/kubelet.sock" "$KUBELET_MODULE" 2000
has out "^state ok$" "List answered"
has out "^pods 4$" "every pod listed, with devices or not"
has out "^device train-0 ml worker nvidia.com/gpu GPU-00000000-0000-0000-0000-000000000000 GPU-00000000-0000-0000-0000-000000000000$" "a GPU's UUID, with its pod, namespace and container"
has out "^device infer-1 serving server nvidia.com/mig-1g.10gb MIG-11111111-2222-3333-4444-555555555555 -$" "a MIG device's ID (no GPU UUID of its own)"
has out "^device notebook lab jupyter nvidia.com/gpu GPU-22222222-0000-0000-0000-000000000002::3 GPU-22222222-0000-0000-0000-000000000002$" "a time-sliced replica names its GPU"
[ "$(grep -c '^List$' "$T/kubelet.log")" = 1 ] || fail "asked List $(grep -c '^List$' "$T/kubelet.log") times"
ok "one ask, one List"

ask "$T/no-such.sock" "$KUBELET_MODULE"
has out "^state no_socket$" "no socket: not asked"
has out "^error no kubelet socket at '$T/no-such.sock'$" "and it says why"
ask "$T/no-such.sock" "$T/no-such-module.so"
has out "^state no_socket$" "no socket: the module is not even loaded"
ask "$T/kubelet.sock" "$T/no-such-module.so"
has out "^state no_module$" "a socket but no module: not asked, said"
# the module is code: one in a directory that anyone may write is never loaded (a user could
# have swapped it), and the answer says why
mkdir -m 0777 "$T/open"
chmod 0777 "$T/open"
cp "$KUBELET_MODULE" "$T/open/gpureap-kubelet.so"
ask "$T/kubelet.sock" "$T/open/gpureap-kubelet.so"
has out "^state no_module$" "a module in a directory others may write: not loaded"
has out "^error not loading the kubelet module: " "and it says why"

start_kubelet "$T/hang.sock" --hang
ask "$T/hang.sock" "$KUBELET_MODULE" 300
has out "^state timeout$" "a kubelet that never answers: the deadline holds"
has out "did not answer List in time" "and it is said"
has out "^pods 0$" "nothing taken from it"

# a socket nobody listens on (a kubelet that died and left it)
/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/dead.sock"
ask "$T/dead.sock" "$KUBELET_MODULE"
has out "^state error$" "a dead socket: an error, not a hang"
has out "cannot connect" "named"
done_testing
