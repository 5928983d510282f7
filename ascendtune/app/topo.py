"""`topo`: the host model as a report and its document, and the warnings an operator must read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.source import THIS_HOST, HostSource
from ascendtune.core import vendors

if TYPE_CHECKING:
    from ascendtune.app.documents import TopoBody
    from ascendtune.app.k8s import K8sReport
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.core.model import Host


class TopoOptions(NamedTuple):
    """`topo`: which host to show."""

    source: HostSource = THIS_HOST


class TopoReport(NamedTuple):
    """The host as read, and which host it is."""

    host: Host
    identity: dict[str, Any]
    kubernetes: K8sReport | None = None  # on a Kubernetes node: what the kubelet gave each pod

    @property
    def exit_code(self) -> int:
        return 0

    @property
    def error(self) -> AscendtuneError | None:
        return None


def run(opts: TopoOptions) -> TopoReport:
    """`topo`: read the host opts.source names."""
    from ascendtune.app.hosts import load
    from ascendtune.host.k8s import is_kubernetes_node

    got = load(opts.source)
    if not is_kubernetes_node(got.root):  # no app.k8s: 4.2 M instructions of 460 M (callgrind)
        return TopoReport(got.host, got.identity, None)
    from ascendtune.app import k8s

    return TopoReport(got.host, got.identity, k8s.report(got.root, got.host))


def document(report: TopoReport) -> dict[str, Any]:
    """`topo --json` without schema_version (the printer adds it)."""
    doc = topo_document(report.host, report.identity)
    if report.kubernetes is not None:  # the key is there on a Kubernetes node only
        from ascendtune.app import k8s

        doc["kubernetes"] = k8s.document(report.kubernetes)
    return doc


def topo_document(host: Host, identity: dict[str, Any] | None = None) -> dict[str, Any]:
    """`topo --json` (SPEC section 3) from the host model, and which host it is."""
    from ascendtune.core.cpulist import format_cpulist as f

    body: TopoBody = {
        "hostname": host.hostname,
        "arch": host.arch,
        "soc": vendors.vendor_of(host).soc_of(host).value if host.accelerators else None,
        # the schema names the two vendors' tools; each profile says what its record holds
        "npu_smi": vendors.ASCEND.tool_document(host),  # type: ignore[typeddict-item]
        "nvidia_smi": vendors.NVIDIA.tool_document(host),  # type: ignore[typeddict-item]
        "cpus_online": f(host.cpus_online),
        "cpus_offline": f(host.cpus_offline),
        "cpus_allowed": f(host.cpus_allowed),
        "cpus_allowed_source": "proc/self/status"
        if host.allowed_from_status
        else "assumed: every online CPU",
        "mems_allowed": None if host.mems_allowed is None else f(host.mems_allowed),
        "smt_threads_per_core": max((len(c.siblings) for c in host.cpus.values()), default=1),
        "sockets": len({c.socket for c in host.cpus.values()}),
        "numa_nodes": [
            {
                "id": n.id,
                "cpus": f(n.cpus),
                "mem_mib": n.mem_mib,
                "accelerators": [a.logical_id for a in host.accelerators if a.numa_node == n.id],
            }
            for n in host.numa_nodes
        ],
        "accelerators": [
            {
                "vendor": a.vendor.value,
                "logical_id": a.logical_id,
                "card_id": a.npu_id,
                "npu_id": a.npu_id,  # card_id's old name, for one schema version
                "chip_id": a.chip_id,
                "name": a.name,
                "bus_id": a.bus_id,
                "numa_node": a.numa_node,
                "cpu_affinity": f(a.cpu_affinity),
                "cpu_affinity_source": a.affinity_source.value if a.affinity_source else None,
                "tool_cpu_affinity": None if a.tool_affinity is None else f(a.tool_affinity),
                "numa_node_source": a.numa_source.value if a.numa_source else None,
                "cpus_allowed_in_affinity": f(a.cpu_affinity & host.cpus_allowed),
                "health": a.health,
                "driver": a.driver,
            }
            for a in host.accelerators
        ],
        "links": vendors.links_json(host.links),
        "processes": [
            {
                "card_id": p.npu_id,
                "npu_id": p.npu_id,  # card_id's old name, for one schema version
                "chip_id": p.chip_id,
                "pid": p.pid,
                "name": p.name,
                "mem_mib": p.mem_mib,
            }
            for p in host.processes
        ],
        "warnings": topo_warnings(host),
    }
    # the typed body is what documents.TopoDocument (and schemas/topo.schema.json) describe
    return {**({"host": identity} if identity is not None else {}), **body}


def topo_warnings(host: Host) -> list[str]:
    """What an operator must know, in words."""
    from ascendtune.core.cpulist import format_cpulist as f

    out: list[str] = []
    # GPUs come in fours and eights on one node: one line for all GPUs a warning names
    merged: dict[tuple[str, str], list[int]] = {}
    for a in host.accelerators:
        if not a.cpu_affinity:
            continue
        said: list[str] = []
        inside = a.cpu_affinity & host.cpus_allowed
        if not inside:
            said.append(
                f"its CPU affinity {f(a.cpu_affinity)} lies wholly outside "
                f"the cpuset {f(host.cpus_allowed)}; a worker on it runs on remote CPUs"
            )
        elif (
            inside != a.cpu_affinity
            and host.allowed_from_status
            and host.cpus_allowed != host.cpus_online
        ):
            said.append(f"only {f(inside)} of its affinity {f(a.cpu_affinity)} is in the cpuset")
        nodes = host.nodes_of(a.cpu_affinity)
        if len(nodes) > 1:
            said.append(
                f"affinity {f(a.cpu_affinity)} spans NUMA nodes {','.join(map(str, nodes))}"
            )
        prof = vendors.profile(a.vendor)
        if prof.merge_device_notes:
            for text in said:
                merged.setdefault((prof.word, text), []).append(a.logical_id)
        else:
            out.extend(f"{prof.word} {a.logical_id}: {text}" for text in said)
    out.extend(f"{word} {f(ids)}: {text}" for (word, text), ids in merged.items())
    cpuless = [n.id for n in host.numa_nodes if not n.cpus]
    if cpuless:
        why = vendors.vendor_of(host).cpuless_node_note
        out.append(
            f"NUMA node{'s' if len(cpuless) > 1 else ''} {','.join(map(str, cpuless))} "
            f"hold{'' if len(cpuless) > 1 else 's'} no online CPU (memory-only, or every CPU "
            f"offline); {why}"
        )
    memless = [n.id for n in host.numa_nodes if n.cpus and n.mem_mib == 0]
    if memless:
        out.append(
            f"NUMA nodes {','.join(map(str, memless))} have CPUs but no memory: `numactl --membind` to them fails"
        )
    if host.cpus_offline:
        out.append(f"CPUs {f(host.cpus_offline)} are offline")
    out.extend(host.notes)
    return out
