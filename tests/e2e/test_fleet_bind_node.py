"""`fleet bind`'s node task (`bind_here`) on real processes of this machine, without Ray: what
one node of the cluster runs, found the live way (the fake npu-smi of tests/support/workers.py),
bound through the kernel and read back from it here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ascendtune.app import fleet_bind as fb
from ascendtune.host import ray_fleet
from tests.support import schemas
from tests.support.workers import BOTH, Server, write_plan

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or not hasattr(os, "sched_setaffinity")
    or not os.sched_getaffinity(0) >= BOTH,
    reason="needs Linux with CPUs 0 and 1 usable",
)


def test_a_node_binds_only_its_pids_and_the_driver_calls_it_verified(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = server.start(0, threads=8), server.start(1, threads=8)
    monkeypatch.delenv(ray_fleet.SOURCE_ENV, raising=False)
    monkeypatch.setenv(fb.PIDS_ENV, str(mine.pid))  # the other worker is another node's
    plan = str(write_plan(tmp_path))
    dry = fb.bind_here(fb.request_of(fb.FleetBindOptions(plan_file=plan)))
    assert dry["status"] == "ok" and dry["live"] is True, dry
    assert [w["pid"] for w in dry["bind"]["workers"]] == [mine.pid]
    assert server.off_target()[mine.pid] > 0, "a dry run changes nothing"
    got = fb.bind_here(fb.request_of(fb.FleetBindOptions(apply=True, plan_file=plan)))
    assert got["status"] == "ok", got
    off = server.off_target()  # from the kernel, not from the answer
    assert off[mine.pid] == 0 and off[other.pid] > 0, off
    ans = ray_fleet.NodeAnswer("a" * 56, "node-a", "127.0.0.1", seconds=0.1)
    fb.accept(ans, got)
    rows = fb.report_of(ray_fleet.Gathered("127.0.0.1:1", "2.x", [ans], 0.2, True), True)
    doc = schemas.checked("fleet-bind", {"schema_version": 1, **fb.document(rows)})
    (row,) = doc["nodes"]
    assert row["status"] == "verified" and row["verified"] is True and row["workers"] == 1
    assert row["threads_bound"] == row["threads_total"] >= 8
    assert rows.exit_code == 0


def test_a_node_without_workers_has_nothing_to_bind(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ray_fleet.SOURCE_ENV, raising=False)
    monkeypatch.delenv(fb.PIDS_ENV, raising=False)
    plan = str(write_plan(tmp_path))
    got = fb.bind_here(fb.request_of(fb.FleetBindOptions(apply=True, plan_file=plan)))
    assert got["status"] == "nothing to bind" and "no accelerator worker" in got["reason"], got
