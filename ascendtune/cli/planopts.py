"""Plan options shared by `plan`, `bind --rank` and `doctor`: their Typer declarations, and the
PlanOptions value the application layer takes."""

from __future__ import annotations

from typing import Annotated

import typer

from ascendtune.app.options import PlanOptions
from ascendtune.app.plan import AUTO, SOC_NAMES, policy_choices
from ascendtune.core.planner import POLICIES


def policy_help(*, compare: bool = False) -> str:
    """--policy's help, from the policy registry."""
    names = ", ".join(POLICIES)
    return (
        f"auto (vllm-ascend on NPU hosts, numa-local on GPU hosts), or one of: {names}"
        + (", or compare (every policy side by side)" if compare else "")
        + "."
    )


def _complete_policy(incomplete: str) -> list[str]:
    return [p for p in policy_choices() if p.startswith(incomplete)]


PolicyOpt = Annotated[
    str,
    typer.Option("--policy", help=policy_help(), autocompletion=_complete_policy),
]
VisibleDevicesOpt = Annotated[
    str | None,
    typer.Option(
        "--visible-devices",
        metavar="IDS",
        help="Devices the job sees, in its order (else ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, else all).",
    ),
]
RanksOpt = Annotated[int | None, typer.Option("--ranks", help="Plan only the first N ranks.")]
SocOpt = Annotated[
    str | None,
    typer.Option("--soc", help=f"SoC family: {', '.join(SOC_NAMES[:4])} (default: from the chip names)."),
]
ReserveOpt = Annotated[
    str | None,
    typer.Option("--reserve", metavar="CPULIST", help="Housekeeping CPUs no rank may get."),
]
SpillOpt = Annotated[
    bool,
    typer.Option(
        "--spill",
        help="numa-local: lend nodes without a device to the nearest device node (main threads only).",
    ),
]
NoIrqReserveOpt = Annotated[
    bool, typer.Option("--no-irq-reserve", help="Better policies: keep no CPUs for NPU IRQs.")
]


def plan_options(
    *,
    policy: str = AUTO,
    visible_devices: str | None = None,
    ranks: int | None = None,
    soc: str | None = None,
    reserve: str | None = None,
    no_irq_reserve: bool = False,
    spill: bool = False,
) -> PlanOptions:
    return PlanOptions(
        policy=policy,
        visible_devices=visible_devices,
        ranks=ranks,
        soc=soc,
        reserve=reserve,
        no_irq_reserve=no_irq_reserve,
        spill=spill,
    )
