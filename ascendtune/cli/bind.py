"""`ascendtune bind`: put every thread of a running process on one rank's CPUs, verified, or
start a command already bound."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import (
    DemoOpt,
    ForcePlanOpt,
    JsonOpt,
    MaxPassesOpt,
    NoRolesOpt,
    SysrootOpt,
    cpus_option,
    handle_errors,
    interval_option,
    pid_option,
    plan_file_option,
    print_json,
    rank_option,
    stdout_console,
)
from ascendtune.cli.planopts import (
    NoIrqReserveOpt,
    PolicyOpt,
    RanksOpt,
    ReserveOpt,
    SocOpt,
    SpillOpt,
    TargetOpt,
    VisibleDevicesOpt,
    plan_options,
)
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.jsondoc import versioned

if TYPE_CHECKING:
    from ascendtune.app.options import HostSource, PlanOptions
    from ascendtune.app.workers import WorkersOptions
    from ascendtune.core.bindplan import BindReport, BindTarget
    from ascendtune.host.affinity import ProcessIdentity

DEFAULT_POLICY = "auto"
SHOWN_TIDS = 6  # thread ids shown per kind of failure (--json lists them all)


def register(app: typer.Typer) -> None:
    @app.command(
        "bind",
        help=describe("bind"),
        context_settings={"allow_interspersed_args": False},
        epilog=(
            "Exit status: 0 bound and verified; 1 a thread (--workers: a worker) left off "
            "target, something keeps resetting a mask, or another ascendtune binds the same "
            "process (--workers: this host's workers) and is named; 2 usage (a changing bind with --sysroot/--demo, a plan of another host "
            "without --force); 3 no such PID, tool or worker; 4 permission denied (every mask "
            "left as it was); 5 CPUs not usable. "
            "The launch form exits with the command's own status."
        ),
    )
    @handle_errors
    def _cmd(
        command: Annotated[
            list[str] | None,
            typer.Argument(
                metavar="-- CMD ARGS",
                help="Start CMD bound (exec, no shell) instead of binding --pid.",
                show_default=False,
            ),
        ] = None,
        rank: Annotated[int | None, rank_option("Bind to this rank's CPUs of the plan.")] = None,
        plan: Annotated[
            Path | None,
            plan_file_option(
                "A plan written by `ascendtune plan --json` (else the plan is computed)."
            ),
        ] = None,
        cpus: Annotated[
            str | None, cpus_option("Bind to these CPUs (no plan, no roles), as taskset -c.", "-c")
        ] = None,
        pid: Annotated[
            int | None,
            pid_option("The running process to bind, every thread of it (as taskset -p).", "-p"),
        ] = None,
        no_roles: NoRolesOpt = False,
        keep_partial: Annotated[
            bool,
            typer.Option(
                "--keep-partial",
                help="On a failure, keep the threads already bound instead of putting them back.",
            ),
        ] = False,
        dry_run: Annotated[
            bool,
            typer.Option("--dry-run", help="Show each thread's mask and the one it would get."),
        ] = False,
        migrate_memory: Annotated[
            bool,
            typer.Option(
                "--migrate-memory",
                help="Then move the process's pages to the plan's NUMA nodes (migratepages).",
            ),
        ] = False,
        membind: Annotated[
            bool,
            typer.Option(
                "--membind",
                help="Launch form: run through `numactl --membind` (exit 3 if numactl is absent).",
            ),
        ] = False,
        workers: Annotated[
            bool,
            typer.Option(
                "--workers",
                help="Bind every NPU/GPU worker of the running server, each to the rank of the "
                "device it drives (one plan for all), verified.",
            ),
        ] = False,
        watch: Annotated[
            bool,
            typer.Option(
                "--watch",
                help="With --workers: keep the plan applied (new threads, restarted workers) "
                "until --for or SIGINT/SIGTERM.",
            ),
        ] = False,
        interval: Annotated[
            float,
            interval_option("--watch: seconds between passes.", "S"),
        ] = 2.0,
        for_: Annotated[
            str | None,
            typer.Option(
                "--for", metavar="DURATION", help="--watch: stop after 90, 30s, 10m, 2h, 1d."
            ),
        ] = None,
        show: Annotated[
            bool,
            typer.Option(
                "--show",
                help="With --pid: read every thread's mask back, grouped by mask (compared "
                "with --rank/--plan or --cpus when given). Changes nothing.",
            ),
        ] = False,
        force: ForcePlanOpt = False,
        max_passes: MaxPassesOpt = 16,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="No summary; errors only.")
        ] = False,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
        policy: PolicyOpt = DEFAULT_POLICY,
        visible_devices: VisibleDevicesOpt = None,
        ranks: RanksOpt = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        spill: SpillOpt = False,
        version: TargetOpt = "auto",
    ) -> None:
        from ascendtune.app import bind as app_bind
        from ascendtune.app.options import HostSource

        args = BindArgs(
            command=list(command or []),
            rank=rank,
            plan_file=plan,
            cpus=cpus,
            pid=pid,
            use_roles=not no_roles,
            keep_partial=keep_partial,
            dry_run=dry_run,
            migrate_memory=migrate_memory,
            membind=membind,
            interval=interval,
            duration=for_,
            force=force,
            max_passes=max_passes,
            quiet=quiet,
            json_out=json_out,
            source=HostSource(sysroot=sysroot, demo=demo),
            plan=plan_options(**locals(), target=version),
            plan_opts_given=tuple(
                name
                for name, given in (
                    ("--sysroot", sysroot is not None),
                    ("--demo", demo is not None),
                    ("--policy", policy != DEFAULT_POLICY),
                    ("--visible-devices", visible_devices is not None),
                    ("--ranks", ranks is not None),
                    ("--soc", soc is not None),
                    ("--reserve", reserve is not None),
                    ("--no-irq-reserve", no_irq_reserve),
                    ("--spill", spill),
                    ("--target", version != "auto"),
                )
                if given
            ),
        )
        given = {
            "--workers": workers,
            "--watch": watch,
            "--show": show,
            "--pid": pid is not None,
            "-- CMD": bool(command),
            "--rank": rank is not None,
            "--cpus": cpus is not None,
            "--membind": membind,
            "--migrate-memory": migrate_memory,
            "--keep-partial": keep_partial,
            "--for": for_ is not None,
            "--dry-run": dry_run,
        }
        foreign = f"--demo {demo}" if demo is not None else None
        if foreign is None and sysroot is not None:
            foreign = f"--sysroot {sysroot}"
        HANDLERS[app_bind.bind_mode(given, foreign)](args)


class BindArgs(NamedTuple):
    """What the command line asked of `bind`, for the handler of its mode (a NamedTuple: it is
    made on every bind's start-up, docs/startup.md)."""

    command: list[str]
    rank: int | None
    plan_file: Path | None
    cpus: str | None
    pid: int | None
    use_roles: bool
    keep_partial: bool
    dry_run: bool
    migrate_memory: bool
    membind: bool
    interval: float
    duration: str | None
    force: bool
    max_passes: int
    quiet: bool
    json_out: bool
    source: HostSource
    plan: PlanOptions
    plan_opts_given: tuple[str, ...]

    def target(self, *, dry_run: bool) -> BindTarget:
        from ascendtune.app.bind import resolve_target

        return resolve_target(
            cpus=self.cpus,
            rank=self.rank,
            plan_file=self.plan_file,
            source=self.source,
            plan=self.plan,
            plan_opts_given=list(self.plan_opts_given),
            dry_run=dry_run,
            force=self.force,
        )

    def workers_options(self) -> WorkersOptions:
        from ascendtune.app.workers import WorkersOptions

        return WorkersOptions(
            source=self.source,
            plan=self.plan,
            plan_file=self.plan_file,
            force=self.force,
            dry_run=self.dry_run,
            use_roles=self.use_roles,
            max_passes=self.max_passes,
        )


def _bind_pid(args: BindArgs) -> None:
    """--pid P: every thread of a running process, verified."""
    from ascendtune.app import bind as app_bind

    assert args.pid is not None
    root = None
    if args.dry_run:
        from ascendtune.app.hosts import open_root

        root = open_root(args.source)  # --demo/--sysroot: the captured process, not ours
    if root is not None and not root.live:
        outcome = app_bind.captured_dry_run(
            args.pid, args.target(dry_run=True), root, use_roles=args.use_roles
        )
    else:
        outcome = app_bind.bind_pid(
            args.pid,
            args.target(dry_run=args.dry_run),
            use_roles=args.use_roles,
            keep_partial=args.keep_partial,
            dry_run=args.dry_run,
            migrate_memory=args.migrate_memory,
            max_passes=args.max_passes,
            meanwhile=_render_imports if not (args.json_out or args.quiet) else None,
        )
    if args.json_out:
        print_json(app_bind.pid_document(outcome))
    elif not args.quiet:
        _render(outcome.report, outcome.migrate_doc, outcome.ident)
    app_bind.check_outcome(outcome)


def _launch(args: BindArgs) -> None:
    """-- CMD ARGS: this process takes the mask, then becomes the command."""
    from ascendtune.app import bind as app_bind

    launch = app_bind.prepare_launch(
        args.command, args.target(dry_run=args.dry_run), membind=args.membind, dry_run=args.dry_run
    )
    if args.json_out:
        print_json(launch.doc)
    if args.dry_run:
        if not args.json_out and not args.quiet:
            sys.stdout.write(plain(launch.line) + "\n")
        return
    app_bind.check_launch(launch)
    if not args.quiet:
        sys.stderr.write(plain(launch.line) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    app_bind.start(launch)


def _show(args: BindArgs) -> None:
    """--pid P --show: every thread's mask read back (against --rank/--plan or --cpus)."""
    from ascendtune.app.show import show_process

    assert args.pid is not None
    given = args.cpus is not None or args.rank is not None
    shown = show_process(
        args.pid, args.target(dry_run=True) if given else None, use_roles=args.use_roles
    )
    if args.json_out:
        print_json(shown.to_json())
    elif not args.quiet:
        _render_show(shown)


def _bind_workers(args: BindArgs) -> None:
    """--workers: every worker of the running server, each to its device's rank."""
    from ascendtune.app import workers as app_workers

    rich = not (args.json_out or args.quiet) and _rich_prints()
    report = app_workers.bind_workers(
        args.workers_options(), meanwhile=_render_imports if rich else None
    )
    if args.json_out:
        print_json(report.to_json())
    elif not args.quiet:
        _render_workers(report)
    app_workers.check_workers(report)


def _watch_workers(args: BindArgs) -> None:
    """--workers --watch: keep the plan applied, one event line per change."""
    import json

    from ascendtune.app import keep_bound

    def on_event(e: keep_bound.WatchEvent) -> None:
        if e.kind == "tool":  # a diagnostic: said once on stderr, the watch goes on
            sys.stderr.write(plain(f"ascendtune: {e.line()}") + "\n")
            sys.stderr.flush()
            return
        if args.json_out:
            sys.stdout.write(json.dumps(e.to_json()) + "\n")
        elif not args.quiet or e.kind in ("failed", "restarted"):
            sys.stdout.write(plain(e.line()) + "\n")
        sys.stdout.flush()

    duration = args.duration
    summary = keep_bound.watch_workers(
        args.workers_options(),
        interval_s=args.interval,
        duration_s=keep_bound.parse_duration(duration) if duration is not None else None,
        on_event=on_event,
    )
    if args.json_out:
        sys.stdout.write(json.dumps(versioned({"watch": summary.to_json()})) + "\n")
    from ascendtune.core.errors import ProblemsFound

    if summary.failures:
        raise ProblemsFound(f"{summary.failures} worker binding(s) failed while watching")
    if summary.tool_failing:
        raise ProblemsFound(
            f"the vendor tool failed in {summary.tool_failures} pass(es) and had not recovered "
            "when the watch stopped: workers it names may have gone unbound",
            "run `ascendtune topo` to see what the tool answers",
        )


HANDLERS: dict[str, Callable[[BindArgs], None]] = {
    "pid": _bind_pid,
    "launch": _launch,
    "show": _show,
    "workers": _bind_workers,
    "watch": _watch_workers,
}


def plain(s: object) -> str:
    """A process's or host's string made one inert line (see cli.common.plain)."""
    from ascendtune.cli.common import plain as _plain

    return _plain(s)


def _render_imports() -> None:
    """What the human output of a bind imports (rich: about 11 ms), done in the wait before
    the bind's final re-read instead of after it (host.affinity.bind._final_read)."""
    import rich.table
    import rich.text  # noqa: F401


WORKER_COLUMNS = ("PID", "NAME", "DEVICE", "RANK", "BEFORE", "AFTER", "THREADS", "STATE")
# what Rich reads from the environment for its width or its styles (then Rich prints)
_RICH_ENV = ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def _worker_rows(report: Any) -> tuple[str, list[tuple[str, ...]], list[str]]:
    """The first line, the table's rows (NAME and STATE made inert) and the lines after it."""
    head = "Dry run: " if report.dry_run else ""
    first = plain(f"{head}{len(report.workers)} workers on {report.root}, plan: {report.source}")
    rows: list[tuple[str, ...]] = []
    for w in report.workers:
        if w.error:
            state = f"NOT bound: {w.error}"
        elif w.dry_run:
            n = w.threads_total - w.threads_bound
            state = f"{n} would change" if n else "unchanged"
        else:
            state = "verified" + (f", {w.threads_changed} moved" if w.changed else ", unchanged")
        rows.append(
            (
                str(w.pid),
                plain(w.name or "?"),
                "?" if w.device is None else str(w.device),
                "-" if w.rank is None else str(w.rank),
                format_cpulist(w.cpus_before),
                format_cpulist(w.cpus_after),
                f"{w.threads_bound}/{w.threads_total}",
                plain(state),
            )
        )
    after = [plain(f"note: {note}") for note in report.handoff]
    if report.dry_run:
        after.append("Nothing was changed.")
    return first, rows, after


def _rich_prints() -> bool:
    """Whether Rich prints the workers' table: on a terminal, or where the environment sets
    what Rich reads (else _plain_workers does, where it can)."""
    import os

    return sys.stdout.isatty() or any(k in os.environ for k in _RICH_ENV)


def _plain_workers(report: Any) -> list[str] | None:
    """The lines _rich_workers prints, where they can be told without Rich (stdout piped, the
    environment setting nothing Rich reads, every line printable ASCII, the table no wider than
    the pipe's width): core.text.table_as_rich. None: let Rich print them."""
    from ascendtune.cli.common import PIPE_WIDTH
    from ascendtune.core.text import table_as_rich

    if _rich_prints():
        return None
    first, rows, after = _worker_rows(report)
    if not all(line.isascii() and line.isprintable() for line in [first, *after]):
        return None
    table = table_as_rich(WORKER_COLUMNS, rows, PIPE_WIDTH)
    return None if table is None else [first, *table, *after]


def _render_workers(report: Any) -> None:
    lines = _plain_workers(report)
    if lines is None:
        _rich_workers(report)
    else:
        sys.stdout.write("\n".join(lines) + "\n")


def _rich_workers(report: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    con = stdout_console()
    first, rows, after = _worker_rows(report)
    con.print(Text(first))
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in WORKER_COLUMNS:
        table.add_column(col)
    for r in rows:
        table.add_row(r[0], Text(r[1]), *r[2:7], Text(r[7]))
    con.print(table)
    for line in after:
        con.print(Text(line))


def _render_show(shown: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    con = stdout_console()
    total = sum(len(g.tids) for g in shown.groups)
    line = f"Process {shown.pid} ({shown.name or '?'}): {total} threads, {len(shown.groups)} masks"
    if shown.target is not None:
        line += f"; {shown.off_target} off {shown.target.source}"
    con.print(Text(plain(line)))
    table = Table(box=None, pad_edge=False, show_edge=False)
    cols = ["CPUS", "THREADS", "ROLE THREADS"] + (["PLAN", ""] if shown.target else [])
    for col in cols:
        table.add_column(col)
    for g in shown.groups:
        row = [format_cpulist(g.cpus), str(len(g.tids)), ", ".join(g.role_threads)]
        if shown.target is not None:
            row += [format_cpulist(g.expected or frozenset()), "ok" if g.matches else "differs"]
        table.add_row(*(Text(plain(c)) for c in row))
    con.print(table)


def _who(ident: ProcessIdentity | None) -> str:
    if ident is None:
        return ""
    return plain(f" ({ident.name}" + (f", user {ident.user})" if ident.user else ")"))


def _render(
    report: BindReport, migrate_doc: dict[str, Any] | None, ident: ProcessIdentity | None = None
) -> None:
    from rich.table import Table
    from rich.text import Text

    con = stdout_console()
    t = report.target
    origin = f"rank {t.rank} of {t.source}" if t.rank is not None else t.source
    roles = report.use_roles and t.has_roles
    if report.dry_run:
        con.print(
            Text(
                f"Dry run: process {report.pid}{_who(ident)} → CPUs {format_cpulist(t.cpus)} ({origin}); "
                f"{report.threads_total - report.threads_bound} of {report.threads_total} "
                "threads would change. Nothing was changed."
            )
        )
        table = Table(box=None, pad_edge=False, show_edge=False)
        for col in ("TID", "NAME", "ROLE", "CURRENT", "TARGET", ""):
            table.add_column(col)
        for r in report.rows:
            table.add_row(
                str(r.tid),
                Text(plain(r.name)),
                r.role,
                format_cpulist(r.current),
                format_cpulist(r.target),
                "change" if r.changes else "ok",
            )
        con.print(table)
    else:
        state = "verified" if report.verified else "NOT verified"
        con.print(
            Text(
                f"Process {report.pid}{_who(ident)} → CPUs {format_cpulist(t.cpus)} ({origin}): "
                f"{report.threads_bound}/{report.threads_total} threads on target, "
                f"{report.threads_changed} moved, {report.passes} pass(es), {state}."
            )
        )
        if report.stopped:
            con.print(Text("The process is stopped: bound; it runs there once resumed."))
        if report.threads_exited:
            n = report.threads_exited
            con.print(Text(f"{n} thread{'s' if n != 1 else ''} exited while it was being bound."))
    if roles:
        parts = []
        for role in ("main", "acl", "release"):
            cpus = t.roles.get(role)
            if not cpus:
                continue
            who = "other threads" if role == "main" else f"{role}_thread"
            tids = report.roles_placed.get(role)
            found = (
                ""
                if role == "main"
                else (f" [{', '.join(map(str, tids))}]" if tids else " (none found)")
            )
            parts.append(f"{who}{found} → {format_cpulist(cpus)}")
        con.print(Text("Roles: " + "; ".join(parts)))
    if report.threads_failed:
        # one row per kind of failure, not per thread: a process that keeps creating threads
        # can leave hundreds off target for the same reason
        groups: dict[str, list[int]] = {}
        for f in report.threads_failed:
            groups.setdefault(f.error, []).append(f.tid)
        table = Table(title="Threads that failed", box=None, pad_edge=False, show_edge=False)
        table.add_column("THREADS")
        table.add_column("TIDS")
        table.add_column("ERROR")
        for error, group in groups.items():
            more = len(group) - SHOWN_TIDS
            shown = ", ".join(map(str, group[:SHOWN_TIDS])) + (f" +{more} more" if more > 0 else "")
            table.add_row(str(len(group)), shown, Text(plain(error)))
        con.print(table)
    if report.rolled_back:
        con.print(Text(f"Put back on their previous masks: {len(report.rolled_back)} threads."))
    if migrate_doc is not None:
        cmd = " ".join(migrate_doc["argv"])
        if not migrate_doc["ran"]:
            why = migrate_doc.get("error") or "dry run"
            con.print(Text(plain(f"Memory: would run `{cmd}` ({why}).")))
        elif migrate_doc.get("ok"):
            con.print(Text(f"Memory: pages moved to node(s) {migrate_doc['nodes']} (`{cmd}`)."))
        else:
            con.print(Text(plain(f"Memory: `{cmd}` failed: {migrate_doc.get('error')}")))
