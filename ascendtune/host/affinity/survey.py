"""Reading a process's masks back without changing any: the dry run of a bind (survey_process),
and every thread's mask for `bind --workers` and `bind --show`."""

from __future__ import annotations

from ascendtune.core.bindplan import BindReport, BindTarget, ThreadRow
from ascendtune.core.cpulist import CpuSet
from ascendtune.host.affinity.masks import Tasks, main_first
from ascendtune.host.affinity.process import require_process


def survey_process(
    pid: int, target: BindTarget, *, use_roles: bool = True, tasks: Tasks | None = None
) -> BindReport:
    """The dry run: every thread with its current mask and the one it would get; no change."""
    tasks = tasks or Tasks()
    require_process(pid, tasks)
    use = use_roles and target.has_roles
    rows: list[ThreadRow] = []
    placed: dict[str, list[int]] = {}
    for tid in main_first(pid, tasks.list_tids(pid) or []):
        name = tasks.name(pid, tid)
        cur = tasks.get(tid)
        if name is None or cur is None:
            continue
        role, want = target.thread_target(name, use_roles=use)
        rows.append(ThreadRow(tid, name, role, cur, want))
        if role in ("acl", "release"):
            placed.setdefault(role, []).append(tid)
    bound = sum(1 for r in rows if not r.changes)
    return BindReport(
        pid=pid,
        target=target,
        use_roles=use,
        threads_total=len(rows),
        threads_bound=bound,
        threads_failed=(),
        passes=0,
        verified=bound == len(rows),
        roles_placed={r: tuple(t) for r, t in placed.items()},
        dry_run=True,
        rows=tuple(rows),
    )


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
