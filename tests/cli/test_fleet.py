"""`fleet` without Ray: the pure comparison, `fleet compare` over snapshots, connecting safely."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ascendtune import api
from ascendtune.core import fleet as core
from ascendtune.core.errors import MissingError, UsageError
from ascendtune.host import ray_fleet
from tests.support import schemas
from tests.support.fleethosts import demo_copy, fleet_of_four


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ascendtune", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compare_flags_the_untuned_node(tmp_path: Path) -> None:
    paths = fleet_of_four(tmp_path)
    done = run("fleet", "compare", *map(str, paths), "--json")
    assert done.returncode == 1, done.stderr  # the demo fails checks on every node
    doc = schemas.loads("fleet", done.stdout)
    by = {n["node"]: n for n in doc["nodes"]}
    assert sorted(by) == ["node-a", "node-b", "node-c", "node-d"]
    assert [by[n]["status"] for n in ["node-a", "node-b", "node-c"]] == ["ok"] * 3
    assert by["node-d"]["status"] == "differs"
    assert by["node-d"]["differs"] == ["check:numa_balancing"]
    assert by["node-d"]["differences"] == [
        {"key": "check:numa_balancing", "value": "fail: 1", "majority": "ok: 0"}
    ]
    assert (
        "numa_balancing" in by["node-d"]["fails"] and "numa_balancing" not in by["node-a"]["fails"]
    )
    assert len({n["group"] for n in doc["nodes"]}) == 1 and doc["summary"]["groups"] == 1
    assert by["node-a"]["report"]["checks"], "each row carries the node's doctor document"
    assert doc["summary"] == {
        "nodes": 4,
        "ok": 3,
        "differs": 1,
        "failed": 0,
        "no answer": 0,
        "groups": 1,
    }


def test_compare_view_in_words(tmp_path: Path) -> None:
    fleet_of_four(tmp_path)
    done = run("fleet", "compare", str(tmp_path))  # a folder of snapshots
    assert done.returncode == 1
    out = done.stdout
    assert "node-d: check:numa_balancing = fail: 1  (majority: ok: 0)" in out
    assert "3 ok, 1 differ, 0 failed, 0 no answer" in out
    assert "fail*" in out  # the cell that differs is marked in the checks x nodes table


def test_archives_and_folders_compare_alike(tmp_path: Path) -> None:
    a, b, c, d = fleet_of_four(tmp_path / "f")
    arch = tmp_path / "d.tar.gz"
    shutil.make_archive(str(tmp_path / "d"), "gztar", d)
    doc = schemas.checked("fleet", api.fleet_compare(str(a), str(b), str(c), str(arch)))
    rows = {n["node"]: n for n in doc["nodes"]}
    assert rows["node-d"]["status"] == "differs" and rows["node-d"]["source"] == str(arch)


def test_topology_classes_group_nodes_apart(tmp_path: Path) -> None:
    a2 = [demo_copy(tmp_path / f"a2-{i}", f"a2-{i}") for i in range(2)]
    a3 = demo_copy(tmp_path / "a3", "a3-0", demo="atlas-800i-a3")
    doc = schemas.checked("fleet", api.fleet_compare(*map(str, [*a2, a3])))
    groups = {n["node"]: n["group"] for n in doc["nodes"]}
    assert groups["a2-0"] == groups["a2-1"] != groups["a3-0"]
    assert doc["summary"]["groups"] == 2
    # alone in its class, a node has no majority to differ from
    assert {n["node"]: n["status"] for n in doc["nodes"]}["a3-0"] == "ok"


def test_cpuset_and_version_differences_are_named(tmp_path: Path) -> None:
    nodes = [demo_copy(tmp_path / f"n{i}", f"n{i}") for i in range(3)]
    doc = schemas.checked("fleet", api.fleet_compare(*map(str, nodes), view="topo"))
    assert all(n["status"] == "ok" for n in doc["nodes"])
    docs = [{"topo": api.topo(sysroot=str(p))} for p in nodes]
    docs[2]["topo"]["cpus_allowed"] = "0-95"
    res = core.compare("topo", [core.NodeInput(f"n{i}", docs=d) for i, d in enumerate(docs)])
    flagged = {r.node: [d.key for d in r.differs] for r in res.nodes}
    assert flagged == {"n0": [], "n1": [], "n2": ["cpuset"]}


def test_unreadable_snapshot_is_a_failed_row(tmp_path: Path) -> None:
    a, b, _, _ = fleet_of_four(tmp_path / "f")
    bad = tmp_path / "broken.tar.gz"
    bad.write_bytes(b"not an archive")
    doc = schemas.checked("fleet", api.fleet_compare(str(a), str(b), str(bad)))
    row = next(n for n in doc["nodes"] if n["status"] == "failed")
    assert row["node"] == "broken" and "unreadable" in row["reason"] and row["group"] is None


def test_pure_comparison_rules() -> None:
    assert core.normalize("running (PID 1634)") == "running PID"
    assert core.normalize("PIDs 12 and 34 share CPUs 2-11") == "PID share CPUs 2-11"
    assert (
        core.check_key({"id": "worker:3418790", "value": "NPU 0 (x): 7 threads"}) == "worker:npu0"
    )
    assert core.check_key({"id": "overlap:1,2", "value": "PIDs 1 and 2"}) == "overlap"
    assert core.check_key({"id": "numa_balancing"}) == "numa_balancing"
    missing = core.NodeInput("gone", "abc", None, "no answer in 5 s", core.NO_ANSWER)
    res = core.compare("doctor", [missing])
    assert res.nodes[0].status == "no answer" and res.exit_code == 1
    # a tie has no majority: both sides are said to differ, against "no majority"
    t = [{"topo": {"cpus_allowed": c, "cpus_online": "0-3"}} for c in ("0-1", "2-3")]
    tie = core.compare("topo", [core.NodeInput(f"t{i}", docs=d) for i, d in enumerate(t)])
    assert {r.status for r in tie.nodes} == {"differs"}
    assert tie.nodes[0].differs[0].majority == "no majority"
    same = core.compare(
        "topo", [core.NodeInput("h", "id1", t[0]), core.NodeInput("h", "id2", t[0])]
    )
    assert sorted(r.node for r in same.nodes) == ["h [id1]", "h [id2]"]


def test_compare_needs_snapshots(tmp_path: Path) -> None:
    done = run("fleet", "compare", str(tmp_path / "nothing"))
    assert done.returncode == 3 and done.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    done = run("fleet", "compare", str(tmp_path / "empty"))
    assert done.returncode == 3 and "holds no snapshot" in done.stderr


def test_wrong_address_fails_fast_with_one_line() -> None:
    t0 = time.monotonic()
    done = run("fleet", "doctor", "--ray-address", "127.0.0.1:9", "--timeout", "5")
    assert time.monotonic() - t0 < 30
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "ascendtune: error: no Ray cluster at 127.0.0.1:9"
    )


def test_probe_deadline_on_a_silent_address() -> None:
    # 192.0.2.0/24 is TEST-NET: nothing answers, so the connect runs into the deadline
    t0 = time.monotonic()
    with pytest.raises(MissingError):
        ray_fleet.probe("192.0.2.123:6379", deadline_s=0.5)
    assert time.monotonic() - t0 < 10


def test_address_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ray_fleet.resolve_address("10.0.0.1:6379", {}) == "10.0.0.1:6379"
    assert ray_fleet.resolve_address(None, {"RAY_ADDRESS": "10.0.0.2:6379"}) == "10.0.0.2:6379"
    monkeypatch.setattr(ray_fleet, "CURRENT_CLUSTER", str(tmp_path / "none"))
    with pytest.raises(MissingError, match="no Ray cluster found"):
        ray_fleet.resolve_address(None, {})
    (tmp_path / "cur").write_text("10.0.0.3:6379\n")
    monkeypatch.setattr(ray_fleet, "CURRENT_CLUSTER", str(tmp_path / "cur"))
    assert ray_fleet.resolve_address("auto", {}) == "10.0.0.3:6379"
    assert ray_fleet.host_port("ray://head:10001") == ("head", 10001)
    assert ray_fleet.host_port("head") == ("head", 6379)
    with pytest.raises(UsageError):
        ray_fleet.host_port("head:port")


def test_tasks_keep_the_nodes_device_variables() -> None:
    env = ray_fleet.noset_env()
    assert env == {
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "1",
        "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1",
    }


def test_capture_task_replays_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = demo_copy(tmp_path / "x", "node-x")
    monkeypatch.setenv(ray_fleet.SOURCE_ENV, str(src))
    got = ray_fleet.capture_here()
    assert got["info"]["replayed"] == str(src)
    from ascendtune.host.roots import open_archive

    assert api.topo is not None and open_archive(got["archive"], "x").read_text("meta.json")
    monkeypatch.setenv(ray_fleet.SOURCE_ENV, "demo:atlas-800i-a3")
    assert ray_fleet.capture_here()["archive"] != b""


def test_fleet_help_lists_its_commands() -> None:
    done = run("fleet", "--help")
    assert done.returncode == 0
    for cmd in ("snapshot", "topo", "doctor", "plan", "compare"):
        assert cmd in done.stdout


def test_connect_errors_say_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    mismatch = RuntimeError(
        "Version mismatch: The cluster was started with:\n    Ray: 2.49.0\n    Python: 3.10.12\n"
        "This process on node 10.0.0.9 was started with:\n    Ray: 2.60.0\n    Python: 3.11.7\n"
    )
    err = ray_fleet._connect_error("2.60.0", "10.0.0.1:6379", mismatch)
    assert err.exit_code == 3
    assert (
        "runs Ray 2.49.0 on Python 3.10.12, this driver Ray 2.60.0 on Python 3.11.7" in err.message
    )
    assert "ray==2.49.0" in (err.hint or "")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "s3cr3t-token-value")
    refused = ConnectionError("UNAUTHENTICATED: bad token s3cr3t-token-value\nmore")
    err = ray_fleet._connect_error("2.60.0", "10.0.0.1:6379", refused)
    assert "s3cr3t" not in str(err) and "***" in err.message
    assert "RAY_AUTH_TOKEN" in (err.hint or "")


def test_snapshots_never_record_ray_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from ascendtune.host import snapshot

    monkeypatch.setenv("RAY_AUTH_TOKEN", "s3cr3t-token-value")
    assert not [k for k in snapshot.env_keys() if k.startswith("RAY")]
