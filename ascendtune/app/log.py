"""`ascendtune log`: the logged config checked, the logged pools compared, and the JSON document."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.findings import LOG_SHAPE, Finding
from ascendtune.core.vllm_log import LogReport, WorkerLog

if TYPE_CHECKING:
    from ascendtune.app.documents import LogDocument, LogRank, LogRun
    from ascendtune.app.source import HostSource
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.core.model import Host
    from ascendtune.core.vllm_config import Report


class LogOptions(NamedTuple):
    """`log FILE`: the log (a path, '-' for stdin, or its text), the version whose rules check
    its config (None: the one it names), and a host to compare its pools with (None: none)."""

    path: str | None = None
    text: str | None = None
    target: str | None = None
    compare_with: HostSource | None = None


@dataclass(frozen=True)
class CheckedConfig:
    """The logged additional-config run through check-config, and why that target."""

    report: Report
    target_reason: str


@dataclass(frozen=True)
class Comparison:
    """The logged pools beside ascendtune's vllm-ascend prediction for a given host."""

    host: str  # what the prediction was made for ("demo atlas-800i-a2", a sysroot, "this host")
    mode: str
    findings: tuple[Finding, ...]
    predicted: Mapping[int, Mapping[str, str]]  # NPU -> roles as cpulists


@dataclass(frozen=True)
class ServerLogReport:
    """What a server log says about CPU binding, its config checked, its pools compared."""

    log: LogReport
    source: str  # the log's name for a reader: its path, "stdin", or "the log" (given as text)
    checked: CheckedConfig | None = None
    comparison: Comparison | None = None

    @property
    def exit_code(self) -> int:
        return 1 if self.log.failed else 0  # binding failed for some rank

    @property
    def error(self) -> AscendtuneError | None:
        return None  # the failed ranks are rows of the report


def run(opts: LogOptions) -> ServerLogReport:
    """`log FILE`: read the log opts names, check its config, compare its pools with
    opts.compare_with's prediction."""
    from ascendtune.core.errors import UsageError
    from ascendtune.core.vllm_log import parse_text

    target = None if opts.target in (None, "auto") else opts.target
    if target is not None:
        from ascendtune.core.vllm_config import version

        version(target)  # an unknown target fails before the log is read
    if opts.text is not None:
        if opts.path is not None:
            raise UsageError("give the log's path or its text, not both")
        report, source = parse_text(opts.text), "the log"
    elif opts.path is not None:
        report, source = read_log(opts.path), "stdin" if opts.path == "-" else opts.path
    else:
        raise UsageError("give the log: its path ('-' for stdin) or its text")
    checked = check_logged_config(report, target)
    comparison = None if opts.compare_with is None else compare_logged(report, opts.compare_with)
    return ServerLogReport(report, source, checked, comparison)


def document(report: ServerLogReport) -> dict[str, Any]:
    """`log --json` without schema_version (the printer adds it)."""
    return log_document(report.log, checked_config=report.checked, comparison=report.comparison)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def check_logged_config(report: LogReport, target: str | None = None) -> CheckedConfig | None:
    """Check the logged additional-config against `target`, else the version the log names
    (else check-config's default); None when the log prints no additional-config."""
    from ascendtune.core.vllm_ascend import NEWEST
    from ascendtune.core.vllm_config import Facts, check
    from ascendtune.core.vllm_log import check_target

    if report.additional_config is None:
        return None
    if target:
        reason = "--target"
    else:
        target, reason = check_target(report)
        if target is None:
            target, reason = NEWEST.name, reason + f"; {NEWEST.name} assumed"
    args = report.args or {}
    facts = Facts(
        tp=_int(args.get("tensor_parallel_size")),
        dp=_int(args.get("data_parallel_size")),
        pp=_int(args.get("pipeline_parallel_size")),
        enable_expert_parallel=_bool(args.get("enable_expert_parallel")),
        enforce_eager=_bool(args.get("enforce_eager")),
        max_num_batched_tokens=_int(args.get("max_num_batched_tokens")),
        block_size=_int(args.get("block_size")),
        env_source="unknown",  # a log does not record the server's environment
    )
    return CheckedConfig(check(dict(report.additional_config), target, facts), reason)


def compare_with_host(report: LogReport, host: Host, label: str) -> Comparison:
    """Predict vLLM-Ascend's binding on host for the NPUs the log names, and compare."""
    from ascendtune.core.planner import make_plan
    from ascendtune.core.vllm_log import compare_with_plan, plan_request

    plan = make_plan(host, plan_request(report))
    return Comparison(
        host=label,
        mode=plan.mode,
        findings=compare_with_plan(report, plan),
        predicted={rp.logical_id: rp.roles.to_json() for rp in plan.ranks},
    )


def _worker(w: WorkerLog) -> LogRank:
    return {
        "rank": w.rank,
        "pid": w.pid,
        "process": w.process,
        "dp_rank": w.dp_rank,
        "global_rank": w.global_rank,
        "binding": w.binding,
        "reason": w.reason,
        "cause": w.cause,
        "cause_text": w.cause_text,
        "fix": w.fix,
        "mode": w.mode,
        "visible_npus": list(w.visible_npus),
        "plan": w.plan.to_json() if w.plan else None,
        "irqs": [i.to_json() for i in w.irqs],
        "migrate_numa": list(w.migrate_nodes),
        "skipped_steps": list(w.skipped_steps),
        "line": w.line,
    }


def _jsonable(v: Any) -> Any:
    """A literal from the log as JSON: tuples and sets become lists, odd keys strings."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((_jsonable(x) for x in v), key=repr)
    if isinstance(v, (bytes, complex)):
        return repr(v)
    if isinstance(v, float) and not math.isfinite(v):  # NaN and Infinity are no JSON
        return None
    return v


def log_document(
    report: LogReport,
    *,
    checked_config: CheckedConfig | None = None,
    comparison: Comparison | None = None,
) -> dict[str, Any]:
    """The document of a parsed log and what was made of it."""
    from ascendtune.app.documents import plain

    findings = [f.to_json(LOG_SHAPE) for f in report.findings]
    if comparison is not None:
        findings += [f.to_json(LOG_SHAPE) for f in comparison.findings]
    doc: LogDocument = {
        "binding_seen": report.binding_seen,
        "ranks": [_worker(w) for w in report.workers],
        "versions": dict(report.versions),
        "args": _jsonable(report.args) if report.args is not None else None,
        "additional_config": _jsonable(report.additional_config)
        if report.additional_config is not None
        else None,
        "check_config": None
        if checked_config is None
        else {
            **checked_config.report.to_json(),
            "target_reason": checked_config.target_reason,
        },
        "comparison": None
        if comparison is None
        else {
            "host": comparison.host,
            "mode": comparison.mode,
            "predicted": {str(k): dict(v) for k, v in comparison.predicted.items()},
        },
        "findings": findings,
        "lines": report.lines,
        "lines_cut": report.lines_cut,
        "truncated": report.truncated,
        "summary": {
            b: sum(1 for w in report.workers if w.binding == b)
            for b in ("bound", "failed", "skipped", "not seen")
        },
        "runs": [cast("LogRun", r.to_json()) for r in report.runs],
    }
    from ascendtune.core.redact import redact_doc

    out: dict[str, Any] = redact_doc(plain(doc))  # the log's lines and args: secrets masked
    return out


def plan_cells(w: WorkerLog) -> tuple[str, str, str, str]:
    if w.plan is None:
        return ("", "", "", "")
    return (
        str(w.plan.npu),
        format_cpulist(w.plan.main),
        format_cpulist(w.plan.acl),
        format_cpulist(w.plan.release),
    )


# ---- reading a log file -------------------------------------------------------------------


def read_log(path: str) -> LogReport:
    """Parse the log at path ('-' for stdin): any compressed form, bounded in memory and time;
    what is not text is refused (exit 5)."""
    from ascendtune.core.vllm_log import parse_blocks
    from ascendtune.host.logfile import LogInput

    src = LogInput(path)
    p = parse_blocks(src.blocks())
    if src.stopped and not p.truncated:
        p.stop(src.stopped)
    return p.report()


def compare_logged(report: LogReport, source: HostSource) -> Comparison:
    """The logged pools beside ascendtune's prediction for a host (`log --sysroot/--demo`)."""
    from ascendtune.app.hosts import load
    from ascendtune.core.errors import PlanError

    host = load(source).host
    label = source.describe()
    if not any(w.plan for w in report.workers):
        return Comparison(label, "", (), {})
    try:
        return compare_with_host(report, host, label)
    except PlanError as e:
        finding = Finding(
            "plan_impossible",
            "warning",
            f"ascendtune predicts no vllm-ascend plan for {label}: {e.message}",
            e.hint or "",
        )
        return Comparison(label, "", (finding,), {})
