"""The kubelet's checkpoint checksums, recomputed to tell a stale or edited file from one the
kubelet wrote.

The kubelet hashes (32-bit FNV-1a) the text Go's go-spew prints for the checkpoint struct with
its checksum field zeroed (`%#v`: the type of each field, maps with sorted keys), so the sum
depends on the Go type names as well as on the values. This module writes that text for the
CPU manager's layouts v1-v3 and for a v4 (or memory manager v3) `data` string; the forms were
checked against the checksums in the kubelet's own tests (docs/kubernetes.md says which).
"""

from __future__ import annotations

from collections.abc import Mapping

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a32(text: str) -> int:
    h = _FNV_OFFSET
    for b in text.encode("utf-8", errors="surrogateescape"):
        h = ((h ^ b) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def _go_map(items: Mapping[str, str]) -> str:
    """A Go map of strings as go-spew prints it inside a struct: keys sorted, no types."""
    return "map[" + " ".join(f"{k}:{items[k]}" for k in sorted(items)) + "]"


def _cpuset(cpus: frozenset[int]) -> str:
    """k8s.io/utils/cpuset.CPUSet: a struct holding a map[int]struct{} (keys sorted)."""
    elems = " ".join(f"{c}:{{}}" for c in sorted(cpus))
    return f"(cpuset.CPUSet){{elems:(map[int]struct {{}})map[{elems}]}}"


def cpu_manager_forms(
    layout: str,
    policy: str,
    default_cpuset: str,
    entries: Mapping[str, object],
    pod_entries: Mapping[str, frozenset[int]] | None = None,
) -> list[str]:
    """The texts whose hash a kubelet accepts as the checksum of a CPU manager checkpoint of
    layout v1 (entries: container id -> cpulist), v2 or v3 (entries: pod -> container ->
    cpulist; v3 adds pod_entries). A kubelet names the struct by its own version, and since
    1.36 also accepts the legacy name `CPUManagerCheckpoint`: every accepted name is given."""
    head = f"PolicyName:(string){policy} DefaultCPUSet:(string){default_cpuset} "
    if layout == "v1":
        body = f"Entries:(map[string]string){_go_map(entries)}"  # type: ignore[arg-type]
        names = ("CPUManagerCheckpoint", "CPUManagerCheckpointV1")
    else:
        inner = " ".join(
            f"{pod}:{_go_map(entries[pod])}"  # type: ignore[arg-type]
            for pod in sorted(entries)
        )
        body = f"Entries:(map[string]map[string]string)map[{inner}]"
        names = ("CPUManagerCheckpoint", f"CPUManagerCheckpoint{layout.upper()}")
        if layout == "v3":
            pods = pod_entries or {}
            body += " PodEntries:(state.PodCPUAssignments)map[" + " ".join(
                f"{uid}:{{CPUSet:{_cpuset(pods[uid])}}}" for uid in sorted(pods)
            )
            body += "]"
    text = "{" + head + body + " Checksum:(checksum.Checksum)0}"
    return [f"(*state.{name}){text}" for name in names]


def cpu_manager_checksum_ok(
    checksum: int,
    layout: str,
    policy: str,
    default_cpuset: str,
    entries: Mapping[str, object],
    pod_entries: Mapping[str, frozenset[int]] | None = None,
) -> bool:
    return any(
        fnv1a32(form) == checksum
        for form in cpu_manager_forms(layout, policy, default_cpuset, entries, pod_entries)
    )


def data_checksum(data: str) -> int:
    """The checksum of a checkpoint's `data` string (CPU manager v4, memory manager v3): the
    hash of a Go string as go-spew prints it."""
    return fnv1a32("(string)" + data)


def _ids(ids: object) -> str | None:
    """A Go []string inside a map or a struct's map: `[a b]`, nil `<nil>`."""
    if ids is None:
        return "<nil>"
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return None
    return "[" + " ".join(ids) + "]"


def _entry(e: Mapping[str, object]) -> str | None:
    import base64
    import binascii

    e = {str(k).lower(): v for k, v in e.items()}
    names = ("poduid", "containername", "resourcename")
    if set(e) - {*names, "deviceids", "allocresp"}:
        return None
    texts = [e.get(k, "") for k in names]
    if not all(isinstance(t, str) for t in texts):
        return None
    ids = e.get("deviceids")
    if ids is None:
        numa = "<nil>"
    elif isinstance(ids, dict):
        try:
            keys = sorted(ids, key=int)
        except ValueError:
            return None
        parts = [(k, _ids(ids[k])) for k in keys]
        if any(p is None for _, p in parts):
            return None
        numa = "map[" + " ".join(f"{int(k)}:{p}" for k, p in parts) + "]"
    else:  # the list form of kubelets up to 1.19: its form is not checked here
        return None
    alloc = e.get("allocresp")
    if alloc is None:
        resp = "<nil>"
    elif isinstance(alloc, str):
        try:
            raw = base64.b64decode(alloc, validate=True)
        except (binascii.Error, ValueError):
            return None
        resp = "[" + " ".join(str(b) for b in raw) + "]"
    else:
        return None
    pod, container, resource = texts
    return (
        f"{{PodUID:(string){pod} ContainerName:(string){container} "
        f"ResourceName:(string){resource} DeviceIDs:(checkpoint.DevicesPerNUMA){numa} "
        f"AllocResp:([]uint8){resp}}}"
    )


def device_checkpoint_form(data: Mapping[str, object]) -> str | None:
    """The text whose hash is the Checksum of a device manager checkpoint (kubelet 1.20 on:
    DeviceIDs a map from NUMA node to ids), from its `Data` with keys lower-cased; None where
    this form does not apply (the list form of 1.19 and older, fields it does not know, values
    of another type). Slice elements and map values are printed without their type, struct
    fields with theirs, []byte as decimal numbers, map keys sorted (NUMA nodes as numbers).
    Checked against the Checksum of two checkpoints kubelets wrote (docs/kubernetes.md)."""
    if set(data) - {"poddeviceentries", "registereddevices"}:
        return None
    raw = data.get("poddeviceentries")
    if raw is None:
        entries = "<nil>"
    elif isinstance(raw, list):
        forms = [_entry(e) if isinstance(e, dict) else None for e in raw]
        if any(f is None for f in forms):
            return None
        entries = "[" + " ".join(f for f in forms if f is not None) + "]"
    else:
        return None
    reg = data.get("registereddevices")
    if reg is None:
        registered = "<nil>"
    elif isinstance(reg, dict):
        parts = [(k, _ids(reg[k])) for k in sorted(reg)]
        if any(p is None for _, p in parts):
            return None
        registered = "map[" + " ".join(f"{k}:{p}" for k, p in parts) + "]"
    else:
        return None
    return (
        f"(checkpoint.checkpointData){{PodDeviceEntries:([]checkpoint.PodDevicesEntry){entries} "
        f"RegisteredDevices:(map[string][]string){registered}}}"
    )
