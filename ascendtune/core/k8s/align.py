"""Whether each container's CPUs and NPUs sit on one NUMA node, and the kubelet setting that
puts them there: findings whose fix is a fragment to paste into the kubelet configuration (or
the pod spec), chosen from the configuration in force."""

from __future__ import annotations

from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.k8s.annotations import ASCEND_REAL, KLT_DEV, ascend_devices, physical_id
from ascendtune.core.k8s.config import KubeletConfig
from ascendtune.core.k8s.view import ContainerGrant, DeviceRef, KubeletView, PodGrant
from ascendtune.core.model import Accelerator, Host

DRAIN = (
    "drain the node, remove var/lib/kubelet/cpu_manager_state (and memory_manager_state), "
    "restart the kubelet"
)


class K8sFinding(NamedTuple):
    code: str
    severity: str  # "fail", "warn", "info"
    message: str
    fix: str | None = None  # what to do, in words
    fragment: str | None = None  # what to paste (kubelet configuration or pod spec YAML)


class NpuRef(NamedTuple):
    """A device of the pod mapped to an NPU of this host."""

    device: DeviceRef
    logical_id: int | None  # None: names no NPU of this host
    numa_node: int | None
    how: str  # which source the answer rests on ("kubelet", "AscendReal annotation")


class Assessment(NamedTuple):
    pod: PodGrant
    container: ContainerGrant
    cpus: CpuSet  # the CPUs it may run on: exclusive, else the shared pool
    exclusive: bool
    cpu_nodes: tuple[int, ...]
    npus: tuple[NpuRef, ...]
    findings: tuple[K8sFinding, ...]

    @property
    def npu_nodes(self) -> tuple[int, ...]:
        return tuple(sorted({n.numa_node for n in self.npus if n.numa_node is not None}))

    @property
    def logical_ids(self) -> tuple[int, ...]:
        return tuple(sorted({n.logical_id for n in self.npus if n.logical_id is not None}))

    @property
    def status(self) -> str:
        sev = {f.severity for f in self.findings}
        return "fail" if "fail" in sev else "warn" if "warn" in sev else "ok"

    @property
    def aligned(self) -> bool | None:
        if not self.npu_nodes or not self.cpu_nodes:
            return None
        return set(self.cpu_nodes) <= set(self.npu_nodes)


def is_accelerator_resource(resource: str) -> bool:
    return resource.startswith(("huawei.com/", "nvidia.com/"))


def npu_of(host: Host, resource: str, device_id: str) -> Accelerator | None:
    """The accelerator of host a device plugin id names. Ascend ids carry the physical id
    (`Ascend910-4`: /dev/davinci4); on the 950 (`huawei.com/npu`) the id is the logical id."""
    if not resource.startswith("huawei.com/"):
        return None
    phy = physical_id(device_id)
    if phy is None:
        return None
    if resource == "huawei.com/npu":
        return host.accelerator(phy)
    for a in host.npus:
        if f"/dev/davinci{phy}" in a.device_nodes:
            return a
    one_chip_cards = all(a.chip_id in (0, None) for a in host.npus)
    for a in host.npus:
        if (a.npu_id if one_chip_cards else a.logical_id) == phy:
            return a
    return None


def _node_of(host: Host, a: Accelerator) -> int | None:
    if a.numa_node is not None:
        return a.numa_node
    nodes = host.nodes_of(a.cpu_affinity)
    return nodes[0] if len(nodes) == 1 else None


def assess(view: KubeletView, host: Host) -> list[Assessment]:
    """Every container that holds an accelerator or exclusive CPUs, judged."""
    out: list[Assessment] = []
    for pod in view.pods:
        for c in pod.containers:
            accel = [d for d in c.devices if is_accelerator_resource(d.resource)]
            if not accel and not c.cpus:
                continue
            out.append(_assess_one(view, host, pod, c, accel))
    return out


def _npus(
    host: Host, pod: PodGrant, devices: list[DeviceRef], findings: list[K8sFinding]
) -> list[NpuRef]:
    real = ascend_devices(pod.annotations.get(ASCEND_REAL, ""))
    klt = ascend_devices(pod.annotations.get(KLT_DEV, ""))
    given = tuple(sorted(d.device_id for d in devices if d.resource.startswith("huawei.com/")))
    how = "kubelet"
    if real and given and set(real) != set(given):
        findings.append(
            K8sFinding(
                "k8s_device_record",
                "warn",
                f"the kubelet records {', '.join(given)} but {ASCEND_REAL} says "
                f"{', '.join(real)} was mounted"
                + (f" ({KLT_DEV}: {', '.join(klt)})" if klt else "")
                + ": the scheduler (Volcano) chose the devices, the kubelet's record names the "
                "wrong NPU; this answer rests on the annotation",
                "align with the native scheduler's placement, or trust the annotation only",
            )
        )
        resource = next(d.resource for d in devices if d.resource.startswith("huawei.com/"))
        devices = [d for d in devices if not d.resource.startswith("huawei.com/")] + [
            DeviceRef(resource, r) for r in real
        ]
        how = f"{ASCEND_REAL} annotation"
    refs = []
    for d in devices:
        a = npu_of(host, d.resource, d.device_id)
        if a is None:
            if d.resource.startswith("huawei.com/"):
                findings.append(
                    K8sFinding(
                        "k8s_unknown_device",
                        "warn",
                        f"{d.resource} {d.device_id} names no NPU of this host",
                        "the checkpoint may be stale (entries outlive their pods) or the host view "
                        "incomplete",
                    )
                )
            refs.append(NpuRef(d, None, d.numa_nodes[0] if len(d.numa_nodes) == 1 else None, how))
            continue
        refs.append(NpuRef(d, a.logical_id, _node_of(host, a), how))
    return refs


def _assess_one(
    view: KubeletView, host: Host, pod: PodGrant, c: ContainerGrant, accel: list[DeviceRef]
) -> Assessment:
    findings: list[K8sFinding] = []
    cfg = view.config
    exclusive = bool(c.cpus)
    cpus = c.cpus or (view.shared_cpus if view.shared_cpus is not None else host.cpus_online)
    cpu_nodes = host.nodes_of(cpus)
    npus = _npus(host, pod, accel, findings)
    npu_nodes = sorted({n.numa_node for n in npus if n.numa_node is not None})
    if accel and not exclusive:
        static = cfg.cpu_manager_policy == "static"
        findings.append(
            K8sFinding(
                "k8s_shared_pool",
                "warn",
                f"no exclusive CPUs: the container shares the pool {format_cpulist(cpus)} with "
                "every other pod",
                "make the pod Guaranteed: integer CPU requests equal to limits in every container"
                + ("" if static else "; and turn on the static CPU manager: " + DRAIN),
                _guaranteed() if static else _static_fragment(cfg),
            )
        )
    unreported = [d for d in accel if d.resource.startswith("huawei.com/") and not d.numa_nodes]
    if unreported:
        findings.append(
            K8sFinding(
                "k8s_device_numa",
                "warn" if _aligning(cfg) else "info",
                "the device plugin reported no NUMA node for "
                + ", ".join(d.device_id for d in unreported)
                + ": the Topology Manager cannot align the CPUs with it",
                "run an Ascend device plugin that reports each NPU's NUMA node (mind-cluster from "
                "2026-08); aligned placement then works with the default scheduler, not Volcano",
            )
        )
    if exclusive and npu_nodes and not set(cpu_nodes) <= set(npu_nodes):
        findings.append(_misaligned(cfg, c.cpus, cpu_nodes, npu_nodes, bool(unreported)))
    if npu_nodes and c.memory_nodes and not set(c.memory_nodes) <= set(npu_nodes):
        findings.append(
            K8sFinding(
                "k8s_memory_numa",
                "warn",
                f"the memory manager pinned its memory on node "
                f"{','.join(map(str, c.memory_nodes))}, its NPUs sit on "
                f"{','.join(map(str, npu_nodes))}",
                "let the Topology Manager align memory too (the Static memory manager needs "
                "reservedMemory per NUMA node summing to the kube and system reservations and the "
                "hard eviction threshold); " + DRAIN,
                "memoryManagerPolicy: Static\ntopologyManagerPolicy: single-numa-node\n"
                "reservedMemory:  # one entry per NUMA node\n"
                "- numaNode: 0\n  limits: {memory: 1Gi}",
            )
        )
    split = _split_cores(host, c.cpus)
    if exclusive and split:
        findings.append(
            K8sFinding(
                "k8s_smt_split",
                "warn",
                f"CPUs {format_cpulist(split)} without their SMT siblings: another pod shares "
                "those cores",
                "allocate whole cores (" + DRAIN + ")",
                'cpuManagerPolicyOptions:\n  full-pcpus-only: "true"',
            )
        )
    return Assessment(pod, c, cpus, exclusive, cpu_nodes, tuple(npus), tuple(findings))


def _aligning(cfg: KubeletConfig) -> bool:
    return cfg.topology_manager_policy in ("restricted", "single-numa-node")


def _misaligned(
    cfg: KubeletConfig,
    cpus: CpuSet,
    cpu_nodes: tuple[int, ...],
    npu_nodes: list[int],
    unreported: bool,
) -> K8sFinding:
    where = (
        f"CPUs {format_cpulist(cpus)} on node{'s' if len(cpu_nodes) > 1 else ''} "
        f"{','.join(map(str, cpu_nodes))}, NPUs on node{'s' if len(npu_nodes) > 1 else ''} "
        f"{','.join(map(str, npu_nodes))}: every host-side step crosses NUMA nodes, and "
        "vLLM-Ascend's binding finds no CPU of its NPU's affinity"
    )
    if _aligning(cfg) and not unreported:
        return K8sFinding(
            "k8s_numa_misaligned",
            "fail",
            where + f" (topologyManagerPolicy is already {cfg.topology_manager_policy}: the "
            "state file may predate it)",
            "restart the pod so the kubelet admits it again under the policy in force",
        )
    lines = []
    if cfg.cpu_manager_policy != "static":
        lines.append("cpuManagerPolicy: static")
    lines.append("topologyManagerPolicy: single-numa-node")
    lines.append("topologyManagerScope: pod")
    return K8sFinding(
        "k8s_numa_misaligned",
        "fail",
        where
        + f" (topologyManagerPolicy {cfg.topology_manager_policy}: the kubelet does not align)",
        "set the Topology Manager in the kubelet configuration, then "
        + DRAIN
        + " (restricted instead of single-numa-node admits pods that span nodes when "
        "their hints allow)",
        "\n".join(lines),
    )


def _static_fragment(cfg: KubeletConfig) -> str:
    lines = ["cpuManagerPolicy: static"]
    if not _aligning(cfg):
        lines += ["topologyManagerPolicy: single-numa-node", "topologyManagerScope: pod"]
    return "\n".join(lines)


def _guaranteed() -> str:
    return (
        "resources:  # the pod spec, in every container: whole CPUs, requests = limits\n"
        '  requests: {cpu: "24", memory: 64Gi}\n'
        '  limits: {cpu: "24", memory: 64Gi}'
    )


def _split_cores(host: Host, cpus: CpuSet) -> CpuSet:
    """CPUs of cpus whose SMT siblings are not all in cpus."""
    out = set()
    for c in cpus:
        cpu = host.cpus.get(c)
        if cpu is None:
            continue
        if not cpu.siblings <= cpus:
            out.add(c)
    return frozenset(out)
