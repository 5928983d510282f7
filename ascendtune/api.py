"""ascendtune as a library: each function returns exactly the document the matching command's
`--json` prints (same keys, same values) and raises the project's own errors
(`ascendtune.core.errors.AscendtuneError` and its kin) on bad input.

    from ascendtune import api

    doc = api.plan(demo="atlas-800i-a2", policy="numa-local")
    for rank in doc["ranks"]:
        print(rank["rank"], rank["device"], rank["cpus"])
"""

from __future__ import annotations

from typing import Any

from ascendtune.app.options import DoctorOptions, HostSource, PlanOptions

SCHEMA_VERSION = 1

__all__ = ["SCHEMA_VERSION", "check_config", "doctor", "fleet_compare", "plan", "topo"]


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
