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
from tests.support.cli import Cli
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


# -- labels, hostile folders, hostile nodes ------------------------------------------------------


def test_labels_are_text_and_tell_nodes_apart(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same hostname everywhere: absolute archive paths once crashed Rich (`[/abs/...]` read as
    markup); relative paths and hex node ids vanished as tags. Each column its own header."""
    snaps = tmp_path / "snaps"
    for name in ("before", "after"):
        src = demo_copy(tmp_path / "src" / name, "same-host")
        shutil.make_archive(str(snaps / name), "gztar", src)
    before, after = snaps / "before.tar.gz", snaps / "after.tar.gz"
    res = cli("fleet", "compare", str(before), str(after))
    assert res.exit_code == 1, res.output  # the demo fails checks
    assert "internal error" not in res.stderr
    assert "same-host [before.tar.gz]" in res.stdout and "same-host [after.tar.gz]" in res.stdout
    header = next(ln for ln in res.stdout.splitlines() if ln.startswith("┃ check"))
    assert header.count("same-host [before.tar.gz]") == 1 and "[after.tar.gz]" in header
    monkeypatch.chdir(tmp_path)
    demo_copy(tmp_path / "rack1" / "n", "same-host")
    demo_copy(tmp_path / "rack2" / "n", "same-host")
    res = cli("fleet", "compare", "rack1/n", "rack2/n", "--json")
    names = sorted(n["node"] for n in schemas.loads("fleet", res.stdout)["nodes"])
    assert names == ["same-host [rack1/n]", "same-host [rack2/n]"]
    res = cli("fleet", "compare", "rack1/n", "rack2/n")
    assert "same-host [rack1/n]" in res.stdout and "same-host [rack2/n]" in res.stdout
    # node ids starting a-f, sharing their first 8 characters
    docs = {"topo": api.topo(sysroot=str(tmp_path / "rack1" / "n"))}
    ids = ("deadbeef01" + "0" * 46, "deadbeef02" + "0" * 46)
    res2 = core.compare("topo", [core.NodeInput("h", i, docs) for i in ids])
    assert sorted(r.node for r in res2.nodes) == ["h [deadbeef01]", "h [deadbeef02]"]


def test_a_node_without_npu_smi_is_missing_its_accelerator_view(tmp_path: Path) -> None:
    a, b = (demo_copy(tmp_path / n, n) for n in ("node-a", "node-b"))
    blind = demo_copy(tmp_path / "node-c", "node-c")
    for f in (blind / "commands").glob("npu-smi*"):
        f.unlink()
    doc = schemas.checked("fleet", api.fleet_compare(str(a), str(b), str(blind), view="topo"))
    row = next(n for n in doc["nodes"] if n["node"] == "node-c")
    assert row["status"] == "differs" and row["differs"][0] == "accelerator_view"
    assert "npu-smi not found" in row["differences"][0]["value"]
    assert doc["summary"]["ok"] == 2 and doc["summary"]["differs"] == 1


def test_compare_never_follows_a_link_out_of_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "fleet"
    fleet_of_four(folder)
    outside = demo_copy(tmp_path / "elsewhere", "node-x")
    (folder / "root").symlink_to("/")
    (folder / "away").symlink_to(outside)
    doc = schemas.checked("fleet", api.fleet_compare(str(folder)))
    rows = {n["node"]: n for n in doc["nodes"]}
    assert rows["root"]["status"] == rows["away"]["status"] == "failed"
    assert "refused" in rows["root"]["reason"] and "refused" in rows["away"]["reason"]
    assert rows["root"]["report"] is None and "node-x" not in rows
    assert {rows[f"node-{n}"]["status"] for n in "abc"} == {"ok"}
    live = schemas.checked("fleet", api.fleet_compare("/"))
    assert live["nodes"][0]["status"] == "failed" and "refused" in live["nodes"][0]["reason"]


def _answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[ray_fleet.NodeAnswer]:
    """Five nodes: two that answer a snapshot, and one each answering a string, None and a
    document without archive."""
    out = []
    for i, got in enumerate(["good", "good", "a string", None, {"info": {"x": 1}}]):
        ans = ray_fleet.NodeAnswer(f"{i:02d}" + "ab" * 27, f"node-{i}", "127.0.0.1")
        if got == "good":
            monkeypatch.setenv(
                ray_fleet.SOURCE_ENV, str(demo_copy(tmp_path / f"n{i}", f"node-{i}"))
            )
            got = ray_fleet.capture_here()
        ray_fleet.settle_answer(ans, got)
        out.append(ans)
    return out


def test_hostile_node_answers_are_one_row_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascendtune.app.fleet import FleetOptions, document, from_gathered

    answers = _answers(tmp_path, monkeypatch)
    got = ray_fleet.Gathered("127.0.0.1:6379", "2.x", answers, 1.0, True)
    report = from_gathered(got, FleetOptions(view="topo"))
    doc = schemas.checked("fleet", {"schema_version": 1, **document(report)})
    rows = {n["node"]: n for n in doc["nodes"]}
    assert {n: r["status"] for n, r in rows.items()} == {
        "node-0": "ok",
        "node-1": "ok",
        "node-2": "failed",
        "node-3": "failed",
        "node-4": "failed",
    }
    assert "malformed answer: str" in rows["node-2"]["reason"]
    assert "malformed answer: NoneType" in rows["node-3"]["reason"]
    assert "without archive" in rows["node-4"]["reason"]
    assert report.exit_code == 1


def test_save_never_follows_planted_links_and_keeps_files_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascendtune.app.fleet import FleetOptions, from_gathered

    answers = _answers(tmp_path, monkeypatch)[:2]
    save = tmp_path / "saved"
    save.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    for a in answers:  # every name the save will use, planted as a link to the victim
        (save / f"{a.hostname}-{a.node_id[:8]}.tar.gz").symlink_to(victim)
    got = ray_fleet.Gathered("127.0.0.1:6379", "2.x", answers, 1.0, True)
    from_gathered(got, FleetOptions(view="topo", save=str(save)))
    assert victim.read_text() == "keep me\n"
    files = sorted(save.iterdir())
    assert len(files) == 2 and not any(f.is_symlink() for f in files)
    assert {f.stat().st_mode & 0o777 for f in files} == {0o600}
    fresh = tmp_path / "new" / "saved"
    from_gathered(got, FleetOptions(view="topo", save=str(fresh)))
    assert fresh.stat().st_mode & 0o777 == 0o700
    assert {f.stat().st_mode & 0o777 for f in fresh.iterdir()} == {0o600}
    link = tmp_path / "link"
    link.symlink_to(save)
    with pytest.raises(UsageError, match="symbolic link"):
        from_gathered(got, FleetOptions(view="topo", save=str(link)))


def test_ray_output_during_a_gather_goes_to_stderr() -> None:
    """What Ray prints while it runs (its `(raylet)` lines via sys.stdout, its core on fd 1)
    never reaches stdout, which carries only the document."""
    code = (
        "import os, sys\n"
        "from ascendtune.host.ray_fleet import stdout_to_stderr\n"
        "with stdout_to_stderr():\n"
        "    print('(raylet) A worker died')\n"
        "    os.write(1, b'(raylet) from the core\\n')\n"
        "print('{\"doc\": 1}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"doc": 1}\n'
    assert "(raylet) A worker died" in done.stderr and "from the core" in done.stderr


@pytest.mark.parametrize(
    "address",
    ["a" * 70_000 + ":6379", "a" * 70 + ".example:6379", "head:99999", "head:0"],
    ids=["huge", "long-label", "port-too-big", "port-0"],
)
def test_a_malformed_ray_address_is_a_usage_error(address: str, cli: Cli) -> None:
    res = cli("fleet", "topo", "--ray-address", address, "--timeout", "2")
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "internal error" not in res.stderr
    assert len(res.stderr) < 400


def test_an_unreadable_snapshot_is_one_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ascendtune.host import roots

    a, b, c, _ = fleet_of_four(tmp_path / "f")
    real = roots.open_root

    def refusing(path: str | None) -> object:
        if path == str(c):
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(roots, "open_root", refusing)
    doc = schemas.checked("fleet", api.fleet_compare(str(a), str(b), str(c)))
    rows = {n["node"]: n for n in doc["nodes"]}
    assert rows["node-c"]["status"] == "failed"
    assert rows["node-c"]["reason"] == "unreadable: Permission denied"
    assert rows["node-a"]["status"] == rows["node-b"]["status"] == "ok"


def test_kubernetes_nodes_are_compared_on_their_kubelet_and_pods(tmp_path: Path) -> None:
    # issue 25: fleet shows Kubernetes per node; pods differ by name from node to node, so they
    # are compared as counts by status, and the kubelet's policies as one value
    from tests.support import k8s as K

    aligned = K.cpu_manager_v2(
        {K.UID_A: {K.CONTAINER: "144-155"}, K.UID_B: {K.CONTAINER: "156-167"}},
        default="0-143,168-191",
    )
    paths = [
        str(K.k8s_node(tmp_path / f"n{i}", cpu_state=state))
        for i, state in enumerate([aligned, aligned, None])
    ]
    report = api.fleet_compare_report(*paths)
    rows = {n.node: n for n in report.result.nodes}
    assert len(rows) == 3, rows
    bad = [n for n in rows.values() if n.status == "differs"]
    assert [n.node for n in bad] == ["a2 [n2]"], rows
    keys = {d.key: d for d in bad[0].differs}
    assert keys["k8s_pods"].value == "1 fail, 0 warn (of 2 with accelerators)"
    assert keys["k8s_pods"].majority == "all ok"
    assert not any(k.startswith("check:pod:") for k in report.result.keys)
    for n in rows.values():
        assert n.facts["k8s_kubelet"].startswith("cpu manager static (full-pcpus-only=true)")
    assert report.exit_code == 1  # node2's pod B fails its check


def test_a_node_that_is_no_kubernetes_node_has_no_k8s_facts() -> None:
    assert core.k8s_facts(None) == {}
    assert core.k8s_facts({"containers": [{"devices": ["x"], "status": "warn"}]})["k8s_pods"] == (
        "0 fail, 1 warn (of 1 with accelerators)"
    )
