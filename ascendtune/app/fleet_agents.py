"""`fleet agent-status`: what the `ascendtune agent` of every node of a Ray cluster says.

The driver asks Ray for the alive nodes (no task runs), then reads `http://NODE_IP:PORT/metrics`
of each, under a short deadline, from the addresses Ray reports and nowhere else
(host.scrape: no proxy, no redirect). The exposition is parsed by prometheus_client's own parser
(the `agent` extra), and each node's row sums what its agent exports (docs/metrics.md). An
agent that does not answer, answers something that is no Prometheus text, or is not an
ascendtune agent is that node's "down" row with why. Read-only.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.core.errors import AscendtuneError, MissingError, UsageError

if TYPE_CHECKING:
    from ascendtune.host.ray_fleet import NodeAnswer

__all__ = ["AgentStatusOptions", "AgentStatusReport", "document", "parse", "run"]

DEFAULT_PORT = 9477  # the agent's default (docs/agent.md)
MAX_VALUE = float(2**53)


class AgentStatusOptions(NamedTuple):
    ray_address: str | None = None
    port: int = DEFAULT_PORT
    timeout: float = 2.0  # per node, for its /metrics
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentRow:
    node: str
    node_id: str
    address: str
    up: bool
    reason: str | None = None  # why it is down
    version: str | None = None
    mode: str | None = None  # keep or observe
    plan_ok: bool | None = None
    workers: int | None = None
    threads_bound: int | None = None
    threads_total: int | None = None
    off_plan_share: float | None = None  # of the workers' CPU time, 0 to 1 (None: none yet)
    restarts: int | None = None
    last_sample_age_s: float | None = None
    doctor_failures: tuple[str, ...] = ()
    seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "node_id": self.node_id,
            "address": self.address,
            "up": self.up,
            "reason": self.reason,
            "version": self.version,
            "mode": self.mode,
            "plan_ok": self.plan_ok,
            "workers": self.workers,
            "threads_bound": self.threads_bound,
            "threads_total": self.threads_total,
            "off_plan_share": self.off_plan_share,
            "restarts": self.restarts,
            "last_sample_age_s": self.last_sample_age_s,
            "doctor_failures": list(self.doctor_failures),
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class AgentStatusReport:
    address: str
    port: int
    driver_ray: str
    rows: tuple[AgentRow, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        return 0 if all(r.up for r in self.rows) else 1

    @property
    def error(self) -> AscendtuneError | None:
        return None  # a down agent is a row


def _parser() -> Any:
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        raise MissingError(
            "prometheus_client is not installed for this Python: it parses the agents' metrics",
            "install the extra: python3 -m pip install 'ascendtune[agent]'",
        ) from None
    return text_string_to_metric_families


def parse(text: str, now: float, parser: Any = None) -> dict[str, Any]:
    """The row's facts from one agent's exposition; ValueError when it is not Prometheus text
    or not an ascendtune agent's."""
    from ascendtune.core.redact import redact_text  # its patterns: only when an agent answered

    families = (parser or _parser())(text)
    samples: list[tuple[str, dict[str, str], float]] = []
    try:
        for fam in families:
            samples += [(s.name, dict(s.labels), float(s.value)) for s in fam.samples]
    except Exception as e:  # the parser's own errors (ValueError, IndexError, ...)
        raise ValueError(f"not Prometheus text ({type(e).__name__})") from None
    info = [labels for name, labels, v in samples if name == "ascendtune_agent_info" and v == 1]
    if not info:
        raise ValueError("not an ascendtune agent (no ascendtune_agent_info)")

    def total(name: str, **match: str) -> float | None:
        vals = [
            v
            for n, labels, v in samples
            if n == name and all(labels.get(k) == want for k, want in match.items())
        ]
        got = sum(vals) if vals else None
        # an agent exports counts, seconds and timestamps: never NaN, infinite, negative or
        # past 2**53 (where a float stops counting in ones)
        if got is not None and not 0 <= got <= MAX_VALUE:
            raise ValueError(f"not an ascendtune agent's numbers ({name} is {got:g})")
        return got

    def label(value: str | None) -> str | None:
        # what an agent exports is echoed: a secret in a label value is masked as everywhere
        return None if value is None else redact_text(value)

    on = total("ascendtune_worker_cpu_seconds_total", placement="on_plan") or 0.0
    off = total("ascendtune_worker_cpu_seconds_total", placement="off_plan") or 0.0
    last = total("ascendtune_agent_last_sample_timestamp_seconds")
    plan_ok = total("ascendtune_agent_plan_ok")
    threads = total("ascendtune_worker_threads")
    bound = total("ascendtune_worker_threads_bound")
    restarts = total("ascendtune_worker_restarts_total")
    return {
        "version": label(info[0].get("version")),
        "mode": label(info[0].get("mode")),
        "plan_ok": None if plan_ok is None else plan_ok >= 1,
        "workers": len(
            {labels.get("pid") for n, labels, _ in samples if n == "ascendtune_worker_threads"}
        ),
        "threads_bound": int(bound or 0),
        "threads_total": int(threads or 0),
        "off_plan_share": round(off / (on + off), 4) if on + off > 0 else None,
        "restarts": int(restarts or 0),
        "last_sample_age_s": None if last is None else round(max(0.0, now - last), 1),
        "doctor_failures": tuple(
            sorted(
                redact_text(labels.get("check", "?"))
                for n, labels, v in samples
                if n == "ascendtune_doctor_check" and labels.get("status") == "fail" and v == 1
            )
        ),
    }


def row_of(ans: NodeAnswer, port: int, timeout: float, parser: Any = None) -> AgentRow:
    """One node's row: its agent read at the address Ray reports for it."""
    from ascendtune.host.scrape import fetch_metrics

    base: dict[str, Any] = {"node": ans.hostname, "node_id": ans.node_id, "address": ans.address}
    got = fetch_metrics(ans.address.strip("[]"), port, timeout)
    if got.text is None:
        return AgentRow(up=False, reason=got.why, seconds=got.seconds, **base)
    try:
        facts = parse(got.text, time.time(), parser)
    except ValueError as e:
        return AgentRow(up=False, reason=str(e), seconds=got.seconds, **base)
    return AgentRow(up=True, seconds=got.seconds, **base, **facts)


def run(opts: AgentStatusOptions) -> AgentStatusReport:
    from ascendtune.host import ray_fleet

    if not 0 < opts.port < 65536:
        raise UsageError(f"--port {opts.port}: give 1-65535")
    if opts.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    parser = _parser()  # a missing extra fails before the cluster is asked
    address = ray_fleet.resolve_address(opts.ray_address)
    driver_ray, nodes = ray_fleet.list_nodes(address, nodes=list(opts.nodes) or None)
    nodes.sort(key=lambda a: (a.hostname, a.node_id))
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(nodes)))) as pool:
        rows = tuple(pool.map(lambda a: row_of(a, opts.port, opts.timeout, parser), nodes))
    return AgentStatusReport(address, opts.port, driver_ray, rows)


def document(report: AgentStatusReport) -> dict[str, Any]:
    """`fleet agent-status --json` without schema_version (the printer adds it)."""
    up = sum(1 for r in report.rows if r.up)
    return {
        "mode": "ray",
        "ray": {"address": report.address, "driver_ray": report.driver_ray},
        "port": report.port,
        "nodes": [r.to_json() for r in report.rows],
        "summary": {
            "nodes": len(report.rows),
            "up": up,
            "down": len(report.rows) - up,
            "workers": sum(r.workers or 0 for r in report.rows),
            "threads_bound": sum(r.threads_bound or 0 for r in report.rows),
            "threads_total": sum(r.threads_total or 0 for r in report.rows),
        },
        "notes": list(report.notes),
    }
