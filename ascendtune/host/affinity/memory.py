"""Memory: move a running process's pages to its plan's NUMA nodes (`migratepages`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ascendtune.core.cpulist import format_cpulist
from ascendtune.host import runner

MIGRATE_TIMEOUT_S = 600.0  # moving a large worker's pages takes a while


# ---- memory ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigrateResult:
    argv: tuple[str, ...]
    ok: bool
    error: str | None = None


def migratepages_path() -> str | None:
    return runner.which("migratepages")


def numactl_path() -> str | None:
    return runner.which("numactl")


def nodes_text(nodes: Sequence[int]) -> str:
    return format_cpulist(nodes)


def migrate_memory(pid: int, nodes: Sequence[int], exe: str) -> MigrateResult:
    """Move every page of `pid` to `nodes` with `migratepages PID all NODES`."""
    argv = [exe, str(pid), "all", nodes_text(nodes)]
    try:
        done = runner.run(argv, timeout=MIGRATE_TIMEOUT_S)
    except (runner.CommandTimeout, OSError) as e:
        return MigrateResult(tuple(argv), False, str(e))
    if done.returncode != 0:
        msg = done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        return MigrateResult(tuple(argv), False, msg.splitlines()[0])
    return MigrateResult(tuple(argv), True)
