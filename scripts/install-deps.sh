#!/bin/bash
# Installs the Debian packages gpureap needs to build and test. Nothing else is downloaded.
set -eu
pkgs=(
        gcc meson ninja-build pkg-config     # build
        libjson-c-dev                        # JSON output
        libcmocka-dev                        # unit tests
        jq util-linux procps psmisc strace   # integration tests: JSON checks, unshare, fuser, syscalls
        tini dumb-init                       # bench/bench-run.sh compares against them; init shims in the tests
        prometheus                           # promtool checks 'gpureap metrics' in the tests
        scdoc man-db                         # the man pages, and 'man -l' in the package test
        debhelper dpkg-dev lintian           # the Debian package, built and checked by a test
        python3                              # tests/scenarios: the launcher models and runner
        python3-yaml                         # tests/package/kubernetes-manifests.sh
        slurmctld slurmd slurm-client munge  # tests/slurm: a real single-node cluster
        libmicrohttpd-dev curl               # gpureap serve: HTTP /metrics, and its tests
        libbpf-dev libelf-dev zlib1g-dev     # the kernel-side holder scan (BPF iterator):
        clang bpftool                        #  its program built at compile time (-Dbpf=auto)
        libnghttp2-dev libprotobuf-c-dev     # the kubelet's PodResources API (gRPC over HTTP/2),
        protobuf-c-compiler                  #  in a module loaded only where its socket exists
        python3-grpcio python3-protobuf      # tests/fake-kubelet: the fake kubelet
)
missing=()
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
