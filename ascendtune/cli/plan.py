"""`ascendtune plan`: per-rank CPU pools under a policy, as a table, JSON or ready-to-paste lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.app.emit import EMITS
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors, print_json
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
    plan_options,
    policy_help,
)

if TYPE_CHECKING:
    from ascendtune.app.plan import CompareReport
    from ascendtune.core.model import Host
    from ascendtune.core.planner import Plan


def _fmt(cpus: Any) -> str:
    from ascendtune.core.cpulist import format_cpulist

    return format_cpulist(cpus) or "-"


def _locality(x: float | None) -> str:
    return "?" if x is None else f"{x:.0%}"


def render_plan(plan: Plan, host: Host, target_reason: str | None = None) -> None:
    from rich.table import Table

    from ascendtune.cli.common import stdout_console
    from ascendtune.core import vendors

    con = stdout_console()
    word = vendors.profile(plan.vendor).word
    title = f"plan: policy {plan.policy}, mode {plan.mode}, SoC {plan.soc.value}, {len(plan.ranks)} ranks"
    t = Table(title=title, title_justify="left")
    for col in ("rank", word, "pool of", "NUMA", "CPUs", "IRQ", "main", "acl", "release", "local"):
        t.add_column(col, justify="right" if col in ("rank", word, "pool of", "local") else "left")
    for r in plan.ranks:
        t.add_row(
            str(r.rank),
            str(r.device),
            str(r.logical_id) if r.logical_id != r.device else "",
            ",".join(map(str, r.numa_nodes))
            + (
                f" (dev {r.device_node})"
                if r.device_node is not None and (r.device_node,) != r.numa_nodes
                else ""
            ),
            _fmt(r.cpus),
            _fmt(r.roles.irq),
            _fmt(r.roles.main),
            _fmt(r.roles.acl),
            _fmt(r.roles.release),
            _locality(r.locality),
        )
    con.print(t)
    if plan.policy == "vllm-ascend" and plan.target:
        con.print(f"vLLM-Ascend {plan.target}" + (f" ({target_reason})" if target_reason else ""))
    con.print(
        f"cpuset: {_fmt(plan.cpus_allowed)}"
        + (f"  reserved: {_fmt(plan.reserved)}" if plan.reserved else "")
        + f"  idle: {_fmt(plan.idle_cpus)}"
    )
    if not plan.overlaps:
        con.print("overlaps between ranks: none")
    for n in plan.notes:
        con.print(f"note: {n}")
    for f in plan.findings:
        con.print(f"[yellow]![/yellow] {f}")


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @handle_errors
    def plan_cmd(
        policy: Annotated[
            str,
            typer.Option("--policy", help=policy_help(compare=True)),
        ] = "auto",
        visible_devices: VisibleDevicesOpt = None,
        ranks: Annotated[
            int | None, typer.Option("--ranks", help="Plan only the first N ranks.")
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
        emit: Annotated[
            str | None,
            typer.Option(
                "--emit",
                help="Print lines that run as pasted: taskset, numactl, systemd, docker, vllm "
                "(your --cmdline with enable_cpu_binding off, then `bind --workers`), env, "
                "cpu-affinity-conf (Ascend only). With --json: in the document.",
            ),
        ] = None,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        """Compute per-rank CPU affinity: exactly as vLLM-Ascend would bind, or a better policy.

        Policies: vllm-ascend is what vLLM-Ascend's enable_cpu_binding does, flaws included.
        numa-local puts each rank on its own device's NUMA node in whole cores, never across
        a node. numa-slice is vLLM-Ascend's global slicing made NUMA-aware (for A3, or hosts
        without topology affinity): the same partition for every process sharing the cpuset.
        """
        from ascendtune.app import plan as app_plan
        from ascendtune.app.emit import emit_lines
        from ascendtune.cli.common import load_host
        from ascendtune.core.errors import UsageError

        if emit is not None and emit not in EMITS:
            raise UsageError(f"--emit {emit}: expected one of {', '.join(EMITS)}")
        app_plan.check_policy(policy, compare=True)
        got = load_host(sysroot, demo)
        host = got.host
        opts = plan_options(
            policy=policy,
            visible_devices=visible_devices,
            ranks=ranks,
            soc=soc,
            reserve=reserve,
            no_irq_reserve=no_irq_reserve,
            spill=spill,
            target=target,
            dp=dp,
            tp=tp,
            pp=pp,
            device_ids=device_ids,
            busy=busy,
            cmdline=cmdline,
        )
        if policy == app_plan.COMPARE:
            report = app_plan.compare(host, opts, got.root)
            if json_out:
                print_json(app_plan.compare_document(report, got.identity))
            app_plan.require_some_plan(report)
            if not json_out:
                _render_compare(report)
            return
        result = app_plan.plan(host, opts, got.root)
        lines = (
            emit_lines(
                result.plan,
                emit,
                cmdline=cmdline,
                bind_args=["--policy", result.plan.policy, *opts.given()],
            )
            if emit
            else None
        )
        if json_out:
            doc = app_plan.plan_document(result.plan, got.identity, result.target_reason)
            if emit and lines is not None:
                doc["emit"] = {"kind": emit, "lines": lines}
            print_json(doc)
            return
        if lines is not None:
            for line in lines:
                print(line)
            return
        render_plan(result.plan, host, result.target_reason)
        if result.better:
            from ascendtune.cli.common import stdout_console

            stdout_console().print(result.better)


def _render_compare(report: CompareReport) -> None:
    """Every policy side by side; a policy that cannot plan this host shows its error."""
    from rich.table import Table

    from ascendtune.cli.common import stdout_console

    plans = report.plans
    ok = report.ok
    con = stdout_console()
    t = Table(title="plan: every policy side by side (CPUs, locality)", title_justify="left")
    t.add_column("rank", justify="right")
    t.add_column("device", justify="right")
    for n in plans:
        t.add_column(n)
    first = ok[0]
    for i, r in enumerate(first.ranks):
        cells = []
        for p in plans.values():
            if isinstance(p, str):
                cells.append("" if i else "error (below)")
                continue
            rp = p.ranks[i]
            cells.append(f"{_fmt(rp.cpus)} ({_locality(rp.locality)})")
        t.add_row(str(r.rank), str(r.device), *cells)
    con.print(t)
    for n, p in plans.items():
        if isinstance(p, str):
            con.print(f"{n}: error: {p}")
            continue
        summary = f"{len(p.overlaps)} overlaps, {len(p.idle_cpus)} idle CPUs"
        con.print(
            f"{n}: mode {p.mode}; {summary}"
            + (f"; {len(p.findings)} findings" if p.findings else "")
        )
