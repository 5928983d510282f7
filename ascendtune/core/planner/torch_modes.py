"""The binding modes users know from `torchrun --numa-binding` (torch.numa.binding, PyTorch 2.9+).

`node`: every CPU of the device's NUMA node (ranks on one node share them); `socket`: every CPU
of the nodes of the device's socket; `exclusive`: the node's physical cores split evenly among
its devices (lowest device ids take the remainder); `core-complex`: one last-level-cache group
(an L3 "core complex") of the node per device, the biggest groups first, wrapping when devices
outnumber groups. All are cut to the cpuset. They apply to NPUs and GPUs alike; roles are
main-only, as torch binds every thread of a rank to one set.

One deliberate difference: the devices sharing a node are every device of the host on it, also
those the job does not see. torch counts only the GPUs CUDA_VISIBLE_DEVICES shows, so two jobs
given GPUs 0,1 and 2,3 of one node both take the node's first half; here they do not overlap.
Without CUDA_VISIBLE_DEVICES the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Accelerator, Host
from ascendtune.core.planner.numa import Core, cores_of, home_node

MODES = ("node", "socket", "exclusive", "core-complex")


def _home(host: Host, dev: Accelerator) -> int | None:
    node = home_node(host, dev)
    if node is None and len(host.cpu_nodes) == 1:
        return host.cpu_nodes[0].id  # torch reads numa_node -1 as node 0 on one-node hosts
    return node


def _node(host: Host, dev: Accelerator) -> int:
    node = _home(host, dev)
    if node is None:
        raise PlanError(
            f"device {dev.logical_id}'s NUMA node is unknown (sysfs numa_node is -1 and no affinity)",
            "use --policy numa-slice, which needs no topology",
        )
    return node


def _physical_cores(host: Host, pool: CpuSet) -> list[Core]:
    """The pool's cores in torch's order: by the lowest thread of the whole core, so a core
    whose first thread lies outside the cpuset keeps its place."""
    return sorted(
        cores_of(host, pool),
        key=lambda core: min(host.cpus[core[0]].siblings) if core[0] in host.cpus else core[0],
    )


def _node_cpus(host: Host, node: int, usable: CpuSet) -> CpuSet:
    for n in host.numa_nodes:
        if n.id == node:
            return n.cpus & usable
    return frozenset()


def torch_pools(
    host: Host, mode: str, devices: Sequence[Accelerator], ranks: list[int], usable: CpuSet
) -> dict[int, list[int]]:
    by_id = {d.logical_id: d for d in devices}
    # the same node for a device as _node gives it, so a device is always among its peers
    homes = {d.logical_id: _home(host, d) for d in devices}
    out: dict[int, list[int]] = {}
    for dev_id in ranks:
        node = _node(host, by_id[dev_id])
        pool = _node_cpus(host, node, usable)
        if not pool:
            raise PlanError(
                f"device {dev_id} sits on NUMA node {node}, which has no CPU in the usable set "
                f"{format_cpulist(usable)}"
            )
        if mode == "node":
            cpus = pool
        elif mode == "socket":
            sockets = {host.cpus[c].socket for c in pool if c in host.cpus}
            cpus = frozenset(
                c
                for n in host.numa_nodes
                if {host.cpus[x].socket for x in n.cpus & usable if x in host.cpus} & sockets
                for c in n.cpus & usable
            )
        elif mode == "exclusive":
            peers = sorted(d for d, h in homes.items() if h == node) or [dev_id]
            cores = _physical_cores(host, pool)
            per, extra = divmod(len(cores), len(peers))
            if per < 1:
                raise PlanError(
                    f"node {node} has {len(cores)} physical cores in the cpuset for "
                    f"{len(peers)} devices; exclusive mode needs one core each at least"
                )
            i = peers.index(dev_id)
            start = i * per + min(i, extra)
            take = per + (1 if i < extra else 0)
            cpus = frozenset(c for core in cores[start : start + take] for c in core)
        elif mode == "core-complex":
            peers = sorted(d for d, h in homes.items() if h == node) or [dev_id]
            groups: dict[int, set[int]] = {}
            for c in pool:
                llc = host.cpus[c].llc if c in host.cpus else frozenset()
                key = min(llc) if llc else min(host.cpus[c].siblings) if c in host.cpus else c
                groups.setdefault(key, set()).add(c)
            if all(not host.cpus[c].llc for c in pool if c in host.cpus):
                raise PlanError(
                    f"no last-level cache topology for node {node}'s CPUs "
                    "(sys/devices/system/cpu/cpuN/cache): core-complex mode cannot group them",
                    "use --policy exclusive",
                )
            ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
            cpus = frozenset(ordered[peers.index(dev_id) % len(ordered)][1])
        else:
            raise PlanError(f"unknown torch binding mode {mode!r}")
        out[dev_id] = sorted(cpus)
    return out
