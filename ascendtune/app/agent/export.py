"""The agent's state as Prometheus metrics through prometheus-client (the `agent` extra, imported
here only): a collector that builds every family from the state at scrape time (so an exited
worker's series vanish with it), the HTTP endpoint and the textfile for node_exporter."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ascendtune.app.agent.metrics import METRICS
from ascendtune.core.errors import MissingError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ascendtune.app.agent.state import AgentState

EXTRA_HINT = "install the agent's extra: pip install 'ascendtune[agent]'"


def _client() -> Any:
    try:
        import prometheus_client
    except ModuleNotFoundError:
        raise MissingError(
            "the agent needs prometheus-client, which is not installed", EXTRA_HINT
        ) from None
    return prometheus_client


class StateCollector:
    """A prometheus-client collector reading AgentState."""

    def __init__(self, state: AgentState) -> None:
        self.state = state

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        by_name: dict[str, list[tuple[tuple[str, ...], float]]] = {}
        for name, labels, value in self.state.rows():
            by_name.setdefault(name, []).append((labels, value))
        for m in METRICS:
            if m.kind == "counter":
                fam: Any = CounterMetricFamily(
                    m.name.removesuffix("_total"), m.help, labels=list(m.labels)
                )
            else:
                fam = GaugeMetricFamily(m.name, m.help, labels=list(m.labels))
            for labels, value in by_name.get(m.name, []):
                fam.add_metric(list(labels), value)
            yield fam


def registry(state: AgentState) -> Any:
    """A registry of the state's collector (the agent's own cost is a series of the state)."""
    client = _client()
    reg = client.CollectorRegistry(auto_describe=False)
    reg.register(StateCollector(state))
    return reg


def serve_http(reg: Any, address: str, port: int) -> Any:
    """`/metrics` on address:port in a daemon thread; the server (its shutdown() stops it)."""
    client = _client()
    try:
        got = client.start_http_server(port, addr=address, registry=reg)
    except OSError as e:
        raise MissingError(
            f"cannot listen on {address}:{port}: {e.strerror}",
            "give another --listen ADDRESS:PORT (is another agent running?)",
        ) from None
    return got[0] if isinstance(got, tuple) else got


def exposition(reg: Any) -> str:
    return str(_client().generate_latest(reg).decode())


def write_textfile(reg: Any, path: str) -> None:
    """Atomically (a temporary file renamed over it), as the textfile collector needs."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(exposition(reg))
    os.replace(tmp, path)
