"""The kubelet's PodResources v1 answers decoded from protobuf's wire format, without a
protobuf runtime: only the fields read here (ascendtune/host/k8s/podresources.proto), every other
field skipped as protobuf does, and bounded, so a hostile socket that answers a million
containers or nonsense costs a bounded time and memory and ends in a ParseError.

Fields: ListPodResourcesResponse.pod_resources = 1;
PodResources name = 1, namespace = 2, containers = 3; ContainerResources name = 1, devices = 2,
cpu_ids = 3 (int64, packed or not), memory = 4; ContainerDevices resource_name = 1,
device_ids = 2, topology = 3; TopologyInfo nodes = 1; NUMANode ID = 1; ContainerMemory
memory_type = 1, size = 2, topology = 3; AllocatableResourcesResponse devices = 1, cpu_ids = 2,
memory = 3.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from ascendtune.core.errors import ParseError
from ascendtune.core.k8s.view import ContainerGrant, DeviceRef

# far above any node (the kubelet's own default is 110 pods, 250 at most in practice)
MAX_PODS = 4096
MAX_CONTAINERS = 16384
MAX_ITEMS = 1 << 16  # device ids, CPU ids or NUMA nodes in one answer, each kind
SOURCE = "the pod-resources API"


class ApiPod(NamedTuple):
    name: str
    namespace: str
    containers: tuple[ContainerGrant, ...]


class Allocatable(NamedTuple):
    cpus: frozenset[int]
    devices: tuple[DeviceRef, ...]


class _Budget:
    def __init__(self) -> None:
        self.pods = 0
        self.containers = 0
        self.items = 0

    def item(self, n: int = 1) -> None:
        self.items += n
        if self.items > MAX_ITEMS:
            raise ParseError(f"more than {MAX_ITEMS} ids in one answer", source=SOURCE)


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(buf):
            raise ParseError("truncated message (a number runs past the end)", source=SOURCE)
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift >= 70:
            raise ParseError("malformed message (a number longer than 10 bytes)", source=SOURCE)


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value): an int for varint and fixed fields, bytes for
    length-delimited ones."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, kind = key >> 3, key & 7
        if field == 0:
            raise ParseError("malformed message (field number 0)", source=SOURCE)
        if kind == 0:
            value, i = _varint(buf, i)
            yield field, kind, value
        elif kind == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ParseError("truncated message (a field runs past the end)", source=SOURCE)
            yield field, kind, buf[i : i + n]
            i += n
        elif kind in (1, 5):
            width = 8 if kind == 1 else 4
            if i + width > len(buf):
                raise ParseError("truncated message", source=SOURCE)
            yield field, kind, int.from_bytes(buf[i : i + width], "little")
            i += width
        else:
            raise ParseError(f"malformed message (wire type {kind})", source=SOURCE)


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ParseError("malformed message (a string field holds a number)", source=SOURCE)
    return value.decode("utf-8", errors="replace")


def _msg(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ParseError("malformed message (a message field holds a number)", source=SOURCE)
    return value


def _ints(kind: int, value: int | bytes, budget: _Budget) -> list[int]:
    """A repeated int64: one varint, or a packed run of them."""
    if kind == 0 and isinstance(value, int):
        budget.item()
        return [_int64(value)]
    out = []
    buf, i = _msg(value), 0
    while i < len(buf):
        v, i = _varint(buf, i)
        budget.item()
        out.append(_int64(v))
    return out


def _topology(buf: bytes, budget: _Budget) -> list[int]:
    nodes = []
    for field, _kind, value in _fields(buf):
        if field == 1:
            for f2, k2, v2 in _fields(_msg(value)):
                if f2 == 1 and k2 == 0 and isinstance(v2, int):
                    budget.item()
                    nodes.append(_int64(v2))
    return nodes


def _devices(buf: bytes, budget: _Budget) -> list[DeviceRef]:
    resource, ids, nodes = "", [], []
    for field, _kind, value in _fields(buf):
        if field == 1:
            resource = _text(value)
        elif field == 2:
            budget.item()
            ids.append(_text(value))
        elif field == 3:
            nodes += _topology(_msg(value), budget)
    numa = tuple(sorted({n for n in nodes if n >= 0}))
    return [DeviceRef(resource, d, numa) for d in ids]


def _memory_nodes(buf: bytes, budget: _Budget) -> list[int]:
    nodes: list[int] = []
    for field, _kind, value in _fields(buf):
        if field == 3:
            nodes += _topology(_msg(value), budget)
    return nodes


def _container(buf: bytes, budget: _Budget) -> ContainerGrant:
    name, devices, cpus, mem = "", [], [], []
    for field, kind, value in _fields(buf):
        if field == 1:
            name = _text(value)
        elif field == 2:
            devices += _devices(_msg(value), budget)
        elif field == 3:
            cpus += _ints(kind, value, budget)
        elif field == 4:
            mem += _memory_nodes(_msg(value), budget)
    return ContainerGrant(
        name,
        frozenset(c for c in cpus if c >= 0),
        merge_devices(devices),
        tuple(sorted({n for n in mem if n >= 0})),
    )


def merge_devices(devices: list[DeviceRef]) -> tuple[DeviceRef, ...]:
    """One entry per device: the API sends one ContainerDevices per device per NUMA node."""
    nodes: dict[tuple[str, str], set[int]] = {}
    for d in devices:
        nodes.setdefault((d.resource, d.device_id), set()).update(d.numa_nodes)
    return tuple(DeviceRef(r, i, tuple(sorted(n))) for (r, i), n in nodes.items())


def decode_list(buf: bytes) -> tuple[list[ApiPod], list[str]]:
    """ListPodResourcesResponse: the pods, and notes (what was left out past the bounds)."""
    budget = _Budget()
    pods: list[ApiPod] = []
    notes: list[str] = []
    for field, _kind, value in _fields(buf):
        if field != 1:
            continue
        if len(pods) >= MAX_PODS:
            notes.append(f"the API listed more than {MAX_PODS} pods: the rest left out")
            break
        name, namespace, containers = "", "", []
        for f2, _k2, v2 in _fields(_msg(value)):
            if f2 == 1:
                name = _text(v2)
            elif f2 == 2:
                namespace = _text(v2)
            elif f2 == 3:
                budget.containers += 1
                if budget.containers > MAX_CONTAINERS:
                    raise ParseError(
                        f"more than {MAX_CONTAINERS} containers in one answer", source=SOURCE
                    )
                containers.append(_container(_msg(v2), budget))
        pods.append(ApiPod(name, namespace, tuple(containers)))
    return pods, notes


def decode_allocatable(buf: bytes) -> Allocatable:
    budget = _Budget()
    cpus: list[int] = []
    devices: list[DeviceRef] = []
    for field, kind, value in _fields(buf):
        if field == 1:
            devices += _devices(_msg(value), budget)
        elif field == 2:
            cpus += _ints(kind, value, budget)
    return Allocatable(frozenset(c for c in cpus if c >= 0), merge_devices(devices))
