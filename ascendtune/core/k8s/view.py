"""What the kubelet gave each pod, whichever way it was read (the PodResources API or the
kubelet's files): the model the alignment checks, `topo`'s pods table and `plan --pod` use."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.k8s.config import KubeletConfig

SOURCE_API = "pod-resources API"
SOURCE_API_CAPTURED = "pod-resources API (captured answer)"
SOURCE_FILES = "kubelet files"


class DeviceRef(NamedTuple):
    """A device the kubelet gave a container, with the NUMA nodes the plugin reported for it
    (empty: none reported)."""

    resource: str
    device_id: str
    numa_nodes: tuple[int, ...] = ()


class ContainerGrant(NamedTuple):
    name: str
    cpus: CpuSet  # exclusive CPUs (empty: the container runs in the shared pool)
    devices: tuple[DeviceRef, ...] = ()
    memory_nodes: tuple[int, ...] = ()  # NUMA nodes of its memory blocks (memory manager)


class PodGrant(NamedTuple):
    uid: str | None
    name: str | None
    namespace: str | None
    containers: tuple[ContainerGrant, ...]
    annotations: Mapping[str, str] = MappingProxyType({})
    pod_cpus: CpuSet = frozenset()  # pod-level exclusive CPUs (kubelet 1.36 pod scope)

    @property
    def label(self) -> str:
        """namespace/name where known, else the UID."""
        if self.name:
            return f"{self.namespace or 'default'}/{self.name}"
        return self.uid or "?"

    def matches(self, wanted: str) -> bool:
        """`--pod NAME|NAMESPACE/NAME|UID`."""
        return wanted in (self.uid, self.name, self.label)


class KubeletView(NamedTuple):
    source: str  # SOURCE_API, SOURCE_API_CAPTURED or SOURCE_FILES
    config: KubeletConfig
    cpu_policy: str  # as the CPU manager's state says (else the configuration)
    shared_cpus: CpuSet | None  # the shared pool (defaultCpuSet); None: unknown
    allocatable_cpus: CpuSet | None  # GetAllocatableResources' cpu_ids
    pods: tuple[PodGrant, ...]
    # facts an operator must know: unreadable files, stale checksums, disagreeing sources
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
