"""Policy `vllm-ascend`: exactly what vLLM-Ascend's built-in binding computes (SPEC.md section 5).

Mirrors vllm_ascend/cpu_binding.py (release v0.23.0 and main 182b75ea agree): the CPU pools of
`topo_affinity` (A2, 310P, unknown SoCs), `global_slice` (A3, and the fallback when npu-smi
prints no affinity) and Ascend 950's 8-core clusters, then the role split. Its quirks are
reproduced on purpose, so a plan predicts the log line a real worker prints.
"""

from __future__ import annotations

from collections.abc import Mapping

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Host, Soc
from ascendtune.core.planner.model import A5_CLUSTERS, GLOBAL_SLICE, TOPO_AFFINITY, Roles

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
        nodes = {self.node_of[c] for c in pool if c in self.node_of}
        if len(nodes) != 1:
            return pool
        nxt = (nodes.pop() + 1) % len(self.cpus)
        return sorted(set(pool) | {c for c in self.get(nxt) if c in allowed})


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
) -> dict[int, list[int]]:
    """The pool of every candidate NPU: the running ones first-class, and the hidden ones whose
    affinity meets the cpuset (vLLM-Ascend computes theirs too, then keeps the running ones)."""
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
        pools[npu] = numa.extend(base, allowed)
    groups: dict[tuple[int, ...], list[int]] = {}
    for npu, cpus in pools.items():
        groups.setdefault(tuple(cpus), []).append(npu)
    final: dict[int, list[int]] = {}
    for cpus_t, npus in groups.items():
        if len(npus) == 1:
            final[npus[0]] = list(cpus_t)
            continue
        per = len(cpus_t) // len(npus)
        for i, npu in enumerate(npus):
            end = (i + 1) * per if i < len(npus) - 1 else len(cpus_t)
            final[npu] = list(cpus_t[i * per : end])
    return final


def global_slice_pools(
    all_ids: list[int], running: list[int], affinity: Mapping[int, CpuSet], allowed: CpuSet
) -> dict[int, list[int]]:
    cpus = sorted(allowed)
    total = len(all_ids) or len(affinity) or len(running)
    base, extra = divmod(len(cpus), total)
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
