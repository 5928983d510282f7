"""ascendtune as a library: each function returns exactly the document the matching command's
`--json` prints (same keys, same values) and raises the project's own errors
(`ascendtune.core.errors.AscendtuneError` and its kin) on bad input.

    from ascendtune import api

    doc = api.plan(demo="atlas-800i-a2", policy="numa-local")
    for rank in doc["ranks"]:
        print(rank["rank"], rank["device"], rank["cpus"])
"""

from __future__ import annotations

import os
from typing import Any

from ascendtune.app.options import DoctorOptions, HostSource, PlanOptions

SCHEMA_VERSION = 1

__all__ = [
    "SCHEMA_VERSION",
    "bind_workers_dry_run",
    "check_config",
    "doctor",
    "explain",
    "explain_binding",
    "fleet_compare",
    "log",
    "plan",
    "topo",
]


def _doc(body: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, **body}


def topo(sysroot: str | None = None, demo: str | None = None) -> dict[str, Any]:
    """`ascendtune topo --json`."""
    from ascendtune.app.hosts import load
    from ascendtune.app.topo import topo_document

    got = load(HostSource(sysroot, demo))
    return _doc(topo_document(got.host, got.identity))


def plan(
    sysroot: str | None = None,
    demo: str | None = None,
    policy: str = "auto",
    **plan_options: Any,
) -> dict[str, Any]:
    """`ascendtune plan --json`; plan_options are PlanOptions' fields (visible_devices="6,4",
    ranks, soc, reserve, no_irq_reserve, spill, env); policy="compare" gives every policy."""
    from ascendtune.app import plan as app_plan
    from ascendtune.app.hosts import load

    opts = PlanOptions(policy=policy, **plan_options)
    app_plan.check_policy(policy, compare=True)
    got = load(HostSource(sysroot, demo))
    if policy == app_plan.COMPARE:
        report = app_plan.compare(got.host, opts, got.root)
        app_plan.require_some_plan(report)
        return _doc(app_plan.compare_document(report, got.identity))
    result = app_plan.plan(got.host, opts, got.root)
    return _doc(app_plan.plan_document(result.plan, got.identity, result.target_reason))


def doctor(
    sysroot: str | None = None,
    demo: str | None = None,
    section: str | None = None,
    policy: str = "auto",
    **plan_options: Any,
) -> dict[str, Any]:
    """`ascendtune doctor --json` (read-only); the exit status is `doc["summary"]["fail"] > 0`."""
    from ascendtune.app.doctor import doctor as run
    from ascendtune.app.doctor import doctor_document, sections_of
    from ascendtune.app.hosts import open_root

    opts = DoctorOptions(sections_of(section), PlanOptions(policy=policy, **plan_options))
    return _doc(doctor_document(run(open_root(HostSource(sysroot, demo)), opts)))


def check_config(
    config: str | dict[str, Any] | None = None, target: str | None = None, **facts: Any
) -> dict[str, Any]:
    """`ascendtune check-config --json`: config is the JSON text (or a dict); facts are
    CheckConfigOptions' fields (file, cmdline, pid, tp, dp, pp, expert_parallel, kv_role, soc,
    hf_config, env_file, arch, sysroot, env)."""
    import json

    from ascendtune.app.check_config import CheckConfigOptions, check_config_document
    from ascendtune.app.check_config import check_config as run

    text = json.dumps(config) if isinstance(config, dict) else config
    opts = CheckConfigOptions(config=text, target=target, **facts)
    return _doc(check_config_document(run(opts)))


def fleet_compare(
    *paths: str, view: str = "doctor", policy: str = "auto", **plan_options: Any
) -> dict[str, Any]:
    """`ascendtune fleet compare PATH... --json`: snapshots (folders, .tar.gz, or folders of
    them) grouped by topology class, each node's status and what differs from the majority;
    the exit status is 1 when `any(n["status"] in ("failed", "no answer") or n["fails"])`."""
    from ascendtune.app.fleet import compare

    return compare(list(paths), view, PlanOptions(policy=policy, **plan_options)).document


def explain(
    key: str | None = None, *, target: str | None = None, search: str | None = None
) -> dict[str, Any]:
    """`ascendtune explain [KEY] --json`: one key across every known vLLM-Ascend version (target
    and search are not used then, as on the command line), or with no key the listing of
    target's keys (default: the newest version) by concern, only those holding search.
    `explain("binding")` is `explain_binding()` of this host, as `explain binding` is."""
    from ascendtune.app import explain as app_explain

    if key == app_explain.BINDING:
        return explain_binding(target=target or "auto")
    if key is None:
        return _doc(app_explain.listing_document(target, search))
    return _doc(app_explain.key_document(key))


def explain_binding(
    sysroot: str | None = None, demo: str | None = None, rank: int = 0, **plan_options: Any
) -> dict[str, Any]:
    """`ascendtune explain binding --json`: the steps vLLM-Ascend's binding takes for rank;
    plan_options are PlanOptions' fields (target, visible_devices, soc, reserve, ...; the
    policy is always vllm-ascend's)."""
    from ascendtune.app import explain as app_explain
    from ascendtune.app.hosts import load

    opts = PlanOptions(**plan_options)
    got = load(HostSource(sysroot, demo))
    report = app_explain.binding(got.host, opts, rank, got.root)
    return _doc(app_explain.binding_document(report, got.identity))


def bind_workers_dry_run(
    sysroot: str | None = None, demo: str | None = None, **plan_options: Any
) -> dict[str, Any]:
    """`ascendtune bind --workers --dry-run --json`: every accelerator worker found, the rank
    and CPUs it would be bound to, and how far its threads are from them. Read-only: nothing is
    bound. Raises MissingError when no worker runs. plan_options are PlanOptions' fields."""
    from ascendtune.app.workers import WorkersOptions, bind_workers

    opts = WorkersOptions(
        source=HostSource(sysroot, demo), plan=PlanOptions(**plan_options), dry_run=True
    )
    return _doc(bind_workers(opts).to_json())


def log(
    path_or_text: str | os.PathLike[str],
    *,
    target: str | None = None,
    sysroot: str | None = None,
    demo: str | None = None,
) -> dict[str, Any]:
    """`ascendtune log FILE --json`: what a vLLM / vLLM-Ascend server log says about CPU
    binding. path_or_text is the log's path (a path, or a str without a newline; gzip is read
    too) or the log itself (a str holding a newline). With sysroot or demo the logged pools are
    compared with the prediction for that host; target checks the logged config against that
    version's rules (default: the version the log names). The command's exit status is 1 when
    `doc["summary"]["failed"] > 0`."""
    from ascendtune.app.log import check_logged_config, compare_logged, log_document, read_log
    from ascendtune.core.vllm_log import parse_text

    if target is not None and target != "auto":
        from ascendtune.core.vllm_config import version

        version(target)  # an unknown target fails before the log is read
    if isinstance(path_or_text, str) and "\n" in path_or_text:
        report = parse_text(path_or_text)
    else:
        report = read_log(os.fspath(path_or_text))
    checked = check_logged_config(report, None if target in (None, "auto") else target)
    comparison = compare_logged(report, sysroot, demo) if (sysroot or demo) else None
    return _doc(log_document(report, checked_config=checked, comparison=comparison))
