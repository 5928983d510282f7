"""`ascendtune bind`: put every thread of a running process on one rank's CPUs, verified, or
start a command already bound."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.common import (
    DemoOpt,
    JsonOpt,
    SysrootOpt,
    handle_errors,
    print_json,
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
from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.core.bindplan import BindReport
    from ascendtune.host.affinity import ProcessIdentity

DEFAULT_POLICY = "auto"


def register(app: typer.Typer) -> None:
    @app.command(
        "bind",
        context_settings={"allow_interspersed_args": False},
        epilog=(
            "Exit status: 0 bound and verified; 1 a thread left off target; 3 no such PID or "
            "tool; 4 permission denied (every mask left as it was); 5 CPUs not usable. "
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
        rank: Annotated[
            int | None,
            typer.Option("--rank", min=0, help="Bind to this rank's CPUs of the plan."),
        ] = None,
        plan: Annotated[
            Path | None,
            typer.Option(
                "--plan",
                metavar="FILE",
                exists=True,
                dir_okay=False,
                help="A plan written by `ascendtune plan --json` (else the plan is computed).",
            ),
        ] = None,
        cpus: Annotated[
            str | None,
            typer.Option("--cpus", metavar="LIST", help="Bind to these CPUs (no plan, no roles)."),
        ] = None,
        pid: Annotated[
            int | None,
            typer.Option("--pid", min=1, help="The running process to bind, every thread of it."),
        ] = None,
        no_roles: Annotated[
            bool,
            typer.Option(
                "--no-roles",
                help="Bind every thread to the whole pool, not acl_thread/release_thread/main "
                "to their role CPUs.",
            ),
        ] = False,
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
        max_passes: Annotated[
            int,
            typer.Option("--max-passes", min=1, help="Give up after this many passes."),
        ] = 16,
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
        """Bind every thread of a running process (--pid) to one rank's CPUs, verified, or
        start a command already bound (`ascendtune bind --rank 0 -- vllm serve ...`)."""
        plan_opts_given = [
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
        ]
        from ascendtune.app import bind as app_bind
        from ascendtune.app.options import HostSource

        target = app_bind.resolve_target(
            cpus=cpus,
            rank=rank,
            plan_file=plan,
            source=HostSource(sysroot=sysroot, demo=demo),
            plan=plan_options(
                policy=policy,
                visible_devices=visible_devices,
                ranks=ranks,
                soc=soc,
                reserve=reserve,
                no_irq_reserve=no_irq_reserve,
                spill=spill,
                target=version,
            ),
            plan_opts_given=plan_opts_given,
        )

        if pid is not None and command:
            raise UsageError("give --pid PID or -- CMD ARGS..., not both")
        if pid is not None:
            if membind:
                raise UsageError(
                    "--membind applies to a command being started; "
                    "for a running process use --migrate-memory"
                )
            outcome = app_bind.bind_pid(
                pid,
                target,
                use_roles=not no_roles,
                keep_partial=keep_partial,
                dry_run=dry_run,
                migrate_memory=migrate_memory,
                max_passes=max_passes,
            )
            if json_out:
                print_json(app_bind.pid_document(outcome))
            elif not quiet:
                _render(outcome.report, outcome.migrate_doc, outcome.ident)
            app_bind.check_outcome(outcome)
        elif command:
            if migrate_memory:
                raise UsageError(
                    "--migrate-memory moves a running process's pages; "
                    "for a command being started use --membind"
                )
            launch = app_bind.prepare_launch(
                list(command), target, membind=membind, dry_run=dry_run
            )
            if json_out:
                print_json(launch.doc)
            if dry_run:
                if not json_out and not quiet:
                    sys.stdout.write(launch.line + "\n")
                return
            app_bind.check_launch(launch)
            if not quiet:
                sys.stderr.write(launch.line + "\n")
            sys.stdout.flush()
            sys.stderr.flush()
            app_bind.start(launch)
        else:
            raise UsageError("say what to bind: --pid PID, or -- CMD ARGS... to start a command")


def _who(ident: ProcessIdentity | None) -> str:
    if ident is None:
        return ""
    return f" ({ident.name}" + (f", user {ident.user})" if ident.user else ")")


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
                Text(r.name),
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
        table = Table(title="Threads that failed", box=None, pad_edge=False, show_edge=False)
        table.add_column("TID")
        table.add_column("ERROR")
        for f in report.threads_failed:
            table.add_row(str(f.tid), Text(f.error))
        con.print(table)
    if report.rolled_back:
        con.print(Text(f"Put back on their previous masks: {len(report.rolled_back)} threads."))
    if migrate_doc is not None:
        cmd = " ".join(migrate_doc["argv"])
        if not migrate_doc["ran"]:
            why = migrate_doc.get("error") or "dry run"
            con.print(Text(f"Memory: would run `{cmd}` ({why})."))
        elif migrate_doc.get("ok"):
            con.print(Text(f"Memory: pages moved to node(s) {migrate_doc['nodes']} (`{cmd}`)."))
        else:
            con.print(Text(f"Memory: `{cmd}` failed: {migrate_doc.get('error')}"))
