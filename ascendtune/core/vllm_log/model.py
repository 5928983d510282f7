"""What `log` reports: per worker, the binding it logged (pools, IRQs, memory) or why it failed,
and the bounds that keep a log of any size in bounded memory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.findings import Finding

# Bounded memory: a log may be gigabytes, a line megabytes (a pasted tensor), or never end.
MAX_LINE_BYTES = 64 * 1024
MAX_LINES = 20_000_000
MAX_WORKERS = 1024
MAX_IRQS = 64  # per worker
MAX_LITERAL_CHARS = 256 * 1024  # a `non-default args` dict
MAX_LITERAL_DEPTH = 32
MAX_LITERAL_NODES = 100_000
MAX_CPU = 1 << 16

Binding = Literal["bound", "failed", "skipped", "not seen"]


@dataclass(frozen=True)
class LoggedPlan:
    """`NPUn: main=[...]  acl=[...]  release=[[...]]` (or `Ascend 950 NPUn: worker=[...]`)."""

    npu: int
    main: CpuSet
    acl: CpuSet = frozenset()
    release: CpuSet = frozenset()

    @property
    def cpus(self) -> CpuSet:
        return self.main | self.acl | self.release

    def to_json(self) -> dict[str, Any]:
        return {
            "npu": self.npu,
            "main": format_cpulist(self.main),
            "acl": format_cpulist(self.acl),
            "release": format_cpulist(self.release),
        }


@dataclass(frozen=True)
class IrqBinding:
    """`NPUn(PCI addr): sq_send_trigger_irq IRQ_ID=a -> CPUx, cq_update_irq IRQ_ID=b -> CPUy`."""

    npu: int
    pci: str
    sq_irq: int
    sq_cpu: int
    cq_irq: int
    cq_cpu: int

    def to_json(self) -> dict[str, Any]:
        return {
            "npu": self.npu,
            "pci": self.pci,
            "sq_irq": self.sq_irq,
            "sq_cpu": self.sq_cpu,
            "cq_irq": self.cq_irq,
            "cq_cpu": self.cq_cpu,
        }


@dataclass(frozen=True)
class WorkerLog:
    """What one worker process (one rank) logged about CPU binding."""

    rank: int | None  # vLLM-Ascend's rank_id (the worker's local rank), or from the prefix
    pid: int | None
    process: str | None  # the record prefix's name: "Worker_TP3", "VllmWorker rank=1", ...
    dp_rank: int | None
    binding: Binding
    reason: str | None = None  # the exception text of "Bind cpus failed", or why it was skipped
    cause: str | None = None  # a stable code for the reason ("too_few_cpus", ...)
    cause_text: str | None = None  # the cause in words
    fix: str | None = None
    mode: str | None = None  # topo_affinity, global_slice (from `[cpu_bind_mode]`)
    visible_npus: tuple[int, ...] = ()  # the running NPU list it printed
    plan: LoggedPlan | None = None
    irqs: tuple[IrqBinding, ...] = ()
    migrate_nodes: tuple[int, ...] = ()
    skipped_steps: tuple[str, ...] = ()  # "irq: ...", "memory: ..." (binding ran, a step did not)
    line: int = 0  # the first line that named this worker
    global_rank: int | None = None  # vLLM's "rank R in world size W is assigned as ..." line


@dataclass(frozen=True)
class RunSummary:
    """One server run of a log appended across restarts: where it starts, why a new run was
    seen there, and what binding did for its workers."""

    run: int  # 1, 2, ... in the order of the file
    first_line: int
    last_line: int
    started: str  # why a run begins here: "the log's first line", "a server start banner", ...
    counts: Mapping[Binding, int]
    failed_ranks: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "first_line": self.first_line,
            "last_line": self.last_line,
            "started": self.started,
            "summary": {b: self.counts.get(b, 0) for b in BINDINGS},
            "failed_ranks": list(self.failed_ranks),
        }


BINDINGS: tuple[Binding, ...] = ("bound", "failed", "skipped", "not seen")


@dataclass(frozen=True)
class LogReport:
    workers: tuple[WorkerLog, ...]
    args: Mapping[str, Any] | None  # vLLM's `non-default args: {...}`
    additional_config: Mapping[str, Any] | None
    versions: Mapping[str, str]  # "vllm", "vllm_ascend" when the log names them
    findings: tuple[Finding, ...]
    lines: int  # lines read
    lines_cut: int  # longer than MAX_LINE_BYTES, or ending mid-record
    binding_seen: bool  # any CPU-binding line at all
    truncated: bool = False  # stopped after MAX_LINES
    # every server run the log holds, the last one (whose workers `workers` are) last
    runs: tuple[RunSummary, ...] = ()

    @property
    def ranks(self) -> tuple[WorkerLog, ...]:
        return self.workers

    @property
    def failed(self) -> tuple[WorkerLog, ...]:
        return tuple(w for w in self.workers if w.binding == "failed")
