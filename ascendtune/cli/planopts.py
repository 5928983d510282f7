"""Plan options shared by `plan`, `bind --rank` and `doctor`: their Typer declarations, and the
PlanOptions value the application layer takes."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ascendtune.app.options import PlanOptions
from ascendtune.app.planchoices import SOC_NAMES, policy_choices, visible_list
from ascendtune.cli.common import checked
from ascendtune.core import vllm_ascend
from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.policies import POLICY_NAMES


def policy_help(*, compare: bool = False) -> str:
    """--policy's help, from the policy registry's names (not the planner: a bind by --cpus
    needs no plan)."""
    names = ", ".join(POLICY_NAMES)
    return (
        f"auto (vllm-ascend on NPU hosts, numa-local on GPU hosts), or one of: {names}"
        + (", or compare (every policy side by side)" if compare else "")
        + "."
    )


def _ids(text: str, source: str) -> object:
    return visible_list(text, source)


def _cpus(text: str, source: str) -> object:
    return parse_cpulist(text, source=source)


def _complete_policy(incomplete: str) -> list[str]:
    return [p for p in policy_choices() if p.startswith(incomplete)]


def complete_policy_or_compare(incomplete: str) -> list[str]:
    """`plan --policy`: every policy, and compare."""
    return [p for p in policy_choices(compare=True) if p.startswith(incomplete)]


def complete_soc(incomplete: str) -> list[str]:
    return [s for s in SOC_NAMES if s.lower().startswith(incomplete.lower())]


def complete_emit(incomplete: str) -> list[str]:
    """`plan --emit`: the ready-to-paste forms."""
    from ascendtune.app.emit import EMITS

    return [e for e in EMITS if e.startswith(incomplete)]


def complete_section(incomplete: str) -> list[str]:
    """`doctor --section`."""
    from ascendtune.app.doctor import SECTION_NAMES

    return [s for s in SECTION_NAMES if s.startswith(incomplete)]


PolicyOpt = Annotated[
    str,
    typer.Option("--policy", metavar="POLICY", help=policy_help(), autocompletion=_complete_policy),
]
VisibleDevicesOpt = Annotated[
    str | None,
    typer.Option(
        "--visible-devices",
        metavar="IDS",
        callback=checked(_ids),
        help="Devices the job sees, in its order (else ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, else all).",
    ),
]
RanksOpt = Annotated[
    int | None, typer.Option("--ranks", min=1, metavar="N", help="Plan only the first N ranks.")
]
SocOpt = Annotated[
    str | None,
    typer.Option(
        "--soc",
        metavar="SOC",
        # every name completion offers (SOC_NAMES), so help and completion say the same
        help=f"SoC family: {', '.join(SOC_NAMES)} (910: the first-generation 910/910A; "
        "default: from the chip names).",
        autocompletion=complete_soc,
    ),
]
ReserveOpt = Annotated[
    str | None,
    typer.Option(
        "--reserve",
        metavar="CPULIST",
        help="Housekeeping CPUs no rank may get.",
        callback=checked(_cpus),
    ),
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


def complete_target(incomplete: str) -> list[str]:
    """Completion values of every --target: auto and every registry name."""
    return [t for t in ("auto", *vllm_ascend.names()) if t.startswith(incomplete)]


TARGET_HELP = (
    "vLLM-Ascend version whose behaviour applies: auto (the version a worker on the host runs, "
    f"else the newest known, {vllm_ascend.NEWEST.name}), a release from "
    f"{vllm_ascend.ENTRIES[0].name} on (v0.18.0 or 0.18.0) or a main snapshot "
    f"({', '.join(e.name for e in vllm_ascend.ENTRIES if not e.is_release)}); "
    "`ascendtune explain versions` lists them."
)
TargetOpt = Annotated[
    str,
    typer.Option("--target", metavar="VERSION", help=TARGET_HELP, autocompletion=complete_target),
]
DpOpt = Annotated[
    int | None,
    typer.Option(
        "--data-parallel-size",
        "-dp",
        "--dp",
        min=1,
        metavar="N",
        help="Data parallel engines on this node (vLLM's -dp).",
    ),
]
TpOpt = Annotated[
    int | None,
    typer.Option(
        "--tensor-parallel-size",
        "-tp",
        "--tp",
        min=1,
        metavar="N",
        help="Tensor parallel size (vLLM's -tp).",
    ),
]
PpOpt = Annotated[
    int | None,
    typer.Option(
        "--pipeline-parallel-size",
        "-pp",
        "--pp",
        min=1,
        metavar="N",
        help="Pipeline parallel size (vLLM's -pp).",
    ),
]
DeviceIdsOpt = Annotated[
    str | None,
    typer.Option(
        "--device-ids",
        metavar="IDS",
        help="vLLM's --device-ids: the NPUs in rank order.",
        callback=checked(_ids),
    ),
]
BusyOpt = Annotated[
    str | None,
    typer.Option(
        "--busy",
        metavar="IDS",
        callback=checked(_ids),
        help="NPUs that will have a process when binding runs (default: npu-smi's table plus "
        "the job's own).",
    ),
]
CmdlineOpt = Annotated[
    str | None,
    typer.Option(
        "--cmdline",
        metavar="TEXT",
        help="A whole `vllm serve ...` line: its -tp, -dp, -pp and --device-ids apply.",
    ),
]


_PLAN_FIELDS = frozenset(PlanOptions._fields) - {"env"}


def plan_options(**given: Any) -> PlanOptions:
    """The PlanOptions of a command's parameters: every parameter named like a PlanOptions field
    (policy, visible_devices, ranks, soc, reserve, no_irq_reserve, spill, target, dp, tp, pp,
    device_ids, busy, cmdline) is taken, the others ignored; pass `locals()` of the command."""
    return PlanOptions(**{k: v for k, v in given.items() if k in _PLAN_FIELDS})
