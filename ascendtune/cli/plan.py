"""`ascendtune plan`: per-rank CPU pools under a policy, as a table, JSON or ready-to-paste lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors
from ascendtune.cli.planopts import (
    BusyOpt,
    CmdlineOpt,
    DeviceIdsOpt,
    DpOpt,
    NoIrqReserveOpt,
    PpOpt,
    ReserveOpt,
    SocOpt,
    SpillOpt,
    TargetOpt,
    TpOpt,
    VisibleDevicesOpt,
    complete_policy_or_compare,
    plan_options,
    policy_help,
)

if TYPE_CHECKING:
    from ascendtune.app.plan import CompareReport, PlanReport
    from ascendtune.core.model import Host
    from ascendtune.core.planner import Plan


def _fmt(cpus: Any) -> str:
    from ascendtune.core.cpulist import format_cpulist

    return format_cpulist(cpus) or "-"


def _locality(x: float | None) -> str:
    return "?" if x is None else f"{x:.0%}"


def card_ids(host: Host) -> dict[int, str]:
    """The vendor tool's name (card id, chip) for each logical id, where the two numberings
    differ anywhere on the host (a container's NPU 0 may be npu-smi's 4; an A3 card holds two
    chips); else empty."""
    accs = [a for a in host.accelerators if a.npu_id is not None]
    multi_chip = any((a.chip_id or 0) > 0 for a in accs)
    if not accs or all(a.npu_id == a.logical_id and not multi_chip for a in accs):
        return {}
    return {
        a.logical_id: str(a.npu_id) + (f" chip {a.chip_id or 0}" if multi_chip else "")
        for a in accs
    }


def render_plan(
    plan: Plan,
    host: Host,
    target_reason: str | None = None,
    identity: dict[str, Any] | None = None,
) -> None:
    from ascendtune.cli.cells import Wrapped, cpus, fitted_table, prose, show
    from ascendtune.cli.common import host_line, shown, stdout_console
    from ascendtune.core import vendors

    con = stdout_console()
    word = vendors.profile(plan.vendor).word
    tool = vendors.profile(plan.vendor).tool
    if identity:
        con.print(f"plan for {shown(host_line(identity))}")
    title = (
        f"plan: policy {plan.policy}, mode {plan.mode}, SoC {plan.soc.value}, "
        f"{len(plan.ranks)} ranks"
    )
    smi = card_ids(host)
    rows: list[list[Any]] = []
    for r in plan.ranks:
        numa = ",".join(map(str, r.numa_nodes)) + (
            f" (dev {r.device_node})"
            if r.device_node is not None and (r.device_node,) != r.numa_nodes
            else ""
        )
        rows.append(
            [
                str(r.rank),
                str(r.device),
                smi.get(r.device, "?"),
                str(r.logical_id) if r.logical_id != r.device else "",
                Wrapped(numa, ", "),
                # a rank the policy leaves unbound (vLLM-Ascend skips it): said in its CPUs cell
                cpus("not bound", "yellow") if r.skipped is not None else cpus(_fmt(r.cpus)),
                cpus(_fmt(r.roles.irq)),
                cpus(_fmt(r.roles.main)),
                cpus(_fmt(r.roles.acl)),
                cpus(_fmt(r.roles.release)),
                "-" if r.skipped is not None else _locality(r.locality),
            ]
        )
    head = [
        "rank",
        word,
        tool,
        "pool of",
        "NUMA",
        "CPUs",
        "IRQ",
        "main",
        "acl",
        "release",
        "local",
    ]
    # a column that says nothing on this plan is left out: card ids equal to the logical
    # ids, no rank on another device's pool, roles a GPU plan does not have
    keep = [
        i
        for i, h in enumerate(head)
        if not (h == tool and not smi)
        and not (h == "pool of" and not any(row[i] for row in rows))
        and not (h in ("IRQ", "acl", "release") and all(row[i].text == "-" for row in rows))
    ]
    right = {j for j, i in enumerate(keep) if head[i] in ("rank", word, "pool of", "local")}
    t = fitted_table(
        con, title, [head[i] for i in keep], [[row[i] for i in keep] for row in rows], right=right
    )
    show(con, t)
    # lines of words may quote a command: never wrapped (cells.prose)
    if plan.policy == "vllm-ascend" and plan.target:
        prose(
            con,
            shown(f"vLLM-Ascend {plan.target}" + (f" ({target_reason})" if target_reason else "")),
        )
    prose(
        con,
        f"cpuset: {_fmt(plan.cpus_allowed)}"
        + (f"  reserved: {_fmt(plan.reserved)}" if plan.reserved else "")
        + f"  idle: {_fmt(plan.idle_cpus)}",
    )
    if not plan.overlaps:
        con.print("overlaps between ranks: none")
    for n in plan.notes:
        prose(con, f"note: {shown(n)}")
    for f in plan.findings:
        prose(con, f"[yellow]![/yellow] {shown(f)}")


def _complete_emit(incomplete: str) -> list[str]:
    from ascendtune.cli.planopts import complete_emit

    return complete_emit(incomplete)


POLICIES_HELP = """Policies: vllm-ascend is what vLLM-Ascend's enable_cpu_binding does, flaws
included. numa-local puts each rank on its own device's NUMA node in whole cores, never across a
node. numa-slice is vLLM-Ascend's global slicing made NUMA-aware (for A3, or hosts without
topology affinity): the same partition for every process sharing the cpuset."""


def register(app: typer.Typer) -> None:
    @app.command("plan", help=describe("plan", POLICIES_HELP))
    @handle_errors
    def plan_cmd(
        policy: Annotated[
            str,
            typer.Option(
                "--policy",
                metavar="POLICY",
                help=policy_help(compare=True),
                autocompletion=complete_policy_or_compare,
            ),
        ] = "auto",
        visible_devices: VisibleDevicesOpt = None,
        ranks: Annotated[
            int | None,
            typer.Option("--ranks", min=1, metavar="N", help="Plan only the first N ranks."),
        ] = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        spill: SpillOpt = False,
        target: TargetOpt = "auto",
        dp: DpOpt = None,
        tp: TpOpt = None,
        pp: PpOpt = None,
        device_ids: DeviceIdsOpt = None,
        busy: BusyOpt = None,
        cmdline: CmdlineOpt = None,
        pod: Annotated[
            str | None,
            typer.Option(
                "--pod",
                metavar="POD",
                help="Plan inside a Kubernetes pod's cpuset with its NPUs, as the kubelet gave "
                "them (NAME, NAMESPACE/NAME or UID; read from the kubelet on this node).",
            ),
        ] = None,
        emit: Annotated[
            str | None,
            typer.Option(
                "--emit",
                metavar="FORM",
                autocompletion=_complete_emit,
                help="Print lines that run as pasted: taskset, numactl, systemd, docker, vllm "
                "(your --cmdline with enable_cpu_binding off, then `bind --workers`), env, "
                "cpu-affinity-conf (Ascend only). With --json: in the document.",
            ),
        ] = None,
        owner: Annotated[
            str | None,
            typer.Option(
                "--owner",
                metavar="OWNER",
                help="With --emit: switch every other binder off in the lines (OMP_PROC_BIND, "
                "CPU_AFFINITY_CONF, VLLM_CPU_AFFINITY, enable_cpu_binding, ...) for the owner "
                "the form hands the CPUs to (outer; torch_npu for cpu-affinity-conf; "
                "ascendtune for vllm).",
            ),
        ] = None,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        from ascendtune.app import plan as app_plan
        from ascendtune.cli.common import host_source, respond

        opts = app_plan.PlanCommandOptions(
            host_source(sysroot, demo), plan_options(**locals()), emit, pod, owner
        )
        respond(app_plan.run(opts), json_out, app_plan.document, render)


def render(report: PlanReport | CompareReport) -> None:
    """A plan as a table (or the --emit lines), or every policy side by side."""
    from ascendtune.app.plan import CompareReport

    if isinstance(report, CompareReport):
        if report.error is None:  # else its line says why, and there is nothing to show
            _render_compare(report, report.host, report.identity)
        return
    if report.emitted is not None:
        from ascendtune.core.text import inert

        for line in report.emitted.lines:
            print(inert(line))
        return
    if report.pod is not None:
        from ascendtune.cli.common import shown, stdout_console

        stdout_console().print(
            shown(
                f"inside pod {report.pod['label']} ({report.pod['source']}): {report.pod['summary']}"
            )
        )
    render_plan(report.plan, report.host, report.target_reason, report.identity)
    if report.better:
        from ascendtune.cli.cells import prose
        from ascendtune.cli.common import shown, stdout_console

        prose(stdout_console(), shown(report.better))


def _render_compare(
    report: CompareReport, host: Host | None = None, identity: dict[str, Any] | None = None
) -> None:
    """Every policy side by side; a policy that cannot plan this host shows its error."""
    from ascendtune.cli.cells import Wrapped, fitted_table, prose, show
    from ascendtune.cli.common import host_line, shown, stdout_console
    from ascendtune.core import vendors

    plans = report.plans
    ok = report.ok
    con = stdout_console()
    first = ok[0]
    word = vendors.profile(first.vendor).word
    tool = vendors.profile(first.vendor).tool
    smi = card_ids(host) if host is not None else {}
    if identity:
        con.print(f"plan for {shown(host_line(identity))}")
    head: list[Any] = ["rank", word]
    if smi:
        head.append(tool)
    head += [Wrapped(n, "-") for n in plans]
    rows: list[list[Any]] = []
    for i, r in enumerate(first.ranks):
        cells: list[Any] = [str(r.rank), str(r.device)]
        if smi:
            cells.append(smi.get(r.device, "?"))
        for p in plans.values():
            if isinstance(p, str):
                cells.append("" if i else "error (below)")
                continue
            rp = p.ranks[i]
            if rp.skipped is not None:
                cells.append(Wrapped("not bound", ", ", "yellow"))
                continue
            cells.append(Wrapped(f"{_fmt(rp.cpus)} ({_locality(rp.locality)})", ", "))
        rows.append(cells)
    title = "plan: every policy side by side (CPUs, locality)"
    show(con, fitted_table(con, title, head, rows, right=(0, 1)))
    for n, p in plans.items():
        if isinstance(p, str):
            prose(con, f"{n}: error: {shown(p)}")
            continue
        summary = f"{len(p.overlaps)} overlaps, {len(p.idle_cpus)} idle CPUs"
        con.print(
            f"{n}: mode {p.mode}; {summary}"
            + (f"; {len(p.findings)} findings" if p.findings else "")
        )
