"""`fleet bind --workers` and `fleet agent-status` from the command line, without Ray: the
cluster's answers are faked at host.ray_fleet's seam (run_tasks, list_nodes), so what is
tested is the rows, the summary, the exit status and the JSON document."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from ascendtune.host import ray_fleet
from tests.support import schemas
from tests.support.cli import Cli
from tests.support.metrics_server import metrics_endpoint

ADDRESS = "10.0.0.1:6379"


def bound(pid: int, verified: bool = True) -> dict[str, Any]:
    return {
        "pid": pid,
        "name": "VLLM::Worker_TP",
        "device": 0,
        "devices": [0],
        "rank": 0,
        "target_cpus": "0-1",
        "roles": {},
        "cpus_before": "0-1",
        "cpus_after": "0-1",
        "threads_total": 10,
        "threads_bound": 10 if verified else 4,
        "threads_failed": [],
        "threads_changed": 10,
        "verified": verified,
        "changed": True,
        "dry_run": False,
        "error": None if verified else "6 thread(s) not bound: EPERM",
        "rolled_back": 0,
        "bind_ms": 1.0,
        "self_binding": None,
    }


def envelope(*workers: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "ok",
        "reason": None,
        "hostname": "gpu-host",
        "live": True,
        "apply": True,
        "bind": {
            "root": "/",
            "source": "plan",
            "dry_run": False,
            "workers": list(workers),
            "handoff": [],
            "summary": {"workers": len(workers), "bound": 0, "failed": 0, "would_change": 0},
        },
    }


def fake_cluster(monkeypatch: pytest.MonkeyPatch, answers: dict[str, object]) -> list[Any]:
    """run_tasks answers each named node with its value ("hang": no answer in time); returns
    the requests the nodes were sent."""
    sent: list[Any] = []

    def run_tasks(address: str, task: ray_fleet.Task, **kw: Any) -> ray_fleet.Gathered:
        sent.append(task.args[0])
        out = []
        for i, (name, got) in enumerate(answers.items()):
            ans = ray_fleet.NodeAnswer(f"{i:02d}" + "cd" * 27, name, f"10.0.0.{i + 2}")
            if got == "hang":
                ans.status, ans.reason = "no answer", f"no answer in {kw['timeout']:g} s"
            else:
                task.accept(ans, got)
            out.append(ans)
        return ray_fleet.Gathered(address, "2.x", out, 1.0, True)

    monkeypatch.setattr(ray_fleet, "run_tasks", run_tasks)
    return sent


def test_apply_prints_a_row_per_node_and_names_the_ones_not_bound(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = fake_cluster(
        monkeypatch,
        {
            "good": envelope(bound(11), bound(12)),
            "half": envelope(bound(21), bound(22, verified=False)),
            "empty": {"status": "nothing to bind", "reason": "no accelerator worker found"},
            "stuck": "hang",
            "junk": b"\x00garbage",
        },
    )
    res = cli("fleet", "bind", "--workers", "--apply", "--ray-address", ADDRESS, "--timeout", "7")
    assert res.exit_code == 1, res.stderr
    lines = {ln.split()[0]: ln for ln in res.stdout.splitlines() if ln[:1].islower()}
    assert "verified" in lines["good"] and " yes " in lines["good"] and "20/20" in lines["good"]
    assert "failed" in lines["half"] and "PID 22: 6 thread(s) not bound" in lines["half"]
    assert "nothing to bind" in lines["empty"]
    assert "no answer in 7 s (its bind was stopped" in lines["stuck"]
    assert "malformed answer: bytes" in lines["junk"]
    assert "not bound: half, junk, stuck" in res.stdout
    assert sent[0]["apply"] is True and sent[0]["plan_file"] is None
    res = cli("fleet", "bind", "--workers", "--apply", "--ray-address", ADDRESS, "--json")
    doc = schemas.loads("fleet-bind", res.stdout)
    assert doc["apply"] is True and doc["summary"]["verified"] == 1
    assert doc["summary"]["failed"] == 2 and doc["summary"]["no answer"] == 1


def test_every_node_verified_or_empty_is_exit_0_and_a_dry_run_is_the_default(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = fake_cluster(
        monkeypatch,
        {"good": envelope(bound(11)), "empty": {"status": "nothing to bind", "reason": "none"}},
    )
    res = cli("fleet", "bind", "--workers", "--apply", "--ray-address", ADDRESS)
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "1 verified, 1 nothing to bind, 0 failed" in res.stdout
    res = cli("fleet", "bind", "--workers", "--ray-address", ADDRESS, "--plan", "/etc/p.json")
    assert res.exit_code == 1  # the fake nodes answered --apply's kind to a dry run
    assert sent[-1]["apply"] is False and sent[-1]["plan_file"] == "/etc/p.json"
    assert "Nothing was changed (give --apply to bind)" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "say what to bind: --workers"),
        (("--workers", "--plan", "p.json", "--policy", "numa-local"), "already is one"),
        (("--workers", "--force"), "--force applies a --plan FILE"),
        (("--workers", "--timeout", "0"), "--timeout must be more than 0"),
        (("--workers", "--policy", "nonsense"), "nonsense"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], message: str
) -> None:
    sent = fake_cluster(monkeypatch, {})
    res = cli("fleet", "bind", *args, "--ray-address", ADDRESS)
    assert res.exit_code == 2, res.stdout + res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not sent, "no node is asked"


def node(name: str) -> ray_fleet.NodeAnswer:
    return ray_fleet.NodeAnswer(name.ljust(56, "0"), name, "127.0.0.1")


def agent_exposition(cli: Cli) -> str:
    res = cli("agent", "--demo", "container-a2-half", "--observe", "--once")
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_a_fleet_with_an_agent_down_is_exit_1_and_the_document_says_which(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = agent_exposition(cli)
    with metrics_endpoint() as ep:
        ep.body = text.encode()
        up, down = node("up"), node("down")
        down.address = "127.0.0.2"  # nothing listens there
        monkeypatch.setattr(ray_fleet, "list_nodes", lambda *a, **k: ("2.x", [down, up]))
        res = cli("fleet", "agent-status", "--ray-address", "10.0.0.1:6379", "--port", str(ep.port))
        assert res.exit_code == 1, res.stderr
        assert "down: connection refused" in res.stdout and "up (observe)" in res.stdout
        assert "1 up, 1 down (down)" in res.stdout
        res = cli(
            "fleet",
            "agent-status",
            "--ray-address",
            "10.0.0.1:6379",
            "--port",
            str(ep.port),
            "--json",
        )
    doc = schemas.loads("fleet-agent-status", res.stdout)
    by = {n["node"]: n for n in doc["nodes"]}
    assert by["down"]["up"] is False and by["down"]["reason"] == "connection refused"
    assert by["up"]["up"] is True and by["up"]["workers"] == 2
    assert doc["summary"] == {
        "nodes": 2,
        "up": 1,
        "down": 1,
        "workers": 2,
        "threads_bound": 7,
        "threads_total": 14,
    }


def test_without_prometheus_client_it_says_which_extra_and_exits_3(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client.parser", None)  # import fails
    asked: list[str] = []
    monkeypatch.setattr(ray_fleet, "list_nodes", lambda *a, **k: asked.append("x"))
    res = cli("fleet", "agent-status", "--ray-address", "10.0.0.1:6379")
    assert res.exit_code == 3
    assert "ascendtune[agent]" in res.stderr and "Traceback" not in res.stderr
    assert not asked, "the cluster is not asked when the metrics cannot be read"
