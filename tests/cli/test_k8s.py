"""Issue 25's node through the commands: `doctor --section k8s` passes pod A and fails pod B
with the Topology Manager fix, `plan --pod` shows what vLLM-Ascend does in each pod's cpuset,
`topo` lists the pods, and the kubelet's files, its PodResources API and a snapshot of either
give the same answers."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import k8s as K
from tests.support.cli import Cli


@pytest.fixture
def node() -> Iterator[Path]:
    """The node in a short folder (the API's unix socket path must stay under 108 bytes)."""
    with tempfile.TemporaryDirectory(prefix="k8s", dir="/tmp") as d:
        yield K.k8s_node(Path(d) / "n")


@pytest.fixture(scope="module")
def pb(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return K.compile_proto(tmp_path_factory.mktemp("pb"))


def _rows(cli: Cli, root: Path, *extra: str) -> dict[str, dict[str, Any]]:
    r = cli("doctor", "--sysroot", str(root), "--section", "k8s", "--json", *extra)
    assert r.exit_code == 1, r.stdout + r.stderr
    return {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def _answers(rows: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What a row concludes, without where it was read."""
    return {
        k: (r["status"], r["value"], r["fix"], r["fix_persistent"], r["data"].get("vllm_ascend"))
        for k, r in rows.items()
        if k != "kubelet"
    }


def test_doctor_passes_a_and_fails_b_with_the_topology_manager_fix(cli: Cli, node: Path) -> None:
    r = cli("doctor", "--sysroot", str(node), "--section", "k8s")
    assert r.exit_code == 1
    out = r.stdout
    assert "Kubernetes (what the kubelet gave each pod)" in out
    a = next(
        line for line in out.splitlines() if "pod:inference/qwen-a/vllm" in line and "│" in line
    )
    b = next(
        line for line in out.splitlines() if "pod:inference/qwen-b/vllm" in line and "│" in line
    )
    assert "ok" in a and "fail" in b
    assert "      topologyManagerPolicy: single-numa-node" in out.splitlines()
    assert "conflict with NUMA affinity" in out  # what vLLM-Ascend does inside B's cpuset
    rows = _rows(cli, node)
    assert rows["pod:inference/qwen-a/vllm"]["status"] == "ok"
    b_row = rows["pod:inference/qwen-b/vllm"]
    assert b_row["status"] == "fail" and b_row["section"] == "k8s"
    assert "topologyManagerPolicy: single-numa-node" in b_row["fix_persistent"]
    assert b_row["data"]["aligned"] is False and b_row["data"]["npus"] == [1]


def test_the_api_and_the_files_give_the_same_answers(cli: Cli, node: Path, pb: Any) -> None:
    from_files = _rows(cli, node)
    assert from_files["kubelet"]["data"]["source"] == "kubelet files"
    # the API only: the managers' checkpoints gone, the configuration kept
    (node / "var/lib/kubelet/cpu_manager_state").unlink()
    (node / "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint").unlink()
    with K.PodResourcesServer(node, K.list_answer(pb, K.issue_pods())):
        from_api = _rows(cli, node)
    assert from_api["kubelet"]["data"]["source"] == "pod-resources API"
    assert _answers(from_api) == _answers(from_files)


def test_the_api_is_preferred_to_stale_files(cli: Cli, node: Path, pb: Any) -> None:
    # the files still say B has CPUs 0-23; the kubelet now answers 144-167 (re-admitted)
    pods = [(*K.POD_A, "144-155", "Ascend910-0", 6), (*K.POD_B, "156-167", "Ascend910-1", 6)]
    with K.PodResourcesServer(node, K.list_answer(pb, pods)):
        r = cli("doctor", "--sysroot", str(node), "--section", "k8s", "--json")
    assert r.exit_code == 0, r.stdout
    rows = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    assert rows["pod:inference/qwen-b/vllm"]["data"]["cpus"] == "156-167"


def test_a_hung_socket_falls_back_to_the_files(cli: Cli, node: Path) -> None:
    with K.RawSocketServer(node):
        rows = _rows(cli, node)
    assert rows["kubelet"]["data"]["source"] == "kubelet files"
    assert "did not answer" in rows["kubelet"]["detail"]
    assert rows["pod:inference/qwen-b/vllm"]["status"] == "fail"


def test_plan_pod_b_shows_vllm_ascend_failing_inside_its_cpuset(cli: Cli, node: Path) -> None:
    r = cli("plan", "--sysroot", str(node), "--pod", "qwen-b")
    assert r.exit_code == 5
    assert "inside pod inference/qwen-b" in r.stderr
    assert "conflict with NUMA affinity" in r.stderr and "0-23" in r.stderr


def test_plan_pod_a_by_uid(cli: Cli, node: Path) -> None:
    r = cli("plan", "--sysroot", str(node), "--pod", K.UID_A, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["cpus_allowed"] == "144-167" and doc["visible_devices"] == [0]
    assert [x["cpus"] for x in doc["ranks"]] == ["144-167"]
    assert doc["pod"]["name"] == "qwen-a" and doc["pod"]["aligned"] is True
    text = cli("plan", "--sysroot", str(node), "--pod", "inference/qwen-a")
    assert text.exit_code == 0 and "inside pod inference/qwen-a (kubelet files)" in text.stdout


def test_plan_pod_under_a_better_policy(cli: Cli, node: Path) -> None:
    r = cli("plan", "--sysroot", str(node), "--pod", "qwen-b", "--policy", "numa-local")
    assert r.exit_code == 5 and "NUMA node 6" in r.stderr


def test_plan_pod_unknown_and_not_a_node(cli: Cli, node: Path) -> None:
    r = cli("plan", "--sysroot", str(node), "--pod", "nope")
    assert r.exit_code == 3 and "inference/qwen-a, inference/qwen-b" in r.stderr
    r = cli("plan", "--demo", "atlas-800i-a2", "--pod", "x")
    assert r.exit_code == 3 and "not a Kubernetes node" in r.stderr


def test_topo_lists_the_pods(cli: Cli, node: Path) -> None:
    r = cli("topo", "--sysroot", str(node))
    assert r.exit_code == 0
    line = next(x for x in r.stdout.splitlines() if "inference/qwen-b" in x)
    assert "NO" in line and "CPUs 0-23 on node 0; NPU 1 on node 6" in line
    doc = json.loads(cli("topo", "--sysroot", str(node), "--json").stdout)
    k = doc["kubernetes"]
    assert k["source"] == "kubelet files" and k["shared_cpus"] == K.SHARED
    assert [c["aligned"] for c in k["containers"]] == [True, False]


def test_a_host_that_is_no_node_keeps_its_documents(cli: Cli) -> None:
    doc = json.loads(cli("topo", "--demo", "atlas-800i-a2", "--json").stdout)
    assert "kubernetes" not in doc
    d = json.loads(cli("doctor", "--demo", "atlas-800i-a2", "--json").stdout)
    assert "k8s" not in d["sections"] and all(c["section"] != "k8s" for c in d["checks"])
    r = cli("doctor", "--demo", "atlas-800i-a2", "--section", "k8s")
    assert r.exit_code == 0 and "not a Kubernetes node" in r.stdout


def test_doctor_runs_the_k8s_section_by_default_on_a_node(cli: Cli, node: Path) -> None:
    d = json.loads(cli("doctor", "--sysroot", str(node), "--json").stdout)
    assert "k8s" in d["sections"]
    assert any(c["id"] == "pod:inference/qwen-b/vllm" for c in d["checks"])


@pytest.mark.parametrize("through_api", [False, True])
def test_a_snapshot_replays_the_same_answers(
    cli: Cli, node: Path, pb: Any, through_api: bool
) -> None:
    vol = node / f"var/lib/kubelet/pods/{K.UID_B}/volumes/kubernetes.io~downward-api/podinfo"
    vol.mkdir(parents=True)
    (vol / "annotations").write_text(
        'huawei.com/AscendReal="Ascend910-1"\nexample.com/api-token="s3cr3t-value"\n'
        'example.com/url="https://user:hunter2@example.com/x"\n'
    )
    before = _rows(cli, node)
    snap = node.parent / "snap"
    if through_api:
        with K.PodResourcesServer(node, K.list_answer(pb, K.issue_pods())):
            before = _rows(cli, node)
            r = cli("snapshot", "--sysroot", str(node), str(snap))
    else:
        r = cli("snapshot", "--sysroot", str(node), str(snap))
    assert r.exit_code == 0, r.stderr
    after = _rows(cli, snap)
    assert _answers(after) == _answers(before)
    want = "pod-resources API (captured answer)" if through_api else "kubelet files"
    assert after["kubelet"]["data"]["source"] == want
    saved = (snap / vol.relative_to(node) / "annotations").read_text()
    assert "s3cr3t" not in saved and "hunter2" not in saved and "Ascend910-1" in saved


def test_the_documents_validate_against_their_schemas(cli: Cli, node: Path) -> None:
    from tests.support.schemas import checked

    topo = json.loads(cli("topo", "--sysroot", str(node), "--json").stdout)
    checked("topo", topo)
    plan = json.loads(cli("plan", "--sysroot", str(node), "--pod", "qwen-a", "--json").stdout)
    checked("plan", plan)
    doctor = json.loads(cli("doctor", "--sysroot", str(node), "--json").stdout)
    checked("doctor", doctor)
