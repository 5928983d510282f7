"""make_plan: choose the devices and ranks, run a policy, measure the result, explain its flaws."""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from ascendtune.core import policies, vendors
from ascendtune.core import vllm_ascend as va
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, PlanError
from ascendtune.core.findings import Finding
from ascendtune.core.model import Accelerator, Host, Soc, Vendor
from ascendtune.core.planner import impls, numa, torch_modes, vllm_ascend, vllm_numa_split
from ascendtune.core.planner.findings import explain
from ascendtune.core.planner.model import (
    A5_CLUSTERS,
    GLOBAL_SLICE,
    NO_BINDING,
    NUMA_BALANCED,
    NUMA_LOCAL,
    NUMA_SLICE,
    TOPO_AFFINITY,
    Overlap,
    Plan,
    PlanRequest,
    RankPlan,
    Roles,
)

if TYPE_CHECKING:
    from ascendtune.core.planner.trace import VllmTrace


class _Ctx(NamedTuple):
    host: Host
    vendor: Vendor
    devices: tuple[Accelerator, ...]
    all_ids: list[int]
    visible: tuple[int, ...]  # as given
    usable: CpuSet  # allowed minus reserved
    soc: Soc
    # ASCEND_RT_VISIBLE_DEVICES as the job sets it (None: unset); `visible` above is the
    # devices the job drives, in rank order (the same list unless DP or --device-ids is used)
    env_visible: tuple[int, ...] | None = None
    dp: int = 1
    world: int = 0  # ranks per DP engine (tp × pp); 0: every device is one rank of one engine


# where the planner looked, in its error; a front end reading a snapshot says so instead
NO_ACCELERATOR_WHERE = "on this host"


def _context(host: Host, req: PlanRequest) -> _Ctx:
    prof = vendors.vendor_of(host)
    devices = prof.accelerators(host)
    if not devices:
        failing = f" ({host.tool_errors[0]})" if host.tool_errors else ""
        raise MissingError(
            f"no accelerator found {NO_ACCELERATOR_WHERE}: nothing to plan{failing}",
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
    env_visible = req.visible
    dp, world = 1, 0
    if req.device_ids is not None:
        bad_ids = [d for d in req.device_ids if d not in all_ids]
        if bad_ids or not req.device_ids:
            raise InvalidInput(
                f"--device-ids names device {bad_ids[0] if bad_ids else '(none)'}, which this "
                f"host does not have (devices: {','.join(map(str, all_ids))})"
            )
        visible = req.device_ids
    if req.dp is not None or req.tp is not None or req.pp is not None:
        dp, pp = req.dp or 1, req.pp or 1
        if dp < 1 or pp < 1 or (req.tp is not None and req.tp < 1):
            raise InvalidInput("--dp, --tp and --pp must be at least 1")
        tp = req.tp if req.tp is not None else max(1, len(visible) // (dp * pp))
        world = tp * pp
        if dp * world > len(visible):
            raise InvalidInput(
                f"DP {dp} × TP {tp} × PP {pp} = {dp * world} ranks, but the job sees "
                f"{len(visible)} devices ({','.join(map(str, visible))})",
                "give more devices (--visible-devices / --device-ids) or smaller sizes",
            )
        visible = visible[: dp * world]
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
    return _Ctx(host, vendor, devices, all_ids, visible, usable, soc, env_visible, dp, world)


_NODE = attrgetter("node")


def _rank_plan(
    host: Host, rank: int, device: int, logical: int, cpus: list[int], roles: Roles
) -> RankPlan:
    dev = host.accelerator(device)
    dnode = numa.home_node(host, dev) if dev else None
    # each CPU's node (None: unknown), looked up by map: no Python loop over every rank's CPUs
    # (a rank of 128 CPUs: 10.7 -> 7.0 us)
    found = list(map(_NODE, filter(None, map(host.cpus.get, cpus))))
    nodes = set(found)
    nodes.discard(None)
    on_node = found.count(dnode) if dnode is not None else 0
    return RankPlan(
        rank=rank,
        device=device,
        logical_id=logical,
        cpus=tuple(cpus),
        roles=roles,
        numa_nodes=tuple(sorted(nodes)),
        device_node=dnode,
        locality=(on_node / len(cpus) if cpus else 0.0) if dnode is not None else None,
    )


class _Result(NamedTuple):
    mode: str
    ranks: list[RankPlan]
    notes: list[str]
    hidden_pools: Mapping[int, tuple[int, ...]] = MappingProxyType({})
    findings: Sequence[Finding] = ()  # version-specific
    target: str | None = None


def _host_busy(ctx: _Ctx) -> set[int]:
    """Logical ids of the NPUs npu-smi's process table lists (rows are by card and chip)."""
    out: set[int] = set()
    for p in ctx.host.processes:
        for d in ctx.devices:
            if d.npu_id == p.npu_id and (p.chip_id is None or d.chip_id in (None, p.chip_id)):
                out.add(d.logical_id)
                break
    return out


def _plan_vllm(ctx: _Ctx, req: PlanRequest, trace: "VllmTrace | None" = None) -> _Result:
    """vLLM-Ascend's binding as the target version does it: per DP engine, the running list it
    sees, the NPU each local rank binds (sorted busy list or the device vLLM assigned), pools.
    trace, when given, receives every step's inputs and results (the plan stays the same)."""
    if trace is not None:  # the trace records are only built for `explain binding`
        from ascendtune.core.planner.trace import PoolTrace, RankTrace
    host = ctx.host
    target = req.target or va.PLANNER_DEFAULT
    # the version's binding; its allocator is named by b.impl (cpu_binding.py's blob), the seam
    # where each implementation's own pools plug in (core/planner/impls.py)
    b = target.binding
    if not b.ships:
        return _no_binding(ctx, req, target)
    impl = impls.of(target)
    if impl.allocator == impls.NUMA_SPLIT:
        got = vllm_numa_split.plan(
            ctx.host, ctx.devices, list(ctx.visible), ctx.env_visible, req, target
        )
        return got._replace(findings=[*_target_findings(req, target), *got.findings])
    affinity = vllm_ascend.affinity_read(ctx.devices, host)
    mode, notes = vllm_ascend.choose_mode(ctx.soc, affinity, impl)
    irq = impl.irq_cpus(ctx.soc)
    least = impl.least_pool(ctx.soc)
    by_npu_id = impl.rank_npu == impls.NPU_ID
    jobs = list(ctx.visible)  # the devices the job drives, in rank order
    world = ctx.world or len(jobs)
    assigned = ctx.dp > 1 or req.device_ids is not None  # vLLM publishes assigned device ids
    # binding runs after warm-up, when the job's own NPUs show in npu-smi's table
    busy = set(req.busy) if req.busy is not None else _host_busy(ctx) | set(jobs)
    all_ids, positional = list(ctx.all_ids), None
    if impl.positional_npu_smi:
        # 0.14.0rc1-0.21.0rc1 read `npu-smi info -m` by position: where its third cell is not
        # the Chip Logic ID, their logical ids (every NPU, and the busy ones) are those cells
        all_ids, busy, positional = vllm_ascend.positional_ids(host, all_ids, busy)
    env = ctx.env_visible
    cache: dict[tuple[int, ...], dict[int, list[int]]] = {}
    hidden: dict[int, tuple[int, ...]] = {}
    if trace is not None:
        trace.target, trace.dp_mode = target.name, b.dp
        trace.npu_of_rank = va.DEVICE_ID if by_npu_id else va.SORTED_BUSY
        trace.mode, trace.mode_notes, trace.soc = mode, list(notes), ctx.soc.value
        trace.all_ids, trace.jobs, trace.env_visible = list(all_ids), list(jobs), env
        trace.device_ids, trace.busy = req.device_ids, sorted(busy)
        trace.busy_source = "--busy" if req.busy is not None else "npu-smi's table + the job's NPUs"
        trace.affinity, trace.allowed, trace.usable = dict(affinity), host.cpus_allowed, ctx.usable
        trace.world, trace.dp = world, ctx.dp

    def pools_for(running: list[int]) -> dict[int, list[int]]:
        key = tuple(running)
        if key not in cache:
            pt = PoolTrace(key) if trace is not None else None
            if pt is not None and trace is not None:
                trace.pools[key] = pt
            if mode == TOPO_AFFINITY:
                every = vllm_ascend.topo_affinity_pools(
                    host, all_ids, running, affinity, ctx.usable, pt, hidden=impl.hidden_npus
                )
                cache[key] = every
                if not hidden:
                    hidden.update({n: tuple(p) for n, p in every.items() if n not in running})
            elif mode == GLOBAL_SLICE:
                cache[key] = vllm_ascend.global_slice_pools(
                    all_ids, running, affinity, ctx.usable, pt, least=least
                )
            elif mode == NUMA_BALANCED:
                cache[key] = vllm_ascend.numa_balanced_pools(host, running, ctx.usable)
            else:
                cache[key] = vllm_ascend.a5_cluster_pools(
                    host, all_ids, running, affinity, ctx.usable
                )
        return cache[key]

    ranks: list[RankPlan] = []
    own: dict[int, tuple[int, ...]] = {}  # the pool each driven NPU would get as its own
    for d in range(max(1, len(jobs) // world)):
        engine = jobs[d * world : (d + 1) * world]
        # what ASCEND_RT_VISIBLE_DEVICES holds in this engine's workers
        if b.dp == va.DP_NARROWED and ctx.dp > 1:
            seen = engine  # vLLM 0.23 narrows it per DP engine
        else:
            seen = list(env) if env is not None else list(all_ids)
        running = sorted(n for n in busy if n in seen)
        pools = pools_for(running) if running else {}
        for local, device in enumerate(engine):
            rank = d * world + local
            skipped: str | None = None
            if not running:
                skipped = (
                    "npu-smi's process table lists none of the visible NPUs "
                    '("Can not get running npu info.")'
                )
                logical, how = device, "none: no busy NPU"
            elif not by_npu_id:
                how = f"entry {local} (the local rank) of the sorted busy list"
                if local < len(running):
                    logical = running[local]
                else:
                    logical = device
                    skipped = (
                        f"the sorted busy list [{_join(running)}] has no entry {local} (IndexError)"
                    )
            else:
                # device_id_to_physical_device_id(local_rank): assigned id, else the entry of
                # ASCEND_RT_VISIBLE_DEVICES at that position, else the local rank itself
                if assigned:
                    logical, how = device, "the device id vLLM assigned the rank"
                elif env is not None:
                    logical = env[local]
                    how = f"entry {local} of ASCEND_RT_VISIBLE_DEVICES"
                else:
                    logical, how = local, "the local rank itself (no device list)"
                # only running NPUs keep a pool (the hidden ones' pools only shape the split)
                if logical not in running:
                    skipped = f"NPU {logical} has no process in npu-smi's table, so it has no pool"
            if trace is not None:
                trace.ranks.append(
                    RankTrace(
                        rank, d, local, device, tuple(seen), tuple(running), logical, how, skipped
                    )
                )
            if skipped is not None:
                rp = _rank_plan(host, rank, device, logical, [], Roles())
                ranks.append(
                    replace(rp, locality=None, dp_rank=d, local_rank=local, skipped=skipped)
                )
                continue
            if logical not in pools:
                # a pool-less running NPU (numa_balanced deals too few nodes): KeyError
                rp = _rank_plan(host, rank, device, logical, [], Roles())
                why = f"NPU {logical} got no CPU pool (no NUMA node left for it)"
                ranks.append(replace(rp, locality=None, dp_rank=d, local_rank=local, skipped=why))
                continue
            pool = pools[logical]
            if device in pools:
                own[device] = tuple(pools[device])
            if mode == A5_CLUSTERS:
                roles = Roles(main=tuple(pool))  # no IRQ reservation, no acl/release split on 950
            else:
                roles = vllm_ascend.split_roles(pool, npu=logical, irq=irq, least=least)
            rp = _rank_plan(host, rank, device, logical, pool, roles)
            memory = vllm_ascend.memory_nodes(impl, host, pool, roles, req.engram_offload)
            ranks.append(replace(rp, dp_rank=d, local_rank=local, memory_nodes=memory))
    if req.reserve:
        notes.append(
            f"--reserve {format_cpulist(req.reserve)} taken out of the cpuset, as if vLLM ran "
            "under a cpuset without them"
        )
    if not req.irq_reserve and irq and mode != A5_CLUSTERS:
        notes.append("--no-irq-reserve does not apply: vLLM-Ascend always keeps 2 CPUs for IRQs")
    notes.append(_target_note(target, req.busy is not None))
    findings = _target_findings(req, target)
    findings += vllm_ascend.version_findings(
        target, ranks, jobs, env, req.device_ids, ctx.dp, own, by_npu_id=by_npu_id
    )
    findings += vllm_ascend.refusals(host, impl, positional)
    # a release that refuses binds no rank at all: each one is skipped, with the reason
    refused = next((f.message for f in findings if f.code in impls.REFUSAL_CODES), None)
    if refused is not None:
        ranks = [r if r.skipped is not None else _refused(host, r, refused) for r in ranks]
    return _Result(mode, ranks, notes, hidden, findings, target.name)


def _refused(host: Host, rp: RankPlan, why: str) -> RankPlan:
    """rp as a rank the release skips (its pool and roles gone): it binds nothing."""
    empty = _rank_plan(host, rp.rank, rp.device, rp.logical_id, [], Roles())
    return replace(empty, locality=None, dp_rank=rp.dp_rank, local_rank=rp.local_rank, skipped=why)


def _target_findings(req: PlanRequest, target: va.VllmAscendVersion) -> list[Finding]:
    """What the plan rests on about the version itself: an inferred target, binding off."""
    out: list[Finding] = []
    if req.target_inferred:
        out.append(
            Finding(
                "target_inferred",
                "info",
                f"vLLM-Ascend {req.target_inferred}",
                "give --target with the release it was built from if you know it "
                "(`ascendtune explain versions` lists them)",
            )
        )
    if target.binding.ships and not target.binding.on_by_default:
        out.append(
            Finding(
                "cpu_binding_off_by_default",
                "info",
                f"on {target.name} enable_cpu_binding defaults to false: vLLM-Ascend binds no "
                "CPU unless the server's --additional-config turns it on; the pools shown are "
                "what it binds when it is on",
                "with '{\"enable_cpu_binding\": true}' vLLM-Ascend binds these pools; or bind "
                "with `ascendtune bind --workers`",
            )
        )
    return out


def _no_binding(ctx: _Ctx, req: PlanRequest, target: va.VllmAscendVersion) -> _Result:
    """A version that ships no CPU binding: every rank keeps the whole cpuset."""
    why = f"vLLM-Ascend {target.name} ships no CPU binding"
    ranks = []
    for rank, device in enumerate(ctx.visible):
        rp = _rank_plan(ctx.host, rank, device, device, [], Roles())
        ranks.append(replace(rp, locality=None, skipped=why))
    findings = _target_findings(req, target)
    findings.append(
        Finding(
            "no_cpu_binding",
            "warning",
            f"{why} (no cpu_binding.py, no enable_cpu_binding): every worker thread may run on "
            "any CPU of the cpuset, away from its NPU's NUMA node",
            "bind with `ascendtune bind --workers` (--policy numa-local), or run a release that "
            "binds (v0.9.1rc2 on)",
        )
    )
    return _Result(
        NO_BINDING, ranks, [_target_note(target, False)], findings=findings, target=target.name
    )


def _join(xs: list[int]) -> str:
    return ",".join(map(str, xs))


def _target_note(target: va.VllmAscendVersion, busy_given: bool) -> str:
    b = target.binding
    head = f"modelled on vLLM-Ascend {target.name} (vLLM {target.vllm})"
    if not b.ships:
        return f"{head}: no CPU binding in this release"
    if b.npu_of_rank == va.DEVICE_ID:
        how = "each rank binds the NPU vLLM assigned it (device_id_to_physical_device_id)"
    elif b.npu_of_rank == va.VISIBLE_INDEX:
        how = (
            "each rank binds the local-rank-th entry of ASCEND_RT_VISIBLE_DEVICES as given "
            "(else of every NPU, sorted)"
        )
    else:
        how = "each rank binds the local-rank-th NPU of the sorted busy list"
    guess = [f.what for f in target.inferred]
    busy = (
        "busy NPUs as given by --busy"
        if busy_given
        else "busy NPUs: npu-smi's process table plus the job's own NPUs"
    )
    return f"{head}: {how}; {busy}" + (
        f"; resting on inference: {'; '.join(guess)}" if guess else ""
    )


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
                roles = roles._replace(main=tuple(sorted(roles.main + tuple(spilled))))
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


class PolicyInfo(NamedTuple):
    """A policy of the registry (core.policies) joined to the planner function that runs it."""

    name: str
    summary: str
    family: str
    only: tuple[str, ...]  # the vendors it plans (Vendor values); () every vendor
    run: Callable[[_Ctx, PlanRequest], _Result]

    def plans(self, vendor: Vendor) -> bool:
        return not self.only or vendor.value in self.only

    @property
    def vendors(self) -> tuple[Vendor, ...]:
        """The registered vendors (core.vendors) it plans."""
        return tuple(p.vendor for p in vendors.profiles() if self.plans(p.vendor))


def _torch(ctx: _Ctx, req: PlanRequest) -> _Result:
    return _plan_torch(ctx, req.policy)


# The planner functions the registry's entries name (Policy.plan); a policy reuses one, or
# brings its own here.
PLANNERS: dict[str, Callable[[_Ctx, PlanRequest], _Result]] = {
    "vllm_ascend": lambda ctx, req: _plan_vllm(ctx, req),
    "numa_local": lambda ctx, req: _plan_cores(ctx, req, _local, NUMA_LOCAL),
    "numa_slice": lambda ctx, req: _plan_cores(ctx, req, _slice, NUMA_SLICE),
    "torchrun": _torch,  # the mode is the policy's name
}


def _info(p: policies.Policy) -> PolicyInfo:
    if p.plan not in PLANNERS:
        raise ImportError(f"policy {p.name} names planner {p.plan!r}, which is not in PLANNERS")
    return PolicyInfo(p.name, p.summary, p.family, p.vendors, PLANNERS[p.plan])


POLICIES: dict[str, PolicyInfo] = {p.name: _info(p) for p in policies.POLICIES}
POLICY_NAMES: tuple[str, ...] = policies.POLICY_NAMES


def compare_policies(vendor: Vendor | None) -> tuple[str, ...]:
    """The policies `--policy compare` puts side by side for a host of this vendor: those of the
    families its profile compares that plan its devices (every policy without a vendor)."""
    if vendor is None:
        return POLICY_NAMES
    families = vendors.profile(vendor).compare_families
    return tuple(p.name for p in POLICIES.values() if p.family in families and vendor in p.vendors)


def make_plan(host: Host, req: PlanRequest, *, trace: "VllmTrace | None" = None) -> Plan:
    """Plan req's ranks on host under req.policy; raises PlanError when no plan is possible.
    trace (policy vllm-ascend only) receives the steps vLLM-Ascend's binding takes."""
    if req.policy not in POLICIES:
        raise InvalidInput(f"unknown policy {req.policy!r} (known: {', '.join(POLICIES)})")
    ctx = _context(host, req)
    if not POLICIES[req.policy].plans(ctx.vendor):
        fits = [p.name for p in POLICIES.values() if p.plans(ctx.vendor)]
        raise InvalidInput(
            f"policy {req.policy} plans "
            + " and ".join(
                vendors.profile(v).generic_name + "s" for v in POLICIES[req.policy].vendors
            )
            + f"; this host has {ctx.vendor.value} devices",
            "use --policy " + " or ".join(fits[:2]),
        )
    if trace is not None and req.policy == "vllm-ascend":
        res = _plan_vllm(ctx, req, trace)
    else:
        res = POLICIES[req.policy].run(ctx, req)
    ranks = res.ranks
    # ranks whose CPUs add up to their union share none: no pair to look at (64 ranks are
    # 2,016 pairs)
    used = frozenset[int]().union(*(rp.cpuset for rp in ranks))
    disjoint = len(used) == sum(len(rp.cpuset) for rp in ranks)
    overlaps = (
        ()
        if disjoint
        else tuple(
            Overlap((a.rank, b.rank), a.cpuset & b.cpuset)
            for i, a in enumerate(ranks)
            for b in ranks[i + 1 :]
            if a.cpuset & b.cpuset
        )
    )
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
        target=res.target,
    )
    return plan._replace(findings=tuple(explain(host, plan)) + tuple(res.findings))
