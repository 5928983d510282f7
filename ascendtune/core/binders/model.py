"""The vocabulary of the binder chain: the stages a worker goes through, the thread classes a
binder touches, a binder's static facts with their evidence, one worker as the chain sees it,
and what one binder does to it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, NamedTuple

from ascendtune.core.cpulist import CpuSet

if TYPE_CHECKING:
    from ascendtune.core.vllm_ascend import VllmAscendVersion
    from ascendtune.core.workerfacts import ThreadFacts

# when a binder acts, in the order a worker meets them
STAGES = (
    "cgroup",  # the kernel limits every thread before anything runs
    "launch",  # a wrapper sets the mask before exec (taskset, numactl, ascendtune bind --)
    "import",  # a library sets it when it loads (libgomp at `import torch`)
    "worker start",  # the worker's own code, before the device is opened
    "device init",  # the NPU runtime is set up (torch_npu, vLLM-Ascend's device set-up)
    "after warm-up",  # the model is loaded and compiled
    "after start",  # from outside, once the server is up (ascendtune bind --workers)
)
Stage = Literal[
    "cgroup", "launch", "import", "worker start", "device init", "after warm-up", "after start"
]

# the thread classes of a worker; a class born after a binder set the main thread's mask
# inherits that mask (a thread starts on its creator's mask)
CLASSES = ("main", "acl", "omp", "plugin", "rest")
ThreadClass = Literal["main", "acl", "omp", "plugin", "rest"]
CLASS_WORDS = {
    "main": "main thread",
    "acl": "acl_thread / release_thread",
    "omp": "OpenMP pool",
    "plugin": "plugin threads (ucm_*)",
    "rest": "the other threads",
}
# the stage each class is born in, as a position between STAGES (a mask set on the main
# thread at an earlier stage is inherited)
BORN: Mapping[str, float] = MappingProxyType(
    {"main": -1.0, "rest": 3.5, "acl": 4.5, "plugin": 4.6, "omp": 4.7}
)

OnNarrower = Literal["skip", "narrow", "override", "fail and warn"]
Owner = Literal["vllm-ascend", "torch_npu", "ascendtune", "outer"]
OWNERS: tuple[Owner, ...] = ("vllm-ascend", "torch_npu", "ascendtune", "outer")
Outcome = Literal["binds", "narrows", "pins", "skips", "fails", "splits", "unknown"]


class Evidence(NamedTuple):
    """Where a fact was read: a source file, PR, issue or document, and the version."""

    source: str
    version: str
    kind: Literal["source", "PR", "issue", "doc", "reading"] = "PR"

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "version": self.version, "kind": self.kind}


class Binder(NamedTuple):
    """What a binder is, whatever the worker: where it is configured, when it acts, which
    threads it touches, what it does when the mask is already narrower, and its switch."""

    id: str
    name: str
    family: Owner | None  # the owner it belongs to (None: a binder no owner keeps)
    configured: tuple[str, ...]
    acts: Stage
    threads: tuple[ThreadClass, ...]
    on_narrower: OnNarrower
    off: str  # the switch that leaves it out
    evidence: tuple[Evidence, ...]
    versions: tuple[tuple[str, str], ...] = ()  # (versions, what it does there)
    narrower_note: str = ""
    off_env: tuple[str, ...] = ()  # its switch as shell lines, where it is a variable

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "owner": self.family,
            "configured": list(self.configured),
            "acts": self.acts,
            "threads": list(self.threads),
            "on_narrower": self.on_narrower,
            "on_narrower_note": self.narrower_note,
            "off": self.off,
            "versions": [{"versions": v, "behaviour": b} for v, b in self.versions],
            "evidence": [e.to_json() for e in self.evidence],
        }


class Pool(NamedTuple):
    """vLLM-Ascend's pool for one worker: main, acl and release CPUs."""

    main: CpuSet
    acl: CpuSet
    release: CpuSet


# vLLM-Ascend's pool for the worker given the mask it inherits (None: unknown, the host is not
# known), or the error it logs
PoolFor = Callable[[CpuSet | None], "Pool | str | None"]


class Worker(NamedTuple):
    """One worker (or a command line about to start one) as the chain sees it."""

    argv: tuple[str, ...] = ()  # as typed or read; wrappers in front are binders
    wrappers: tuple[tuple[str, ...], ...] = ()  # parents' command lines that are wrappers
    env: Mapping[str, str] = MappingProxyType({})
    env_known: bool = False  # env is the worker's own (not a guess)
    plugins: Mapping[str, str] = MappingProxyType({})  # distribution -> version, beside vllm_ascend
    arch: str | None = None
    cpus_online: CpuSet | None = None
    cpuset: CpuSet | None = None  # its cgroup cpuset
    cgroup: str | None = None  # its cgroup path
    numa: Mapping[int, CpuSet] = MappingProxyType({})
    npus_visible: int | None = None
    card: int | None = None  # its NPU's index among the visible ones
    vllm_ascend: VllmAscendVersion | None = None
    cpu_binding: bool | None = None  # enable_cpu_binding as configured (None: the default)
    pool_for: PoolFor | None = None
    threads: tuple[ThreadFacts, ...] | None = None  # observed (None: not running)
    pid: int | None = None
    torch_npu: str | None = None  # torch_npu's version, when known

    @property
    def frame(self) -> CpuSet | None:
        """The CPUs every thread starts from: its cpuset, else every online CPU."""
        return self.cpuset if self.cpuset is not None else self.cpus_online

    @property
    def is_arm(self) -> bool | None:
        if not self.arch:
            return None
        return self.arch.lower() in ("aarch64", "arm64") or self.arch.lower().startswith("arm")


Masks = dict[str, CpuSet | None]


class Action(NamedTuple):
    """What one binder does to this worker: the masks it sets on the classes it touches
    (None: a set the chain cannot compute without the host), and in words why."""

    binder: Binder
    config: str  # how it was found configured ("taskset -c 0-9", "OMP_PROC_BIND=TRUE")
    outcome: Outcome
    masks: Mapping[str, CpuSet | None]
    note: str = ""
    main_only: bool = False  # set on the main thread alone: classes born later inherit
    stage: Stage | None = None  # when it differs from the binder's usual stage

    @property
    def when(self) -> Stage:
        return self.stage or self.binder.acts
