"""What the doctor rules judge: host facts, worker facts and the plan they are compared with,
gathered by the host layer (ascendtune.host.facts) through a Root."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.model import Host
from ascendtune.core.planner.model import Plan, RankPlan


class FileValue(NamedTuple):
    """A one-line knob: where it was looked for and its text (None: absent)."""

    path: str
    text: str | None

    @property
    def value(self) -> str | None:
        return None if self.text is None else self.text.strip()


class HostFacts(NamedTuple):
    """Everything the host rules read, gathered through a Root (live `/` or a sysroot)."""

    root: str
    live: bool
    governors: Mapping[int, str]  # cpu -> scaling_governor, only CPUs that have cpufreq
    numa_balancing: FileValue
    swappiness: FileValue
    swaps: str | None  # proc/swaps text (None: unknown)
    sched_migration_cost: FileValue  # sysctl file, or debugfs on kernels >= 5.13
    thp: FileValue
    irqbalance_pids: tuple[int, ...] | None  # None: no process list under this root
    cgroup_version: int | None
    cgroup_cpuset: CpuSet | None  # this process's cgroup cpuset (effective)
    cap_eff: int | None  # CapEff of this process (None: not recorded)
    tools: Mapping[str, str | None] | None  # name -> path or None; None: not recorded
    arch: str | None
    env: Mapping[str, str] | None  # locale variables that are set; None: not recorded
    os_ids: tuple[str, ...] = ()  # ID and ID_LIKE of etc/os-release
    uid: int | None = None  # this process's uid
    cgroup_cpuset_file: str | None = None  # the file cgroup_cpuset came from
    interrupts: str | None = None  # proc/interrupts text (None: absent)
    # IRQ -> (smp_affinity_list, smp_affinity) texts of the NPU SQ/CQ interrupts
    irq_affinity: Mapping[int, tuple[str | None, str | None]] = MappingProxyType({})
    # Huawei PCI address -> its msi_irqs listing (absent: not readable under this root)
    msi_irqs: Mapping[str, frozenset[int]] = MappingProxyType({})
    tuned: bool | None = None  # tuned installed (None: not recorded)
    tuned_profile: str | None = None  # etc/tuned/active_profile
    irqbalance_config: str | None = None  # the irqbalance config file present, relative


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


class PlanFacts(NamedTuple):
    """The plan workers are compared with, or why there is none."""

    policy: str = "vllm-ascend"
    plan: Plan | None = None
    error: str | None = None
    cpus_problem: bool = False  # the plan failed on the CPUs (cpuset too small, disjoint)
    options: tuple[str, ...] = ()  # plan options to repeat in `ascendtune bind` (not --policy)

    def rank_of(self, device: int) -> RankPlan | None:
        if self.plan is None:
            return None
        for r in self.plan.ranks:
            if r.device == device:
                return r
        return None

    def bind_command(self, rank: int, pid: int, policy: str | None = None) -> str:
        pol = policy or self.policy
        parts = ["ascendtune", "bind", "--rank", str(rank), "--pid", str(pid)]
        if pol != "vllm-ascend":
            parts += ["--policy", pol]
        parts += list(self.options)
        return " ".join(parts)


class DoctorInput(NamedTuple):
    facts: HostFacts
    host: Host | None
    host_error: str | None
    plan: PlanFacts
