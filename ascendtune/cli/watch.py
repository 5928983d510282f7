"""`ascendtune watch`: a live view of where each worker's threads really run, or one sample
(`--once`, `--json`) for scripts."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import (
    JsonOpt,
    cpus_option,
    handle_errors,
    interval_option,
    pid_option,
    plan_file_option,
    rank_option,
)
from ascendtune.cli.planopts import TargetOpt, _complete_policy

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ascendtune.core.watch import WatchReport, WorkerReport

MAX_THREAD_ROWS = 32  # per worker on screen; --json has them all
MASK_CHANGES_SHOWN = 3  # the last mask changes said under a worker's table


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f}%"


def _mib(b: int) -> str:
    mib = b / (1 << 20)
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def _worker_lines(w: WorkerReport) -> tuple[str, list[tuple[str, ...]], list[str]]:
    from ascendtune.core.cpulist import format_cpulist as f

    t = w.target
    gone = " (exited; its PID now runs a new process, not watched)" if w.pid_reused else " (exited)"
    head = [f"PID {w.pid} {w.name}" + ("" if w.alive else gone)]
    if t.rank is not None:
        head.append(f"rank {t.rank}" + (f" NPU {t.device}" if t.device is not None else ""))
    if t.plan_cpus is not None:
        head.append(f"plan CPUs {f(t.plan_cpus)}, off plan {_pct(w.off_plan_share)}")
    if t.node_cpus is not None:
        nodes = ",".join(map(str, t.nodes))
        head.append(f"node {nodes}, off node {_pct(w.off_node_share)}")
    head.append(f"CPU {w.cpu_time_s:.1f}s")
    head.append(
        f"{len(w.threads)} threads" + (f", {w.threads_exited} exited" if w.threads_exited else "")
    )
    if w.memory_by_node:
        head.append(
            "memory " + ", ".join(f"N{n} {_mib(b)}" for n, b in sorted(w.memory_by_node.items()))
        )
    planned = t.plan_cpus is not None
    # the busiest threads first, and role threads always
    ranked = sorted(w.threads, key=lambda th: (th.role is None, -th.cpu_time_s, th.tid))
    rows: list[tuple[str, ...]] = []
    for th in ranked[:MAX_THREAD_ROWS]:
        role = ""
        if th.role is not None:
            role = th.role + (
                " ok" if th.role_stayed else " off its role CPU" if th.role_stayed is False else ""
            )
        rows.append(
            (
                str(th.tid),
                th.name,
                "" if th.last_cpu is None else str(th.last_cpu),
                f(th.cpus_ran),
                str(th.migrations),
                "" if th.ctx_voluntary is None else str(th.ctx_voluntary),
                "" if th.ctx_involuntary is None else str(th.ctx_involuntary),
                f"{th.cpu_time_s:.2f}",
                _pct(th.off_plan_share) if planned else "",
                role,
                "" if th.set_by is None else th.set_by.short,
            )
        )
    if len(ranked) > MAX_THREAD_ROWS:
        rows.append(("…", f"{len(ranked) - MAX_THREAD_ROWS} more", *([""] * 9)))
    tail: list[str] = []
    if w.mask_changes:
        shown = w.mask_changes[-MASK_CHANGES_SHOWN:]
        tail.append(
            f"mask changes ({w.mask_changes_total}, the last {len(shown)}): "
            + "; ".join(
                f"TID {c.tid} {c.name} {f(c.before or ())} → {f(c.after)} at sample {c.sample}"
                + (f", set by {c.set_by.words}" if c.set_by is not None else "")
                for c in shown
            )
        )
    elif w.attributed and w.binders is None:
        tail.append("who set each mask: this worker's binder chain could not be read")
    if w.neighbours:
        on = f(w.reference_cpus) if w.reference_cpus is not None else "?"
        tail.append(
            f"others on CPUs {on}: "
            + ", ".join(
                f"{n.process if n.process == n.name else n.process + '/' + n.name} "
                f"[{n.pid}] {n.cpu_time_s:.2f}s"
                for n in w.neighbours
            )
        )
    return " · ".join(head), rows, tail


def _screen(report: WatchReport) -> tuple[Any, ...]:
    """What the screen shows, as plain values: redraw only when it changes."""
    return tuple(_worker_lines(w) for w in report.workers)


def render(
    report: WatchReport, screen: tuple[Any, ...] | None = None, *, live: bool = True
) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ascendtune.cli.cells import cpus
    from ascendtune.cli.common import plain

    parts: list[RenderableType] = [
        Text(
            f"ascendtune watch · {report.samples} samples over {report.elapsed_s:.1f}s "
            f"(every {report.interval_s:g}s)" + (" · Ctrl-C to stop" if live else "")
        )
    ]
    for head, rows, tail in screen if screen is not None else _screen(report):
        parts.append(Text(plain(head), style="bold"))
        table = Table(box=None, pad_edge=False, show_edge=False)
        # SET BY: the binder of the chain that leaves each thread's mask (`?`: none or several)
        set_by = any(row[10] for row in rows)
        cols = ["TID", "NAME", "CPU", "RAN ON", "MIGR", "VCSW", "ICSW", "CPU s", "OFF PLAN"]
        cols += ["ROLE", "SET BY"] if set_by else ["ROLE"]
        for col in cols:
            table.add_column(
                col,
                justify="right" if col in ("MIGR", "VCSW", "ICSW", "CPU s") else "left",
                overflow="fold",  # a narrow terminal wraps a value, never cuts it
            )
        for row in rows:
            # RAN ON is a CPU list: it breaks after a comma only
            cells = row if set_by else row[:10]
            table.add_row(*(cpus(c) if i == 3 else Text(plain(c)) for i, c in enumerate(cells)))
        parts.append(table)
        parts.extend(Text(plain(line)) for line in tail)
    return Group(*parts)


def register(app: typer.Typer) -> None:
    @app.command(
        "watch",
        help=describe("watch"),
        epilog=(
            "Exit status: 0 done; 3 no such PID; 5 CPUs not online or a bad plan. Threads that "
            "exit while watched are counted, not errors."
        ),
    )
    @handle_errors
    def _cmd(
        pid: Annotated[
            list[int] | None,
            pid_option("A process to watch, every thread of it (repeat for more)."),
        ] = None,
        cpus: Annotated[str | None, cpus_option("The CPUs the process should run on.")] = None,
        plan: Annotated[
            Path | None,
            plan_file_option("A plan written by `ascendtune plan --json`, with --rank."),
        ] = None,
        rank: Annotated[
            list[int] | None,
            rank_option("The plan's rank the process serves (one per --pid, or one for all)."),
        ] = None,
        workers: Annotated[
            bool,
            typer.Option(
                "--workers",
                help="Watch every NPU/GPU worker of this host, each against its rank of the plan "
                "(--plan FILE or --policy P).",
            ),
        ] = False,
        policy: Annotated[
            str | None,
            typer.Option(
                "--policy",
                metavar="POLICY",
                help="Watch against this host's plan under POLICY (with --rank), instead of "
                "--plan FILE.",
                autocompletion=_complete_policy,
            ),
        ] = None,
        version: TargetOpt = "auto",
        interval: Annotated[
            float,
            interval_option("Seconds between samples.", "SECONDS"),
        ] = 1.0,
        once: Annotated[
            bool, typer.Option("--once", help="Take one sample of length --interval and print it.")
        ] = False,
        count: Annotated[
            int | None,
            typer.Option(
                "--count",
                "-n",
                min=1,
                metavar="N",
                help="Stop after this many intervals (like top -n).",
            ),
        ] = None,
        json_out: JsonOpt = False,
    ) -> None:
        from ascendtune.app import watch
        from ascendtune.cli.common import respond

        opts = watch.WatchOptions(
            pids=tuple(pid or ()),
            workers=workers,
            cpus=cpus,
            plan_file=None if plan is None else str(plan),
            ranks=tuple(rank or ()),
            policy=policy,
            target=version,
            interval_s=interval,
        )
        if once:
            respond(watch.run(opts), json_out, watch.document, _render_once)
            return
        session = watch.start(opts)
        # everything imported and set up so far lives as long as the watch: out of the
        # collector's way, so the full collections a long watch runs walk only what its
        # samples made (11 -> 3 ms of CPU per sample at 16 workers x 100 threads)
        import gc

        gc.freeze()
        if json_out:
            _json_lines(session, interval, count)
        else:
            _live(session, interval, count)


def _render_once(report: WatchReport) -> None:
    from ascendtune.cli.common import stdout_console

    stdout_console().print(render(report, live=False))


def _json_lines(session: Any, interval: float, count: int | None) -> None:
    """One compact document per interval, for a script that reads lines."""
    from ascendtune.app.watch import document
    from ascendtune.core.jsondoc import dumps

    done = 0
    try:
        while count is None or done < count:
            time.sleep(interval)
            report = session.step()
            done += 1
            line = dumps(document(report), compact=True)
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            if session.all_exited:
                break
    except KeyboardInterrupt:
        return


def _live(session: Any, interval: float, count: int | None) -> None:
    from rich.live import Live

    from ascendtune.cli.common import stdout_console

    con = stdout_console()
    if not con.is_terminal:
        _samples(session, interval, count, con)
        return
    report = session.report()
    shown = _screen(report)
    done = 0
    with Live(render(report, shown), console=con, auto_refresh=False, transient=False) as live:
        try:
            while count is None or done < count:
                time.sleep(interval)
                report = session.step()
                done += 1
                screen = _screen(report)
                if screen != shown:  # quiet when nothing changes
                    shown = screen
                    live.update(render(report, screen), refresh=True)
                if session.all_exited:
                    break
        except KeyboardInterrupt:
            pass
        live.update(render(report, shown), refresh=True)


def _samples(session: Any, interval: float, count: int | None, con: Any) -> None:
    """Not a terminal (a file, a pipe): every sample printed in full as it is taken, like
    `top -b`, so `timeout 60 ascendtune watch ... > f` keeps each of them."""
    report = session.report()
    con.print(render(report, _screen(report)))
    done = 0
    try:
        while count is None or done < count:
            time.sleep(interval)
            report = session.step()
            done += 1
            con.print()
            con.print(render(report, _screen(report)))
            if session.all_exited:
                break
    except KeyboardInterrupt:
        pass
