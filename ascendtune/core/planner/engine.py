"""make_plan: choose the devices and ranks, run a policy, measure the result, explain its flaws."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ascendtune.core import vendors
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, PlanError
from ascendtune.core.model import Accelerator, Host, Soc, Vendor
from ascendtune.core.planner import numa, torch_modes, vllm_ascend
from ascendtune.core.planner.findings import explain
from ascendtune.core.planner.model import (
    A5_CLUSTERS,
    GLOBAL_SLICE,
    NUMA_LOCAL,
    NUMA_SLICE,
    TOPO_AFFINITY,
    Overlap,
    Plan,
    PlanRequest,
    RankPlan,
    Roles,
)


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    summary: str
    vendors: tuple[Vendor, ...]


_EVERY_VENDOR = tuple(Vendor)

POLICIES: dict[str, PolicyInfo] = {
    p.name: p
    for p in (
        PolicyInfo(
            "vllm-ascend",
            "exactly what vLLM-Ascend's enable_cpu_binding does (topo_affinity / global_slice / "
            "Ascend 950 clusters), flaws included, to predict or reproduce it",
            (Vendor.HUAWEI,),
        ),
        PolicyInfo(
            "numa-local",
            "each rank on its own device's NUMA node; devices on one node split it evenly in whole "
            "physical cores; never crosses a node",
            _EVERY_VENDOR,
        ),
        PolicyInfo(
            "numa-slice",
            "vLLM-Ascend's global slicing made NUMA-aware: devices dealt to nodes, slices never "
            "cross a node, the same for every process sharing the cpuset (for A3 or no affinity)",
            _EVERY_VENDOR,
        ),
        # the modes of `torchrun --numa-binding` (torch.numa.binding), for GPU users' habits
        PolicyInfo(
            "node",
            "torchrun's node mode: every CPU of the device's NUMA node (ranks on a node share them)",
            _EVERY_VENDOR,
        ),
        PolicyInfo(
            "socket",
            "torchrun's socket mode: every CPU of the NUMA nodes on the device's socket",
            _EVERY_VENDOR,
        ),
        PolicyInfo(
            "exclusive",
            "torchrun's exclusive mode: the node's physical cores split evenly among its devices",
            _EVERY_VENDOR,
        ),
        PolicyInfo(
            "core-complex",
            "torchrun's core-complex mode: one last-level-cache group of the node per device",
            _EVERY_VENDOR,
        ),
    )
}


@dataclass(frozen=True)
class _Ctx:
    host: Host
    vendor: Vendor
    devices: tuple[Accelerator, ...]
    all_ids: list[int]
    visible: tuple[int, ...]  # as given
    usable: CpuSet  # allowed minus reserved
    soc: Soc


def _context(host: Host, req: PlanRequest) -> _Ctx:
    prof = vendors.vendor_of(host)
    devices = prof.accelerators(host)
    if not devices:
        failing = f" ({host.tool_errors[0]})" if host.tool_errors else ""
        raise MissingError(
            f"no accelerator found on this host: nothing to plan{failing}",
            "on a machine without NPUs try `--demo atlas-800i-a2`",
        )
    vendor = prof.vendor
    all_ids = sorted(d.logical_id for d in devices)
    visible = req.visible if req.visible is not None else tuple(all_ids)
    unknown = [v for v in visible if v not in all_ids]
    if unknown:
        raise InvalidInput(
            f"{req.visible_source} names device {unknown[0]}, which this host does not have "
            f"(devices: {','.join(map(str, all_ids))})"
        )
    if not visible:
        raise InvalidInput("no visible device: the device list is empty")
    if req.ranks is not None:
        if req.ranks < 1 or req.ranks > len(visible):
            raise InvalidInput(
                f"--ranks {req.ranks}: between 1 and {len(visible)} ranks fit the visible devices"
            )
        visible = visible[: req.ranks]
    bad = req.reserve - host.cpus_online
    if bad:
        raise InvalidInput(f"--reserve names CPUs {format_cpulist(bad)} that are not online")
    usable = host.cpus_allowed - req.reserve
    if not usable:
        raise InvalidInput("--reserve leaves no CPU of the cpuset to plan with")
    soc = req.soc or prof.soc_of(host)
    return _Ctx(host, vendor, devices, all_ids, visible, usable, soc)


def _rank_plan(
    host: Host, rank: int, device: int, logical: int, cpus: list[int], roles: Roles
) -> RankPlan:
    dev = host.accelerator(device)
    dnode = numa.home_node(host, dev) if dev else None
    on_node = sum(1 for c in cpus if host.node_of(c) == dnode) if dnode is not None else 0
    return RankPlan(
        rank=rank,
        device=device,
        logical_id=logical,
        cpus=tuple(cpus),
        roles=roles,
        numa_nodes=host.nodes_of(frozenset(cpus)),
        device_node=dnode,
        locality=(on_node / len(cpus) if cpus else 0.0) if dnode is not None else None,
    )


@dataclass(frozen=True)
class _Result:
    mode: str
    ranks: list[RankPlan]
    notes: list[str]
    hidden_pools: dict[int, tuple[int, ...]] = field(default_factory=dict)


def _plan_vllm(ctx: _Ctx, req: PlanRequest) -> _Result:
    host = ctx.host
    affinity = {d.logical_id: d.tool_affinity for d in ctx.devices if d.tool_affinity is not None}
    running = sorted(ctx.visible)
    mode, notes = vllm_ascend.choose_mode(ctx.soc, affinity)
    hidden: dict[int, tuple[int, ...]] = {}
    if mode == TOPO_AFFINITY:
        every = vllm_ascend.topo_affinity_pools(host, ctx.all_ids, running, affinity, ctx.usable)
        pools = {n: every[n] for n in running}
        hidden = {n: tuple(p) for n, p in every.items() if n not in running}
    elif mode == GLOBAL_SLICE:
        pools = vllm_ascend.global_slice_pools(ctx.all_ids, running, affinity, ctx.usable)
    else:
        pools = vllm_ascend.a5_cluster_pools(host, ctx.all_ids, running, affinity, ctx.usable)
    ranks: list[RankPlan] = []
    for r, device in enumerate(ctx.visible):
        # vLLM-Ascend indexes the sorted running list by rank, whatever order the devices had
        logical = running[r]
        pool = pools[logical]
        if mode == A5_CLUSTERS:
            roles = Roles(main=tuple(pool))  # no IRQ reservation, no acl/release split on 950
        else:
            roles = vllm_ascend.split_roles(pool, npu=logical)
        ranks.append(_rank_plan(host, r, device, logical, pool, roles))
    if req.reserve:
        notes.append(
            f"--reserve {format_cpulist(req.reserve)} taken out of the cpuset, as if vLLM ran "
            "under a cpuset without them"
        )
    if not req.irq_reserve and mode != A5_CLUSTERS:
        notes.append("--no-irq-reserve does not apply: vLLM-Ascend always keeps 2 CPUs for IRQs")
    return _Result(mode, ranks, notes, hidden)


def _plan_cores(
    ctx: _Ctx,
    req: PlanRequest,
    pick: Callable[[_Ctx, list[int]], dict[int, list[numa.Core]]],
    mode: str,
) -> _Result:
    shares = pick(ctx, list(ctx.visible))
    notes: list[str] = []
    extra: dict[int, list[numa.Core]] = {}
    if req.spill and mode == NUMA_LOCAL:
        extra = numa.spill_cores(ctx.host, ctx.devices, list(ctx.visible), ctx.usable)
        notes.append(
            "--spill: cores of nodes without a device go to the nearest device node on the same "
            "socket, for main threads only; IRQ, acl and release stay on the device's node"
        )
    elif req.spill:
        notes.append(f"--spill applies to numa-local only; {mode} ignores it")
    ranks = []
    for r, device in enumerate(ctx.visible):
        cores = shares[device]
        cpus = [c for core in cores for c in core]
        spilled = [c for core in extra.get(device, []) for c in core]
        if vendors.profile(ctx.vendor).thread_roles:
            roles = numa.roles_from_cores(cores, irq=req.irq_reserve)
            if spilled:
                roles = replace(roles, main=tuple(sorted(roles.main + tuple(spilled))))
            cpus += spilled
        else:
            cpus += spilled
            if not cpus:
                raise PlanError(
                    f"{vendors.profile(ctx.vendor).word} {device} gets no CPU: its NUMA node has fewer physical cores in the "
                    "cpuset than devices sharing it",
                    "widen the cpuset, run fewer ranks, or use --policy node (shared CPUs)",
                )
            roles = Roles(main=tuple(cpus))  # CUDA has no acl/release threads, no NPU IRQs
        ranks.append(_rank_plan(ctx.host, r, device, device, cpus, roles))
    return _Result(mode, ranks, notes)


def _plan_torch(ctx: _Ctx, mode: str) -> _Result:
    pools = torch_modes.torch_pools(ctx.host, mode, ctx.devices, list(ctx.visible), ctx.usable)
    ranks = [
        _rank_plan(ctx.host, r, device, device, pools[device], Roles(main=tuple(pools[device])))
        for r, device in enumerate(ctx.visible)
    ]
    notes = ["roles are main-only: torchrun binds every thread of a rank to one set"]
    if mode in ("node", "socket"):
        notes.append(f"{mode} mode shares CPUs between ranks on one {mode} by design")
    return _Result(mode.replace("-", "_"), ranks, notes)


def _local(ctx: _Ctx, ranks: list[int]) -> dict[int, list[numa.Core]]:
    return numa.numa_local_pools(ctx.host, ctx.devices, ranks, ctx.usable)


def _slice(ctx: _Ctx, ranks: list[int]) -> dict[int, list[numa.Core]]:
    return numa.numa_slice_pools(ctx.host, ctx.devices, ranks, ctx.usable)[0]


def make_plan(host: Host, req: PlanRequest) -> Plan:
    """Plan req's ranks on host under req.policy; raises PlanError when no plan is possible."""
    if req.policy not in POLICIES:
        raise InvalidInput(f"unknown policy {req.policy!r} (known: {', '.join(POLICIES)})")
    ctx = _context(host, req)
    if ctx.vendor not in POLICIES[req.policy].vendors:
        raise InvalidInput(
            f"policy {req.policy} plans Ascend NPUs; this host has {ctx.vendor.value} devices",
            "use --policy numa-local or numa-slice",
        )
    if req.policy == "vllm-ascend":
        res = _plan_vllm(ctx, req)
    elif req.policy == "numa-local":
        res = _plan_cores(ctx, req, _local, NUMA_LOCAL)
    elif req.policy in torch_modes.MODES:
        res = _plan_torch(ctx, req.policy)
    else:
        res = _plan_cores(ctx, req, _slice, NUMA_SLICE)
    ranks = res.ranks
    overlaps = tuple(
        Overlap((a.rank, b.rank), a.cpuset & b.cpuset)
        for i, a in enumerate(ranks)
        for b in ranks[i + 1 :]
        if a.cpuset & b.cpuset
    )
    used = frozenset(c for rp in ranks for c in rp.cpus)
    plan = Plan(
        policy=req.policy,
        mode=res.mode,
        soc=ctx.soc,
        vendor=ctx.vendor.value,
        ranks=tuple(ranks),
        cpus_allowed=host.cpus_allowed,
        reserved=req.reserve,
        overlaps=overlaps,
        idle_cpus=ctx.usable - used,
        notes=tuple(res.notes),
        visible=ctx.visible,
        total_devices=len(ctx.all_ids),
        hidden_pools=res.hidden_pools,
    )
    return replace(plan, findings=tuple(explain(host, plan)))
