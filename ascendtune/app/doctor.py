"""`doctor`: host checks and the worker audit against a plan, as a report and its document."""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.options import THIS_HOST, HostSource, PlanOptions
from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.app.documents import DoctorDocument
    from ascendtune.core.doctor import Check, PlanFacts
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.core.model import Host
    from ascendtune.host.roots import Root

SECTION_NAMES = ("host", "workers", "binders", "k8s")
# what a doctor without --section runs: every section (k8s only shows on a Kubernetes node)
DEFAULT_SECTIONS = SECTION_NAMES


class DoctorOptions(NamedTuple):
    """`doctor`: the sections to run, the plan running workers are compared with, the host."""

    sections: tuple[str, ...] = SECTION_NAMES
    plan: PlanOptions = PlanOptions()
    source: HostSource = THIS_HOST


class DoctorReport(NamedTuple):
    checks: "list[Check]"
    root: "Root"
    host: "Host | None"
    plan: "PlanFacts"
    sections: tuple[str, ...]
    identity: dict[str, Any]
    target_reason: str | None = None

    @property
    def exit_code(self) -> int:
        from ascendtune.core.doctor import exit_code

        return exit_code(self.checks)

    @property
    def error(self) -> "AscendtuneError | None":
        return None  # failed checks are rows of the report


def sections_of(section: str | None) -> tuple[str, ...]:
    if section is None:
        return DEFAULT_SECTIONS
    if section not in SECTION_NAMES:
        raise UsageError(f"--section {section}: expected one of {', '.join(SECTION_NAMES)}")
    return (section,)


def _read_host(root: "Root") -> "tuple[Host | None, str | None]":
    """The host model, or why it could not be read (doctor still runs the checks it can)."""
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.host.reader import read_host

    try:
        return read_host(root), None
    except AscendtuneError as e:
        return None, str(e)


def plan_facts(
    host: "Host | None", host_error: str | None, opts: PlanOptions, root: "Root | None" = None
) -> "PlanFacts":
    """The plan the workers are compared with, or why there is none."""
    from ascendtune.app.plan import binding_plan, resolve_policy
    from ascendtune.core.doctor import PlanFacts
    from ascendtune.core.errors import InvalidInput, MissingError, PlanError

    options = tuple(opts.given())
    policy = opts.policy
    if host is None:
        return PlanFacts(policy, error=f"host unreadable: {host_error}", options=options)
    policy = resolve_policy(host, policy)
    if not host.accelerators:
        return PlanFacts(policy, error="no accelerator on this host", options=options)

    try:
        # `auto` where vLLM-Ascend binds nothing at all: the NUMA-local plan stands in (note)
        plan, note = binding_plan(host, opts._replace(ranks=None, spill=False), root)
    except PlanError as e:
        return PlanFacts(policy, error=e.message, cpus_problem=True, options=options)
    except (MissingError, InvalidInput) as e:
        if opts.visible_devices is not None or opts.reserve is not None:
            raise  # the options given are wrong: say so, do not bury it in a row
        return PlanFacts(policy, error=e.message, options=options)
    return PlanFacts(plan.policy, plan=plan, options=options, note=note)


def run(opts: DoctorOptions) -> DoctorReport:
    """`doctor`: the checks of the host opts.source names (read-only)."""
    from ascendtune.app.hosts import open_root
    from ascendtune.app.plan import check_policy

    check_policy(opts.plan.policy)  # a usage error before the host is opened
    return doctor(open_root(opts.source), opts)


def doctor(root: "Root", opts: DoctorOptions) -> DoctorReport:
    """`doctor` of a root already open (`fleet` opens each node's snapshot itself)."""
    from ascendtune.app.plan import check_policy
    from ascendtune.core.doctor import DoctorInput, host_checks, worker_checks
    from ascendtune.host.facts import gather_host_facts
    from ascendtune.host.k8s import is_kubernetes_node
    from ascendtune.host.workers import find_workers, scan_processes, scanned_note

    check_policy(opts.plan.policy)
    for s in opts.sections:
        sections_of(s)
    host, host_error = _read_host(root)
    plan = plan_facts(host, host_error, opts.plan, root)
    reason = None
    entry = None
    if host is not None:
        from ascendtune.app.plan import resolve_version

        choice = resolve_version(host, opts.plan.target, root)
        reason, entry = choice.reason, choice.entry
    # one pass over proc/ for both sections: every process's comm (irqbalance) and open files
    want_workers = "workers" in opts.sections or "binders" in opts.sections
    scan = scan_processes(root, devices=want_workers)
    inp = DoctorInput(gather_host_facts(root, scan), host, host_error, plan)
    checks: list[Check] = []
    if "host" in opts.sections:
        checks += host_checks(inp)
        checks += unread_views(host)
    workers = find_workers(root, host, scan) if want_workers else []
    if "workers" in opts.sections:
        checks += worker_checks(workers, inp, scanned_note(root, host, scan))
    sections = tuple(opts.sections)
    if "binders" in opts.sections and (workers or sections == ("binders",)):
        # with no worker the section says so only when it was the one asked for
        checks += binder_checks(root, host, workers, entry)
    elif "binders" in sections:
        sections = tuple(s for s in sections if s != "binders")
    if "k8s" in opts.sections:
        # a node without a kubelet has no such section, unless it was the one asked for
        asked = sections == ("k8s",)
        rows: list[Check] = []
        # app.k8s is imported only where it has a row to give (on a node, for an unread host,
        # or asked by name): elsewhere that saves 4.3 M instructions of 590 M (callgrind)
        if asked or host is None or is_kubernetes_node(root):
            from ascendtune.app import k8s

            rows = k8s.checks(root, host, opts.plan, asked=asked)
        checks += rows
        sections = tuple(s for s in sections if s != "k8s" or rows)
    from ascendtune.app.hosts import identity

    return DoctorReport(checks, root, host, plan, sections, identity(root), reason)


def binder_checks(
    root: "Root", host: "Host | None", workers: list[Any], entry: Any
) -> "list[Check]":
    """The `binders` section: every binder acting on each worker (app/binders.py)."""
    from ascendtune.app.binders import doctor_checks

    return doctor_checks(root, host, workers, entry)


def unread_views(host: "Host | None") -> "list[Check]":
    """The parts of the host the reader could not read, as skip rows: a check that rests on
    them (the NUMA view under every plan) is a guess, and the report says so where it is seen."""
    from ascendtune.core.doctor import Check
    from ascendtune.host.reader import NODE_DIR

    if host is None:
        return []
    numa = [n for n in host.notes if n.startswith(NODE_DIR)]
    other = [n for n in host.notes if "cannot be read" in n and n not in numa]
    rows = []
    if numa:
        rows.append(Check("numa_view", "skip", None, "readable", None, "host", "; ".join(numa)))
    if other:
        rows.append(Check("host_view", "skip", None, "readable", None, "host", "; ".join(other)))
    return rows


def document(report: DoctorReport) -> dict[str, Any]:
    """`doctor --json` without schema_version (the printer adds it)."""
    from ascendtune.app.documents import plain
    from ascendtune.core.doctor import summary

    plan, host, root = report.plan, report.host, report.root
    doc: DoctorDocument = {
        "host": report.identity,
        "root": root.describe(),
        "live": root.live,
        "hostname": host.hostname if host else None,
        "sections": list(report.sections),
        "policy": plan.policy,
        "target": plan.plan.target if plan.plan else None,
        "target_reason": report.target_reason,
        "plan_mode": plan.plan.mode if plan.plan else None,
        "plan_error": plan.error,
        "checks": [c.to_json() for c in report.checks],
        "summary": summary(report.checks),
        "notes": list(host.notes) if host else [],
    }
    return plain(doc)
