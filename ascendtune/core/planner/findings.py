"""What an operator must know about a plan, in words: where vLLM-Ascend's binding goes wrong."""

from __future__ import annotations

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.model import Host
from ascendtune.core.planner.model import Plan
from ascendtune.core.planner.vllm_ascend import GLOBAL_SLICE


def _ids(xs: list[int]) -> str:
    return ",".join(map(str, xs))


def explain(host: Host, plan: Plan) -> list[str]:
    out: list[str] = []
    dev_word = "NPU" if plan.vendor == "huawei" else "GPU"
    off = [r.rank for r in plan.ranks if r.locality == 0.0]
    if off:
        out.append(
            f"rank{'s' if len(off) > 1 else ''} {_ids(off)} run{'' if len(off) > 1 else 's'} "
            f"wholly off {'their' if len(off) > 1 else 'its'} device's NUMA node (and memory "
            "follows the CPUs, so host-device copies cross nodes)"
        )
    part = [r for r in plan.ranks if r.locality is not None and 0.0 < r.locality < 1.0]
    if part:
        out.append(
            f"rank{'s' if len(part) > 1 else ''} {_ids([r.rank for r in part])} straddle NUMA "
            f"nodes ({'; '.join(f'rank {r.rank}: nodes {_ids(list(r.numa_nodes))}, {r.locality:.0%} local' for r in part)})"
        )
    for ov in plan.overlaps:
        a, b = ov.ranks
        out.append(f"ranks {a} and {b} share CPUs {format_cpulist(ov.cpus)}: they will compete")
    node_sockets = {
        n.id: {host.cpus[c].socket for c in n.cpus if c in host.cpus} for n in host.numa_nodes
    }
    for r in plan.ranks:
        if r.device_node is None or not r.cpus:
            continue
        home = node_sockets.get(r.device_node, set())
        far = [n for n in r.numa_nodes if node_sockets.get(n, set()) - home]
        if home and far:
            out.append(
                f"rank {r.rank}'s CPUs reach node(s) {_ids(far)}, on another socket than its "
                f"{dev_word} (node {r.device_node})"
            )
    moved = [r for r in plan.ranks if r.device != r.logical_id]
    if moved:
        r = moved[0]
        out.append(
            f"the visible devices {_ids(list(plan.visible))} are not in ascending order: rank "
            f"{r.rank} runs on {dev_word} {r.device} but is bound to {dev_word} {r.logical_id}'s CPUs"
            + (f" ({len(moved)} ranks affected)" if len(moved) > 1 else "")
        )
    if plan.mode == GLOBAL_SLICE:
        smt_irq = [r.rank for r in plan.ranks if _siblings(host, r.roles.irq)]
        smt_roles = [r.rank for r in plan.ranks if _siblings(host, r.roles.acl + r.roles.release)]
        if smt_irq:
            out.append(f"ranks {_ids(smt_irq)}: the two IRQ CPUs are one core's two SMT threads")
        if smt_roles:
            out.append(f"ranks {_ids(smt_roles)}: acl and release threads share one physical core")
        if len(plan.visible) < plan.total_devices:
            share = len(plan.visible) / plan.total_devices
            out.append(
                f"global slicing divides the cpuset by all {plan.total_devices} NPUs on the host but "
                f"only {len(plan.visible)} are used here: {len(plan.idle_cpus)} CPUs "
                f"({1 - share:.0%} of the cpuset) stay idle"
            )
    if plan.policy == "vllm-ascend":
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
