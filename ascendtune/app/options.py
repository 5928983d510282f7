"""The options several commands share, as typed immutable records: where the host comes from
(`HostSource`) and how to plan it (`PlanOptions`: `plan`, `doctor`, `explain binding`, `bind
--rank`, `watch --policy` and `fleet` hold one).

Each command's own record sits beside its use case (`ascendtune.app.topo.TopoOptions`,
`...plan.PlanCommandOptions`, ...): the front ends (the Typer CLI, `ascendtune.api`) build one
and hand it to that module's `run(options)`. Every record is a NamedTuple (change one with
`_replace`), for start-up: a frozen dataclass costs about 1 ms to define and `dataclasses`
pulls in `inspect` (together more than `topo --demo --json` spends in its own code), a
NamedTuple about 0.05 ms.
"""

from collections.abc import Mapping
from typing import NamedTuple

from ascendtune.app.source import THIS_HOST, HostSource


class PlanOptions(NamedTuple):
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


__all__ = ["THIS_HOST", "HostSource", "PlanOptions"]
