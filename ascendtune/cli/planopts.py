"""Plan options shared by `plan` and `bind --rank`, and the plan document both use."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.core.cpulist import format_cpulist, parse_cpulist, parse_int_list
from ascendtune.core.errors import InvalidInput, ParseError, UsageError

if TYPE_CHECKING:
    from ascendtune.core.model import Host
    from ascendtune.core.planner import Plan, PlanRequest

# kept equal to ascendtune.core.planner.POLICIES (a test checks) without importing the planner
POLICY_NAMES = (
    "vllm-ascend",
    "numa-local",
    "numa-slice",
    "node",
    "socket",
    "exclusive",
    "core-complex",
)
SOC_NAMES = ("A2", "A3", "310P", "A5", "910")


AUTO = "auto"  # vllm-ascend on Ascend hosts (what will happen), numa-local on GPU hosts


def resolve_policy(host: Host, policy: str) -> str:
    if policy != AUTO:
        return policy
    return "vllm-ascend" if host.npus or not host.gpus else "numa-local"


def _complete_policy(incomplete: str) -> list[str]:
    return [p for p in (AUTO, *POLICY_NAMES) if p.startswith(incomplete)]


PolicyOpt = Annotated[
    str,
    typer.Option(
        "--policy",
        help="auto (vllm-ascend on NPU hosts, numa-local on GPU hosts), vllm-ascend (what vLLM-Ascend does), numa-local, numa-slice, or torchrun's node, socket, exclusive, core-complex.",
        autocompletion=_complete_policy,
    ),
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
    typer.Option("--soc", help="SoC family: A2, A3, 310P, A5 (default: from the chip names)."),
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


def visible_list(text: str, source: str) -> tuple[int, ...]:
    """A device list in the order given; UUIDs and repeated ids are refused with a reason."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if any(x.upper().startswith(("GPU-", "MIG-")) for x in items):
        raise InvalidInput(
            f"{source} names devices by UUID ({items[0]}); ascendtune plans by index",
            "give --visible-devices with the indices nvidia-smi prints",
        )
    ids = parse_int_list(text, source=source)
    if len(ids) != len(items) and "-" not in text:
        raise InvalidInput(f"{source} {text} names a device twice")
    return ids


def build_request(
    host: Host,
    *,
    policy: str,
    visible_devices: str | None,
    ranks: int | None,
    soc: str | None,
    reserve: str | None,
    no_irq_reserve: bool,
    spill: bool = False,
) -> PlanRequest:
    from ascendtune.core.model import Soc
    from ascendtune.core.planner import PlanRequest

    env_name = "ASCEND_RT_VISIBLE_DEVICES" if host.npus or not host.gpus else "CUDA_VISIBLE_DEVICES"
    visible = None
    source = "every device"
    if visible_devices is not None:
        visible, source = (
            visible_list(visible_devices, "--visible-devices"),
            "--visible-devices",
        )
    elif os.environ.get(env_name, "").strip():
        visible, source = visible_list(os.environ[env_name], env_name), env_name
    soc_value = None
    if soc is not None:
        by_name = {s.value.upper(): s for s in Soc}
        soc_value = by_name.get(soc.strip().upper())
        if soc_value is None or soc_value in (Soc.UNKNOWN, Soc.GPU):
            raise UsageError(f"--soc {soc}: expected one of {', '.join(SOC_NAMES)}")
    reserved: frozenset[int] = frozenset()
    if reserve:
        try:
            reserved = parse_cpulist(reserve, source="--reserve")
        except ParseError as e:
            raise InvalidInput(e.message) from None
    return PlanRequest(
        policy=resolve_policy(host, policy),
        visible=visible,
        ranks=ranks,
        soc=soc_value,
        reserve=reserved,
        irq_reserve=not no_irq_reserve,
        spill=spill,
        visible_source=source,
    )


def compute_plan(
    *,
    sysroot: str | None,
    demo: str | None,
    policy: str,
    visible_devices: str | None,
    ranks: int | None,
    soc: str | None,
    reserve: str | None,
    no_irq_reserve: bool,
    spill: bool = False,
) -> tuple[Host, Plan]:
    from ascendtune.cli.common import open_root
    from ascendtune.core.planner import make_plan
    from ascendtune.host.reader import read_host

    root = open_root(sysroot, demo)
    host = read_host(root)
    req = build_request(
        host,
        policy=policy,
        visible_devices=visible_devices,
        ranks=ranks,
        soc=soc,
        reserve=reserve,
        no_irq_reserve=no_irq_reserve,
        spill=spill,
    )
    return host, make_plan(host, req)


def plan_document(plan: Plan) -> dict[str, Any]:
    """The plan as JSON (SPEC.md section 3): what `bind --plan FILE` reads back."""
    return {
        "policy": plan.policy,
        "mode": plan.mode,
        "soc": plan.soc.value,
        "vendor": plan.vendor,
        "visible_devices": list(plan.visible),
        "cpus_allowed": format_cpulist(plan.cpus_allowed),
        "reserved": format_cpulist(plan.reserved),
        "ranks": [
            {
                "rank": r.rank,
                "device": r.device,
                "logical_id": r.logical_id,
                "cpus": format_cpulist(r.cpus),
                "numa_nodes": list(r.numa_nodes),
                "device_numa_node": r.device_node,
                "locality": None if r.locality is None else round(r.locality, 4),
                "roles": r.roles.to_json(),
                **(
                    {"vllm_log_line": r.vllm_log_line(plan.mode)}
                    if plan.policy == "vllm-ascend"
                    else {}
                ),
            }
            for r in plan.ranks
        ],
        "overlaps": [
            {"ranks": list(o.ranks), "cpus": format_cpulist(o.cpus)} for o in plan.overlaps
        ],
        "idle_cpus": format_cpulist(plan.idle_cpus),
        "findings": list(plan.findings),
        "notes": list(plan.notes),
    }


def compute_plan_document(**options: Any) -> dict[str, Any]:
    """The plan document for compute_plan's keyword options (what `bind --rank` uses)."""
    _, plan = compute_plan(**options)
    return {"schema_version": 1, **plan_document(plan)}
