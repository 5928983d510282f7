"""Parsers of the kubelet's node-local state files: the CPU manager's checkpoint (layouts v1-v4),
the memory manager's and the device manager's (list and NUMA-map forms).

Text in, frozen models out (no host access). The kubelet decodes these files with Go's JSON,
which matches a struct's field names without regard to case (its own tests write
`defaultCPUSet`), so field names are matched the same way; map keys (pod UIDs, container names,
NUMA ids) are data and kept as written. A checksum that does not match is reported, not fatal:
edited and stale copies exist in the wild (docs/kubernetes.md).
"""

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.k8s import checksum as ck
from ascendtune.core.k8s.paths import (
    CPU_MANAGER_FILE,
    DEVICE_CHECKPOINT_FILE,
    MEMORY_MANAGER_FILE,
)

# a container key of a v1 file, which names containers by runtime id, not by pod and name
V1_POD = ""


class CpuManagerState(NamedTuple):
    """The CPU manager's checkpoint: the policy it was written under, the shared pool, and the
    exclusive CPUs of each container (and, from 1.36, of each pod)."""

    layout: str  # "v1" .. "v4"
    policy: str
    default_cpus: CpuSet  # the shared pool (with the reserved CPUs unless strict-cpu-reservation)
    containers: Mapping[tuple[str, str], CpuSet]  # (pod UID, container name) -> CPUs
    pods: Mapping[str, CpuSet] = MappingProxyType({})  # pod-level assignments (v3, v4)
    checksum_ok: bool | None = None  # None: no checksum written (the kubelet accepts 0)
    notes: tuple[str, ...] = ()


class MemoryBlock(NamedTuple):
    numa_nodes: tuple[int, ...]
    type: str  # "memory", "hugepages-2Mi", ...
    size_bytes: int


class MemoryManagerState(NamedTuple):
    layout: str  # "v1" (checksum only) or "v2" (with data / dataChecksum)
    policy: str
    containers: Mapping[tuple[str, str], tuple[MemoryBlock, ...]]
    checksum_ok: bool | None = None
    notes: tuple[str, ...] = ()


class DeviceGrant(NamedTuple):
    """One device the kubelet gave a container: numa_nodes empty when the plugin reported no
    topology (key "-1", or the list form of kubelets up to 1.19)."""

    pod_uid: str
    container: str
    resource: str
    device_id: str
    numa_nodes: tuple[int, ...]


class DeviceCheckpoint(NamedTuple):
    layout: str  # "list" (kubelet <= 1.19) or "map" (NUMA node -> ids, 1.20 on)
    grants: tuple[DeviceGrant, ...]
    registered: Mapping[str, tuple[str, ...]]
    notes: tuple[str, ...] = ()
    # None: not checked (no checksum, or the list form, whose text is not recomputed)
    checksum_ok: bool | None = None


# ---- helpers ----------------------------------------------------------------------------------


def _load(text: str, source: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(f"not JSON: {e.msg}", source=source, line=e.lineno) from None
    except RecursionError:
        raise ParseError("nested too deeply to be a kubelet checkpoint", source=source) from None
    except ValueError as e:  # a number of thousands of digits (int's bound on a conversion)
        raise ParseError(f"not a kubelet checkpoint: {e}"[:120], source=source) from None
    if not isinstance(doc, dict):
        raise ParseError("expected a JSON object", source=source)
    return doc


def _fields(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A Go struct's fields as encoding/json finds them: names matched case-insensitively."""
    return {str(k).lower(): v for k, v in doc.items()}


def _cpus(value: Any, source: str, what: str) -> CpuSet:
    if not isinstance(value, str):
        raise ParseError(f"{what}: expected a cpulist string, found {_kind(value)}", source=source)
    try:
        return parse_cpulist(value, source=f"{source} {what}") if value.strip() else frozenset()
    except ParseError as e:
        raise ParseError(e.message) from None


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )


def _checksum(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        return None
    return value


def _object(value: Any, source: str, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(f"{what}: expected an object, found {_kind(value)}", source=source)
    return value


# ---- the CPU manager ----------------------------------------------------------------------------


def parse_cpu_manager_state(text: str, source: str = CPU_MANAGER_FILE) -> CpuManagerState:
    """Read a cpu_manager_state of any layout the kubelet has written (v1-v4)."""
    outer = _fields(_load(text, source))
    notes: list[str] = []
    data = outer.get("data")
    if isinstance(data, str) and data:
        inner = _fields(_load(data, f"{source} data"))
        want = _checksum(outer.get("datachecksum"))
        ok = None if want is None else ck.data_checksum(data) == want
        state = _cpu_state(inner, source, "v4", ok, notes)
        legacy = _cpu_state(outer, source, "v4", None, [])
        if legacy[1:5] != state[1:5]:
            notes.append("the legacy fields disagree with `data`; `data` is what the kubelet reads")
        return state._replace(notes=tuple(notes))
    return _cpu_state(outer, source, None, None, notes)


def _cpu_state(
    f: dict[str, Any], source: str, layout: str | None, ok: bool | None, notes: list[str]
) -> CpuManagerState:
    policy = f.get("policyname")
    if not isinstance(policy, str):
        raise ParseError("no policyName", source=source)
    default_text = f.get("defaultcpuset", "")
    default = _cpus(default_text, source, "defaultCpuSet")
    entries = _object(f.get("entries"), source, "entries")
    pod_raw = _object(f.get("podentries"), source, "podEntries")
    containers: dict[tuple[str, str], CpuSet] = {}
    v1 = any(isinstance(v, str) for v in entries.values())
    for key, value in entries.items():
        if isinstance(value, str) and v1:
            containers[(V1_POD, key)] = _cpus(value, source, f"entries[{key}]")
            continue
        for name, cpus in _object(value, source, f"entries[{key}]").items():
            containers[(key, name)] = _cpus(cpus, source, f"entries[{key}][{name}]")
    pods: dict[str, CpuSet] = {}
    for uid, entry in pod_raw.items():
        inner = _fields(_object(entry, source, f"podEntries[{uid}]"))
        pods[uid] = _cpus(inner.get("cpuset", ""), source, f"podEntries[{uid}]")
    if layout is None:
        layout, ok = _cpu_layout(f, v1, default_text, entries, pods, notes)
    return CpuManagerState(
        layout,
        policy,
        default,
        MappingProxyType(containers),
        MappingProxyType(pods),
        ok,
        tuple(notes),
    )


def _cpu_layout(
    f: dict[str, Any],
    v1: bool,
    default_text: str,
    entries: dict[str, Any],
    pods: dict[str, CpuSet],
    notes: list[str],
) -> tuple[str, bool | None]:
    """The layout (v1-v3) and whether the checksum matches it. With no entries v1 and v2 look
    alike: the checksum, which covers the Go type, tells them apart."""
    want = _checksum(f.get("checksum"))
    policy = f["policyname"]
    if v1:
        candidates = ["v1"]
    elif "podentries" in f:
        candidates = ["v3"]
    elif entries:
        candidates = ["v2", "v3"]
    else:
        candidates = ["v2", "v1", "v3"]
    if want is None:
        return candidates[0], None
    for layout in candidates:
        if ck.cpu_manager_checksum_ok(want, layout, policy, default_text, entries, pods):
            return layout, True
    notes.append(
        f"checksum {want} does not match the content (an edited or stale copy): "
        "the kubelet would refuse this file"
    )
    return candidates[0], False


# ---- the memory manager -------------------------------------------------------------------------


def parse_memory_manager_state(text: str, source: str = MEMORY_MANAGER_FILE) -> MemoryManagerState:
    outer = _fields(_load(text, source))
    data = outer.get("data")
    notes: list[str] = []
    layout, ok, f = "v1", None, outer
    if isinstance(data, str) and data:
        f = _fields(_load(data, f"{source} data"))
        want = _checksum(outer.get("datachecksum"))
        layout = "v2"
        ok = None if want is None else ck.data_checksum(data) == want
        if ok is False:
            notes.append("dataChecksum does not match `data` (an edited or stale copy)")
    policy = f.get("policyname")
    if not isinstance(policy, str):
        raise ParseError("no policyName", source=source)
    containers: dict[tuple[str, str], tuple[MemoryBlock, ...]] = {}
    for uid, by_name in _object(f.get("entries"), source, "entries").items():
        for name, blocks in _object(by_name, source, f"entries[{uid}]").items():
            containers[(uid, name)] = _blocks(blocks, source, f"entries[{uid}][{name}]")
    return MemoryManagerState(layout, policy, MappingProxyType(containers), ok, tuple(notes))


def _blocks(value: Any, source: str, what: str) -> tuple[MemoryBlock, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ParseError(f"{what}: expected a list of blocks", source=source)
    out = []
    for raw in value:
        b = _fields(_object(raw, source, what))
        nodes = b.get("numaaffinity") or []
        if not isinstance(nodes, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in nodes
        ):
            raise ParseError(f"{what}: numaAffinity is not a list of node ids", source=source)
        size = b.get("size", 0)
        out.append(
            MemoryBlock(
                tuple(nodes),
                str(b.get("type", "")),
                size if isinstance(size, int) and not isinstance(size, bool) else 0,
            )
        )
    return tuple(out)


# ---- the device manager -------------------------------------------------------------------------


def parse_device_checkpoint(text: str, source: str = DEVICE_CHECKPOINT_FILE) -> DeviceCheckpoint:
    """kubelet_internal_checkpoint: which device ids each container got. DeviceIDs is a list up
    to kubelet 1.19 and a map from NUMA node to ids from 1.20 (key "-1": no topology)."""
    top = _fields(_load(text, source))
    data = _fields(_object(top.get("data"), source, "Data"))
    raw_entries = data.get("poddeviceentries") or []
    if not isinstance(raw_entries, list):
        raise ParseError("Data.PodDeviceEntries: expected a list", source=source)
    grants: dict[tuple[str, str, str, str], set[int]] = {}
    layouts: set[str] = set()
    for i, raw in enumerate(raw_entries):
        e = _fields(_object(raw, source, f"PodDeviceEntries[{i}]"))
        pod, name, resource = (
            str(e.get(k) or "") for k in ("poduid", "containername", "resourcename")
        )
        ids = e.get("deviceids")
        by_node: dict[int | None, list[Any]]
        if isinstance(ids, list) or ids is None:
            layouts.add("list")
            by_node = {None: ids or []}
        elif isinstance(ids, dict):
            layouts.add("map")
            by_node = {_node(k, source): v for k, v in ids.items()}
        else:
            raise ParseError(f"PodDeviceEntries[{i}].DeviceIDs: not a list or map", source=source)
        for node, devs in by_node.items():
            if not isinstance(devs, list):
                raise ParseError(
                    f"PodDeviceEntries[{i}].DeviceIDs: not lists of ids", source=source
                )
            for dev in devs:
                nodes = grants.setdefault((pod, name, resource, str(dev)), set())
                if node is not None:
                    nodes.add(node)
    registered: dict[str, tuple[str, ...]] = {}
    for resource, ids in _object(
        data.get("registereddevices"), source, "RegisteredDevices"
    ).items():
        registered[resource] = tuple(str(i) for i in ids) if isinstance(ids, list) else ()
    notes = []
    if len(layouts) > 1:
        notes.append("entries in both the list and the NUMA-map form of DeviceIDs")
    want = _checksum(top.get("checksum"))
    form = ck.device_checkpoint_form(data) if want else None
    ok = None if form is None else ck.fnv1a32(form) == want
    if ok is False:
        notes.append(
            f"{source}: checksum {want} does not match the content (an edited or stale copy): "
            "a kubelet would not load it (it goes on without these device assignments)"
        )
    return DeviceCheckpoint(
        "map" if "map" in layouts else "list",
        tuple(
            DeviceGrant(pod, name, resource, dev, tuple(sorted(nodes)))
            for (pod, name, resource, dev), nodes in grants.items()
        ),
        MappingProxyType(registered),
        tuple(notes),
        ok,
    )


def _node(key: Any, source: str) -> int | None:
    try:
        n = int(str(key))
    except ValueError:
        raise ParseError(
            f"DeviceIDs: NUMA node key {key!r} is not a number", source=source
        ) from None
    return None if n < 0 else n
