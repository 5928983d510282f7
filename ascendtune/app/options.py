"""The options each command takes, as typed frozen records: the front ends (the Typer CLI,
`ascendtune.api`) build one and hand it to the command's `run(options)` in `ascendtune.app`.

`PlanOptions` (how to plan a host) is shared: `plan`, `doctor`, `explain binding`, `bind --rank`,
`watch --policy` and `fleet` hold one. Every record here is light (no planner, no host access):
a command's start-up imports this module and nothing more to build its options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from ascendtune.app.source import HostSource

THIS_HOST = HostSource()  # neither a sysroot nor a demo: the live host


@dataclass(frozen=True)
class PlanOptions:
    """What `plan`, `bind --rank`, `doctor` and the API take to compute a plan."""

    policy: str = "auto"
    visible_devices: str | None = None  # as typed: "6,4"; None: the environment, else all
    ranks: int | None = None
    soc: str | None = None
    reserve: str | None = None  # a cpulist as typed
    no_irq_reserve: bool = False
    spill: bool = False
    # the vLLM-Ascend version whose binding `vllm-ascend` reproduces: a name, or "auto" (the
    # version found on the host, else the newest known)
    target: str = "auto"
    dp: int | None = None  # data parallel engines on this node (vLLM's -dp)
    tp: int | None = None  # tensor parallel size (-tp)
    pp: int | None = None  # pipeline parallel size (-pp)
    device_ids: str | None = None  # vLLM's --device-ids, as typed
    busy: str | None = None  # NPUs that will have a process when binding runs, as typed
    cmdline: str | None = None  # a whole `vllm serve ...` line: its -tp/-dp/-pp/--device-ids
    # the environment the visible-devices variable is read from (None: this process's)
    env: Mapping[str, str] | None = None

    def given(self) -> list[str]:
        """The command-line spelling of what was given (doctor repeats it in its fixes)."""
        out: list[str] = []
        if self.visible_devices is not None:
            out += ["--visible-devices", self.visible_devices]
        if self.soc is not None:
            out += ["--soc", self.soc]
        if self.reserve is not None:
            out += ["--reserve", self.reserve]
        if self.no_irq_reserve:
            out.append("--no-irq-reserve")
        if self.target != "auto":
            out += ["--target", self.target]
        return out


class PlanKeywords(TypedDict, total=False):
    """PlanOptions' fields but `policy` (which the API's functions name on their own), as
    keyword arguments: `api.plan(demo=..., policy="numa-local", visible_devices="6,4")`. mypy
    checks a call's keywords against it; tests/test_usecases.py holds it to PlanOptions."""

    visible_devices: str | None
    ranks: int | None
    soc: str | None
    reserve: str | None
    no_irq_reserve: bool
    spill: bool
    target: str
    dp: int | None
    tp: int | None
    pp: int | None
    device_ids: str | None
    busy: str | None
    cmdline: str | None
    env: Mapping[str, str] | None


@dataclass(frozen=True)
class TopoOptions:
    """`topo`: which host to show."""

    source: HostSource = THIS_HOST


@dataclass(frozen=True)
class PlanCommandOptions:
    """`plan`: the host, how to plan it (`plan.policy` "compare": every policy side by side),
    and `--emit KIND` (ready-to-paste lines for the plan)."""

    source: HostSource = THIS_HOST
    plan: PlanOptions = PlanOptions()
    emit: str | None = None


@dataclass(frozen=True)
class DoctorOptions:
    """`doctor`: the sections to run, the plan running workers are compared with, the host."""

    sections: tuple[str, ...] = ("host", "workers")
    plan: PlanOptions = PlanOptions()
    source: HostSource = THIS_HOST


@dataclass(frozen=True)
class CheckConfigOptions:
    """`check-config`: exactly one of config (the JSON text), file, cmdline or pid; the
    deployment facts around it; `strict` makes warnings problems (exit 1) too."""

    config: str | None = None
    config_source: str = "the config"  # "stdin" when the front end read it from there
    file: str | None = None
    cmdline: str | None = None
    pid: int | None = None
    target: str | None = None
    tp: int | None = None
    dp: int | None = None
    pp: int | None = None
    expert_parallel: bool | None = None
    kv_role: str | None = None
    soc: str | None = None
    hf_config: str | None = None
    env_file: str | None = None
    arch: str | None = None
    with_vllm_omni: bool | None = None  # None: as detected (else unknown)
    compilation_config: str | None = None  # vLLM's --compilation-config JSON
    sysroot: str | None = None
    env: Mapping[str, str] | None = None  # this process's environment when None
    strict: bool = False


class CheckConfigKeywords(TypedDict, total=False):
    """CheckConfigOptions' facts (every field but the config itself, its source and target) as
    keyword arguments of `api.check_config`; tests/test_usecases.py holds it to the record."""

    file: str | None
    cmdline: str | None
    pid: int | None
    tp: int | None
    dp: int | None
    pp: int | None
    expert_parallel: bool | None
    kv_role: str | None
    soc: str | None
    hf_config: str | None
    env_file: str | None
    arch: str | None
    with_vllm_omni: bool | None
    compilation_config: str | None
    sysroot: str | None
    env: Mapping[str, str] | None
    strict: bool


@dataclass(frozen=True)
class SnapshotOptions:
    """`snapshot DIR`: where to write the capture (a folder, or DIR.tar.gz), of which host."""

    dest: str
    force: bool = False  # replace what is at dest
    source: HostSource = THIS_HOST


@dataclass(frozen=True)
class LogOptions:
    """`log FILE`: the log (a path, '-' for stdin, or its text), the version whose rules check
    its config (None: the one it names), and a host to compare its pools with (None: none)."""

    path: str | None = None
    text: str | None = None
    target: str | None = None
    compare_with: HostSource | None = None


@dataclass(frozen=True)
class ExplainOptions:
    """`explain`: a key (None: the listing of `plan.target`'s keys, `search` filtering them), or
    `binding`: the steps of vLLM-Ascend's binding for `rank` on the host, planned with `plan`."""

    key: str | None = None
    search: str | None = None
    rank: int = 0
    source: HostSource = THIS_HOST
    plan: PlanOptions = PlanOptions()


@dataclass(frozen=True)
class WatchOptions:
    """`watch`: the processes (`pids`, or every worker of this host), what each should run on
    (`cpus`, a rank of `plan_file`, or of this host's plan under `policy`), and the interval."""

    pids: tuple[int, ...] = ()
    workers: bool = False
    cpus: str | None = None
    plan_file: str | None = None
    ranks: tuple[int, ...] = ()
    policy: str | None = None
    target: str = "auto"
    interval_s: float = 1.0


@dataclass(frozen=True)
class FleetOptions:
    """`fleet snapshot|topo|doctor|plan`: every node of a Ray cluster."""

    view: str = "doctor"
    ray_address: str | None = None  # None: RAY_ADDRESS, else auto
    timeout: float = 60.0
    nodes: tuple[str, ...] = ()  # hostnames, IPs or node id prefixes; empty: every alive node
    save: str | None = None  # a folder: one NODE.tar.gz per answering node
    ship: bool = True  # ship ascendtune to the nodes as runtime_env py_modules
    plan: PlanOptions = field(default_factory=PlanOptions)


@dataclass(frozen=True)
class FleetCompareOptions:
    """`fleet compare PATH...`: snapshots gathered any other way (no Ray)."""

    paths: tuple[str, ...]
    view: str = "doctor"
    plan: PlanOptions = field(default_factory=PlanOptions)


__all__ = [
    "THIS_HOST",
    "CheckConfigKeywords",
    "CheckConfigOptions",
    "DoctorOptions",
    "ExplainOptions",
    "FleetCompareOptions",
    "FleetOptions",
    "HostSource",
    "LogOptions",
    "PlanCommandOptions",
    "PlanKeywords",
    "PlanOptions",
    "SnapshotOptions",
    "TopoOptions",
    "WatchOptions",
]
