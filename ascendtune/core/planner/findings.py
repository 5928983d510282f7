"""What an operator must know about a plan, in words: where vLLM-Ascend's binding goes wrong."""

from __future__ import annotations

from ascendtune.core import vendors
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.model import Host
from ascendtune.core.planner.model import A5_CLUSTERS, GLOBAL_SLICE, Plan, RankPlan


def _ids(xs: list[int]) -> str:
    return ",".join(map(str, xs))


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def explain(host: Host, plan: Plan) -> list[str]:
    out: list[str] = []
    word = vendors.profile(plan.vendor).word
    out += _locality(plan)
    if len(plan.overlaps) > 8:  # torchrun node/socket modes share by design: one line
        shared = frozenset(c for ov in plan.overlaps for c in ov.cpus)
        ranks_in = sorted({r for ov in plan.overlaps for r in ov.ranks})
        out.append(
            f"{len(plan.overlaps)} pairs of ranks share CPUs (ranks {_ids(ranks_in)}, CPUs "
            f"{format_cpulist(shared)}): they will compete"
        )
    else:
        for ov in plan.overlaps:
            a, b = ov.ranks
            out.append(f"ranks {a} and {b} share CPUs {format_cpulist(ov.cpus)}: they will compete")
    out += _shared_cores(host, plan.ranks)
    out += _other_socket(host, plan, word)
    moved = [r for r in plan.ranks if r.device != r.logical_id]
    if moved:
        r = moved[0]
        out.append(
            f"the visible devices {_ids(list(plan.visible))} are not in ascending order: rank "
            f"{r.rank} runs on {word} {r.device} but is bound to {word} {r.logical_id}'s CPUs"
            + (f" ({len(moved)} ranks affected)" if len(moved) > 1 else "")
        )
    if plan.policy == "vllm-ascend":
        out += _vllm_flaws(host, plan)
    return out


def _locality(plan: Plan) -> list[str]:
    out = []
    off = [r.rank for r in plan.ranks if r.locality == 0.0]
    if off:
        many = len(off) > 1
        out.append(
            f"{_plural(len(off), 'rank', 'ranks')} {_ids(off)} run{'' if many else 's'} wholly "
            f"off {'their' if many else 'its'} device's NUMA node (and memory follows the CPUs, "
            "so host-device copies cross nodes)"
        )
    part = [r for r in plan.ranks if r.locality is not None and 0.0 < r.locality < 1.0]
    if part:
        detail = "; ".join(
            f"rank {r.rank}: nodes {_ids(list(r.numa_nodes))}, {r.locality:.0%} local"
            for r in part
            if r.locality is not None
        )
        out.append(
            f"{_plural(len(part), 'rank', 'ranks')} {_ids([r.rank for r in part])} straddle "
            f"NUMA nodes ({detail})"
        )
    return out


def _shared_cores(host: Host, ranks: tuple[RankPlan, ...]) -> list[str]:
    """Ranks that hold different threads of one physical core (SMT siblings) compete for it."""
    out = []
    for i, a in enumerate(ranks):
        sibs = {s for c in a.cpus if c in host.cpus for s in host.cpus[c].siblings} - a.cpuset
        if not sibs:
            continue
        for b in ranks[i + 1 :]:
            hit = sibs & b.cpuset
            if hit:
                out.append(
                    f"ranks {a.rank} and {b.rank} run on the two SMT threads of the same cores "
                    f"(rank {b.rank}'s CPUs {format_cpulist(hit)}): they compete for those cores"
                )
    return out


def _other_socket(host: Host, plan: Plan, word: str) -> list[str]:
    node_sockets = {
        n.id: {host.cpus[c].socket for c in n.cpus if c in host.cpus} for n in host.numa_nodes
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
        f"{_plural(len(ranks), 'rank', 'ranks')} {_ids(ranks)} use CPUs on another socket than "
        f"their {word}'s ({'; '.join(far)})"
    ]


def _vllm_flaws(host: Host, plan: Plan) -> list[str]:
    out = []
    if plan.mode != A5_CLUSTERS:
        smt_irq = [r.rank for r in plan.ranks if _siblings(host, r.roles.irq)]
        smt_roles = [r.rank for r in plan.ranks if _siblings(host, r.roles.acl + r.roles.release)]
        if smt_irq:
            out.append(
                f"{_plural(len(smt_irq), 'rank', 'ranks')} {_ids(smt_irq)}: the two IRQ CPUs are "
                "one core's two SMT threads"
            )
        if smt_roles:
            out.append(
                f"{_plural(len(smt_roles), 'rank', 'ranks')} {_ids(smt_roles)}: acl and release "
                "threads share one physical core"
            )
    if plan.mode == GLOBAL_SLICE and len(plan.visible) < plan.total_devices:
        share = len(plan.visible) / plan.total_devices
        out.append(
            f"global slicing divides the cpuset by all {plan.total_devices} NPUs on the host but "
            f"only {len(plan.visible)} are used here: {len(plan.idle_cpus)} CPUs "
            f"({1 - share:.0%} of the cpuset) stay idle"
        )
    for r in plan.ranks:
        for npu, pool in sorted(plan.hidden_pools.items()):
            hit = r.cpuset.intersection(pool)
            if hit:
                out.append(
                    f"rank {r.rank}'s CPUs {format_cpulist(hit)} are also in the pool vLLM-Ascend "
                    f"gives NPU {npu}, which this job does not use: a service on NPU {npu} "
                    "under the same cpuset would compete for them"
                )
    if host.cpus_offline:
        out.append(
            f"CPUs {format_cpulist(host.cpus_offline)} are offline: on ARM, `lscpu -e` prints '-' "
            "as their node and vLLM-Ascend's binding fails (it only logs a warning)"
        )
    if host.arch and host.arch not in ("aarch64", "arm64") and not host.arch.startswith("arm"):
        out.append(
            f"this host is {host.arch}: vLLM-Ascend binds CPUs only on ARM, so here it binds "
            "nothing; apply a plan with `ascendtune bind`"
        )
    return out


def _siblings(host: Host, cpus: tuple[int, ...]) -> bool:
    if len(cpus) < 2:
        return False
    a = host.cpus.get(cpus[0])
    return a is not None and cpus[1] in a.siblings
