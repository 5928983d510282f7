"""Reading a process's masks back without changing any: the dry run of a bind (survey_process),
and every thread's mask for `bind --workers` and `bind --show`."""

from __future__ import annotations

from collections.abc import Iterator

from ascendtune.core.bindplan import BindReport, BindTarget, dry_run_report
from ascendtune.core.cpulist import CpuSet
from ascendtune.host.affinity.masks import Tasks, main_first
from ascendtune.host.affinity.process import require_process


def survey_process(
    pid: int, target: BindTarget, *, use_roles: bool = True, tasks: Tasks | None = None
) -> BindReport:
    """The dry run: every thread with its current mask and the one it would get; no change."""
    tasks = tasks or Tasks()
    require_process(pid, tasks)

    def threads() -> Iterator[tuple[int, str, CpuSet]]:
        for tid in main_first(pid, tasks.list_tids(pid) or []):
            name = tasks.name(pid, tid)
            cur = tasks.get(tid)
            if name is not None and cur is not None:
                yield tid, name, cur

    return dry_run_report(pid, target, threads(), use_roles=use_roles)


def thread_masks(pid: int, tasks: Tasks | None = None) -> dict[int, CpuSet]:
    """tid -> mask of every thread of pid present now (threads that exit meanwhile are left out)."""
    tasks = tasks or Tasks()
    out: dict[int, CpuSet] = {}
    for tid in tasks.list_tids(pid) or []:
        cur = tasks.get(tid)
        if cur is not None:
            out[tid] = cur
    return out


def thread_names_and_masks(pid: int, tasks: Tasks | None = None) -> list[tuple[int, str, CpuSet]]:
    """(tid, name, mask) of every thread of pid present now, main thread first (`bind --show`)."""
    tasks = tasks or Tasks()
    out: list[tuple[int, str, CpuSet]] = []
    for tid in main_first(pid, tasks.list_tids(pid) or []):
        name, cur = tasks.name(pid, tid), tasks.get(tid)
        if name is not None and cur is not None:
            out.append((tid, name, cur))
    return out
