"""The kubelet's PodResources v1 API over its unix socket: `List` and `GetAllocatableResources`,
through grpcio (the `ascendtune[k8s]` extra, imported here only), answers decoded by
ascendtune.core.k8s.wire. Every call has a deadline and a bound on the answer's size, so a
socket that hangs or answers nonsense costs seconds, not the command."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ascendtune.core.errors import AscendtuneError
from ascendtune.core.k8s import wire
from ascendtune.core.k8s.view import ContainerGrant, DeviceRef
from ascendtune.host.roots import Root

TIMEOUT_S = 3.0
# the kubelet's own server caps a message at 16 MiB; a node's real answer is kilobytes
MAX_ANSWER_BYTES = 16 << 20
LIST = "/v1.PodResourcesLister/List"
ALLOCATABLE = "/v1.PodResourcesLister/GetAllocatableResources"


class ApiAnswer(NamedTuple):
    pods: list[wire.ApiPod]
    allocatable: wire.Allocatable | None
    notes: list[str]


class Unanswered(NamedTuple):
    """Why the API gave nothing (the files are read instead)."""

    reason: str


def ask(socket: str, timeout_s: float = TIMEOUT_S) -> ApiAnswer | Unanswered:
    try:
        import grpc  # the k8s extra; never imported by --help or a host without a kubelet
    except ImportError:
        return Unanswered(
            "grpcio is not installed (pip install 'ascendtune[k8s]'): the kubelet's files were read"
        )
    options = [
        ("grpc.max_receive_message_length", MAX_ANSWER_BYTES),
        ("grpc.enable_http_proxy", 0),
        ("grpc.enable_retries", 0),
    ]
    channel = grpc.insecure_channel(f"unix:{socket}", options=options)
    try:
        raw = channel.unary_unary(LIST, request_serializer=_empty, response_deserializer=_raw)(
            b"", timeout=timeout_s
        )
        try:
            pods, notes = wire.decode_list(raw)
        except AscendtuneError as e:
            return Unanswered(f"List answered something that is not PodResources: {e.message}")
        allocatable = None
        try:
            got = channel.unary_unary(
                ALLOCATABLE, request_serializer=_empty, response_deserializer=_raw
            )(b"", timeout=timeout_s)
            allocatable = wire.decode_allocatable(got)
        except grpc.RpcError as e:
            notes.append(f"GetAllocatableResources: {_why(e)}")
        except AscendtuneError as e:
            notes.append(f"GetAllocatableResources: {e.message}")
        return ApiAnswer(pods, allocatable, notes)
    except grpc.RpcError as e:
        return Unanswered(f"the pod-resources socket did not answer List: {_why(e)}")
    finally:
        channel.close()


def _empty(_request: object) -> bytes:
    return b""


def _raw(data: bytes) -> bytes:
    return data


def _why(e: Any) -> str:
    code = e.code() if hasattr(e, "code") else None
    details = e.details() if hasattr(e, "details") else None
    name = getattr(code, "name", str(code))
    return f"{name}: {(details or '').splitlines()[0][:160] if details else 'no details'}"


# ---- the answer as a document (what `snapshot` saves, and reads back) --------------------------


def answer_document(answer: ApiAnswer) -> dict[str, Any]:
    """The answer in protobuf's JSON mapping (camelCase field names)."""

    def devices(ds: tuple[DeviceRef, ...]) -> list[dict[str, Any]]:
        return [
            {
                "resourceName": d.resource,
                "deviceIds": [d.device_id],
                **(
                    {"topology": {"nodes": [{"ID": n} for n in d.numa_nodes]}}
                    if d.numa_nodes
                    else {}
                ),
            }
            for d in ds
        ]

    doc: dict[str, Any] = {
        "list": {
            "podResources": [
                {
                    "name": p.name,
                    "namespace": p.namespace,
                    "containers": [
                        {
                            "name": c.name,
                            "devices": devices(c.devices),
                            "cpuIds": sorted(c.cpus),
                            "memory": [{"topology": {"nodes": [{"ID": n} for n in c.memory_nodes]}}]
                            if c.memory_nodes
                            else [],
                        }
                        for c in p.containers
                    ],
                }
                for p in answer.pods
            ]
        },
        "notes": list(answer.notes),
    }
    if answer.allocatable is not None:
        doc["allocatable"] = {
            "devices": devices(answer.allocatable.devices),
            "cpuIds": sorted(answer.allocatable.cpus),
        }
    return doc


def read_answer(root: Root, rel: str) -> ApiAnswer | Unanswered | None:
    """A saved answer (None: none saved). Numbers may be strings (protobuf's JSON of int64)."""
    text = root.read_text(rel)
    if text is None:
        return None
    try:
        doc = json.loads(text)
        pods = [
            wire.ApiPod(
                str(p.get("name", "")),
                str(p.get("namespace", "")),
                tuple(_container(c) for c in p.get("containers") or []),
            )
            for p in (doc.get("list") or {}).get("podResources") or []
        ]
        alloc = doc.get("allocatable")
        allocatable = (
            wire.Allocatable(
                frozenset(int(c) for c in alloc.get("cpuIds") or []),
                tuple(d for raw in alloc.get("devices") or [] for d in _devices(raw)),
            )
            if isinstance(alloc, dict)
            else None
        )
        return ApiAnswer(pods, allocatable, [str(n) for n in doc.get("notes") or []])
    except (ValueError, TypeError, AttributeError) as e:
        return Unanswered(f"{rel} is not a saved pod-resources answer: {e}")


def _nodes(raw: Any) -> tuple[int, ...]:
    nodes = ((raw or {}).get("topology") or {}).get("nodes") or []
    return tuple(sorted({int(n.get("ID", n.get("id", -1))) for n in nodes} - {-1}))


def _devices(raw: dict[str, Any]) -> list[DeviceRef]:
    return [
        DeviceRef(str(raw.get("resourceName", "")), str(i), _nodes(raw))
        for i in raw.get("deviceIds") or []
    ]


def _container(raw: dict[str, Any]) -> ContainerGrant:
    devices = [d for dev in raw.get("devices") or [] for d in _devices(dev)]
    mem = sorted({n for m in raw.get("memory") or [] for n in _nodes(m)})
    return ContainerGrant(
        str(raw.get("name", "")),
        frozenset(int(c) for c in raw.get("cpuIds") or []),
        wire.merge_devices(devices),
        tuple(mem),
    )
