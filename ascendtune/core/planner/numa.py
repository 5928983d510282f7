"""Better policies: `numa-local` and `numa-slice`.

Both hand out whole physical cores (SMT siblings stay together), never give one CPU to two
ranks, never cross a NUMA node, and depend only on the host and the cpuset, so every process
that shares a cpuset computes the same partition.
"""

from __future__ import annotations

from collections.abc import Sequence

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Accelerator, Host
from ascendtune.core.planner.model import Roles

Core = tuple[int, ...]  # the usable threads of one physical core, ascending


def cores_of(host: Host, cpus: CpuSet) -> list[Core]:
    """Group CPUs into physical cores (by SMT siblings), ordered by their lowest CPU."""
    seen: set[int] = set()
    out: list[Core] = []
    table = host.cpus
    for c in sorted(cpus):
        if c in seen:
            continue
        cpu = table.get(c)
        sibs = cpu.siblings & cpus if cpu else frozenset({c})
        core = tuple(sorted(sibs if c in sibs else sibs | {c}))
        seen.update(core)
        out.append(core)
    return out


def home_node(host: Host, dev: Accelerator) -> int | None:
    """The NUMA node a device hangs off: sysfs/tool numa_node, else the node of its affinity."""
    if dev.numa_node is not None and any(n.id == dev.numa_node for n in host.numa_nodes):
        return dev.numa_node
    nodes = host.nodes_of(dev.cpu_affinity)
    return nodes[0] if len(nodes) == 1 else None


def split_cores(cores: Sequence[Core], k: int) -> list[list[Core]]:
    """Split cores into k contiguous, as-even-as-possible shares (the first ones take the rest)."""
    base, extra = divmod(len(cores), k)
    out: list[list[Core]] = []
    start = 0
    for i in range(k):
        take = base + (1 if i < extra else 0)
        out.append(list(cores[start : start + take]))
        start += take
    return out


def roles_from_cores(cores: list[Core], *, irq: bool) -> Roles:
    """Roles on whole cores when there are enough: IRQ on the first core (first two CPUs without
    SMT), acl and release each on their own core at the end, main on every core between."""
    cpus = [c for core in cores for c in core]
    smt = any(len(core) > 1 for core in cores)
    if smt and len(cores) >= (4 if irq else 3):
        irq_cpus = tuple(cores[0]) if irq else ()
        body = cores[1:] if irq else cores
        return Roles(
            irq=irq_cpus,
            main=tuple(c for core in body[:-2] for c in core),
            acl=tuple(body[-2]),
            release=tuple(body[-1]),
        )
    need = 5 if irq else 3
    if len(cpus) < need:
        raise PlanError(
            f"a rank's share has {len(cpus)} CPUs ({format_cpulist(cpus) or 'none'}); "
            f"{need} are needed ({'2 IRQ + ' if irq else ''}main + acl + release)",
            "widen the cpuset, run fewer ranks per NUMA node, or use --no-irq-reserve",
        )
    return Roles(
        irq=tuple(cpus[:2]) if irq else (),
        main=tuple(cpus[2:-2] if irq else cpus[:-2]),
        acl=(cpus[-2],),
        release=(cpus[-1],),
    )


def numa_local_pools(
    host: Host, devices: Sequence[Accelerator], ranks: list[int], usable: CpuSet
) -> dict[int, list[Core]]:
    """Each rank's device node's usable cores, split evenly among the devices on that node.

    Sharers are the devices on the node that are used here, or hidden but whose node meets the
    cpuset (another service may use them): the rule vLLM-Ascend uses against overlap.
    """
    homes: dict[int, int | None] = {d.logical_id: home_node(host, d) for d in devices}
    for r in ranks:
        if homes[r] is None:
            raise PlanError(
                f"device {r}'s NUMA node is unknown (no affinity, no numa_node in sysfs)",
                "use --policy numa-slice, which needs no topology",
            )
    node_cpus = {n.id: n.cpus & usable for n in host.numa_nodes}
    shares: dict[int, list[Core]] = {}
    for node in sorted({h for r in ranks if (h := homes[r]) is not None}):
        pool = node_cpus.get(node, frozenset())
        if not pool:
            users = [r for r in ranks if homes[r] == node]
            raise PlanError(
                f"device {users[0]} sits on NUMA node {node}, which has no CPU in the usable set "
                f"{format_cpulist(usable)}",
                "give the process CPUs of that node, or use --policy numa-slice",
            )
        # every device on this node shares it, hidden ones too: their node meets the cpuset
        sharers = sorted(d for d, h in homes.items() if h == node)
        parts = split_cores(cores_of(host, pool), len(sharers))
        for d, part in zip(sharers, parts, strict=True):
            if d in ranks:
                shares[d] = part
    return shares


def spill_cores(
    host: Host, devices: Sequence[Accelerator], ranks: list[int], usable: CpuSet
) -> dict[int, list[Core]]:
    """`numa-local --spill`: the cores of nodes that host no device, lent to devices nearby.

    Each such node goes to the nearest node (by id) on the same socket that hosts devices, and
    is split evenly among that node's devices, hidden ones included, as their own node is; a
    node never spills across sockets. Returns the extra cores of each rank's device.
    """
    homes = {d.logical_id: home_node(host, d) for d in devices}
    device_nodes = {h for h in homes.values() if h is not None}

    def sockets(node_cpus: CpuSet) -> set[int]:
        return {host.cpus[c].socket for c in node_cpus if c in host.cpus}

    extra: dict[int, list[Core]] = {}
    by_id = {n.id: n for n in host.numa_nodes}
    for node in host.numa_nodes:
        pool = node.cpus & usable
        if node.id in device_nodes or not pool:
            continue
        near = [d for d in device_nodes if d in by_id and sockets(by_id[d].cpus) & sockets(pool)]
        if not near:
            continue
        target = min(near, key=lambda d: (abs(d - node.id), d))
        sharers = sorted(d for d, h in homes.items() if h == target)
        for d, part in zip(sharers, split_cores(cores_of(host, pool), len(sharers)), strict=True):
            if d in ranks:
                extra.setdefault(d, []).extend(part)
    return extra


def _deal_proportional(ids: list[int], nodes: list[tuple[int, list[Core]]]) -> dict[int, int]:
    """Deal devices, in id order, to nodes in proportion to their cores (largest remainder), so
    consecutive ids share a node, as global slicing gives consecutive ids consecutive CPUs."""
    total_cores = sum(len(c) for _, c in nodes)
    quotas = [len(c) * len(ids) / total_cores for _, c in nodes]
    counts = [int(q) for q in quotas]
    order = sorted(range(len(nodes)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: len(ids) - sum(counts)]:
        counts[i] += 1
    dealt: dict[int, int] = {}
    it = iter(ids)
    for (nid, _), cnt in zip(nodes, counts, strict=True):
        for _ in range(cnt):
            dealt[next(it)] = nid
    return dealt


def numa_slice_pools(
    host: Host, devices: Sequence[Accelerator], ranks: list[int], usable: CpuSet
) -> tuple[dict[int, list[Core]], dict[int, int]]:
    """Global slicing made NUMA-aware: every device is dealt to one node, never a slice across two.

    A device whose node holds usable CPUs stays there (hidden ones too, so services sharing a
    cpuset agree). Devices whose node is unknown are dealt, in id order, to the node with the
    most cores per device; when no device has a node in the cpuset at all, every device is dealt
    in proportion to the nodes' cores: global slicing with node boundaries. Hidden devices whose
    node lies outside the cpuset belong to other cpusets and take nothing, unless a rank's device
    lies outside too (a container given CPUs far from its NPUs): then all of them are dealt, so
    the partition still depends on the host and the cpuset only.
    Returns the shares and the node each device was dealt to.
    """
    nodes = [(n.id, cores_of(host, n.cpus & usable)) for n in host.numa_nodes if n.cpus & usable]
    if not nodes:
        raise PlanError(f"no usable CPU ({format_cpulist(usable) or 'empty set'})")
    cores = dict(nodes)
    ids = sorted(d.logical_id for d in devices)
    homes = {d.logical_id: home_node(host, d) for d in devices}
    dealt = {d: h for d in ids if (h := homes[d]) is not None and h in cores}
    if not dealt:
        dealt = _deal_proportional(ids, nodes)
    else:
        unknown = [d for d in ids if homes[d] is None]
        far = [d for d in ids if d not in dealt and homes[d] is not None]
        # far hidden devices belong to other cpusets; only a far rank makes them all count
        homeless = sorted(unknown + far) if any(r in far for r in ranks) else unknown
        members = {nid: sum(1 for h in dealt.values() if h == nid) for nid in cores}
        for d in homeless:
            best = max(cores, key=lambda n: (len(cores[n]) / (members[n] + 1), -n))
            dealt[d] = best
            members[best] += 1
    shares: dict[int, list[Core]] = {}
    for nid, node_cores in nodes:
        on_node = [d for d in ids if dealt.get(d) == nid]
        if not on_node:
            continue
        for d, part in zip(on_node, split_cores(node_cores, len(on_node)), strict=True):
            if d in ranks:
                shares[d] = part
    return shares, dealt
