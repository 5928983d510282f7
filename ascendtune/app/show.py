"""`bind --pid P --show`: every thread's mask read back, grouped by mask and by what the plan
wants for it (when a plan or CPUs are given). Changes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ascendtune.core.bindplan import BindTarget
from ascendtune.core.cpulist import CpuSet, format_cpulist

if TYPE_CHECKING:
    from ascendtune.host.affinity import Tasks


@dataclass(frozen=True)
class MaskGroup:
    cpus: CpuSet
    tids: tuple[int, ...]
    role_threads: tuple[str, ...]  # "acl_thread 123", "release_thread 124"
    expected: CpuSet | None = None  # what the plan wants for these threads (None: no plan)

    @property
    def matches(self) -> bool | None:
        return None if self.expected is None else self.expected == self.cpus


@dataclass(frozen=True)
class ShowReport:
    pid: int
    name: str | None
    groups: tuple[MaskGroup, ...]
    target: BindTarget | None
    off_target: int  # threads whose mask differs from the plan's (0 without a plan)

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "name": self.name,
            "threads_total": sum(len(g.tids) for g in self.groups),
            "target": format_cpulist(self.target.cpus) if self.target is not None else None,
            "source": self.target.source if self.target is not None else None,
            "off_target": self.off_target,
            "masks": [
                {
                    "cpus": format_cpulist(g.cpus),
                    "threads": len(g.tids),
                    "tids": list(g.tids),
                    "role_threads": list(g.role_threads),
                    "expected": format_cpulist(g.expected) if g.expected is not None else None,
                    "matches": g.matches,
                }
                for g in self.groups
            ],
        }


def show_process(
    pid: int, target: BindTarget | None, *, use_roles: bool = True, tasks: Tasks | None = None
) -> ShowReport:
    """Every thread's mask, grouped by (mask, what the plan wants for it)."""
    from ascendtune.core.bindplan import ROLE_THREADS
    from ascendtune.host import affinity as aff

    aff.require_process(pid, tasks)
    ident = aff.process_identity(pid)
    rows = aff.thread_names_and_masks(pid, tasks)
    groups: dict[tuple[CpuSet, CpuSet | None], tuple[list[int], list[str]]] = {}
    off = 0
    for tid, name, cpus in rows:
        want = target.thread_target(name, use_roles=use_roles)[1] if target is not None else None
        if want is not None and want != cpus:
            off += 1
        tids, roles = groups.setdefault((cpus, want), ([], []))
        tids.append(tid)
        if name.strip() in ROLE_THREADS:
            roles.append(f"{name.strip()} {tid}")
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1][0]), min(kv[0][0], default=-1)))
    return ShowReport(
        pid,
        ident.name if ident is not None else None,
        tuple(MaskGroup(c, tuple(t), tuple(r), w) for (c, w), (t, r) in ordered),
        target,
        off,
    )
