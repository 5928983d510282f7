"""Ready-to-paste lines for a plan (`plan --emit KIND`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.core.cpulist import format_cpulist

if TYPE_CHECKING:
    from ascendtune.core.planner import Plan

EMITS = ("taskset", "numactl", "env", "cpu-affinity-conf")


def _fmt(cpus: tuple[int, ...]) -> str:
    return format_cpulist(cpus) or "-"


def emit_lines(plan: Plan, kind: str) -> list[str]:
    """Ready-to-paste lines: one per rank (one line in all for cpu-affinity-conf)."""
    from ascendtune.core import vendors

    profile = vendors.profile(plan.vendor)
    word, env_name = profile.word, profile.visible_devices_env
    out: list[str] = []
    if kind == "cpu-affinity-conf":
        # torch_npu: CPU_AFFINITY_CONF=<mode>,npu<device index>:<a>-<b>; one range per device,
        # the device index as the process sees it (its position in the visible list)
        items = []
        for r in plan.ranks:
            runs = _runs(r.cpus)
            lo, hi = max(runs, key=lambda ab: ab[1] - ab[0])
            items.append(f"npu{r.rank}:{lo}-{hi}")
            if len(runs) > 1:
                out.append(
                    f"# rank {r.rank}: CPUs {_fmt(r.cpus)} are not one range; torch_npu takes a "
                    f"single a-b range, so only {lo}-{hi} is given"
                )
        out.append("export CPU_AFFINITY_CONF=1," + ",".join(items))
        return out
    for r in plan.ranks:
        tag = f"# rank {r.rank}, {word} {r.device}"
        nodes = (
            (r.device_node,)
            if r.device_node is not None and r.device_node in r.numa_nodes
            else r.numa_nodes
        )
        if kind == "taskset":
            out.append(f"taskset -c {_fmt(r.cpus)}  {tag}")
        elif kind == "numactl":
            out.append(
                f"numactl --physcpubind={_fmt(r.cpus)} --membind={','.join(map(str, nodes))}  {tag}"
            )
        elif kind == "env":
            out.append(
                f"{env_name}={r.device} ASCENDTUNE_CPUS={_fmt(r.cpus)} ASCENDTUNE_MEMBIND={','.join(map(str, nodes))}  {tag}"
            )
    return out


def _runs(cpus: tuple[int, ...]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs
