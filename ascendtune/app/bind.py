"""`bind`: which way of running it the options ask for (the mode rules), what to bind to (a rank
of a plan, a plan file, or CPUs), binding every thread of a running process, verified, or
preparing a command to start already bound."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.core.bindplan import (
    BindReport,
    BindTarget,
    dry_run_report,
    target_from_cpus,
    target_from_plan,
)
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import (
    InvalidInput,
    MissingError,
    PermissionDenied,
    ProblemsFound,
    UsageError,
)
from ascendtune.core.jsondoc import versioned

if TYPE_CHECKING:
    from ascendtune.app.documents import BindLaunchDocument
    from ascendtune.host.affinity import MigrateResult, ProcessIdentity
    from ascendtune.host.roots import Root


# ---- which options go with which mode ---------------------------------------------------------

Mode = Literal["workers", "watch", "show", "pid", "launch"]
# the options --workers does without: it finds the processes and their ranks itself
NOT_WITH_WORKERS = (
    "--pid", "--rank", "--cpus", "-- CMD", "--show", "--membind", "--migrate-memory",
    "--keep-partial",
)  # fmt: skip
# the options that say or shape the mode; `given` maps each to whether the command line has it
MODE_OPTIONS = (*NOT_WITH_WORKERS, "--workers", "--watch", "--for", "--dry-run")


def bind_mode(given: Mapping[str, bool], foreign: str | None = None) -> Mode:
    """The way of running `bind` the options ask for, or the UsageError of the first rule they
    break. foreign: `--sysroot DIR` or `--demo NAME` when the plan is another host's (then only a
    dry run may touch a process of this one)."""
    if given["--watch"] and not given["--workers"]:
        raise UsageError("--watch keeps --workers bound: give --workers --watch")
    if given["--workers"]:
        conflicts = [o for o in NOT_WITH_WORKERS if given[o]]
        if conflicts:
            raise UsageError(
                f"--workers finds the processes itself: {', '.join(conflicts)} do not go with it"
            )
        if given["--watch"]:
            return "watch"
        if given["--for"]:
            raise UsageError("--for bounds --watch: give --workers --watch --for DURATION")
        return "workers"
    process = given["--pid"] or given["-- CMD"]
    if foreign is not None and not given["--dry-run"] and not given["--show"] and process:
        raise UsageError(
            f"bind changes processes of this host, and {foreign} plans another host: "
            "only --dry-run is allowed with it",
            "add --dry-run, or write the plan of this host "
            "(`ascendtune plan --json > plan.json`) and give --plan",
        )
    if given["--show"]:
        if not given["--pid"]:
            raise UsageError("--show reads a running process: give --pid PID")
        return "show"
    if given["--pid"] and given["-- CMD"]:
        raise UsageError("give --pid PID or -- CMD ARGS..., not both")
    if given["--pid"]:
        if given["--membind"]:
            raise UsageError(
                "--membind applies to a command being started; "
                "for a running process use --migrate-memory"
            )
        return "pid"
    if given["-- CMD"]:
        if given["--migrate-memory"]:
            raise UsageError(
                "--migrate-memory moves a running process's pages; "
                "for a command being started use --membind"
            )
        return "launch"
    raise UsageError("say what to bind: --pid PID, or -- CMD ARGS... to start a command")


# ---- what to bind to --------------------------------------------------------------------------


def resolve_target(
    *,
    cpus: str | None,
    rank: int | None,
    plan_file: Path | None,
    source: HostSource,
    plan: PlanOptions,
    plan_opts_given: list[str],
    dry_run: bool = False,
    force: bool = False,
) -> BindTarget:
    """The CPUs (and roles) to bind to, from exactly one of --cpus, --plan FILE or a computed plan."""
    if cpus is not None:
        if rank is not None or plan_file is not None:
            raise UsageError("give --cpus LIST, or --rank R (with --plan FILE), not both")
        if plan_opts_given:
            raise UsageError(f"{', '.join(plan_opts_given)} only apply to --rank R")
        return target_from_cpus(cpus)
    if rank is None:
        raise UsageError(
            "say what to bind to: --rank R (a plan of this host, or --plan FILE) or --cpus LIST"
        )
    if plan_file is not None:
        if plan_opts_given:
            raise UsageError(
                f"{', '.join(plan_opts_given)} compute a plan; --plan FILE already is one"
            )
        doc = read_plan_file(plan_file)
        if not dry_run:
            from ascendtune.app.hosts import identity, open_root
            from ascendtune.app.workers import check_plan_identity

            # the identity of this host, whatever --sysroot/ASCENDTUNE_SYSROOT say
            check_plan_identity(doc, identity(open_root(HostSource())), plan_file, force=force)
        return target_from_plan(doc, rank, source=str(plan_file))
    from ascendtune.app import plan as app_plan
    from ascendtune.app.hosts import load

    got = load(source)
    app_plan.check_policy(plan.policy)
    made, note = app_plan.binding_plan(got.host, plan, got.root)
    doc = versioned(app_plan.plan_document(made))
    where = f"{made.policy if note else plan.policy} plan of {source.describe()}"
    return target_from_plan(doc, rank, source=where + (f" ({note})" if note else ""))


def read_plan_file(path: Path) -> Any:
    """A plan written by `ascendtune plan --json`: a regular file, bounded, JSON (SPEC exit
    codes: 3 absent, 4 unreadable, 5 not a plan)."""
    from ascendtune.host.files import read_plan_json

    return read_plan_json(str(path))


# ---- a running process ----------------------------------------------------------------------


@dataclass(frozen=True)
class PidOutcome:
    report: BindReport
    ident: ProcessIdentity | None
    allowed: frozenset[int] | None
    migration: MigrateResult | None = None
    migrate_doc: dict[str, Any] | None = field(default=None)


def bind_pid(
    pid: int,
    target: BindTarget,
    *,
    use_roles: bool,
    keep_partial: bool,
    dry_run: bool,
    migrate_memory: bool,
    max_passes: int,
    meanwhile: Callable[[], object] | None = None,
) -> PidOutcome:
    """`meanwhile`: the caller's own work (imports for its output), done in the bind's window
    before its final re-read (host.affinity.bind_process)."""
    from ascendtune.core.bindplan import check_cpus_usable
    from ascendtune.host import affinity as aff
    from ascendtune.host.affinity.process import refuse_kernel_thread

    aff.require_process(pid)
    refuse_kernel_thread(pid)
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
        from ascendtune.host.affinity.lock import process_lock, write_record

        with process_lock(pid):  # one ascendtune binder per process at a time
            report = aff.bind_process(
                pid,
                target,
                use_roles=use_roles,
                keep_partial=keep_partial,
                max_passes=max_passes,
                meanwhile=meanwhile,
            )
            if report.threads_changed and not report.rolled_back:  # what `watch` names
                write_record(pid, target, use_roles=report.use_roles, by="ascendtune bind --pid")

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
    return PidOutcome(report, ident, allowed, migration, migrate_doc)


def captured_dry_run(pid: int, target: BindTarget, root: Root, *, use_roles: bool) -> PidOutcome:
    """`bind --pid P --dry-run` with --demo/--sysroot: plan against process P as the captured
    host shows it (its threads' names and masks), never this machine's /proc."""
    from ascendtune.core.bindplan import check_cpus_usable
    from ascendtune.core.cpulist import parse_cpulist
    from ascendtune.core.errors import ParseError
    from ascendtune.host.affinity import ProcessIdentity
    from ascendtune.host.cgroup import resolve_cpuset
    from ascendtune.host.workers import pids_of, threads_of

    threads = threads_of(root, pid)
    if not threads:
        known = pids_of(root) or []
        listed = ", ".join(map(str, known[:12])) + (" ..." if len(known) > 12 else "")
        raise MissingError(
            f"process {pid} is not in {root.describe()}, so its dry run cannot be planned "
            f"there (this machine's processes are not read with --demo/--sysroot)",
            f"its captured processes: {listed}" if known else "it captured no process",
        )
    try:
        online = parse_cpulist(root.read_text("sys/devices/system/cpu/online") or "")
    except ParseError:
        online = frozenset()
    cpuset = resolve_cpuset(root, pid)
    allowed = cpuset.cpus if cpuset is not None else None
    if online:
        check_cpus_usable(
            target, online=online, allowed=allowed, whom=f"process {pid} of {root.describe()}"
        )
    ordered = sorted(threads, key=lambda t: (t.tid != pid, t.tid))  # the main thread first
    report = dry_run_report(
        pid, target, ((t.tid, t.name, t.cpus) for t in ordered), use_roles=use_roles
    )
    comm = (root.read_text(f"proc/{pid}/comm") or "").strip() or report.rows[0].name
    cmd = [a for a in (root.read_text(f"proc/{pid}/cmdline") or "").split("\0") if a]
    ident = ProcessIdentity(name=comm, user=None, cmdline=tuple(cmd), status="captured")
    return PidOutcome(report, ident, allowed)


def pid_document(outcome: PidOutcome) -> dict[str, Any]:
    """Described by documents.BindPidDocument (the report's to_json is typed loosely)."""
    doc = outcome.report.to_json()
    doc["process"] = outcome.ident.to_json() if outcome.ident is not None else None
    if outcome.migrate_doc is not None:
        doc["migrate_memory"] = outcome.migrate_doc
    return doc


def check_outcome(outcome: PidOutcome) -> None:
    """Raise the error the outcome amounts to (SPEC exit codes); nothing when all went well."""
    from ascendtune.host.affinity import EPERM_HINT
    from ascendtune.host.system import process_owner

    report, allowed, migration, ident = (
        outcome.report,
        outcome.allowed,
        outcome.migration,
        outcome.ident,
    )
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
            uid = process_owner(pid)
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
        raise unfinished(report, undo)
    if migration is not None and not migration.ok:
        raise ProblemsFound(
            f"threads bound, but migratepages failed: {migration.error}",
            "the CPU binding stands; move memory later or restart the process with --membind",
        )


def unfinished(report: BindReport, undo: str) -> ProblemsFound:
    """The error of a bind that ended with threads off target and no system error: a process
    that keeps resetting masks, one that creates threads faster than the passes, or both."""
    from ascendtune.host.affinity.bind import LATE_TEXT, RESET_TEXT

    pid, failed = report.pid, report.threads_failed
    reset = [f.tid for f in failed if f.error.startswith(RESET_TEXT)]
    late = [f.tid for f in failed if f.error.startswith(LATE_TEXT)]
    parts: list[str] = []
    if reset:
        parts.append(
            f"{RESET_TEXT}: thread(s) {_tids(reset)} of process {pid} went back to other CPUs "
            "after they were bound (the process sets its own affinity, or another tool such as "
            "a taskset loop does)"
        )
    if late:
        parts.append(
            f"process {pid} keeps creating threads: {len(late)} born after the last of "
            f"{report.passes} pass(es) were not bound"
        )
    other = [f for f in failed if f.tid not in reset and f.tid not in late]
    if other or not parts:
        n = len(other) or report.threads_total - report.threads_bound
        first = other[0] if other else None
        detail = f": thread {first.tid}: {first.error}" if first is not None else ""
        parts.append(f"{n} thread(s) of process {pid} are not on their target CPUs{detail}")
    hint = "see threads_failed in --json"
    if late:
        hint = (
            "give more --max-passes (default 16), or --keep-partial to keep what was bound; " + hint
        )
    elif reset:
        hint = (
            "stop what resets the mask (or turn the process's own binding off), then bind again; "
            + hint
        )
    return ProblemsFound("; ".join(parts) + f"; {undo}", hint)


def _tids(tids: list[int], shown: int = 8) -> str:
    more = len(tids) - shown
    return ", ".join(map(str, tids[:shown])) + (f" and {more} more" if more > 0 else "")


# ---- a command being started ------------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    doc: dict[str, Any]
    line: str  # what the front end says before it starts the command
    verified: bool
    cpus: frozenset[int]
    got: frozenset[int]


def prepare_launch(
    command: list[str], target: BindTarget, *, membind: bool, dry_run: bool
) -> Launch:
    """Check the target, bind this process (unless dry_run) and build the argv to exec."""
    import shlex

    from ascendtune.core.bindplan import check_cpus_usable
    from ascendtune.host import affinity as aff
    from ascendtune.host.system import own_affinity, own_pid

    # roles name threads of a running worker; a command not yet started gets the whole pool
    pool = BindTarget(
        cpus=target.cpus, numa_nodes=target.numa_nodes, rank=target.rank, source=target.source
    )
    check_cpus_usable(
        pool, online=aff.online_cpus(), allowed=aff.cpuset_cpus(own_pid()), whom="this process"
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
    got = own_affinity()
    verified = got == pool.cpus
    origin = f"rank {target.rank} of {target.source}" if target.rank is not None else target.source
    from ascendtune.core.redact import redact_args

    doc: BindLaunchDocument = {  # what is printed: secrets masked (what runs is `argv` above)
        "command": redact_args(command),
        "argv": redact_args(argv),
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
        f"ascendtune: {'would run' if dry_run else 'running'} `{shlex.join(doc['command'])}` "
        f"on CPUs {format_cpulist(pool.cpus)} ({origin}){mem}"
    )
    from ascendtune.app.documents import plain

    return Launch(argv, plain(doc), line, verified, pool.cpus, got)


def check_launch(launch: Launch) -> None:
    if not launch.verified:
        raise ProblemsFound(
            f"this process's mask reads {format_cpulist(launch.got)}, not "
            f"{format_cpulist(launch.cpus)}; nothing was started"
        )


def start(launch: Launch) -> None:
    """Replace this process with the launched command (never returns on success)."""
    from ascendtune.host.affinity import exec_command

    exec_command(launch.argv)
