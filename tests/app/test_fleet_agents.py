"""`fleet agent-status` without Ray: one node's row from its agent's /metrics (a real agent's
exposition served on loopback, then a refused port, a 404, garbage, another exporter and a
hung endpoint)."""

from __future__ import annotations

import time

import pytest

from ascendtune.app import fleet_agents as fa
from ascendtune.host import ray_fleet
from tests.support.cli import Cli
from tests.support.metrics_server import metrics_endpoint


def agent_exposition(cli: Cli) -> str:
    """What `ascendtune agent --observe --once` exports for the container-a2-half demo: two
    workers, one bound (7 of 14 threads), doctor's failing governor check."""
    res = cli("agent", "--demo", "container-a2-half", "--observe", "--once")
    assert res.exit_code == 0, res.stderr
    assert "ascendtune_agent_info" in res.stdout
    return res.stdout


def node(name: str) -> ray_fleet.NodeAnswer:
    return ray_fleet.NodeAnswer(name.ljust(56, "0"), name, "127.0.0.1")


def test_a_real_agents_metrics_make_its_row(cli: Cli) -> None:
    text = agent_exposition(cli)
    with metrics_endpoint() as ep:
        ep.body = text.encode()
        row = fa.row_of(node("a"), ep.port, 2.0)
    assert row.up and row.reason is None
    assert row.mode == "observe" and row.version
    assert (row.workers, row.threads_bound, row.threads_total) == (2, 7, 14)
    assert "cpu_governor" in row.doctor_failures
    assert row.restarts == 0 and row.off_plan_share is None  # a captured host: no run time
    assert row.last_sample_age_s is not None and row.last_sample_age_s < 600


def test_off_plan_share_sums_every_worker() -> None:
    text = (
        'ascendtune_agent_info{host="h",service="s",version="1",policy="p",plan="x",mode="keep"} 1\n'
        'ascendtune_worker_cpu_seconds_total{pid="1",placement="on_plan"} 30\n'
        'ascendtune_worker_cpu_seconds_total{pid="1",placement="off_plan"} 5\n'
        'ascendtune_worker_cpu_seconds_total{pid="2",placement="off_plan"} 5\n'
        'ascendtune_worker_cpu_seconds_total{pid="3",placement="no_plan"} 99\n'
        'ascendtune_worker_restarts_total{device="0"} 2\n'
        'ascendtune_worker_restarts_total{device="1"} 1\n'
        f"ascendtune_agent_last_sample_timestamp_seconds {time.time() - 12:.3f}\n"
        "ascendtune_agent_plan_ok 0\n"
    )
    facts = fa.parse(text, time.time())
    assert facts["off_plan_share"] == 0.25 and facts["restarts"] == 3
    assert facts["plan_ok"] is False and 11 <= facts["last_sample_age_s"] <= 20
    assert facts["mode"] == "keep" and facts["workers"] == 0


@pytest.mark.parametrize(
    ("status", "body", "delay", "reason"),
    [
        (404, b"not found", 0.0, "HTTP 404"),
        (200, b"{not: prometheus text", 0.0, "not Prometheus text"),
        (200, b"node_cpu_seconds_total 1\n", 0.0, "not an ascendtune agent"),
        (200, b"\xff\xfe", 0.0, "not UTF-8"),
        (200, b"", 3.0, "no answer in 0.5 s"),
    ],
)
def test_an_endpoint_that_is_no_agent_is_down_with_why(
    status: int, body: bytes, delay: float, reason: str
) -> None:
    with metrics_endpoint() as ep:
        ep.status, ep.body, ep.delay = status, body, delay
        t0 = time.monotonic()
        row = fa.row_of(node("a"), ep.port, 0.5)
        assert time.monotonic() - t0 < 2.5
    assert not row.up and row.reason is not None and reason in row.reason, row


def test_an_endpoint_that_drips_its_answer_is_down_within_the_deadline() -> None:
    """The socket's timeout is per read: a byte every 0.1 s never trips it, the deadline does."""
    with metrics_endpoint() as ep:
        ep.body, ep.drip = b"ascendtune_build_info 1\n" * 20, 0.1
        t0 = time.monotonic()
        row = fa.row_of(node("a"), ep.port, 0.5)
        assert time.monotonic() - t0 < 2.0
    assert not row.up and row.reason == "answer not complete in 0.5 s", row


AGENT = (
    'ascendtune_agent_info{version="1",mode="keep"} 1\n'
    'ascendtune_worker_threads{pid="1"} 40\n'
    'ascendtune_worker_threads_bound{pid="1"} 38\n'
    'ascendtune_worker_cpu_seconds_total{pid="1",placement="on_plan"} 30\n'
    'ascendtune_worker_restarts_total{device="0"} 2\n'
    'ascendtune_doctor_check{check="npu_irq",status="fail"} 1\n'
)


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "1e400", "-1e309", "-3", "1e300"])
@pytest.mark.parametrize(
    "series",
    [
        'ascendtune_worker_threads{pid="1"}',
        'ascendtune_worker_threads_bound{pid="1"}',
        'ascendtune_worker_restarts_total{device="0"}',
        'ascendtune_worker_cpu_seconds_total{pid="1",placement="on_plan"}',
    ],
)
def test_numbers_no_agent_exports_make_the_row_down_not_an_internal_error(
    series: str, value: str
) -> None:
    # the campaign's scrape family: +Inf thread counts gave "internal error: OverflowError"
    # (issue 27); NaN one, 1e300 a 301-digit thread count
    text = "\n".join(
        f"{series} {value}" if line.startswith(series) else line for line in AGENT.splitlines()
    )
    assert f"{series} {value}" in text
    with pytest.raises(ValueError, match="not an ascendtune agent's numbers"):
        fa.parse(text, time.time())
    with metrics_endpoint() as ep:
        ep.body = text.encode()
        row = fa.row_of(node("a"), ep.port, 2.0)
    assert not row.up and row.reason is not None and "numbers" in row.reason


@pytest.mark.parametrize(
    "form",
    ["--api-key {S}", "https://user:{S}@host/x", "Bearer {S}", "{S}", "token={S}"],
)
def test_a_secret_in_an_agents_labels_is_masked_in_its_row(form: str) -> None:
    # the campaign's scrape family: version and check labels were echoed as they came
    secret = "sk-" + "q" * 32
    value = form.replace("{S}", secret).replace('"', '\\"')
    text = AGENT.replace('version="1"', f'version="{value}"').replace(
        'check="npu_irq"', f'check="{value}"'
    )
    facts = fa.parse(text, time.time())
    assert secret not in repr(facts)
    assert facts["version"] and "***" in facts["version"]
    assert facts["doctor_failures"] and "***" in facts["doctor_failures"][0]
