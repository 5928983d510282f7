"""`ascendtune log FILE|-`: per rank, the CPU binding a vLLM-Ascend server logged or why it failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors
from ascendtune.cli.planopts import complete_target

if TYPE_CHECKING:
    from ascendtune.app.log import ServerLogReport


def register(app: typer.Typer) -> None:
    @app.command(
        "log",
        help=describe(
            "log",
            "Exit 1 when binding failed for some rank. With --sysroot or --demo, the logged pools "
            "are compared with what ascendtune predicts for that host.",
        ),
    )
    @handle_errors
    def log_cmd(
        file: Annotated[
            str,
            typer.Argument(
                help="The vLLM / vLLM-Ascend server log ('-' for stdin); gzip, xz, bzip2, zstd "
                "and single-file zip are read too, told by their content.",
                metavar="FILE|-",
            ),
        ],
        json_out: JsonOpt = False,
        target: Annotated[
            str | None,
            typer.Option(
                "--target",
                help="vLLM-Ascend version whose rules check the logged additional-config "
                "(default: the version the log names); `ascendtune explain versions` lists them.",
                metavar="VERSION",
                autocompletion=complete_target,
            ),
        ] = None,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        from ascendtune.app import log
        from ascendtune.app.source import HostSource
        from ascendtune.cli.common import respond

        host = HostSource(sysroot, demo) if (sysroot or demo) else None
        opts = log.LogOptions(path=file, target=target, compare_with=host)
        respond(log.run(opts), json_out, log.document, render)


_MARK = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("i", "cyan")}
_BINDING_STYLE = {"bound": "green", "failed": "bold red", "skipped": "yellow", "not seen": "dim"}


def render(result: ServerLogReport) -> None:
    import functools

    from rich.text import Text

    from ascendtune.app.log import plan_cells
    from ascendtune.cli.cells import cpus, fitted_table, show
    from ascendtune.cli.common import plain, shown, stdout_console

    report, checked, comparison = result.log, result.checked, result.comparison
    con = stdout_console()
    out = functools.partial(con.print, soft_wrap=True)
    head = [f"{result.source}: {report.lines} lines"]
    if len(report.runs) > 1:
        last = report.runs[-1]
        head.append(
            f"run {last.run} of {len(report.runs)} (lines {last.first_line}-{last.last_line})"
        )
    for key, label in (("vllm", "vLLM"), ("vllm_ascend", "vLLM-Ascend")):
        if key in report.versions:
            head.append(f"{label} {report.versions[key]}")
    out(shown(", ".join(head)))
    if report.args is not None:
        picked = {
            k: report.args[k]
            for k in (
                "model",
                "tensor_parallel_size",
                "data_parallel_size",
                "pipeline_parallel_size",
                "enable_expert_parallel",
            )
            if k in report.args
        }
        out(
            Text.assemble(
                ("args ", "dim"), plain(", ".join(f"{k}={v!r}" for k, v in picked.items()))
            )
        )
    if report.workers:
        rows: list[list[Any]] = []
        for w in report.workers:
            npu, main, acl, rel = plan_cells(w)
            proc = (w.process or "") + (f" {w.pid}" if w.pid is not None else "")
            irq = ",".join(f"{i.sq_cpu},{i.cq_cpu}" for i in w.irqs[:2])
            rows.append(
                [
                    "?" if w.rank is None else str(w.rank),
                    shown(proc.strip() or "-"),
                    Text(w.binding, style=_BINDING_STYLE[w.binding]),
                    npu,
                    cpus(main),
                    cpus(acl),
                    cpus(rel),
                    cpus(irq),
                    cpus(",".join(map(str, w.migrate_nodes))),
                ]
            )
        cols = ("rank", "process", "binding", "NPU", "main", "acl", "release", "IRQ CPUs", "NUMA")
        show(con, fitted_table(con, "CPU binding per rank", cols, rows))
        for w in report.workers:
            if w.binding in ("failed", "skipped") and w.reason:
                who = f"rank {w.rank}" if w.rank is not None else "worker"
                out(Text.assemble((f"{who}: ", "bold"), plain(w.reason)))
                if w.cause_text:
                    out(Text("  cause: " + plain(w.cause_text)))
                if w.fix:
                    out(Text("  fix: " + plain(w.fix), style="dim"))
    findings = list(report.findings) + (list(comparison.findings) if comparison else [])
    if comparison is not None:
        out(
            Text.assemble(
                ("compared with ", "dim"),
                (plain(comparison.host), "bold"),
                (f" ({comparison.mode})" if comparison.mode else "", "dim"),
            )
        )
    for f in findings:
        mark, style = _MARK[f.severity]
        ranks = f" [ranks {','.join(map(str, f.ranks))}]" if f.ranks else ""
        out(Text.assemble(f"{mark} ", (f.code, style), ranks, "  ", plain(f.message)))
        if f.hint:
            out(Text("    → " + plain(f.hint), style="dim"))
    if checked is not None:
        from ascendtune.cli.check_config import render as render_config

        out(Text("additional-config checked:", style="bold"))
        render_config(con, checked.report, checked.target_reason, False)
