"""Each NPU container judged for NUMA alignment from the kubelet's files, with the kubelet-level
fix that the configuration in force calls for; bad files are reported, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

from ascendtune.app import k8s
from ascendtune.app.options import PlanOptions
from ascendtune.host.reader import read_host
from ascendtune.host.roots import open_root
from tests.support import k8s as K


def _report(tmp: Path) -> k8s.K8sReport:
    root = open_root(str(tmp))
    rep = k8s.report(root, read_host(root))
    assert rep is not None
    return rep


def _by_pod(rep: k8s.K8sReport) -> dict[str, object]:
    return {a.pod.name: a for a in rep.assessments}


def _codes(a: object) -> list[str]:
    return [f.code for f in a.findings]  # type: ignore[attr-defined]


def test_the_issue_node_a_aligned_b_not_with_the_topology_manager_fix(tmp_path: Path) -> None:
    rep = _report(K.k8s_node(tmp_path))
    assert rep.view.source == "kubelet files"
    pods = _by_pod(rep)
    a, b = pods["qwen-a"], pods["qwen-b"]
    assert (a.status, a.aligned, a.cpu_nodes, a.npu_nodes) == ("ok", True, (6,), (6,))
    assert (b.status, b.aligned, b.cpu_nodes, b.npu_nodes) == ("fail", False, (0,), (6,))
    (f,) = [f for f in b.findings if f.code == "k8s_numa_misaligned"]
    assert f.fragment is not None and "topologyManagerPolicy: single-numa-node" in f.fragment
    # static is already on: the fragment does not repeat it
    assert "cpuManagerPolicy" not in f.fragment


def test_without_the_static_cpu_manager_the_fix_turns_it_on(tmp_path: Path) -> None:
    cfg = K.KUBELET_CONFIG.replace("cpuManagerPolicy: static", "cpuManagerPolicy: none")
    rep = _report(K.k8s_node(tmp_path, config=cfg))
    (f,) = [f for f in _by_pod(rep)["qwen-b"].findings if f.code == "k8s_numa_misaligned"]
    assert f.fragment is not None and f.fragment.startswith("cpuManagerPolicy: static")
    assert any("refuses to start" in w for w in rep.view.warnings)  # state says static


def test_an_aligning_policy_already_in_force_points_at_the_pod(tmp_path: Path) -> None:
    cfg = K.KUBELET_CONFIG.replace(
        "topologyManagerPolicy: none", "topologyManagerPolicy: restricted"
    )
    rep = _report(K.k8s_node(tmp_path, config=cfg))
    (f,) = [f for f in _by_pod(rep)["qwen-b"].findings if f.code == "k8s_numa_misaligned"]
    assert "already restricted" in f.message and f.fragment is None


def test_the_list_form_reports_no_device_numa_and_the_host_still_places_the_npu(
    tmp_path: Path,
) -> None:
    rep = _report(K.k8s_node(tmp_path, devices=K.device_checkpoint("list")))
    b = _by_pod(rep)["qwen-b"]
    assert "k8s_device_numa" in _codes(b) and "k8s_numa_misaligned" in _codes(b)
    assert b.npu_nodes == (6,)  # from the host's view of NPU 1


def test_a_container_without_exclusive_cpus_runs_in_the_shared_pool(tmp_path: Path) -> None:
    state = K.cpu_manager_v2({K.UID_A: {K.CONTAINER: "144-167"}})
    rep = _report(K.k8s_node(tmp_path, cpu_state=state))
    b = _by_pod(rep)["qwen-b"]
    assert not b.exclusive and b.status == "warn"
    (f,) = [f for f in b.findings if f.code == "k8s_shared_pool"]
    assert f.fragment is not None and "requests" in f.fragment


def test_the_ascend_real_annotation_wins_over_the_kubelets_record(tmp_path: Path) -> None:
    K.k8s_node(tmp_path)
    vol = tmp_path / f"var/lib/kubelet/pods/{K.UID_B}/volumes/kubernetes.io~downward-api/podinfo"
    vol.mkdir(parents=True)
    (vol / "annotations").write_text(
        'huawei.com/kltDev="Ascend910-1"\nhuawei.com/AscendReal="Ascend910-4"\n'
    )
    b = _by_pod(_report(tmp_path))["qwen-b"]
    assert "k8s_device_record" in _codes(b)
    assert b.logical_ids == (4,) and b.npu_nodes == (0,)  # NPU 4 sits on node 0, beside 0-23
    assert b.aligned is True and b.npus[0].how == "huawei.com/AscendReal annotation"


def test_ids_that_name_no_device(tmp_path: Path) -> None:
    devices = K.device_checkpoint().replace("Ascend910-1", "Ascend910-99")
    b = _by_pod(_report(K.k8s_node(tmp_path, devices=devices)))["qwen-b"]
    assert "k8s_unknown_device" in _codes(b) and b.logical_ids == ()


def test_a_truncated_state_file_is_a_warning_and_the_rest_is_read(tmp_path: Path) -> None:
    rep = _report(K.k8s_node(tmp_path, cpu_state=K.cpu_manager_v2()[:40]))
    assert any("cpu_manager_state" in w and "not JSON" in w for w in rep.view.warnings)
    b = _by_pod(rep)["qwen-b"]  # the device checkpoint still names its NPU
    assert b.logical_ids == (1,) and not b.exclusive


def test_a_stale_checksum_warns_on_the_kubelet_row(tmp_path: Path) -> None:
    doc = json.loads(K.cpu_manager_v2())
    doc["checksum"] += 1
    K.k8s_node(tmp_path, cpu_state=json.dumps(doc))
    root = open_root(str(tmp_path))
    rows = k8s.checks(root, read_host(root), PlanOptions(), asked=True)
    kubelet = next(r for r in rows if r.id == "kubelet")
    assert kubelet.status == "warn" and "checksum" in (kubelet.detail or "")


def test_pod_names_come_from_the_log_folders_else_the_uid(tmp_path: Path) -> None:
    rep = _report(K.k8s_node(tmp_path, names=False))
    assert {a.pod.label for a in rep.assessments} == {K.UID_A, K.UID_B}


def test_not_a_kubernetes_node(tmp_path: Path) -> None:
    from tests.support.builder import SysrootBuilder
    from tests.support.hosts import atlas_a2

    atlas_a2(SysrootBuilder(tmp_path))
    root = open_root(str(tmp_path))
    assert k8s.report(root, read_host(root)) is None
    assert k8s.checks(root, read_host(root), PlanOptions(), asked=False) == []
    (row,) = k8s.checks(root, read_host(root), PlanOptions(), asked=True)
    assert row.status == "skip"


def test_a_checkpoint_past_the_size_bound_is_a_warning(tmp_path: Path) -> None:
    # a million containers' worth of entries: past the 8 MiB bound on one file
    entries = ",".join(
        f'{{"PodUID":"u{i}","ContainerName":"c","DeviceIDs":[]}}' for i in range(200_000)
    )
    big = '{"Data": {"PodDeviceEntries": [' + entries + "]}}"
    rep = _report(K.k8s_node(tmp_path, devices=big))
    assert any("kubelet_internal_checkpoint" in w and "limit" in w for w in rep.view.warnings)
    assert _by_pod(rep)["qwen-b"].exclusive  # the CPU manager's file still read


def test_many_pods_in_the_checkpoints_cost_linear_time(tmp_path: Path) -> None:
    import time

    entries = {f"{i:08x}-0000-4000-8000-000000000000": {"c": "2-3"} for i in range(50_000)}
    K.k8s_node(tmp_path, cpu_state=K.cpu_manager_v2(entries))
    t = time.monotonic()
    rep = _report(tmp_path)
    assert len(rep.view.pods) == 50_002  # and the two of the device checkpoint
    assert time.monotonic() - t < 60


def test_exclusive_cpus_without_their_smt_siblings(tmp_path: Path) -> None:
    from tests.support.builder import SysrootBuilder

    b = SysrootBuilder(tmp_path).cpus("0-7", smt=2).node(0, "0-7")
    b.file("var/lib/kubelet/cpu_manager_state", K.cpu_manager_v2({"u": {"c": "0-1"}}, "2-7"))
    (a,) = _report(tmp_path).assessments
    (f,) = [f for f in a.findings if f.code == "k8s_smt_split"]
    assert "0-1" in f.message and f.fragment is not None and "full-pcpus-only" in f.fragment
    b.file(
        "var/lib/kubelet/cpu_manager_state", K.cpu_manager_v2({"u": {"c": "0-1,4-5"}}, "2-3,6-7")
    )
    (a,) = _report(tmp_path).assessments
    assert a.findings == ()


def test_memory_pinned_away_from_the_npus(tmp_path: Path) -> None:
    blocks = {K.UID_B: {K.CONTAINER: [{"numaAffinity": [0], "type": "memory", "size": 1 << 34}]}}
    K.k8s_node(tmp_path)
    (tmp_path / "var/lib/kubelet/memory_manager_state").write_text(
        json.dumps({"policyName": "Static", "machineState": {}, "entries": blocks, "checksum": 0})
    )
    b = _by_pod(_report(tmp_path))["qwen-b"]
    assert "k8s_memory_numa" in _codes(b)
    assert b.container.memory_nodes == (0,)


def test_the_api_plans_inside_a_pod(tmp_path: Path) -> None:
    from ascendtune import api

    K.k8s_node(tmp_path)
    doc = api.plan(sysroot=str(tmp_path), pod="inference/qwen-a")
    assert doc["pod"]["name"] == "qwen-a" and doc["cpus_allowed"] == "144-167"
    rows = api.doctor(sysroot=str(tmp_path), section="k8s")["checks"]
    assert {r["id"]: r["status"] for r in rows}["pod:inference/qwen-b/vllm"] == "fail"


def test_a_pod_ties_to_its_processes_through_their_cgroup(tmp_path: Path) -> None:
    K.k8s_node(tmp_path)
    systemd = f"kubepods-pod{K.UID_B.replace('-', '_')}.slice"
    for pid, cgroup in (
        (4242, f"0::/kubepods.slice/kubepods-besteffort.slice/{systemd}/cri-containerd-ab.scope\n"),
        (4343, f"12:cpuset:/kubepods/pod{K.UID_A}/0123abcd\n"),
        (4444, "0::/system.slice/kubelet.service\n"),
    ):
        (tmp_path / f"proc/{pid}").mkdir(parents=True)
        (tmp_path / f"proc/{pid}/cgroup").write_text(cgroup)
        (tmp_path / f"proc/{pid}/comm").write_text("VLLM::Worker_TP\n")
    root = open_root(str(tmp_path))
    rows = {r.id: r for r in k8s.checks(root, read_host(root), PlanOptions(), asked=True)}
    assert rows["pod:inference/qwen-b/vllm"].data["pids"] == [4242]
    assert rows["pod:inference/qwen-a/vllm"].data["pids"] == [4343]
    assert "4242 (VLLM::Worker_TP)" in (rows["pod:inference/qwen-b/vllm"].detail or "")
