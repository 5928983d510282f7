"""A process holding an accelerator and its threads, as proc/PID shows it: what worker discovery
(ascendtune.host.workers) gathers for doctor's audit and for `bind --workers`. Apart from the
doctor rules (core.doctor re-exports them) so that a bind loads none of those rules (about 7 ms
of imports, the planner's model among them)."""

from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet


class ThreadFacts(NamedTuple):
    tid: int
    name: str
    cpus: CpuSet


class Ancestor(NamedTuple):
    pid: int
    comm: str


class WorkerFacts(NamedTuple):
    """A process holding an accelerator, as proc/PID shows it."""

    pid: int
    devices: tuple[int, ...]  # logical ids of the devices it holds (best effort)
    found_by: tuple[str, ...]  # "npu-smi", "fd"
    present: bool = True  # proc/PID exists under this root
    vendor: str = "huawei"
    comm: str | None = None
    command: tuple[str, ...] = ()
    uid: int | None = None
    session: int | None = None
    ancestors: tuple[Ancestor, ...] = ()  # parent first
    cgroup: str | None = None
    cpuset: CpuSet | None = None  # its cgroup cpuset (None: unknown)
    threads: tuple[ThreadFacts, ...] = ()
    device_files: tuple[str, ...] = ()
