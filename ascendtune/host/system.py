"""Small facts about this machine and this process that front ends need (the CLI never asks the
kernel itself)."""

from __future__ import annotations

import os


def machine_arch() -> str:
    import platform

    return platform.machine()


def own_pid() -> int:
    return os.getpid()


def own_affinity() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))


def process_owner(pid: int) -> int | None:
    """The uid owning /proc/PID, or None when it is gone."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
