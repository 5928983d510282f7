"""watch --workers: every worker the fake npu-smi names, each against its rank of the plan."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import schemas
from tests.support.cli import Cli
from tests.support.workers import Server, write_plan


def test_watch_workers_against_the_plan(server: Server, tmp_path: Path, cli: Cli) -> None:
    a = server.start(0, threads=4)
    b = server.start(3, threads=4)
    plan = write_plan(tmp_path)
    res = cli("watch", "--workers", "--plan", str(plan), "--once", "--json", "--interval", "0.2")
    assert res.exit_code == 0, res.output
    doc = schemas.loads("watch", res.stdout)
    by_pid = {w["pid"]: w for w in doc["workers"]}
    assert set(by_pid) == {a.pid, b.pid}  # found through npu-smi's table, not given
    assert by_pid[a.pid]["rank"] == 0 and by_pid[b.pid]["rank"] == 3
    for w in by_pid.values():  # each watched against its rank's CPUs of the plan
        assert w["threads"] and all(0.0 <= t["off_plan_share"] <= 1.0 for t in w["threads"])


def test_watch_workers_usage_and_none_found(server: Server, tmp_path: Path, cli: Cli) -> None:
    res = cli("watch", "--workers", "--pid", "1")
    assert res.exit_code == 2 and "not both" in res.output
    res = cli("watch", "--workers", "--once", "--interval", "0.05")
    assert res.exit_code == 3 and "no NPU or GPU worker" in res.output
    assert json.dumps  # keep the import honest for --json readers
