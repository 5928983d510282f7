"""`fleet` against a real local multi-node Ray cluster (`ray.cluster_utils.Cluster`, loopback).

Every node runs on this machine, so each replays another host: its raylet's environment names a
snapshot in ASCENDTUNE_FLEET_SOURCE (see ascendtune/host/ray_fleet.py). Marked `ray`: skipped
where ray is not importable (and said so at the end of the run), run by .ci/run after it
installs the extra.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendtune.app.fleet import FleetOptions, FleetReport, compare, document, gather
from ascendtune.core.jsondoc import versioned
from tests.support import schemas
from tests.support.fleethosts import demo_copy
from tests.support.workers import BOTH, Server, fake_tool, write_plan

HAVE_RAY = importlib.util.find_spec("ray") is not None
# before anything imports ray: no usage reports, and a single-machine cluster on loopback (Ray
# reads this when imported; without it, it rewrites 127.0.0.1 to the outside address)
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
DEFERRED = os.environ.get("ASCENDTUNE_RAY_TIER") == "separate"
# .ci/run's own Ray tier: without ray the tests fail rather than skip
REQUIRED = os.environ.get("ASCENDTUNE_RAY_TIER") == "required"

pytestmark = [
    pytest.mark.ray,
    # one xdist worker runs them all, in order: they share one cluster (the module fixture), and
    # a test removes the nodes it broke so that the next ones do not meet them
    pytest.mark.xdist_group("ray"),
    pytest.mark.skipif(
        not HAVE_RAY and not REQUIRED, reason="ray is not importable (pip install -e '.[ray]')"
    ),
    pytest.mark.skipif(DEFERRED, reason="the Ray tier runs on its own in .ci/run"),
]

NODE = {
    "num_cpus": 1,
    "object_store_memory": 80 * 1024 * 1024,  # 4+ nodes fit on a small machine
    "node_ip_address": "127.0.0.1",
    "include_dashboard": False,
}
# a worker on this node finds no ascendtune except a copy shipped by runtime_env py_modules
NO_ASCENDTUNE = """
import importlib.machinery, sys

class _NoAscendtune:
    def find_spec(self, name, path=None, target=None):
        if name != "ascendtune":
            return None
        shipped = [p for p in sys.path if "runtime_resources" in p]
        spec = importlib.machinery.PathFinder.find_spec(name, shipped)
        if spec is None:
            raise ModuleNotFoundError("No module named 'ascendtune' on this node", name=name)
        return spec

sys.meta_path.insert(0, _NoAscendtune())
"""

# a node whose capture task answers garbage (HOSTILE=garbage) or whose worker dies mid-task
# (HOSTILE=die): the task function is replaced on that node when its module is imported
HOSTILE = """
import importlib.abc, os, sys

class _Hostile(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "ascendtune.host.ray_fleet":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            def capture_here():
                if os.environ.get("HOSTILE") == "die":
                    os._exit(1)
                return "garbage"
            module.capture_here = capture_here

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Hostile())
"""


class Fleet:
    def __init__(self, cluster: Any, hosts: Path) -> None:
        self.cluster = cluster
        self.hosts = hosts
        self.address: str = cluster.address

    def add(self, source: Path | str, **env: str) -> Any:
        node = self.cluster.add_node(
            **NODE, env_vars={"ASCENDTUNE_FLEET_SOURCE": str(source), **env}
        )
        self.cluster.wait_for_nodes()
        return node


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    from ray.cluster_utils import Cluster

    hosts = tmp_path_factory.mktemp("hosts")
    a, b = demo_copy(hosts / "node-a", "node-a"), demo_copy(hosts / "node-b", "node-b")
    c = demo_copy(hosts / "node-c", "node-c", tuned=False)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={**NODE, "env_vars": {"ASCENDTUNE_FLEET_SOURCE": str(a)}},
    )
    f = Fleet(cluster, hosts)
    f.add(b)
    f.add(c)
    yield f
    cluster.shutdown()


def doc_of(report: FleetReport) -> dict[str, Any]:
    """The document `fleet ... --json` prints for report."""
    return versioned(document(report))


def rows(report: FleetReport) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in schemas.checked("fleet", doc_of(report))["nodes"]}


def test_every_node_answers_and_only_the_untuned_one_is_flagged(fleet: Fleet) -> None:
    report = gather(FleetOptions(view="doctor", ray_address=fleet.address, timeout=60))
    by = rows(report)
    assert sorted(by) == ["node-a", "node-b", "node-c"]
    assert {n: r["status"] for n, r in by.items()} == {
        "node-a": "ok",
        "node-b": "ok",
        "node-c": "differs",
    }
    assert by["node-c"]["differs"] == ["check:numa_balancing"]
    assert len({r["node_id"] for r in by.values()}) == 3, "one task pinned to each node"
    assert all(r["replayed"].endswith(n) for n, r in by.items()), "each node replays its host"
    assert report.exit_code == 1  # the demo fails checks (governor) on every node
    assert doc_of(report)["ray"]["driver_ray"] and doc_of(report)["mode"] == "ray"


def _raylets(node: Any) -> list[int]:
    return [p.process.pid for p in node.all_processes.get("raylet", [])]


def test_hung_node_and_node_removed_mid_run_come_back_as_rows(fleet: Fleet) -> None:
    """A node whose raylet is frozen (SIGSTOP) runs no task: "no answer in N s"; a frozen node
    removed while the gather waits comes back as a row too, with why."""
    import contextlib
    import signal

    hung = fleet.add(demo_copy(fleet.hosts / "hung", "node-hung"))
    gone = fleet.add(demo_copy(fleet.hosts / "gone", "node-gone"))
    frozen = _raylets(hung) + _raylets(gone)
    assert frozen, "the nodes' raylets"
    got: list[FleetReport] = []
    t = threading.Thread(
        target=lambda: got.append(
            gather(FleetOptions(view="topo", ray_address=fleet.address, timeout=WAIT))
        )
    )
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        t.start()
        time.sleep(2)  # the gather has listed the nodes and pinned its tasks
        fleet.cluster.remove_node(gone)  # the node dies under its pending task
        t.join(WAIT + 90)
    finally:
        for pid in _raylets(hung):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        fleet.cluster.remove_node(hung)  # whatever happened: the next tests must not meet it
    assert got, "the gather returned"
    by = rows(got[0])
    assert time.monotonic() - t0 < WAIT + 60
    answered = {n for n, r in by.items() if r["status"] in ("ok", "differs")}
    assert answered == {"node-a", "node-b", "node-c"}
    silent = [r for r in by.values() if r["status"] in ("no answer", "failed")]
    assert len(silent) <= 2 and any(r["status"] == "no answer" for r in silent), by
    reasons = sorted(r["reason"] for r in silent)
    assert f"no answer in {WAIT} s" in reasons, reasons
    assert got[0].exit_code == 1
    print("reasons:", reasons)


# each node's deadline in the hung-node test: long enough for a healthy node's first task on a
# loaded 2-core machine (Ray starts a worker and ships the package: about 14 s seen under load)
WAIT = 40


def test_node_without_ascendtune_answers_through_shipping(fleet: Fleet, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_ASCENDTUNE)
    src = demo_copy(fleet.hosts / "bare", "node-bare")
    node = fleet.add(src, PYTHONPATH=str(site), ASCEND_RT_VISIBLE_DEVICES="4,5")
    only = [node.node_id]
    shipped = gather(FleetOptions(view="topo", ray_address=fleet.address, nodes=tuple(only)))
    row = rows(shipped)["node-bare"]
    assert row["status"] == "ok", row
    assert row["ascendtune_shipped"] and "runtime_resources" in row["ascendtune"]
    # the task sees the node's device variable (what a live capture records), not a blank
    assert row["devices_env"] == {"ASCEND_RT_VISIBLE_DEVICES": "4,5"}
    bare = gather(
        FleetOptions(view="topo", ray_address=fleet.address, nodes=tuple(only), ship=False)
    )
    (row,) = schemas.checked("fleet", doc_of(bare))["nodes"]
    assert row["status"] == "failed" and "ascendtune" in row["reason"], row
    import ray  # a caller that joined the cluster itself: Ray ships folders at job level only

    ray.init(address=fleet.address, _node_ip_address="127.0.0.1", logging_level="ERROR")
    try:
        joined = gather(FleetOptions(view="topo", ray_address=fleet.address, nodes=tuple(only)))
    finally:
        ray.shutdown()
    (row,) = schemas.checked("fleet", doc_of(joined))["nodes"]
    assert row["status"] == "failed"
    assert any("not shipped" in n for n in doc_of(joined)["notes"])
    fleet.cluster.remove_node(node)


def test_cli_saves_every_snapshot_and_compare_replays_them(fleet: Fleet, tmp_path: Path) -> None:
    save = tmp_path / "saved"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ascendtune",
            "fleet",
            "doctor",
            "--ray-address",
            fleet.address,
            "--save",
            str(save),
            "--json",
            "--timeout",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    doc = schemas.loads("fleet", done.stdout)
    assert doc["saved"] == str(save)
    live = {n["node"]: n["status"] for n in doc["nodes"] if n["status"] != "no answer"}
    assert live == {"node-a": "ok", "node-b": "ok", "node-c": "differs"}
    assert len(list(save.glob("*.tar.gz"))) == 3
    again = compare([str(save)])
    assert {
        n["node"]: n["status"] for n in schemas.checked("fleet", doc_of(again))["nodes"]
    } == live


def test_a_port_that_is_no_gcs_fails_within_the_deadline() -> None:
    import socket

    with socket.socket() as srv:  # accepts connections, speaks no Ray (like the dashboard port)
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        port = srv.getsockname()[1]
        t0 = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ascendtune",
                "fleet",
                "topo",
                "--ray-address",
                f"127.0.0.1:{port}",
                "--timeout",
                "5",
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert time.monotonic() - t0 < 60
    assert done.returncode == 3, done.stderr
    # Ray's C++ client logs its own retries, before or after ours (from the thread left
    # joining): our line is there once, whole
    ours = [ln for ln in done.stderr.splitlines() if ln.startswith("ascendtune: ")]
    assert len(ours) == 1 and ours[0].startswith("ascendtune: error: "), done.stderr
    assert "no Ray cluster joined within 5 s" in ours[0]


def test_hostile_nodes_are_rows_and_json_still_parses(fleet: Fleet, tmp_path: Path) -> None:
    """A node whose task answers a string and one whose worker dies: each is one failed row, the
    other nodes' answers are kept, and Ray's `(raylet)` lines never reach stdout."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HOSTILE)
    garbage = fleet.add(fleet.hosts / "node-a", PYTHONPATH=str(site), HOSTILE="garbage")
    dying = fleet.add(fleet.hosts / "node-a", PYTHONPATH=str(site), HOSTILE="die")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ascendtune",
                "fleet",
                "topo",
                "--ray-address",
                fleet.address,
                "--json",
                "--timeout",
                "60",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        fleet.cluster.remove_node(garbage)
        fleet.cluster.remove_node(dying)
    assert done.returncode == 1, done.stderr
    doc = schemas.loads("fleet", done.stdout)  # stdout is the document alone
    assert "(raylet)" not in done.stdout
    by_id = {n["node_id"]: n for n in doc["nodes"]}
    bad = by_id[garbage.node_id]
    assert bad["status"] == "failed" and "malformed answer: str" in bad["reason"], bad
    dead = by_id[dying.node_id]
    assert dead["status"] in ("failed", "no answer") and dead["reason"], dead
    kept = {
        n["node"]: n["status"]
        for n in doc["nodes"]
        if n["node_id"] not in (garbage.node_id, dying.node_id)
    }
    assert {"node-a", "node-b", "node-c"} <= set(kept) and "failed" not in kept.values()


# ---- fleet bind --workers and fleet agent-status ---------------------------------------------


def live_node(fleet: Fleet, server: Server, pids: str, **args: Any) -> Any:
    """A node that binds this machine (no ASCENDTUNE_FLEET_SOURCE): its raylet finds the fake
    npu-smi of `server` first on PATH, keeps its locks in the server's folder and takes only
    `pids` as its workers (every node is this machine)."""
    env = {
        "PATH": f"{server.tmp / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "ASCENDTUNE_LOCK_DIR": str(server.tmp / "locks"),
        "ASCENDTUNE_FLEET_PIDS": pids,
    }
    node = fleet.cluster.add_node(**{**NODE, **args}, env_vars=env)
    fleet.cluster.wait_for_nodes()
    return node


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or not os.sched_getaffinity(0) >= BOTH,
    reason="needs CPUs 0 and 1 usable",
)
def test_fleet_bind_plans_then_binds_every_live_node_verified_from_the_kernel(
    fleet: Fleet, tmp_path: Path
) -> None:
    from ascendtune.app import fleet_bind as fb

    one, two, idle = (fake_tool(tmp_path / n) for n in ("one", "two", "idle"))
    try:
        one.start(0, threads=8)
        one.start(1, threads=8)
        two.start(2, threads=8)
        plan = str(write_plan(tmp_path))
        nodes = {
            "one": live_node(fleet, one, ",".join(str(w.pid) for w in one.workers.values())),
            "two": live_node(fleet, two, str(two.workers[2].pid)),
            "idle": live_node(fleet, idle, "0"),  # PID 0 is never a worker: nothing there
        }
        ids = {n.node_id: name for name, n in nodes.items()}
        dry = fb.run(
            fb.FleetBindOptions(ray_address=fleet.address, nodes=tuple(ids), plan_file=plan)
        )
        doc = schemas.checked("fleet-bind", versioned(fb.document(dry)))
        by = {ids[r["node_id"]]: r for r in doc["nodes"]}
        assert {n: r["status"] for n, r in by.items()} == {
            "one": "planned",
            "two": "planned",
            "idle": "nothing to bind",
        }, by
        assert by["one"]["workers"] == 2 and by["two"]["workers"] == 1 and dry.exit_code == 0
        assert all(n > 0 for n in {**one.off_target(), **two.off_target()}.values()), "dry run"
        done = subprocess.run(
            [sys.executable, "-m", "ascendtune", "fleet", "bind", "--workers", "--apply"]
            + ["--ray-address", fleet.address, "--plan", plan, "--json", "--timeout", "60"]
            + [f"--nodes={i}" for i in ids],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        doc = schemas.loads("fleet-bind", done.stdout)
        by = {ids[r["node_id"]]: r for r in doc["nodes"]}
        assert by["one"]["status"] == by["two"]["status"] == "verified", by
        assert by["one"]["verified"] is True and by["idle"]["status"] == "nothing to bind"
        assert [w["pid"] for w in by["two"]["bind"]["workers"]] == [two.workers[2].pid]
        off = {**one.off_target(), **two.off_target()}  # read from the kernel here
        assert set(off) == {w.pid for s in (one, two) for w in s.workers.values()}
        assert sum(off.values()) == 0, off
        took = {ids[r["node_id"]]: r["seconds"] for r in doc["nodes"]}
        print(
            f"\nfleet bind: dry run {dry.ray['seconds']} s, --apply {doc['ray']['seconds']} s, {took}"
        )
        # every node, the replaying ones too: they refuse --apply, the live ones stay verified
        every = fb.run(fb.FleetBindOptions(ray_address=fleet.address, apply=True, plan_file=plan))
        doc = schemas.checked("fleet-bind", versioned(fb.document(every)))
        status = {r["node_id"]: r["status"] for r in doc["nodes"]}
        replaying = [r for r in doc["nodes"] if "replayed" in r]  # the fixture's node-a, b, c
        assert len(replaying) >= 3 and all(r["status"] == "refused" for r in replaying), status
        assert all("captured host" in r["reason"] for r in replaying)
        assert [status[i] for i in ids] == ["verified", "verified", "nothing to bind"]
        assert every.exit_code == 1
    finally:
        for server in (one, two):
            for w in server.workers.values():
                w.proc.kill()
                w.proc.wait(timeout=10)
        for n in locals().get("nodes", {}).values():
            fleet.cluster.remove_node(n)


def test_agent_status_reads_each_nodes_agent_and_a_node_without_one_is_down(
    fleet: Fleet, tmp_path: Path
) -> None:
    """A real agent on loopback (the nodes at 127.0.0.1 all reach it), and a node at 127.0.0.2,
    where nothing listens."""
    from tests.support.prometheus import free_port

    port = free_port()
    with open(tmp_path / "agent.log", "w") as log:
        agent = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ascendtune",
                "agent",
                "--demo",
                "container-a2-half",
                "--observe",
                "--listen",
                f"127.0.0.1:{port}",
                "--interval",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    lone = None
    try:
        deadline = time.monotonic() + 60
        while True:
            assert agent.poll() is None, (tmp_path / "agent.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the agent never listened"
                time.sleep(0.2)
        lone = fleet.cluster.add_node(**{**NODE, "node_ip_address": "127.0.0.2"})
        fleet.cluster.wait_for_nodes()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ascendtune",
                "fleet",
                "agent-status",
                "--json",
                "--ray-address",
                fleet.address,
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        agent.terminate()
        agent.wait(timeout=30)
        if lone is not None:
            fleet.cluster.remove_node(lone)
    assert done.returncode == 1, done.stdout + done.stderr
    doc = schemas.loads("fleet-agent-status", done.stdout)
    down = [n for n in doc["nodes"] if not n["up"]]
    up = [n for n in doc["nodes"] if n["up"]]
    assert [(n["address"], n["reason"]) for n in down] == [("127.0.0.2", "connection refused")]
    assert up and all(n["address"] == "127.0.0.1" for n in up)
    assert all(n["workers"] == 2 and n["mode"] == "observe" for n in up), up
    assert all((n["threads_bound"], n["threads_total"]) == (7, 14) for n in up)
    assert all("cpu_governor" in n["doctor_failures"] for n in up)
