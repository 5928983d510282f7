"""`ascendtune doctor`: read-only host checks for inference and an audit of how running NPU
workers are bound, as a report grouped by section or as JSON; exit 1 when a check fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors, print_json
from ascendtune.cli.planopts import (
    POLICY_NAMES,
    NoIrqReserveOpt,
    PolicyOpt,
    ReserveOpt,
    SocOpt,
    VisibleDevicesOpt,
)

if TYPE_CHECKING:
    from ascendtune.core.doctor import Check, PlanFacts
    from ascendtune.core.model import Host
    from ascendtune.host.sysroot import Root

SECTION_NAMES = ("host", "workers")
_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def _read_host(root: Root) -> tuple[Host | None, str | None]:
    """The host model, or why it could not be read (doctor still runs the checks it can)."""
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.host.reader import read_host

    try:
        return read_host(root), None
    except AscendtuneError as e:
        return None, str(e)


def _plan(
    host: Host | None,
    host_error: str | None,
    *,
    policy: str,
    visible_devices: str | None,
    soc: str | None,
    reserve: str | None,
    no_irq_reserve: bool,
) -> PlanFacts:
    from ascendtune.cli.planopts import build_request, resolve_policy
    from ascendtune.core.doctor import PlanFacts
    from ascendtune.core.errors import InvalidInput, MissingError, PlanError
    from ascendtune.core.planner import make_plan

    options: list[str] = []
    if visible_devices is not None:
        options += ["--visible-devices", visible_devices]
    if soc is not None:
        options += ["--soc", soc]
    if reserve is not None:
        options += ["--reserve", reserve]
    if no_irq_reserve:
        options.append("--no-irq-reserve")
    if host is None:
        return PlanFacts(policy, error=f"host unreadable: {host_error}", options=tuple(options))
    policy = resolve_policy(host, policy)
    if not host.accelerators:
        return PlanFacts(policy, error="no accelerator on this host", options=tuple(options))
    req = build_request(
        host,
        policy=policy,
        visible_devices=visible_devices,
        ranks=None,
        soc=soc,
        reserve=reserve,
        no_irq_reserve=no_irq_reserve,
    )
    try:
        plan = make_plan(host, req)
    except PlanError as e:
        return PlanFacts(policy, error=e.message, cpus_problem=True, options=tuple(options))
    except (MissingError, InvalidInput) as e:
        if visible_devices is not None or reserve is not None:
            raise  # the options given are wrong: say so, do not bury it in a row
        return PlanFacts(policy, error=e.message, options=tuple(options))
    return PlanFacts(policy, plan=plan, options=tuple(options))


def doctor_document(
    checks: list[Check], *, root: Root, host: Host | None, plan: PlanFacts, sections: list[str]
) -> dict[str, Any]:
    from ascendtune.core.doctor import summary

    return {
        "root": root.describe(),
        "live": root.live,
        "hostname": host.hostname if host else None,
        "sections": sections,
        "policy": plan.policy,
        "plan_mode": plan.plan.mode if plan.plan else None,
        "plan_error": plan.error,
        "checks": [c.to_json() for c in checks],
        "summary": summary(checks),
        "notes": list(host.notes) if host else [],
    }


def render(checks: list[Check], *, root: Root, host: Host | None, plan: PlanFacts) -> None:
    from rich.table import Table
    from rich.text import Text

    from ascendtune.cli.common import stdout_console
    from ascendtune.core.doctor import summary

    con = stdout_console()
    for section in SECTION_NAMES:
        rows = [c for c in checks if c.section == section]
        if not rows:
            continue
        title = "Host" if section == "host" else f"Workers (compared with the {plan.policy} plan)"
        t = Table(title=title, title_justify="left")
        for col in ("status", "check", "value", "expected"):
            t.add_column(col)
        for c in rows:
            t.add_row(
                Text(c.status, style=_STYLE[c.status]),
                Text(c.id),
                Text(c.value or "-"),
                Text(c.expected or ""),
            )
        con.print(t)
        for c in rows:
            if c.status in ("ok", "skip") and not c.detail:
                continue
            if c.status == "skip" or (c.status == "ok" and c.detail):
                con.print(Text(f"  {c.id}: {c.detail}", style="dim"))
                continue
            line = Text(f"  {c.id}: ", style=_STYLE[c.status])
            line.append(c.detail or c.value or "", style="")
            con.print(line)
            if c.fix:
                con.print(Text(f"    fix: {c.fix}"))
            if c.fix_persistent:
                con.print(Text(f"    persistent: {c.fix_persistent}"))
    if host is not None:
        for n in host.notes:
            con.print(Text(f"note: {n}", style="dim"))
    if plan.error and any(c.section == "workers" and c.id != "workers" for c in checks):
        con.print(Text(f"note: no {plan.policy} plan to compare with: {plan.error}", style="dim"))
    counts = summary(checks)
    parts = [f"{counts[s]} {s}" for s in ("fail", "warn", "ok", "skip")]
    where = "this host" if root.live else root.describe()
    con.print(Text(f"doctor ({where}): " + ", ".join(parts)))


def register(app: typer.Typer) -> None:
    @app.command(
        "doctor",
        epilog="Exit status: 0 nothing failed; 1 a check failed; 2 usage; 3 sysroot missing.",
    )
    @handle_errors
    def doctor_cmd(
        section: Annotated[
            str | None,
            typer.Option("--section", help="Run one part only: host or workers."),
        ] = None,
        policy: PolicyOpt = "auto",
        visible_devices: VisibleDevicesOpt = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        """Check this host for inference (governor, NUMA balancing, swap, THP, irqbalance,
        cpuset, capabilities, tools) and audit how running NPU workers are bound. Read-only."""
        from ascendtune.cli.common import open_root
        from ascendtune.core.doctor import DoctorInput, exit_code, host_checks, worker_checks
        from ascendtune.core.errors import UsageError
        from ascendtune.host.facts import find_workers, gather_host_facts, scanned_note

        if section is not None and section not in SECTION_NAMES:
            raise UsageError(f"--section {section}: expected one of {', '.join(SECTION_NAMES)}")
        if policy not in ("auto", *POLICY_NAMES):
            raise UsageError(
                f"--policy {policy}: expected one of {', '.join(('auto', *POLICY_NAMES))}"
            )
        sections = [section] if section else list(SECTION_NAMES)
        root = open_root(sysroot, demo)
        host, host_error = _read_host(root)
        plan = _plan(
            host,
            host_error,
            policy=policy,
            visible_devices=visible_devices,
            soc=soc,
            reserve=reserve,
            no_irq_reserve=no_irq_reserve,
        )
        inp = DoctorInput(gather_host_facts(root), host, host_error, plan)
        checks: list[Check] = []
        if "host" in sections:
            checks += host_checks(inp)
        if "workers" in sections:
            checks += worker_checks(find_workers(root, host), inp, scanned_note(root, host))
        if json_out:
            print_json(doctor_document(checks, root=root, host=host, plan=plan, sections=sections))
        else:
            render(checks, root=root, host=host, plan=plan)
        code = exit_code(checks)
        if code:
            raise typer.Exit(code)
