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
