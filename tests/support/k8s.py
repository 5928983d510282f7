"""A Kubernetes node for tests: an Atlas 800I A2 sysroot with the kubelet's files as real
kubelets write them (each layout), and a PodResources v1 server on a unix socket that answers
with protobuf's own encoder (the .proto compiled by grpcio-tools into tmp_path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ascendtune.core.k8s import checksum as ck
from tests.support.builder import SysrootBuilder
from tests.support.hosts import atlas_a2

UID_A = "0f3c2a1e-7b7d-4c1a-9a52-2d8e6f1b0a01"
UID_B = "6a1b9c2d-3e4f-4a5b-8c6d-7e8f9a0b1c02"
POD_A = ("inference", "qwen-a")
POD_B = ("inference", "qwen-b")
# the issue's node: pod A on CPUs 144-167 with NPU 0 (node 6), pod B on 0-23 with NPU 1 (node 6)
CPUS = {UID_A: "144-167", UID_B: "0-23"}
NPUS = {UID_A: "Ascend910-0", UID_B: "Ascend910-1"}
NODE_OF_NPU = {"Ascend910-0": 6, "Ascend910-1": 6}
CONTAINER = "vllm"
SHARED = "24-143,168-191"

KUBELET_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd  # kubeadm's default
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
reservedSystemCPUs: "0-1"
topologyManagerPolicy: none
memoryManagerPolicy: None
"""


def cpu_manager_v2(
    entries: dict[str, dict[str, str]] | None = None,
    default: str = SHARED,
    policy: str = "static",
    *,
    key: str = "defaultCpuSet",
    checksum: bool = True,
) -> str:
    entries = {u: {CONTAINER: c} for u, c in CPUS.items()} if entries is None else entries
    doc: dict[str, Any] = {"policyName": policy, key: default}
    if entries:
        doc["entries"] = entries
    if checksum:
        form = ck.cpu_manager_forms("v2", policy, default, entries)[0]
        doc["checksum"] = ck.fnv1a32(form)
    return json.dumps(doc)


def cpu_manager_v1(entries: dict[str, str], default: str = SHARED) -> str:
    form = ck.cpu_manager_forms("v1", "static", default, entries)[0]
    return json.dumps(
        {
            "policyName": "static",
            "defaultCpuSet": default,
            "entries": entries,
            "checksum": ck.fnv1a32(form),
        }
    )


def cpu_manager_v3(pods: dict[str, str]) -> str:
    entries = {u: {CONTAINER: c} for u, c in CPUS.items()}
    from ascendtune.core.cpulist import parse_cpulist

    parsed = {u: parse_cpulist(c) for u, c in pods.items()}
    form = ck.cpu_manager_forms("v3", "static", SHARED, entries, parsed)[1]
    return json.dumps(
        {
            "policyName": "static",
            "defaultCpuSet": SHARED,
            "entries": entries,
            "podEntries": {u: {"cpuSet": c} for u, c in pods.items()},
            "checksum": ck.fnv1a32(form),
        }
    )


def cpu_manager_v4(outer_default: str = SHARED) -> str:
    data = json.dumps(
        {
            "policyName": "static",
            "defaultCpuSet": SHARED,
            "entries": {u: {CONTAINER: c} for u, c in CPUS.items()},
        },
        separators=(",", ":"),
    )
    return json.dumps(
        {
            "policyName": "static",
            "defaultCpuSet": outer_default,
            "entries": {u: {CONTAINER: c} for u, c in CPUS.items()},
            "checksum": 0,
            "data": data,
            "dataChecksum": ck.data_checksum(data),
        }
    )


def device_checkpoint(form: str = "map", nodes: dict[str, int] | None = None) -> str:
    nodes = NODE_OF_NPU if nodes is None else nodes
    entries = []
    for uid, dev in NPUS.items():
        ids: Any = [dev] if form == "list" else {str(nodes.get(dev, -1)): [dev]}
        entries.append(
            {
                "PodUID": uid,
                "ContainerName": CONTAINER,
                "ResourceName": "huawei.com/Ascend910",
                "DeviceIDs": ids,
                "AllocResp": "",
            }
        )
    data = {
        "PodDeviceEntries": entries,
        "RegisteredDevices": {"huawei.com/Ascend910": [f"Ascend910-{i}" for i in range(8)]},
    }
    # signed as a kubelet signs the NUMA-map form; the list form's sum is not recomputed
    form = ck.device_checkpoint_form({k.lower(): v for k, v in data.items()})
    return json.dumps({"Data": data, "Checksum": ck.fnv1a32(form) if form else 1234567})


def k8s_node(
    tmp: Path,
    *,
    cpu_state: str | None = None,
    devices: str | None = None,
    config: str | None = KUBELET_CONFIG,
    names: bool = True,
) -> Path:
    """The issue's node: an Atlas 800I A2 (8 NPUs, 8 NUMA nodes of 24 CPUs) with pods A and B."""
    b = atlas_a2(SysrootBuilder(tmp))
    b.file(
        "var/lib/kubelet/cpu_manager_state", cpu_manager_v2() if cpu_state is None else cpu_state
    )
    b.file(
        "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint",
        device_checkpoint() if devices is None else devices,
    )
    if config is not None:
        b.file("var/lib/kubelet/config.yaml", config)
    if names:
        for uid, (ns, name) in ((UID_A, POD_A), (UID_B, POD_B)):
            b.file(f"var/log/pods/{ns}_{name}_{uid}/{CONTAINER}/0.log", "")
    return tmp


# ---- a PodResources v1 server ----------------------------------------------------------------

PROTO = Path(__file__).resolve().parents[2] / "ascendtune" / "host" / "k8s" / "podresources.proto"
SOCKET = "var/lib/kubelet/pod-resources/kubelet.sock"


def compile_proto(out: Path) -> Any:
    """podresources.proto compiled by protoc (grpcio-tools): protobuf's own classes, so the
    server encodes as a kubelet does, independently of ascendtune's decoder."""
    import importlib.util

    from grpc_tools import protoc

    out.mkdir(parents=True, exist_ok=True)
    rc = protoc.main(["protoc", f"-I{PROTO.parent}", f"--python_out={out}", PROTO.name])
    assert rc == 0, "protoc failed on podresources.proto"
    spec = importlib.util.spec_from_file_location("podresources_pb2", out / "podresources_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def list_answer(pb: Any, pods: list[tuple[str, str, str, str, int | None]]) -> Any:
    """(namespace, name, cpulist, device id, NUMA node or None) per pod, one container each."""
    from ascendtune.core.cpulist import parse_cpulist

    out = pb.ListPodResourcesResponse()
    for ns, name, cpus, dev, node in pods:
        p = out.pod_resources.add(name=name, namespace=ns)
        c = p.containers.add(name=CONTAINER)
        c.cpu_ids.extend(sorted(parse_cpulist(cpus)))
        d = c.devices.add(resource_name="huawei.com/Ascend910", device_ids=[dev])
        if node is not None:
            d.topology.nodes.add(ID=node)
        m = c.memory.add(memory_type="memory", size=64 << 30)
        if node is not None:
            m.topology.nodes.add(ID=node)
    # a pod with no resources (the API lists every pod)
    out.pod_resources.add(name="coredns-5d78c9869d-abcde", namespace="kube-system").containers.add(
        name="coredns"
    )
    return out


def issue_pods(node: int | None = 6) -> list[tuple[str, str, str, str, int | None]]:
    return [
        (*POD_A, CPUS[UID_A], NPUS[UID_A], node),
        (*POD_B, CPUS[UID_B], NPUS[UID_B], node),
    ]


class PodResourcesServer:
    """A gRPC server on root/var/lib/kubelet/pod-resources/kubelet.sock: List answers
    `answer` (a message, or raw bytes for hostile answers), GetAllocatableResources
    `allocatable` (None: UNIMPLEMENTED, as kubelets before 1.23 answer)."""

    def __init__(self, root: Path, answer: Any, allocatable: Any = None) -> None:
        from concurrent import futures

        import grpc

        self.path = root / SOCKET
        self.path.parent.mkdir(parents=True, exist_ok=True)

        def encode(msg: Any) -> bytes:
            return msg if isinstance(msg, bytes) else msg.SerializeToString()

        def list_(_req: bytes, _ctx: Any) -> Any:
            return answer

        def alloc(_req: bytes, ctx: Any) -> Any:
            if allocatable is None:
                ctx.abort(grpc.StatusCode.UNIMPLEMENTED, "GetAllocatableResources is off")
            return allocatable

        handlers = {
            "List": grpc.unary_unary_rpc_method_handler(
                list_, request_deserializer=bytes, response_serializer=encode
            ),
            "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(
                alloc, request_deserializer=bytes, response_serializer=encode
            ),
        }
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("v1.PodResourcesLister", handlers),)
        )
        self.server.add_insecure_port(f"unix:{self.path}")

    def __enter__(self) -> PodResourcesServer:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None).wait(5)


class RawSocketServer:
    """A unix socket that accepts and then either hangs (says nothing) or answers garbage."""

    def __init__(self, root: Path, *, garbage: bytes | None = None) -> None:
        import socket
        import threading

        self.path = root / SOCKET
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(8)
        self.garbage = garbage
        self.conns: list[Any] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)
            if self.garbage is not None:
                try:
                    conn.sendall(self.garbage)
                    conn.close()
                except OSError:
                    pass

    def __enter__(self) -> RawSocketServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()
