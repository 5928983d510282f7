"""Policy `vllm-ascend`: exactly what vLLM-Ascend's built-in binding computes (SPEC.md section 5).

Mirrors vllm_ascend/cpu_binding.py (release v0.23.0 and main 182b75ea agree): the CPU pools of
`topo_affinity` (A2, 310P, unknown SoCs), `global_slice` (A3, and the fallback when npu-smi
prints no affinity) and Ascend 950's 8-core clusters, then the role split. Its quirks are
reproduced on purpose, so a plan predicts the log line a real worker prints.
"""

from __future__ import annotations

from collections.abc import Mapping

from ascendtune.core import vllm_ascend as va
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.findings import Finding
from ascendtune.core.model import Host, Soc
from ascendtune.core.planner.model import A5_CLUSTERS, GLOBAL_SLICE, TOPO_AFFINITY, RankPlan, Roles
from ascendtune.core.planner.trace import PoolTrace

MIN_CPUS_PER_NPU = 5  # 2 IRQ + >=1 main + 1 acl + 1 release
A5_PHYSICAL_CPUS_PER_CLUSTER = 8

MODE_OF_SOC = {
    Soc.A2: TOPO_AFFINITY,
    Soc.A3: GLOBAL_SLICE,
    Soc.P310: TOPO_AFFINITY,
    Soc.A5: A5_CLUSTERS,
}


class _NumaMap:
    """The (node -> online CPUs) map vLLM-Ascend builds from `lscpu -e=CPU,NODE`.

    It is a defaultdict there: looking up a node that holds no CPU adds an empty entry, which
    raises K (the node count) for every later extension. We keep that behaviour for parity.
    """

    def __init__(self, host: Host) -> None:
        self.cpus: dict[int, list[int]] = {n.id: sorted(n.cpus) for n in host.cpu_nodes}
        self.node_of: dict[int, int] = {c: n for n, cs in self.cpus.items() for c in cs}

    def get(self, node: int) -> list[int]:
        return self.cpus.setdefault(node, [])

    def extend(self, pool: list[int], allowed: CpuSet) -> list[int]:
        return self.extend_onto(pool, allowed)[0]

    def extend_onto(self, pool: list[int], allowed: CpuSet) -> tuple[list[int], int | None]:
        """The pool extended onto the next node, and that node (None: not extended)."""
        nodes = {self.node_of[c] for c in pool if c in self.node_of}
        if len(nodes) != 1:
            return pool, None
        nxt = (nodes.pop() + 1) % len(self.cpus)
        return sorted(set(pool) | {c for c in self.get(nxt) if c in allowed}), nxt


def choose_mode(soc: Soc, affinity: Mapping[int, CpuSet]) -> tuple[str, list[str]]:
    mode = MODE_OF_SOC.get(soc, TOPO_AFFINITY)
    notes: list[str] = []
    if mode == TOPO_AFFINITY and not affinity:
        notes.append(
            "npu-smi printed no CPU affinity, so vLLM-Ascend falls back to global slicing "
            '(its log: "NPU topo affinity not found. action: fallback to global-slice CPU binding.")'
        )
        mode = GLOBAL_SLICE
    return mode, notes


def topo_affinity_pools(
    host: Host,
    all_ids: list[int],
    running: list[int],
    affinity: Mapping[int, CpuSet],
    allowed: CpuSet,
    trace: PoolTrace | None = None,
) -> dict[int, list[int]]:
    """The pool of every candidate NPU: the running ones first-class, and the hidden ones whose
    affinity meets the cpuset (vLLM-Ascend computes theirs too, then keeps the running ones).
    trace, when given, receives each step's intermediate pools."""
    numa = _NumaMap(host)
    # every logical NPU that is visible, or whose affinity meets this cpuset (hidden NPUs count,
    # so two services splitting one NUMA pair do not overlap: vLLM-Ascend PR #8792)
    candidates = [n for n in all_ids if n in running or affinity.get(n, frozenset()) & allowed]
    pools: dict[int, list[int]] = {}
    for npu in candidates:
        base = sorted(affinity.get(npu, frozenset()) & allowed)
        if not base:
            raise PlanError(
                "CPUs available in 'Cpus_allowed_list' conflict with NUMA affinity: "
                f"NPU {npu} needs CPUs of its affinity "
                f"{format_cpulist(affinity.get(npu, frozenset())) or '(none: npu-smi printed none)'}"
                f", found none in the cpuset {format_cpulist(allowed)}",
                "vLLM-Ascend raises this and binds nothing; give the process CPUs of the NPU's "
                "NUMA node, or make the NPU not visible",
            )
        pools[npu], nxt = numa.extend_onto(base, allowed)
        if trace is not None:
            trace.base[npu], trace.next_node[npu] = base, nxt
    groups: dict[tuple[int, ...], list[int]] = {}
    for npu, cpus in pools.items():
        groups.setdefault(tuple(cpus), []).append(npu)
    if trace is not None:
        trace.candidates = list(candidates)
        trace.extended = {n: list(p) for n, p in pools.items()}
        trace.shared = {n: list(groups[tuple(p)]) for n, p in pools.items()}
    final: dict[int, list[int]] = {}
    for cpus_t, npus in groups.items():
        if len(npus) == 1:
            final[npus[0]] = list(cpus_t)
            continue
        per = len(cpus_t) // len(npus)
        for i, npu in enumerate(npus):
            end = (i + 1) * per if i < len(npus) - 1 else len(cpus_t)
            final[npu] = list(cpus_t[i * per : end])
    if trace is not None:
        trace.final = {n: list(p) for n, p in final.items()}
    return final


def global_slice_pools(
    all_ids: list[int],
    running: list[int],
    affinity: Mapping[int, CpuSet],
    allowed: CpuSet,
    trace: PoolTrace | None = None,
) -> dict[int, list[int]]:
    cpus = sorted(allowed)
    total = len(all_ids) or len(affinity) or len(running)
    base, extra = divmod(len(cpus), total)
    if trace is not None:
        trace.total, trace.per_npu, trace.extra = total, base, extra
    if base < MIN_CPUS_PER_NPU:
        raise PlanError(
            "Insufficient CPUs for binding with CPU role reservations: global slicing needs "
            f"{total * MIN_CPUS_PER_NPU} CPUs ({MIN_CPUS_PER_NPU} for each of the host's {total} "
            f"NPUs, visible or not), found {len(cpus)} in the cpuset, {base} per NPU",
            "vLLM-Ascend raises this and binds nothing; widen the cpuset",
        )
    pools: dict[int, list[int]] = {}
    for npu in running:
        if npu >= total:
            raise PlanError(f"Invalid NPU id {npu}, total_npus={total} (vLLM-Ascend slices by id)")
        start = npu * base + min(npu, extra)
        take = base + (1 if npu < extra else 0)
        pools[npu] = cpus[start : start + take]
    if trace is not None:
        trace.final = {n: list(p) for n, p in pools.items()}
    return pools


def a5_cluster_pools(
    host: Host,
    all_ids: list[int],
    running: list[int],
    affinity: Mapping[int, CpuSet],
    allowed: CpuSet,
) -> dict[int, list[int]]:
    """Ascend 950: one 8-physical-core cluster per NPU on its NUMA node (vLLM-Ascend PR #11717)."""
    if not affinity:
        raise PlanError(
            "NPU topo affinity not found: vLLM-Ascend skips worker CPU binding on Ascend 950"
        )
    numa = _NumaMap(host)
    threads = max((len(c.siblings) for c in host.cpus.values()), default=1)
    if threads not in (1, 2):
        raise PlanError(f"{threads} threads per core: vLLM-Ascend skips binding on Ascend 950")
    size = A5_PHYSICAL_CPUS_PER_CLUSTER * threads
    # node 0's CPUs except CPU 0 are kept for uvb_poll_window_thread, before any NPU is placed
    uvb = {c for c in numa.get(0) if c in allowed and c != 0}
    candidates = [n for n in all_ids if n in running or affinity.get(n, frozenset()) & allowed]
    by_node: dict[int, list[int]] = {}
    for npu in candidates:
        base = affinity.get(npu, frozenset()) & allowed
        nodes = {numa.node_of[c] for c in base if c in numa.node_of}
        if len(nodes) != 1:
            raise PlanError(
                f"NPU {npu}'s affinity {format_cpulist(base) or 'none'} is not on one NUMA node: "
                "vLLM-Ascend skips worker CPU binding on Ascend 950"
            )
        by_node.setdefault(nodes.pop(), []).append(npu)
    final: dict[int, list[int]] = {}
    for node, npus in by_node.items():
        cpus = [c for c in numa.get(node) if c in allowed and c not in uvb]
        clusters = [cpus[i : i + size] for i in range(0, len(cpus) - len(cpus) % size, size)]
        if len(clusters) < len(npus):
            why = (
                f"; node 0's CPUs but CPU 0 are kept for uvb_poll_window_thread ({format_cpulist(uvb)})"
                if node == 0 and uvb
                else ""
            )
            who = ",".join(map(str, sorted(npus)))
            raise PlanError(
                f"insufficient CPU clusters on node {node}: NPU{'s' if len(npus) > 1 else ''} {who} "
                f"need{'' if len(npus) > 1 else 's'} {len(npus)} cluster(s) of {size} CPUs "
                f"({len(npus) * size} CPUs), found {len(cpus)} usable CPUs, "
                f"{len(clusters)} cluster(s){why}",
                "vLLM-Ascend then skips worker CPU binding on Ascend 950 and only logs a warning",
            )
        for i, npu in enumerate(sorted(npus)):
            final[npu] = clusters[i]
    missing = [n for n in running if n not in final]
    if missing:
        raise PlanError(
            f"no CPU pool for visible NPU {missing[0]}: vLLM-Ascend skips worker CPU binding"
        )
    return {n: final[n] for n in running}


def split_roles(pool: list[int], *, npu: int | None = None, irq: bool = True) -> Roles:
    """vLLM-Ascend's role split: IRQ = first two, acl = second last, release = last, main = rest."""
    need = MIN_CPUS_PER_NPU if irq else MIN_CPUS_PER_NPU - 2
    if len(pool) < need:
        whose = f"NPU {npu}'s pool" if npu is not None else "the pool"
        raise PlanError(
            f"The number of CPUs is insufficient. Each NPU requires at least {need} CPUs: "
            f"{whose} has {len(pool)} ({format_cpulist(pool) or 'none'})",
            "vLLM-Ascend raises this and binds nothing; widen the cpuset or use fewer NPUs "
            "per NUMA node",
        )
    return Roles(
        irq=tuple(pool[:2]) if irq else (),
        main=tuple(pool[2:-2] if irq else pool[:-2]),
        acl=(pool[-2],),
        release=(pool[-1],),
    )


# --- what the target version gets wrong, in words (each with a stable [code] prefix) ----------


def _ids(xs: list[int] | tuple[int, ...]) -> str:
    return ",".join(map(str, xs))


def _fixed_lines() -> str:
    """The versions that carry the binding fix, in words: the first release, and main."""
    fixed = [v for v in va.ENTRIES if v.binding.npu_of_rank == va.DEVICE_ID]
    first = next(v.name for v in fixed if v.is_release)
    mains = [v.name for v in fixed if not v.is_release]
    return f"{first} or later" + (f" ({' or '.join(mains)} on main)" if mains else "")


def version_findings(
    target: va.VllmAscendVersion,
    ranks: list[RankPlan],
    jobs: list[int],
    env: tuple[int, ...] | None,
    device_ids: tuple[int, ...] | None,
    dp: int,
    own: Mapping[int, tuple[int, ...]],
) -> list[Finding]:
    """The rank/NPU mismatches, DP overlaps, skipped bindings and CANN's ordering rule."""
    out: list[Finding] = []
    upgrade = (
        f"upgrade to {_fixed_lines()}, or start vLLM with "
        '"enable_cpu_binding": false and bind with `ascendtune bind --workers`'
    )
    fix = (
        f"fixed by {va.BINDING_FIX}: upgrade to a line that carries it "
        f"({_fixed_lines()}), or start vLLM with "
        "--additional-config '{\"enable_cpu_binding\": false}' and bind with "
        "`ascendtune bind --workers`"
    )
    if device_ids is not None and not target.binding.device_ids_flag:
        out.append(
            Finding(
                "device_ids_unsupported",
                "warning",
                f"{target.name} pairs with vLLM {target.vllm}, which has no --device-ids (it came "
                "with vLLM 0.24): vLLM refuses the option; the plan treats the list as "
                "ASCEND_RT_VISIBLE_DEVICES",
                "set ASCEND_RT_VISIBLE_DEVICES instead",
            )
        )
    bound = [r for r in ranks if r.skipped is None]
    moved = [r for r in bound if r.device != r.logical_id]
    if dp > 1 and target.binding.dp_overlap:
        for d in sorted({r.dp_rank for r in moved}):
            mine = [r for r in moved if r.dp_rank == d]
            others = [
                r
                for r in bound
                if r.dp_rank != d and r.cpuset & frozenset().union(*(m.cpuset for m in mine))
            ]
            used = frozenset(c for r in bound for c in r.cpus)
            idle = frozenset(c for r in mine for c in own.get(r.device, ())) - used
            pools = ", ".join(format_cpulist(r.cpus) for r in mine)
            engines = sorted({r.dp_rank for r in others})
            out.append(
                Finding(
                    "dp_overlap",
                    "warning",
                    f"on {target.name} (vLLM {target.vllm}) DP engine {d}'s local ranks "
                    f"{_ids([r.local for r in mine])} drive NPU {_ids([r.device for r in mine])} "
                    f"but are bound to NPU {_ids([r.logical_id for r in mine])}'s CPUs ({pools})"
                    + (f", the same as DP engine {_ids(engines)}'s ranks" if engines else "")
                    + (f", while CPUs {format_cpulist(idle)} stay idle" if idle else "")
                    + ": from vLLM 0.24 on each DP engine's local ranks restart at 0 and this "
                    "line indexes the sorted busy-NPU list by local rank; " + fix,
                    upgrade,
                    ranks=tuple(r.rank for r in mine),
                )
            )
    elif moved:
        r = moved[0]
        many = f" ({len(moved)} ranks affected)" if len(moved) > 1 else ""
        if env is not None and list(env) != sorted(env) and device_ids is None:
            # the message plans made before versions existed; kept word for word
            out.append(
                Finding(
                    "visible_order",
                    "warning",
                    f"the visible devices {_ids(jobs)} are not in ascending order: rank "
                    f"{r.rank} runs on NPU {r.device} but is bound to NPU {r.logical_id}'s CPUs"
                    + many,
                    "list the devices in ascending order, or bind with ascendtune",
                    ranks=tuple(m.rank for m in moved),
                )
            )
        else:
            why = (
                "--device-ids is not in ascending order"
                if device_ids is not None and list(device_ids) != sorted(device_ids)
                else "other NPUs are busy or the device list is narrowed"
            )
            out.append(
                Finding(
                    "rank_npu_mismatch",
                    "warning",
                    f"on {target.name} rank {r.rank} drives NPU {r.device} but is bound to NPU "
                    f"{r.logical_id}'s CPUs{many}: this line binds the local-rank-th entry of the "
                    f"sorted busy-NPU list ({why}); " + fix,
                    upgrade,
                    ranks=tuple(m.rank for m in moved),
                )
            )
    for r in ranks:
        if r.skipped is None:
            continue
        where = f"rank {r.rank}" + (
            f" (DP engine {r.dp_rank}, local rank {r.local})" if dp > 1 else ""
        )
        out.append(
            Finding(
                "binding_skipped",
                "warning",
                f"on {target.name} {where} drives NPU {r.device}: {r.skipped}; vLLM-Ascend skips "
                f'binding it (warning "Bind cpus failed in rank{r.local}: ... Skip binding '
                'cpu.") and its threads run anywhere in the cpuset',
                "bind it with `ascendtune bind --workers` once the server is up",
                ranks=(r.rank,),
            )
        )
    if env is not None and list(env) != sorted(env):
        out.append(
            Finding(
                "cann_order",
                "warning",
                f"ASCEND_RT_VISIBLE_DEVICES={_ids(env)} is not in ascending order: current CANN / "
                'torch_npu refuse it (error EE1001, "it must be configured in ascending order"), '
                "so the server does not start there; the binding above is what older stacks "
                "that accepted it did",
                "list the devices in ascending order, and choose the rank order with vLLM's "
                "--device-ids (vLLM >= 0.24)",
            )
        )
    return out
