"""`ascendtune doctor`: read-only host checks for inference and an audit of how running NPU
workers are bound, as a report grouped by section or as JSON; exit 1 when a check fails."""

# real annotations, no `from __future__ import annotations`: Typer evaluates doctor_cmd's
# option annotations from strings otherwise, 3.4 M instructions (docs/startup.md)
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.app.doctor import SECTION_NAMES
from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors
from ascendtune.cli.planopts import (
    NoIrqReserveOpt,
    PolicyOpt,
    ReserveOpt,
    SocOpt,
    TargetOpt,
    VisibleDevicesOpt,
    complete_section,
    plan_options,
)

if TYPE_CHECKING:
    from ascendtune.app.doctor import DoctorReport
_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def _both_ids(text: str, smi: dict[int, str], word: str, tool: str) -> str:
    """`NPU 0` -> `NPU 0 (npu-smi 4)` where the two numberings differ (the checks name the
    logical id; an operator reading the vendor tool beside this report needs its id too)."""
    import re

    if not smi or not text:
        return text
    return re.sub(
        rf"\b{re.escape(word)} (\d+)\b(?![,\d]| \({re.escape(tool)})",
        lambda m: (
            f"{m.group(0)} ({tool} {smi[int(m.group(1))]})"
            if int(m.group(1)) in smi
            else m.group(0)
        ),
        text,
    )


def _title(section: str, against: str) -> str:
    return {
        "host": "Host",
        "workers": f"Workers (compared with the {against} plan)",
        "binders": "Binders (every binder acting on each worker, in the order they act)",
        "k8s": "Kubernetes (what the kubelet gave each pod)",
    }.get(section, section)


def render(report: "DoctorReport") -> None:
    from rich.text import Text

    from ascendtune.cli.cells import PASTE_INDENT, Wrapped, fitted_table, paste, prose, show
    from ascendtune.cli.common import host_line, plain, stdout_console
    from ascendtune.cli.plan import card_ids
    from ascendtune.core import vendors
    from ascendtune.core.doctor import summary

    checks, root, host, plan = report.checks, report.root, report.host, report.plan
    con = stdout_console()
    smi = card_ids(host) if host is not None else {}
    home = vendors.vendor_of(host)
    con.print(Text(f"doctor for {host_line(report.identity)}"))
    persistent_of: dict[str, str] = {}  # a persistent fix printed, and the row it was under
    for section in SECTION_NAMES:
        rows = [c for c in checks if c.section == section]
        if not rows:
            continue
        against = plan.policy + (
            f" {plan.plan.target}"
            if plan.plan and plan.plan.target and plan.policy == "vllm-ascend"
            else ""
        )
        title = _title(section, against)
        cells: list[list[Any]] = [
            [
                Text(c.status, style=_STYLE[c.status]),
                Wrapped(plain(c.id), ",:"),
                Text(_both_ids(plain(c.value or "-"), smi, home.word, home.tool)),
                Text(_both_ids(plain(c.expected or ""), smi, home.word, home.tool)),
            ]
            for c in rows
        ]
        show(con, fitted_table(con, title, ("status", "check", "value", "expected"), cells))
        for c in rows:
            if c.status in ("ok", "skip") and not c.detail:
                continue
            ids = _both_ids(c.detail or "", smi, home.word, home.tool)
            if c.status == "skip" or (c.status == "ok" and c.detail):
                prose(con, Text(plain(f"  {c.id}: {ids}"), style="dim"))
                continue
            line = Text(plain(f"  {c.id}: "), style=_STYLE[c.status])
            line.append(
                _both_ids(plain(c.detail or c.value or ""), smi, home.word, home.tool), style=""
            )
            prose(con, line)
            where = " (on the host, not in this container)" if c.fix_on_host else ""
            if c.fix:
                paste(con, "fix" + where, plain(c.fix))
            if c.fix_persistent and c.fix_persistent in persistent_of:
                # one line per fix: pasted once, it serves every row that needs it
                prose(
                    con,
                    Text(
                        f"{PASTE_INDENT}(persistent: the line under "
                        f"{persistent_of[c.fix_persistent]} above)",
                        style="dim",
                    ),
                )
            elif c.fix_persistent:
                persistent_of[c.fix_persistent] = c.id
                block = c.fix_persistent.splitlines()
                if len(block) == 1:
                    paste(con, "persistent" + where, plain(block[0]))
                else:  # a configuration fragment (a kubelet setting): a block, line by line
                    prose(con, Text(f"{PASTE_INDENT}persistent{where}:"))
                    for row in block:
                        prose(con, Text(plain(f"{PASTE_INDENT}  {row}")))
    if host is not None:
        shown_as_rows = {
            d for c in checks if c.id.endswith("_view") for d in (c.detail or "").split("; ")
        }
        for n in host.notes:
            if n in shown_as_rows:
                continue
            prose(con, Text(plain(f"note: {n}"), style="dim"))
    if plan.error and any(c.section == "workers" and c.id != "workers" for c in checks):
        prose(
            con,
            Text(plain(f"note: no {plan.policy} plan to compare with: {plan.error}"), style="dim"),
        )
    counts = summary(checks)
    parts = [f"{counts[s]} {s}" for s in ("fail", "warn", "ok", "skip")]
    where = "this host" if root.live else root.describe()
    prose(con, Text(plain(f"doctor ({where}): " + ", ".join(parts))))


def register(app: typer.Typer) -> None:
    @app.command(
        "doctor",
        help=describe("doctor", "Read-only.", paragraph=False),
        epilog="Exit status: 0 nothing failed; 1 a check failed; 2 usage; 3 sysroot missing.",
    )
    @handle_errors
    def doctor_cmd(
        section: Annotated[
            str | None,
            typer.Option(
                "--section",
                metavar="SECTION",
                help="Run one part only: host, workers, binders or k8s.",
                autocompletion=complete_section,
            ),
        ] = None,
        policy: PolicyOpt = "auto",
        visible_devices: VisibleDevicesOpt = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        target: TargetOpt = "auto",
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        from ascendtune.app import doctor
        from ascendtune.cli.common import host_source, respond

        opts = doctor.DoctorOptions(
            sections=doctor.sections_of(section),
            plan=plan_options(**locals()),
            source=host_source(sysroot, demo),
        )
        respond(doctor.run(opts), json_out, doctor.document, render)
