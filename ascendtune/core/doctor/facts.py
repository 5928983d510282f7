"""What the doctor rules judge: host facts, worker facts and the plan they are compared with,
gathered by the host layer (ascendtune.host.facts) through a Root."""

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.model import Host
from ascendtune.core.parsers.procstatus import status_int
from ascendtune.core.planner.model import Plan, RankPlan

# re-exported: doctor's rules judge them (their home is core.workerfacts)
from ascendtune.core.workerfacts import Ancestor as Ancestor
from ascendtune.core.workerfacts import ThreadFacts as ThreadFacts
from ascendtune.core.workerfacts import WorkerFacts as WorkerFacts

# The files the host rules read, relative to the root. Each rule declares the ones it judges
# (Rule.reads, IRQ_READS); the host layer reads exactly those into HostFacts.files, and
# `snapshot` captures exactly those: one list, the rules'. A `*` or `[0-9]` in a path component
# matches as in a shell glob, within that component.
GOVERNORS = "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"
NUMA_BALANCING = "proc/sys/kernel/numa_balancing"
SWAPPINESS = "proc/sys/vm/swappiness"
SWAPS = "proc/swaps"
SCHED_MIGRATION = "proc/sys/kernel/sched_migration_cost_ns"
SCHED_MIGRATION_DEBUGFS = "sys/kernel/debug/sched/migration_cost_ns"  # kernels >= 5.13
THP = "sys/kernel/mm/transparent_hugepage/enabled"
SELF_STATUS = "proc/self/status"
OS_RELEASE = "etc/os-release"
META = "meta.json"
INTERRUPTS = "proc/interrupts"
TUNED_PROFILE = "etc/tuned/active_profile"
# RHEL / openEuler, then Debian / Ubuntu
IRQBALANCE_CONFIGS = ("etc/sysconfig/irqbalance", "etc/default/irqbalance")
# the files a container runtime leaves at the root (docker, podman): a fix of the kernel or of
# the host's services must then run on the host
CONTAINER_MARKS = (".dockerenv", "run/.containerenv")


def is_pattern(path: str) -> bool:
    return any(c in path for c in "*?[")


def path_matches(pattern: str, path: str) -> bool:
    """Whether path is one of pattern's files: component by component, shell-glob rules."""
    from fnmatch import fnmatchcase

    want, got = pattern.split("/"), path.split("/")
    # a component without a glob character matches only itself: compared as it is, not
    # through fnmatch's regular expression (doctor asks this of every file it gathered)
    return len(want) == len(got) and all(
        g == w or (is_pattern(w) and fnmatchcase(g, w)) for g, w in zip(got, want, strict=True)
    )


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
    # every file the rules declare, by path (a pattern's files: each one present): its text,
    # None when absent
    files: Mapping[str, str | None]
    irqbalance_pids: tuple[int, ...] | None  # None: no process list under this root
    cgroup_version: int | None
    cgroup_cpuset: CpuSet | None  # this process's cgroup cpuset (effective)
    tools: Mapping[str, str | None] | None  # name -> path or None; None: not recorded
    arch: str | None
    env: Mapping[str, str] | None  # locale variables that are set; None: not recorded
    cgroup_cpuset_file: str | None = None  # the file cgroup_cpuset came from
    # IRQ -> (smp_affinity_list, smp_affinity) texts of the NPU SQ/CQ interrupts
    irq_affinity: Mapping[int, tuple[str | None, str | None]] = MappingProxyType({})
    # Huawei PCI address -> its msi_irqs listing (absent: not readable under this root)
    msi_irqs: Mapping[str, frozenset[int]] = MappingProxyType({})
    tuned: bool | None = None  # tuned installed (None: not recorded)
    # what says this root is a container (meta.json's `container`, /.dockerenv, ...); None: not
    # one, as far as can be told
    container: str | None = None
    # the paths a rule may read here (its declaration); None: every file gathered
    declared: frozenset[str] | None = None

    def only(self, reads: tuple[str, ...]) -> "HostFacts":
        """These facts as one rule sees them: the files it declared, no other."""
        return self._replace(declared=frozenset(reads))

    def _allow(self, path: str) -> None:
        if self.declared is not None and path not in self.declared:
            raise LookupError(
                f"a doctor rule read {path} without declaring it (Rule.reads): a snapshot would "
                "not capture it"
            )

    def file(self, path: str) -> FileValue:
        self._allow(path)
        return FileValue(path, self.files.get(path))

    def text(self, path: str) -> str | None:
        return self.file(path).text

    def matching(self, pattern: str) -> dict[str, str]:
        """The files of a declared pattern that are present, by path."""
        self._allow(pattern)
        return {p: t for p, t in self.files.items() if t is not None and path_matches(pattern, p)}

    # what the rules ask of those files, parsed

    @property
    def governors(self) -> dict[int, str]:
        """cpu -> scaling_governor, only CPUs that have cpufreq."""
        out: dict[int, str] = {}
        for path, text in self.matching(GOVERNORS).items():
            cpu = path.split("/")[4][3:]
            if cpu.isascii() and cpu.isdigit() and text.strip():
                out[int(cpu)] = text.strip()
        return out

    @property
    def sched_migration_cost(self) -> FileValue:
        """The sysctl file, or debugfs on kernels >= 5.13 (the sysctl's path when neither)."""
        sysctl = self.file(SCHED_MIGRATION)
        if sysctl.text is None:
            debugfs = self.file(SCHED_MIGRATION_DEBUGFS)
            if debugfs.text is not None:
                return debugfs
        return sysctl

    @property
    def cap_eff(self) -> int | None:
        """CapEff of this process (None: not recorded)."""
        return status_int(self.text(SELF_STATUS), "CapEff", 16)

    @property
    def uid(self) -> int | None:
        return status_int(self.text(SELF_STATUS), "Uid")

    @property
    def os_ids(self) -> tuple[str, ...]:
        """ID and ID_LIKE of etc/os-release."""
        ids: list[str] = []
        for line in (self.text(OS_RELEASE) or "").splitlines():
            key, _, val = line.partition("=")
            if key.strip() in ("ID", "ID_LIKE"):
                ids += val.strip().strip('"').lower().split()
        return tuple(ids)

    @property
    def tuned_profile(self) -> str | None:
        text = self.text(TUNED_PROFILE)
        return text.strip() or None if text is not None else None

    @property
    def irqbalance_config(self) -> str | None:
        """The irqbalance config file present, relative."""
        return next((p for p in IRQBALANCE_CONFIGS if self.text(p) is not None), None)


class PlanFacts(NamedTuple):
    """The plan workers are compared with, or why there is none."""

    policy: str = "vllm-ascend"
    plan: Plan | None = None
    error: str | None = None
    cpus_problem: bool = False  # the plan failed on the CPUs (cpuset too small, disjoint)
    options: tuple[str, ...] = ()  # plan options to repeat in `ascendtune bind` (not --policy)
    # why this plan stands in for the one asked (`auto` where vLLM-Ascend binds nothing at all)
    note: str | None = None

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
