"""ascendtune as a library: the commands' own use cases, with typed options.

Each command has two functions here. `api.plan(...)` returns exactly the document the command's
`--json` prints (same keys, same values, `schema_version` included); `api.plan_report(...)`
returns the typed report that document is made from (`api.document(report)` turns any report
into its document). Both take the command's options as keywords that mypy checks, and raise the
project's own errors (`ascendtune.core.errors.AscendtuneError` and its kin) on bad input.

    from ascendtune import api

    doc = api.plan(demo="atlas-800i-a2", policy="numa-local")
    for rank in doc["ranks"]:
        print(rank["rank"], rank["device"], rank["cpus"])

    report = api.plan_report(demo="atlas-800i-a2", policy="numa-local")
    for r in report.plan.ranks:          # a PlanReport (policy="compare": a CompareReport)
        print(r.rank, r.device, sorted(r.cpus))

With neither `sysroot` nor `demo` a function reads this host. Where the command exits 1
(problems found: failed checks, a rank whose binding failed) the document is still returned;
where it exits otherwise, the document function raises the error behind that exit, and the
report function returns the report with that error as `report.error`.

The command line and these functions call the same `run(options)` of `ascendtune.app.<command>`
with the same option record (`ascendtune.app.plan.PlanCommandOptions`, ...), so the two cannot
give different answers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.core.jsondoc import SCHEMA_VERSION, versioned

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ascendtune.app.check_config import CheckConfigReport
    from ascendtune.app.doctor import DoctorReport
    from ascendtune.app.explain import BindingReport, ExplainReport
    from ascendtune.app.fleet import FleetReport
    from ascendtune.app.log import ServerLogReport
    from ascendtune.app.outcome import Outcome
    from ascendtune.app.plan import CompareReport, PlanReport
    from ascendtune.app.snapshot import SnapshotReport
    from ascendtune.app.topo import TopoReport
    from ascendtune.core.watch import WatchReport

__all__ = [
    "SCHEMA_VERSION",
    "CheckConfigKeywords",
    "HostSource",
    "PlanKeywords",
    "PlanOptions",
    "bind_workers_dry_run",
    "check_config",
    "check_config_report",
    "doctor",
    "doctor_report",
    "document",
    "explain",
    "explain_binding",
    "explain_binding_report",
    "explain_report",
    "fleet",
    "fleet_compare",
    "fleet_compare_report",
    "fleet_report",
    "log",
    "log_report",
    "plan",
    "plan_report",
    "snapshot",
    "snapshot_report",
    "topo",
    "topo_report",
    "watch",
    "watch_report",
]


class PlanKeywords(TypedDict, total=False):
    """PlanOptions' fields but `policy` (which the functions name on their own), as keyword
    arguments: `api.plan(demo=..., policy="numa-local", visible_devices="6,4")`. mypy checks a
    call's keywords against it; tests/test_usecases.py holds it to PlanOptions."""

    visible_devices: str | None
    ranks: int | None
    soc: str | None
    reserve: str | None
    no_irq_reserve: bool
    spill: bool
    target: str
    dp: int | None
    tp: int | None
    pp: int | None
    device_ids: str | None
    busy: str | None
    cmdline: str | None
    env: Mapping[str, str] | None


class CheckConfigKeywords(TypedDict, total=False):
    """CheckConfigOptions' facts (every field but the config itself, its source and target) as
    keyword arguments of `check_config`; tests/test_usecases.py holds it to the record."""

    file: str | None
    cmdline: str | None
    pid: int | None
    tp: int | None
    dp: int | None
    pp: int | None
    expert_parallel: bool | None
    kv_role: str | None
    soc: str | None
    hf_config: str | None
    env_file: str | None
    arch: str | None
    with_vllm_omni: bool | None
    compilation_config: str | None
    sysroot: str | None
    env: Mapping[str, str] | None
    strict: bool
    env_pairs: tuple[str, ...]
    owner: str | None


# a report type's module -> the use case module whose document() takes it (where they differ)
_DOCUMENTED_IN = {"ascendtune.core.watch": "ascendtune.app.watch"}


def document(report: Outcome) -> dict[str, Any]:
    """The `--json` document of a report any `*_report` function returned (schema_version
    included); raises the report's error when the command would exit with it (not 0 or 1)."""
    import importlib

    where = type(report).__module__
    where = _DOCUMENTED_IN.get(where, where)
    # every report type is defined by its command's use case module, beside its document()
    module = importlib.import_module(where) if where.startswith("ascendtune.app.") else None
    build = getattr(module, "document", None)
    if build is None:
        raise TypeError(f"not a report of an ascendtune command: {type(report).__name__}")
    body: Mapping[str, Any] = build(report)
    if report.error is not None and report.exit_code > 1:
        raise report.error
    return versioned(body)


# ---- topo -----------------------------------------------------------------------------------


def topo_report(sysroot: str | None = None, demo: str | None = None) -> TopoReport:
    """`ascendtune topo`: the host model (`report.host`) and which host it is."""
    from ascendtune.app import topo

    return topo.run(topo.TopoOptions(HostSource(sysroot, demo)))


def topo(sysroot: str | None = None, demo: str | None = None) -> dict[str, Any]:
    """`ascendtune topo --json`: CPUs, NUMA nodes, accelerators and their links."""
    return document(topo_report(sysroot, demo))


# ---- plan -----------------------------------------------------------------------------------


def plan_report(
    sysroot: str | None = None,
    demo: str | None = None,
    policy: str = "auto",
    *,
    emit: str | None = None,
    pod: str | None = None,
    **options: Unpack[PlanKeywords],
) -> PlanReport | CompareReport:
    """`ascendtune plan`: the plan under policy (a PlanReport), or with policy="compare" every
    policy side by side (a CompareReport; `report.error` when none can plan the host). options
    are PlanOptions' fields (visible_devices="6,4", ranks, soc, reserve, no_irq_reserve, spill,
    target, dp, tp, pp, device_ids, busy, cmdline, env); emit: `--emit KIND`'s lines; pod:
    `--pod`, plan inside that Kubernetes pod's cpuset with its NPUs."""
    from ascendtune.app import plan

    opts = PlanOptions(policy=policy, **options)
    return plan.run(plan.PlanCommandOptions(HostSource(sysroot, demo), opts, emit, pod))


def plan(
    sysroot: str | None = None,
    demo: str | None = None,
    policy: str = "auto",
    *,
    emit: str | None = None,
    pod: str | None = None,
    **options: Unpack[PlanKeywords],
) -> dict[str, Any]:
    """`ascendtune plan --json` (policy="compare": every policy); the options of plan_report."""
    return document(plan_report(sysroot, demo, policy, emit=emit, pod=pod, **options))


# ---- doctor ---------------------------------------------------------------------------------


def doctor_report(
    sysroot: str | None = None,
    demo: str | None = None,
    section: str | None = None,
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> DoctorReport:
    """`ascendtune doctor` (read-only): every check (`report.checks`), running workers compared
    with the plan under policy and options (PlanOptions' fields); section: "host", "workers"
    or "k8s" only. `report.exit_code` is 1 when a check failed."""
    from ascendtune.app import doctor

    opts = doctor.DoctorOptions(
        doctor.sections_of(section),
        PlanOptions(policy=policy, **options),
        HostSource(sysroot, demo),
    )
    return doctor.run(opts)


def doctor(
    sysroot: str | None = None,
    demo: str | None = None,
    section: str | None = None,
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> dict[str, Any]:
    """`ascendtune doctor --json`; the command exits 1 when `doc["summary"]["fail"] > 0`."""
    return document(doctor_report(sysroot, demo, section, policy, **options))


# ---- check-config ---------------------------------------------------------------------------


def check_config_report(
    config: str | Mapping[str, Any] | None = None,
    target: str | None = None,
    **facts: Unpack[CheckConfigKeywords],
) -> CheckConfigReport:
    """`ascendtune check-config`: config is the JSON text or a mapping (or give file, cmdline or
    pid among facts); facts are CheckConfigOptions' other fields (tp, dp, pp, expert_parallel,
    kv_role, soc, hf_config, env_file, arch, sysroot, env, strict, ...). `report.exit_code` is
    1 with errors (or warnings, strict)."""
    import json

    from ascendtune.app import check_config

    text = json.dumps(dict(config)) if isinstance(config, Mapping) else config
    return check_config.run(check_config.CheckConfigOptions(config=text, target=target, **facts))


def check_config(
    config: str | Mapping[str, Any] | None = None,
    target: str | None = None,
    **facts: Unpack[CheckConfigKeywords],
) -> dict[str, Any]:
    """`ascendtune check-config --json`; the options of check_config_report."""
    return document(check_config_report(config, target, **facts))


# ---- explain --------------------------------------------------------------------------------


def explain_report(
    key: str | None = None, *, target: str | None = None, search: str | None = None
) -> ExplainReport:
    """`ascendtune explain [KEY]`: one key across every known vLLM-Ascend version (target and
    search are not used then, as on the command line), or with no key the listing of target's
    keys (default: the newest version) by concern, only those holding search.
    `explain_report("binding")` is `explain_binding_report()` of this host."""
    from ascendtune.app import explain

    opts = explain.ExplainOptions(key=key, search=search, plan=PlanOptions(target=target or "auto"))
    return explain.run(opts)


def explain(
    key: str | None = None, *, target: str | None = None, search: str | None = None
) -> dict[str, Any]:
    """`ascendtune explain [KEY] --json`; the options of explain_report."""
    return document(explain_report(key, target=target, search=search))


def explain_binding_report(
    sysroot: str | None = None,
    demo: str | None = None,
    rank: int = 0,
    **options: Unpack[PlanKeywords],
) -> BindingReport:
    """`ascendtune explain binding`: the steps vLLM-Ascend's binding takes for rank; options
    are PlanOptions' fields (target, visible_devices, soc, reserve, ...; the policy is always
    vllm-ascend's)."""
    from ascendtune.app import explain

    opts = explain.ExplainOptions(
        key=explain.BINDING,
        rank=rank,
        source=HostSource(sysroot, demo),
        plan=PlanOptions(**options),
    )
    report = explain.run(opts)
    assert isinstance(report, explain.BindingReport)
    return report


def explain_binding(
    sysroot: str | None = None,
    demo: str | None = None,
    rank: int = 0,
    **options: Unpack[PlanKeywords],
) -> dict[str, Any]:
    """`ascendtune explain binding --json`; the options of explain_binding_report."""
    return document(explain_binding_report(sysroot, demo, rank, **options))


# ---- log ------------------------------------------------------------------------------------


def log_report(
    path_or_text: str | os.PathLike[str],
    *,
    target: str | None = None,
    sysroot: str | None = None,
    demo: str | None = None,
) -> ServerLogReport:
    """`ascendtune log FILE`: what a vLLM / vLLM-Ascend server log says about CPU binding.
    path_or_text is the log's path (a path, or a str without a newline; gzip is read too) or the
    log itself (a str holding a newline). With sysroot or demo the logged pools are compared
    with the prediction for that host; target checks the logged config against that version's
    rules (default: the version the log names). `report.exit_code` is 1 when binding failed
    for some rank."""
    from ascendtune.app import log

    host = HostSource(sysroot, demo) if (sysroot or demo) else None
    if isinstance(path_or_text, str) and "\n" in path_or_text:
        opts = log.LogOptions(text=path_or_text, target=target, compare_with=host)
    else:
        opts = log.LogOptions(path=os.fspath(path_or_text), target=target, compare_with=host)
    return log.run(opts)


def log(
    path_or_text: str | os.PathLike[str],
    *,
    target: str | None = None,
    sysroot: str | None = None,
    demo: str | None = None,
) -> dict[str, Any]:
    """`ascendtune log FILE --json`; the options of log_report. The command exits 1 when
    `doc["summary"]["failed"] > 0`."""
    return document(log_report(path_or_text, target=target, sysroot=sysroot, demo=demo))


# ---- snapshot -------------------------------------------------------------------------------


def snapshot_report(
    dest: str | os.PathLike[str],
    *,
    force: bool = False,
    sysroot: str | None = None,
    demo: str | None = None,
) -> SnapshotReport:
    """`ascendtune snapshot DIR`: capture the host into dest (a folder, or DIR.tar.gz; force:
    replace what is there), read back before it is put in place."""
    from ascendtune.app import snapshot

    opts = snapshot.SnapshotOptions(os.fspath(dest), force, HostSource(sysroot, demo))
    return snapshot.run(opts)


def snapshot(
    dest: str | os.PathLike[str],
    *,
    force: bool = False,
    sysroot: str | None = None,
    demo: str | None = None,
) -> dict[str, Any]:
    """`ascendtune snapshot DIR --json`; the options of snapshot_report."""
    return document(snapshot_report(dest, force=force, sysroot=sysroot, demo=demo))


# ---- watch ----------------------------------------------------------------------------------


def watch_report(
    pids: Sequence[int] = (),
    *,
    workers: bool = False,
    cpus: str | None = None,
    plan_file: str | os.PathLike[str] | None = None,
    ranks: Sequence[int] = (),
    policy: str | None = None,
    target: str = "auto",
    interval_s: float = 1.0,
) -> WatchReport:
    """`ascendtune watch --once` on this host: one sample of interval_s of where each thread of
    pids (or every worker) runs, against cpus, a rank of plan_file (ranks: one for all, or one
    per pid) or of this host's plan under policy."""
    from ascendtune.app import watch

    opts = watch.WatchOptions(
        pids=tuple(pids),
        workers=workers,
        cpus=cpus,
        plan_file=None if plan_file is None else os.fspath(plan_file),
        ranks=tuple(ranks),
        policy=policy,
        target=target,
        interval_s=interval_s,
    )
    return watch.run(opts)


def watch(
    pids: Sequence[int] = (),
    *,
    workers: bool = False,
    cpus: str | None = None,
    plan_file: str | os.PathLike[str] | None = None,
    ranks: Sequence[int] = (),
    policy: str | None = None,
    target: str = "auto",
    interval_s: float = 1.0,
) -> dict[str, Any]:
    """`ascendtune watch --once --json`; the options of watch_report."""
    report = watch_report(
        pids,
        workers=workers,
        cpus=cpus,
        plan_file=plan_file,
        ranks=ranks,
        policy=policy,
        target=target,
        interval_s=interval_s,
    )
    return document(report)


# ---- bind -----------------------------------------------------------------------------------


def bind_workers_dry_run(
    sysroot: str | None = None,
    demo: str | None = None,
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> dict[str, Any]:
    """`ascendtune bind --workers --dry-run --json`: every accelerator worker found, the rank
    and CPUs it would be bound to, and how far its threads are from them. Read-only: nothing is
    bound. Raises MissingError when no worker runs. options are PlanOptions' fields."""
    from ascendtune.app.workers import WorkersOptions, bind_workers

    opts = WorkersOptions(
        source=HostSource(sysroot, demo),
        plan=PlanOptions(policy=policy, **options),
        dry_run=True,
    )
    return versioned(bind_workers(opts).to_json())


# ---- fleet ----------------------------------------------------------------------------------


def fleet_compare_report(
    *paths: str | os.PathLike[str],
    view: str = "doctor",
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> FleetReport:
    """`ascendtune fleet compare PATH...`: snapshots (folders, .tar.gz, or folders of them)
    grouped by topology class, each node's status and what differs from the majority (no Ray).
    `report.exit_code` is 1 when a node failed, did not answer, or failed a check."""
    from ascendtune.app import fleet

    opts = fleet.FleetCompareOptions(
        tuple(os.fspath(p) for p in paths), view, PlanOptions(policy=policy, **options)
    )
    return fleet.run(opts)


def fleet_compare(
    *paths: str | os.PathLike[str],
    view: str = "doctor",
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> dict[str, Any]:
    """`ascendtune fleet compare PATH... --json`; the options of fleet_compare_report. The
    command exits 1 when `any(n["status"] in ("failed", "no answer") or n["fails"])`."""
    return document(fleet_compare_report(*paths, view=view, policy=policy, **options))


def fleet_report(
    view: str = "doctor",
    *,
    ray_address: str | None = None,
    timeout: float = 60.0,
    nodes: Sequence[str] = (),
    save: str | None = None,
    ship: bool = True,
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> FleetReport:
    """`ascendtune fleet snapshot|topo|doctor|plan`: every alive node of the Ray cluster at
    ray_address (default: RAY_ADDRESS, else auto; never starts one), captured by a Ray task
    each and judged here; needs the `ray` extra."""
    from ascendtune.app import fleet

    opts = fleet.FleetOptions(
        view=view,
        ray_address=ray_address,
        timeout=timeout,
        nodes=tuple(nodes),
        save=save,
        ship=ship,
        plan=PlanOptions(policy=policy, **options),
    )
    return fleet.run(opts)


def fleet(
    view: str = "doctor",
    *,
    ray_address: str | None = None,
    timeout: float = 60.0,
    nodes: Sequence[str] = (),
    save: str | None = None,
    ship: bool = True,
    policy: str = "auto",
    **options: Unpack[PlanKeywords],
) -> dict[str, Any]:
    """`ascendtune fleet VIEW --json`; the options of fleet_report."""
    report = fleet_report(
        view,
        ray_address=ray_address,
        timeout=timeout,
        nodes=nodes,
        save=save,
        ship=ship,
        policy=policy,
        **options,
    )
    return document(report)
