#!/usr/bin/python3
"""A fake kubelet for the tests: the v1 PodResources API (v1.PodResourcesLister: List, Get,
GetAllocatableResources) over gRPC on a unix socket, answered from a JSON fixture.

The few protobuf messages are built here with python3-protobuf's descriptor API, from the field
numbers of k8s.io/kubelet/pkg/apis/podresources/v1 (nothing generated, nothing downloaded).

  fake-kubelet.py SOCKET FIXTURE [--hang] [--log FILE] [--ready FILE] [--cri SOCKET]

FIXTURE: {"pods": [{"name", "namespace", "containers": [{"name", "devices":
          [{"resource", "ids": [...]}]}]}],          listed by List and found by Get
          "get_only": [pods as above],               found by Get, not listed (a pod List
                                                     leaves out, as 1.34's List leaves out
                                                     pods that are not active)
          "allocatable": [{"resource", "ids"}]}
The fixture is read again at every call, so a test changes the kubelet's answer by rewriting it.
          "containers": {"ID": {"labels": {...},        the container runtime's (with --cri);
                                "state": "exited"}}     its state, running unless said
          "get_unknown": true                        Get answers a pod it does not know as the
                                                     kubelet does (UNKNOWN, "pod N in namespace
                                                     NS not found"), else NOT_FOUND
--hang: every call is accepted and never answered (a kubelet that hangs).
--cri SOCKET: also the container runtime's CRI (runtime.v1.RuntimeService: ContainerStatus) on
  SOCKET, answered from "containers" (an ID not there: NOT_FOUND); logged "ContainerStatus ID".
--log: one line per call ("List", "Get NAMESPACE/NAME", "GetAllocatableResources").
--ready: written once the socket listens.
"""
import json
import os
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def proto_file(name, package):
    """A FileDescriptorProto, its message() adder, and a function that builds the classes"""
    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")

    def message(mname, *fields):
        m = fd.message_type.add(name=mname)
        for number, fname, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = "." + package + "." + type_name

    def classes():
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fd)
        factory = message_factory.MessageFactory(pool)
        return {m.name: factory.GetPrototype(pool.FindMessageTypeByName(package + "." + m.name)) for m in fd.message_type}

    return message, classes


def build_messages():
    message, classes = proto_file("fake_podresources_v1.proto", "v1")
    one, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("ContainerDevices",
            (1, "resource_name", F.TYPE_STRING, one, None),
            (2, "device_ids", F.TYPE_STRING, rep, None))
    message("ContainerResources",
            (1, "name", F.TYPE_STRING, one, None),
            (2, "devices", F.TYPE_MESSAGE, rep, "ContainerDevices"),
            (3, "cpu_ids", F.TYPE_INT64, rep, None))
    message("PodResources",
            (1, "name", F.TYPE_STRING, one, None),
            (2, "namespace", F.TYPE_STRING, one, None),
            (3, "containers", F.TYPE_MESSAGE, rep, "ContainerResources"))
    message("ListPodResourcesRequest")
    message("ListPodResourcesResponse", (1, "pod_resources", F.TYPE_MESSAGE, rep, "PodResources"))
    message("GetPodResourcesRequest",
            (1, "pod_name", F.TYPE_STRING, one, None),
            (2, "pod_namespace", F.TYPE_STRING, one, None))
    message("GetPodResourcesResponse", (1, "pod_resources", F.TYPE_MESSAGE, one, "PodResources"))
    message("AllocatableResourcesRequest")
    message("AllocatableResourcesResponse",
            (1, "devices", F.TYPE_MESSAGE, rep, "ContainerDevices"),
            (2, "cpu_ids", F.TYPE_INT64, rep, None))
    return classes()


M = build_messages()


def build_cri_messages():
    message, classes = proto_file("fake_cri_v1.proto", "runtime.v1")
    one, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("ContainerStatusRequest", (1, "container_id", F.TYPE_STRING, one, None), (2, "verbose", F.TYPE_BOOL, one, None))
    message("ContainerMetadata", (1, "name", F.TYPE_STRING, one, None), (2, "attempt", F.TYPE_UINT32, one, None))
    # labels: a map<string, string> on the wire, as repeated key/value entries
    message("LabelEntry", (1, "key", F.TYPE_STRING, one, None), (2, "value", F.TYPE_STRING, one, None))
    message("ContainerStatus", (1, "id", F.TYPE_STRING, one, None),
            (2, "metadata", F.TYPE_MESSAGE, one, "ContainerMetadata"),
            (3, "state", F.TYPE_INT32, one, None),  # the ContainerState enum, a varint on the wire
            (12, "labels", F.TYPE_MESSAGE, rep, "LabelEntry"))
    message("ContainerStatusResponse", (1, "status", F.TYPE_MESSAGE, one, "ContainerStatus"))
    return classes()


CRI = build_cri_messages()


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit("usage: fake-kubelet.py SOCKET FIXTURE [--hang] [--log FILE] [--ready FILE] [--cri SOCKET]")
    sock, fixture = args[0], args[1]
    hang = "--hang" in args
    log = args[args.index("--log") + 1] if "--log" in args else None
    ready = args[args.index("--ready") + 1] if "--ready" in args else None
    cri_sock = args[args.index("--cri") + 1] if "--cri" in args else None
    lock = threading.Lock()

    def note(line):
        if log:
            with lock, open(log, "a") as f:
                f.write(line + "\n")

    def load():
        with open(fixture) as f:
            return json.load(f)

    def pod_message(p):
        pr = M["PodResources"](name=p["name"], namespace=p.get("namespace", "default"))
        for c in p.get("containers", []):
            cr = pr.containers.add(name=c["name"])
            for d in c.get("devices", []):
                cr.devices.add(resource_name=d["resource"], device_ids=d["ids"])
        return pr

    def stall(context):
        while context.is_active():
            time.sleep(0.05)

    def list_pods(req, context):
        note("List")
        if hang:
            stall(context)
        resp = M["ListPodResourcesResponse"]()
        for p in load().get("pods", []):
            resp.pod_resources.append(pod_message(p))
        return resp

    def get_pod(req, context):
        note("Get %s/%s" % (req.pod_namespace, req.pod_name))
        if hang:
            stall(context)
        fx = load()
        for p in fx.get("pods", []) + fx.get("get_only", []):
            if p["name"] == req.pod_name and p.get("namespace", "default") == req.pod_namespace:
                return M["GetPodResourcesResponse"](pod_resources=pod_message(p))
        # the kubelet's own answer for a pod it does not know
        code = grpc.StatusCode.UNKNOWN if fx.get("get_unknown") else grpc.StatusCode.NOT_FOUND
        context.abort(code, "pod %s in namespace %s not found" % (req.pod_name, req.pod_namespace))

    def container_status(req, context):
        note("ContainerStatus %s" % req.container_id)
        if hang:
            stall(context)
        c = load().get("containers", {}).get(req.container_id)
        if c is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "an error occurred when try to find container %s" % req.container_id)
        st = CRI["ContainerStatus"](id=req.container_id)
        st.metadata.name = c.get("name", "c")
        st.state = {"created": 0, "running": 1, "exited": 2, "unknown": 3}[c.get("state", "running")]
        for k, v in c.get("labels", {}).items():
            st.labels.add(key=k, value=v)
        return CRI["ContainerStatusResponse"](status=st)

    def allocatable(req, context):
        note("GetAllocatableResources")
        if hang:
            stall(context)
        resp = M["AllocatableResourcesResponse"]()
        for d in load().get("allocatable", []):
            resp.devices.add(resource_name=d["resource"], device_ids=d["ids"])
        return resp

    def h(fn, req):
        return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=M[req].FromString,
                                                   response_serializer=lambda m: m.SerializeToString())

    handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
        "List": h(list_pods, "ListPodResourcesRequest"),
        "Get": h(get_pod, "GetPodResourcesRequest"),
        "GetAllocatableResources": h(allocatable, "AllocatableResourcesRequest"),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    if os.path.exists(sock):
        os.unlink(sock)
    server.add_insecure_port("unix:" + sock)
    server.start()
    if cri_sock:
        cri_handler = grpc.method_handlers_generic_handler("runtime.v1.RuntimeService", {
            "ContainerStatus": grpc.unary_unary_rpc_method_handler(
                container_status, request_deserializer=CRI["ContainerStatusRequest"].FromString,
                response_serializer=lambda m: m.SerializeToString()),
        })
        cri_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        cri_server.add_generic_rpc_handlers((cri_handler,))
        if os.path.exists(cri_sock):
            os.unlink(cri_sock)
        cri_server.add_insecure_port("unix:" + cri_sock)
        cri_server.start()
    if ready:
        with open(ready + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(ready + ".tmp", ready)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
