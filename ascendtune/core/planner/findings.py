"""What an operator must know about a plan, in words: where vLLM-Ascend's binding goes wrong."""

from __future__ import annotations

from operator import attrgetter

from ascendtune.core import vendors
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.findings import Finding
from ascendtune.core.model import Host
from ascendtune.core.planner.model import A5_CLUSTERS, GLOBAL_SLICE, Plan, RankPlan

# The codes of findings about how a plan uses the cpuset (CPUs left idle, shared with a pool of
# NPUs the job does not drive, or threads left anywhere in it), here and in vllm_ascend.py:
# doctor's cgroup_cpuset check repeats these.
CPUSET_CODES = frozenset({"idle_cpuset", "hidden_pool", "dp_overlap", "binding_skipped"})


def _ids(xs: list[int]) -> str:
    return ",".join(map(str, xs))


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


_BETTER = "a better policy avoids it: compare them with `--policy compare`"


def explain(host: Host, plan: Plan) -> list[Finding]:
    out: list[Finding] = []
    word = vendors.profile(plan.vendor).word
    out += _locality(plan)
    if len(plan.overlaps) > 8:  # torchrun node/socket modes share by design: one line
        shared = frozenset(c for ov in plan.overlaps for c in ov.cpus)
        ranks_in = sorted({r for ov in plan.overlaps for r in ov.ranks})
        out.append(
            Finding(
                "overlap",
                "warning",
                f"{len(plan.overlaps)} pairs of ranks share CPUs (ranks {_ids(ranks_in)}, CPUs "
                f"{format_cpulist(shared)}): they will compete",
                _BETTER,
                ranks=tuple(ranks_in),
            )
        )
    else:
        for ov in plan.overlaps:
            a, b = ov.ranks
            out.append(
                Finding(
                    "overlap",
                    "warning",
                    f"ranks {a} and {b} share CPUs {format_cpulist(ov.cpus)}: they will compete",
                    _BETTER,
                    ranks=(a, b),
                )
            )
    out += _shared_cores(host, plan.ranks)
    out += _other_socket(host, plan, word)
    if plan.policy == "vllm-ascend":
        out += _vllm_flaws(host, plan)
    return out


def _locality(plan: Plan) -> list[Finding]:
    out = []
    off = [r.rank for r in plan.ranks if r.locality == 0.0]
    if off:
        many = len(off) > 1
        out.append(
            Finding(
                "off_node",
                "warning",
                f"{_plural(len(off), 'rank', 'ranks')} {_ids(off)} run{'' if many else 's'} wholly "
                f"off {'their' if many else 'its'} device's NUMA node (and memory follows the CPUs, "
                "so host-device copies cross nodes)",
                _BETTER,
                ranks=tuple(off),
            )
        )
    part = [r for r in plan.ranks if r.locality is not None and 0.0 < r.locality < 1.0]
    if part:
        detail = "; ".join(
            f"rank {r.rank}: nodes {_ids(list(r.numa_nodes))}, {r.locality:.0%} local"
            for r in part
            if r.locality is not None
        )
        out.append(
            Finding(
                "straddle",
                "warning",
                f"{_plural(len(part), 'rank', 'ranks')} {_ids([r.rank for r in part])} straddle "
                f"NUMA nodes ({detail})",
                _BETTER,
                ranks=tuple(r.rank for r in part),
            )
        )
    return out


# a Cpu's fields, read by map over many CPUs (no Python loop per CPU: a rank of 128 CPUs'
# siblings 16 -> 8 us)
_SIBLINGS, _SOCKET = attrgetter("siblings"), attrgetter("socket")


def _shared_cores(host: Host, ranks: tuple[RankPlan, ...]) -> list[Finding]:
    """Ranks that hold different threads of one physical core (SMT siblings) compete for it."""
    out = []
    table = host.cpus
    for i, a in enumerate(ranks):
        sibs = set().union(*map(_SIBLINGS, filter(None, map(table.get, a.cpus)))) - a.cpuset
        if not sibs:
            continue
        for b in ranks[i + 1 :]:
            hit = sibs & b.cpuset
            if hit:
                out.append(
                    Finding(
                        "smt_shared",
                        "warning",
                        f"ranks {a.rank} and {b.rank} run on the two SMT threads of the same cores "
                        f"(rank {b.rank}'s CPUs {format_cpulist(hit)}): they compete for those "
                        "cores",
                        _BETTER,
                        ranks=(a.rank, b.rank),
                    )
                )
    return out


def _other_socket(host: Host, plan: Plan, word: str) -> list[Finding]:
    table = host.cpus
    node_sockets = {
        n.id: set(map(_SOCKET, filter(None, map(table.get, n.cpus)))) for n in host.numa_nodes
    }
    far: list[str] = []
    ranks: list[int] = []
    for r in plan.ranks:
        if r.device_node is None or not r.cpus:
            continue
        home = node_sockets.get(r.device_node, set())
        nodes = [n for n in r.numa_nodes if node_sockets.get(n, set()) - home]
        if home and nodes:
            ranks.append(r.rank)
            far.append(f"rank {r.rank}: node {_ids(nodes)}, {word} on node {r.device_node}")
    if not ranks:
        return []
    return [
        Finding(
            "other_socket",
            "warning",
            f"{_plural(len(ranks), 'rank', 'ranks')} {_ids(ranks)} use CPUs on another socket "
            f"than their {word}'s ({'; '.join(far)})",
            _BETTER,
            ranks=tuple(ranks),
        )
    ]


def _vllm_flaws(host: Host, plan: Plan) -> list[Finding]:
    out: list[Finding] = []
    if plan.mode != A5_CLUSTERS:
        smt_irq = [r.rank for r in plan.ranks if _siblings(host, r.roles.irq)]
        smt_roles = [r.rank for r in plan.ranks if _siblings(host, r.roles.acl + r.roles.release)]
        if smt_irq:
            out.append(
                Finding(
                    "smt_irq",
                    "warning",
                    f"{_plural(len(smt_irq), 'rank', 'ranks')} {_ids(smt_irq)}: the two IRQ CPUs "
                    "are one core's two SMT threads",
                    _BETTER,
                    ranks=tuple(smt_irq),
                )
            )
        if smt_roles:
            out.append(
                Finding(
                    "smt_roles",
                    "warning",
                    f"{_plural(len(smt_roles), 'rank', 'ranks')} {_ids(smt_roles)}: acl and "
                    "release threads share one physical core",
                    _BETTER,
                    ranks=tuple(smt_roles),
                )
            )
    if plan.mode == GLOBAL_SLICE and len(plan.visible) < plan.total_devices:
        share = len(plan.visible) / plan.total_devices
        out.append(
            Finding(
                "idle_cpuset",
                "warning",
                f"global slicing divides the cpuset by all {plan.total_devices} NPUs on the host "
                f"but only {len(plan.visible)} are used here: {len(plan.idle_cpus)} CPUs "
                f"({1 - share:.0%} of the cpuset) stay idle",
                "use --policy numa-slice (or numa-local) and bind with ascendtune",
            )
        )
    for r in plan.ranks:
        for npu, pool in sorted(plan.hidden_pools.items()):
            hit = r.cpuset.intersection(pool)
            if hit:
                out.append(
                    Finding(
                        "hidden_pool",
                        "warning",
                        f"rank {r.rank}'s CPUs {format_cpulist(hit)} are also in the pool "
                        f"vLLM-Ascend gives NPU {npu}, which this job does not use: a service on "
                        f"NPU {npu} under the same cpuset would compete for them",
                        "give each service its own cpuset, or use --policy numa-slice",
                        ranks=(r.rank,),
                    )
                )
    return out


def _siblings(host: Host, cpus: tuple[int, ...]) -> bool:
    if len(cpus) < 2:
        return False
    a = host.cpus.get(cpus[0])
    return a is not None and cpus[1] in a.siblings
