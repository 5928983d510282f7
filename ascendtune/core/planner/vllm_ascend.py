"""Policy `vllm-ascend`: exactly what vLLM-Ascend's built-in binding computes (SPEC.md section 5).

Mirrors vllm_ascend/cpu_binding.py (release v0.23.0 and main 182b75ea agree): the CPU pools of
`topo_affinity` (A2, 310P, unknown SoCs), `global_slice` (A3, and the fallback when npu-smi
prints no affinity) and Ascend 950's 8-core clusters, then the role split. Its quirks are
reproduced on purpose, so a plan predicts the log line a real worker prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ascendtune.core import vllm_ascend as va
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.findings import Finding
from ascendtune.core.model import Accelerator, Host, Soc, Vendor
from ascendtune.core.planner.model import A5_CLUSTERS, GLOBAL_SLICE, TOPO_AFFINITY, RankPlan, Roles

if TYPE_CHECKING:
    from ascendtune.core.planner.impls import Impl

    # only `explain binding` passes one: plan and doctor import no trace, 13.5 M instructions
    from ascendtune.core.planner.trace import PoolTrace

impls_POOLS = "pools"  # ascendtune.core.planner.impls.POOLS (imported there from here's model)

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
        self.node_of: dict[int, int] = {}
        for n, cs in self.cpus.items():
            self.node_of.update(dict.fromkeys(cs, n))  # no Python loop per CPU

    def get(self, node: int) -> list[int]:
        return self.cpus.setdefault(node, [])

    def extend(self, pool: list[int], allowed: CpuSet) -> list[int]:
        return self.extend_onto(pool, allowed)[0]

    def extend_onto(self, pool: list[int], allowed: CpuSet) -> tuple[list[int], int | None]:
        """The pool extended onto the next node, and that node (None: not extended)."""
        of = self.node_of  # by map: no Python loop per CPU
        nodes = set(map(of.__getitem__, filter(of.__contains__, pool)))
        if len(nodes) != 1:
            return pool, None
        nxt = (nodes.pop() + 1) % len(self.cpus)
        return sorted(allowed.intersection(self.get(nxt)).union(pool)), nxt


def affinity_read(devices: Sequence[Accelerator], host: Host) -> dict[int, CpuSet]:
    """Each NPU's CPU affinity as vLLM-Ascend reads it from `npu-smi info -t topo`: only rows
    labelled NPU<n>; 910_93 (A3) labels its rows Phy-ID<n>, so there it reads none."""
    if host.soc_detected == Soc.A3:
        return {}
    return {d.logical_id: d.tool_affinity for d in devices if d.tool_affinity is not None}


def choose_mode(
    soc: Soc, affinity: Mapping[int, CpuSet], impl: Impl | None = None
) -> tuple[str, list[str]]:
    """The rule impl applies on this SoC family, and a note when it is a fallback."""
    if impl is None:
        mode = MODE_OF_SOC.get(soc, TOPO_AFFINITY)
        mode = GLOBAL_SLICE if mode == TOPO_AFFINITY and not affinity else mode
        fallback = mode == GLOBAL_SLICE and MODE_OF_SOC.get(soc, TOPO_AFFINITY) == TOPO_AFFINITY
    else:
        mode = impl.mode(soc, bool(affinity))
        fallback = mode != impl.mode(soc, True)
    notes: list[str] = []
    if fallback and mode == GLOBAL_SLICE:
        notes.append(
            "npu-smi printed no CPU affinity, so vLLM-Ascend falls back to global slicing "
            '(its log: "NPU topo affinity not found. action: fallback to global-slice CPU binding.")'
        )
    elif fallback:
        notes.append(
            "npu-smi printed no CPU affinity, so this vLLM-Ascend deals the busy NPUs to the NUMA "
            "nodes and splits each node among them"
        )
    return mode, notes


def positional_map(host: Host) -> dict[str, dict[str, str]] | str | None:
    """`npu-smi info -m` as 0.14.0rc1-0.21.0rc1 read it: each row's first three cells taken as
    NPU ID, Chip ID and Chip Logic ID whatever the header says, rows without a number there
    (Mcu) left out. NPU ID -> Chip ID -> logical id, as printed. A str: why the read fails;
    None: no map was read."""
    rows = host.npu_map_rows
    if not rows:
        return None
    out: dict[str, dict[str, str]] = {}
    for cells in rows:
        if len(cells) < 3:
            return (
                f"a row of `npu-smi info -m` has {len(cells)} cell(s) where this vLLM-Ascend "
                "unpacks three (ValueError), so it binds nothing"
            )
        npu, chip, logical = cells[:3]
        if logical.isdigit():
            if not logical.isascii():  # str.isdigit() takes "²", which int() then refuses
                return (
                    f"`npu-smi info -m` has {logical!r} where this vLLM-Ascend reads a Chip Logic "
                    "ID, and int() refuses it (ValueError), so it binds nothing"
                )
            out.setdefault(npu, {})[chip] = logical
    return out


def positional_ids(
    host: Host, all_ids: list[int], busy: set[int]
) -> tuple[list[int], set[int], str | None]:
    """Every NPU's and the busy NPUs' logical ids as 0.14.0rc1-0.21.0rc1 read them from
    `npu-smi info -m` by position, and why that read makes them bind nothing (None: it does
    not). Unchanged ids where the map was not read or does not give every busy NPU's process
    row an id."""
    got = positional_map(host)
    if not isinstance(got, dict):
        return all_ids, busy, got
    by_logical = {a.logical_id: a for a in host.accelerators if a.vendor == Vendor.HUAWEI}
    seen: set[int] = set()
    lost: list[int] = []
    for b in sorted(busy):
        a = by_logical.get(b)
        if a is None:
            seen.add(b)
        elif (v := got.get(str(a.npu_id), {}).get(str(a.chip_id))) is not None:
            seen.add(int(v))
        else:
            lost.append(b)
    if lost:
        return (
            all_ids,
            busy,
            (
                f"`npu-smi info -m` read by position (its third cell as the Chip Logic ID, here "
                f"{host.npu_map_rows[0][2] if host.npu_map_rows[0][2:] else 'missing'} on its first "
                f"row) gives no logical id for the process row of NPU {_ids(lost)}: this vLLM-Ascend "
                "stops there (\"Failed to get correct chip_logic_id from command 'npu-smi info "
                "-m'.\"), so it binds nothing"
            ),
        )
    return sorted({int(v) for chips in got.values() for v in chips.values()}), seen, None


def refusals(host: Host, impl: Impl, positional: str | None = None) -> list[Finding]:
    """What makes impl bind nothing at all on this host, whatever the pools (it only logs).
    positional: why its positional read of `npu-smi info -m` fails (positional_ids)."""
    out: list[Finding] = []
    if impl.lscpu_e and host.cpus_offline:
        out.append(
            Finding(
                "offline_cpus",
                "warning",
                f"CPUs {format_cpulist(host.cpus_offline)} are offline: on ARM, `lscpu -e` prints "
                "'-' as their node and vLLM-Ascend's binding fails (it only logs a warning)",
                "bring the CPUs online, or start with enable_cpu_binding: false and bind with "
                "ascendtune",
            )
        )
    npus = [a for a in host.accelerators if a.vendor == Vendor.HUAWEI]
    if (
        impl.allocator == impls_POOLS
        and not impl.topo_by_label
        and host.topo_supported
        and host.links
        and host.soc_detected != Soc.A3  # 910_93 labels its rows Phy-ID<n>, which it skips
        and any(a.tool_affinity is None for a in npus)
    ):
        no_cell = sorted(a.logical_id for a in npus if a.tool_affinity is None)
        out.append(
            Finding(
                "binding_refused",
                "warning",
                f"npu-smi info -t topo prints no CPU affinity for NPU {_ids(no_cell)}: this "
                "vLLM-Ascend reads the last cell of every NPU row as a CPU list and fails on the "
                'link name there ("invalid literal for int()"), so it binds nothing',
                "upgrade to 0.22.1rc1 or later (it skips such rows), or bind with ascendtune",
            )
        )
    if (
        impl.allocator == impls_POOLS
        and impl.positional_npu_smi
        and host.npu_procs_by_chip is False
    ):
        out.append(
            Finding(
                "binding_refused",
                "warning",
                "npu-smi's process table is keyed by NPU ID alone, with no Chip column (Ascend "
                "950's layout): this vLLM-Ascend reads each process row's first cell as "
                '"<npu> <chip>" and fails there (IndexError) once its workers are listed, so it '
                "binds nothing",
                "upgrade to 0.22.1rc1 or later (it reads the table by its header), or bind with "
                "ascendtune",
            )
        )
    elif positional is not None:
        out.append(
            Finding(
                "binding_refused",
                "warning",
                positional,
                "upgrade to 0.22.1rc1 or later (it reads `npu-smi info -m` by its header), or "
                "bind with ascendtune",
            )
        )
    arch = host.arch
    if impl.arm_only and arch and arch not in ("aarch64", "arm64") and not arch.startswith("arm"):
        out.append(
            Finding(
                "not_arm",
                "warning",
                f"this host is {arch}: vLLM-Ascend binds CPUs only on ARM, so here it binds "
                "nothing; apply a plan with `ascendtune bind`",
                "apply a plan with `ascendtune bind`",
            )
        )
    return out


def topo_affinity_pools(
    host: Host,
    all_ids: list[int],
    running: list[int],
    affinity: Mapping[int, CpuSet],
    allowed: CpuSet,
    trace: PoolTrace | None = None,
    *,
    hidden: bool = True,
) -> dict[int, list[int]]:
    """The pool of every candidate NPU: the running ones first-class, and (hidden) the ones
    not visible whose affinity meets the cpuset (vLLM-Ascend computes theirs too, then keeps
    the running ones). trace, when given, receives each step's intermediate pools."""
    numa = _NumaMap(host)
    # every logical NPU that is visible, or whose affinity meets this cpuset (hidden NPUs count,
    # so two services splitting one NUMA pair do not overlap: vLLM-Ascend PR #8792, 0.19.1rc1
    # on); before that only the running NPUs, in the sorted running list's order
    if hidden:
        candidates = [n for n in all_ids if n in running or affinity.get(n, frozenset()) & allowed]
    else:
        candidates = list(running)
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
    *,
    least: int = MIN_CPUS_PER_NPU,
) -> dict[int, list[int]]:
    cpus = sorted(allowed)
    total = len(all_ids) or len(affinity) or len(running)
    base, extra = divmod(len(cpus), total)
    if trace is not None:
        trace.total, trace.per_npu, trace.extra = total, base, extra
    if base < least:
        raise PlanError(
            "Insufficient CPUs for binding with CPU role reservations: global slicing needs "
            f"{total * least} CPUs ({least} for each of the host's {total} "
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


def numa_balanced_pools(host: Host, running: list[int], allowed: CpuSet) -> dict[int, list[int]]:
    """0.14.0rc1-0.15.0rc1 without topo affinity (and 0.15.0rc1 on A3): the running NPUs dealt
    in order to the nodes, ceil(NPUs / nodes) per node, each node's allowed CPUs split evenly
    among its NPUs (the first ones one CPU more); nodes without an allowed CPU are passed over."""
    numa = _NumaMap(host)
    per_node = -(-len(running) // len(numa.cpus)) if numa.cpus else 0
    pools: dict[int, list[int]] = {}
    index = 0
    for node in sorted(numa.cpus):
        cpus = [c for c in numa.cpus[node] if c in allowed]
        if not cpus:
            continue
        here = min(per_node, len(running) - index)
        if here <= 0:
            break
        base, extra = divmod(len(cpus), here)
        start = 0
        for i in range(here):
            end = start + base + (1 if i < extra else 0)
            pools[running[index]] = cpus[start:end]
            index += 1
            start = end
    return pools


def memory_nodes(
    impl: Impl, host: Host, pool: list[int], roles: Roles, engram_offload: bool
) -> tuple[int, ...] | None:
    """Where this implementation's migratepages moves a bound worker's memory: 0.15.0rc1 the
    acl CPU's node and its pair (n, n^1); 0.16.0rc1 on the node of the pool's first CPU (IRQ
    CPUs included); 0.30 not at all when Engram offloads to the CPU."""
    from ascendtune.core.planner import impls

    if impl.memory == impls.MEM_NONE or (impl.migrate_optional and engram_offload) or not pool:
        return None
    if impl.memory == impls.MEM_NODE_PAIR:
        if not roles.acl:
            return None
        node = host.node_of(roles.acl[0])
        if node is None:
            return None
        return (node, node + 1 if node % 2 == 0 else node - 1)
    node = host.node_of(pool[0])
    return None if node is None else (node,)


def split_roles(
    pool: list[int], *, npu: int | None = None, irq: bool = True, least: int | None = None
) -> Roles:
    """vLLM-Ascend's role split: IRQ = first two, acl = second last, release = last, main = rest.
    least: the smallest pool it accepts (5 with IRQ CPUs, 3 without, 3 on 0.15.0rc1 with)."""
    need = least if least is not None else MIN_CPUS_PER_NPU if irq else MIN_CPUS_PER_NPU - 2
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
    *,
    by_npu_id: bool | None = None,
) -> list[Finding]:
    """The rank/NPU mismatches, DP overlaps, skipped bindings and CANN's ordering rule.
    by_npu_id: the implementation binds the NPU vLLM assigned the rank (None: as the entry says)."""
    if by_npu_id is None:
        by_npu_id = target.binding.npu_of_rank == va.DEVICE_ID
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
    if dp > 1 and not by_npu_id and target.binding.dp == va.DP_RESTART:
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
