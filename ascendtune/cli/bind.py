"""`ascendtune bind`: put every thread of a running process on one rank's CPUs, verified, or
start a command already bound."""

from __future__ import annotations

import json
import os
import shlex
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
    VisibleDevicesOpt,
)
from ascendtune.core.bindplan import BindReport, BindTarget, target_from_cpus, target_from_plan
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import (
    InvalidInput,
    MissingError,
    ParseError,
    PermissionDenied,
    ProblemsFound,
    UsageError,
)

if TYPE_CHECKING:
    from ascendtune.host.affinity import MigrateResult, ProcessIdentity

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
            )
            if given
        ]
        if cpus is not None:
            if rank is not None or plan is not None:
                raise UsageError("give --cpus LIST, or --rank R (with --plan FILE), not both")
            if plan_opts_given:
                raise UsageError(f"{', '.join(plan_opts_given)} only apply to --rank R")
            target = target_from_cpus(cpus)
        elif rank is None:
            raise UsageError(
                "say what to bind to: --rank R (a plan of this host, or --plan FILE) or --cpus LIST"
            )
        elif plan is not None:
            if plan_opts_given:
                raise UsageError(
                    f"{', '.join(plan_opts_given)} compute a plan; --plan FILE already is one"
                )
            target = target_from_plan(_read_plan(plan), rank, source=str(plan))
        else:
            from ascendtune.cli.planopts import compute_plan_document

            doc = compute_plan_document(
                sysroot=sysroot,
                demo=demo,
                policy=policy,
                visible_devices=visible_devices,
                ranks=ranks,
                soc=soc,
                reserve=reserve,
                no_irq_reserve=no_irq_reserve,
                spill=spill,
            )
            where = f"demo {demo}" if demo else (f"sysroot {sysroot}" if sysroot else "this host")
            target = target_from_plan(doc, rank, source=f"{policy} plan of {where}")

        if pid is not None and command:
            raise UsageError("give --pid PID or -- CMD ARGS..., not both")
        if pid is not None:
            if membind:
                raise UsageError(
                    "--membind applies to a command being started; "
                    "for a running process use --migrate-memory"
                )
            _bind_pid(
                pid,
                target,
                use_roles=not no_roles,
                keep_partial=keep_partial,
                dry_run=dry_run,
                migrate_memory=migrate_memory,
                max_passes=max_passes,
                quiet=quiet,
                json_out=json_out,
            )
        elif command:
            if migrate_memory:
                raise UsageError(
                    "--migrate-memory moves a running process's pages; "
                    "for a command being started use --membind"
                )
            _launch(
                list(command),
                target,
                membind=membind,
                dry_run=dry_run,
                quiet=quiet,
                json_out=json_out,
            )
        else:
            raise UsageError("say what to bind: --pid PID, or -- CMD ARGS... to start a command")


def _read_plan(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise MissingError(f"cannot read plan {path}: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(
            f"not JSON: {e.msg}",
            source=str(path),
            line=e.lineno,
            hint="write it with `ascendtune plan --json > FILE`",
        ) from None


# ---- a running process ----------------------------------------------------------------------


def _bind_pid(
    pid: int,
    target: BindTarget,
    *,
    use_roles: bool,
    keep_partial: bool,
    dry_run: bool,
    migrate_memory: bool,
    max_passes: int,
    quiet: bool,
    json_out: bool,
) -> None:
    from ascendtune.core.bindplan import check_cpus_usable
    from ascendtune.host import affinity as aff

    aff.require_process(pid)
    ident = aff.process_identity(pid)
    allowed = aff.cpuset_cpus(pid)
    check_cpus_usable(target, online=aff.online_cpus(), allowed=allowed, whom=f"process {pid}")
    nodes = target.numa_nodes or aff.numa_nodes_of(target.cpus)
    migrate_exe: str | None = None
    if migrate_memory:
        migrate_exe = aff.migratepages_path()
        if migrate_exe is None:
            raise MissingError(
                "migratepages is not installed, so --migrate-memory cannot move the pages "
                "(nothing was changed)",
                "install numactl, which ships migratepages, or drop --migrate-memory",
            )

    if dry_run:
        report = aff.survey_process(pid, target, use_roles=use_roles)
    else:
        report = aff.bind_process(
            pid, target, use_roles=use_roles, keep_partial=keep_partial, max_passes=max_passes
        )

    migration: MigrateResult | None = None
    migrate_doc: dict[str, Any] | None = None
    if migrate_exe is not None:
        argv = [migrate_exe, str(pid), "all", aff.nodes_text(nodes)]
        if dry_run:
            migrate_doc = {"nodes": aff.nodes_text(nodes), "argv": argv, "ran": False}
        elif report.verified:
            migration = aff.migrate_memory(pid, nodes, migrate_exe)
            migrate_doc = {
                "nodes": aff.nodes_text(nodes),
                "argv": list(migration.argv),
                "ran": True,
                "ok": migration.ok,
                "error": migration.error,
            }
        else:
            migrate_doc = {
                "nodes": aff.nodes_text(nodes),
                "argv": argv,
                "ran": False,
                "error": "binding failed, pages not moved",
            }

    if json_out:
        doc = report.to_json()
        doc["process"] = ident.to_json() if ident is not None else None
        if migrate_doc is not None:
            doc["migrate_memory"] = migrate_doc
        print_json(doc)
    elif not quiet:
        _render(report, migrate_doc, ident)
    _exit_status(report, allowed, migration, ident)


def _exit_status(
    report: BindReport,
    allowed: frozenset[int] | None,
    migration: MigrateResult | None,
    ident: ProcessIdentity | None = None,
) -> None:
    from ascendtune.host.affinity import EPERM_HINT

    if report.dry_run:
        return
    pid = report.pid
    if report.rolled_back:
        undo = f"the {len(report.rolled_back)} threads changed were put back"
    elif report.threads_changed:
        undo = f"{report.threads_changed} threads keep their new masks (--keep-partial)"
    else:
        undo = "no mask was changed"
    if report.restore_failed:
        tids = ", ".join(str(f.tid) for f in report.restore_failed)
        raise ProblemsFound(
            f"binding process {pid} failed and threads {tids} could not be put back",
            "see threads_failed and restore_failed in --json",
        )
    names = report.errno_names
    first = report.threads_failed[0] if report.threads_failed else None
    if "EPERM" in names:
        if ident is not None and ident.user:
            owner: str | None = ident.user
        else:
            uid = _owner(pid)
            owner = None if uid is None else f"uid {uid}"
        raise PermissionDenied(
            f"not permitted to change the CPU affinity of process {pid}"
            + (f" (owned by {owner})" if owner else "")
            + f"; {undo}",
            EPERM_HINT,
        )
    if "EINVAL" in names and first is not None:
        may = format_cpulist(allowed) if allowed is not None else "those of its cpuset"
        raise InvalidInput(
            f"thread {first.tid} of process {pid} refused CPUs "
            f"{format_cpulist(report.target.all_cpus)}: {first.error}; {undo}",
            f"process {pid} may use CPUs {may}",
        )
    if report.threads_failed or not report.verified:
        n = len(report.threads_failed) or report.threads_total - report.threads_bound
        detail = f": thread {first.tid}: {first.error}" if first is not None else ""
        raise ProblemsFound(
            f"{n} thread(s) of process {pid} are not on their target CPUs{detail}",
            "the process may set its own affinity; see threads_failed in --json",
        )
    if migration is not None and not migration.ok:
        raise ProblemsFound(
            f"threads bound, but migratepages failed: {migration.error}",
            "the CPU binding stands; move memory later or restart the process with --membind",
        )


def _who(ident: ProcessIdentity | None) -> str:
    if ident is None:
        return ""
    return f" ({ident.name}" + (f", user {ident.user})" if ident.user else ")")


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


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


# ---- a command being started ------------------------------------------------------------------


def _launch(
    command: list[str],
    target: BindTarget,
    *,
    membind: bool,
    dry_run: bool,
    quiet: bool,
    json_out: bool,
) -> None:
    from ascendtune.core.bindplan import check_cpus_usable
    from ascendtune.host import affinity as aff

    # roles name threads of a running worker; a command not yet started gets the whole pool
    pool = BindTarget(
        cpus=target.cpus, numa_nodes=target.numa_nodes, rank=target.rank, source=target.source
    )
    check_cpus_usable(
        pool, online=aff.online_cpus(), allowed=aff.cpuset_cpus(os.getpid()), whom="this process"
    )
    if aff.resolve_command(command[0]) is None:
        raise MissingError(f"command not found: {command[0]}", "check PATH or give its full path")
    argv = list(command)
    nodes = target.numa_nodes or aff.numa_nodes_of(target.cpus)
    if membind:
        numactl = aff.numactl_path()
        if numactl is None:
            raise MissingError(
                "numactl is not installed, so --membind cannot bind memory (nothing was started)",
                "install numactl, or drop --membind",
            )
        argv = [numactl, f"--membind={aff.nodes_text(nodes)}", "--", *command]

    if not dry_run:
        aff.set_own_affinity(pool.cpus)
        got = frozenset(os.sched_getaffinity(0))
    else:
        got = frozenset(os.sched_getaffinity(0))
    verified = got == pool.cpus
    origin = f"rank {target.rank} of {target.source}" if target.rank is not None else target.source
    doc: dict[str, Any] = {
        "command": command,
        "argv": argv,
        "cpus": format_cpulist(pool.cpus),
        "threads_total": 1,
        "threads_bound": 1 if verified else 0,
        "threads_failed": [],
        "passes": 0 if dry_run else 1,
        "verified": verified,
        "dry_run": dry_run,
        "rank": target.rank,
        "source": target.source,
        "membind": aff.nodes_text(nodes) if membind else None,
    }
    mem = f", memory on node(s) {aff.nodes_text(nodes)}" if membind else ""
    line = (
        f"ascendtune: {'would run' if dry_run else 'running'} `{shlex.join(command)}` "
        f"on CPUs {format_cpulist(pool.cpus)} ({origin}){mem}"
    )
    if json_out:
        print_json(doc)
    if dry_run:
        if not json_out and not quiet:
            sys.stdout.write(line + "\n")
        return
    if not verified:
        raise ProblemsFound(
            f"this process's mask reads {format_cpulist(got)}, not {format_cpulist(pool.cpus)}; "
            "nothing was started"
        )
    if not quiet:
        sys.stderr.write(line + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    aff.exec_command(argv)
