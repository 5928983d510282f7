"""The options each command takes, as typed frozen values (front ends build them, the app reads
them): where the host comes from, and how to plan it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ascendtune.app.source import HostSource


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


@dataclass(frozen=True)
class DoctorOptions:
    sections: tuple[str, ...] = ("host", "workers")
    plan: PlanOptions = PlanOptions()


__all__ = ["DoctorOptions", "HostSource", "PlanOptions"]
