"""The CPUs a target is checked against before anything changes: the online CPUs, a process's
cgroup cpuset, the NUMA nodes of a set of CPUs. Read through a Root like every other host fact
(the live root unless one is given), so the paths are those of SPEC.md section 2."""

from __future__ import annotations

import os

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.host.cgroup import resolve_cpuset
from ascendtune.host.roots import DirRoot, Root

CPU_ONLINE = "sys/devices/system/cpu/online"
NODE_DIR = "sys/devices/system/node"


def live_root() -> Root:
    return DirRoot("/", live=True)


def online_cpus(root: Root | None = None) -> CpuSet:
    text = (root or live_root()).read_text(CPU_ONLINE)
    if text is None:
        # no sysfs (a minimal container): every CPU this process may run on is online
        return frozenset(os.sched_getaffinity(0))
    return parse_cpulist(text, source=f"/{CPU_ONLINE}")


def cpuset_cpus(pid: int, root: Root | None = None) -> CpuSet | None:
    """The CPUs the cgroup cpuset of `pid` allows, None when it cannot be told (no limit known).

    sched_setaffinity silently narrows a mask to these CPUs, and fails with EINVAL when the mask
    holds none of them, so a plan is checked against them before anything changes. The answer
    is the shared resolver's (ascendtune.host.cgroup).
    """
    found = resolve_cpuset(root or live_root(), pid)
    return found.cpus if found is not None else None


def numa_nodes_of(cpus: CpuSet, root: Root | None = None) -> tuple[int, ...]:
    """The NUMA nodes holding any of `cpus` on this host (node 0 when sysfs has no node view)."""
    root = root or live_root()
    names = root.listdir(NODE_DIR)
    if names is None:
        return (0,)
    out: list[int] = []
    for n in sorted(names):
        if not (n.startswith("node") and (n[4:].isascii() and n[4:].isdigit())):
            continue
        text = root.read_text(f"{NODE_DIR}/{n}/cpulist")
        try:
            got = parse_cpulist(text, source=f"/{NODE_DIR}/{n}/cpulist") if text else None
        except ParseError:
            got = None
        if got and got & cpus:
            out.append(int(n[4:]))
    return tuple(out) or (0,)
