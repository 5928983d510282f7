"""Issue 25's reserved CPUs: the NPUs' interrupt CPUs against the kubelet's reservedSystemCPUs
and the exclusive CPUs of each pod, on the issue's node (pod A: CPUs 144-167 with NPU 0, pod B:
CPUs 0-23 with NPU 1), through `doctor --section k8s`, `topo`, the PodResources API and a
snapshot."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import k8s as K
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.doctor_hosts import A2_BDF
from tests.support.irqhosts import BASE_IRQ, STEP, write_npu_irqs

ROW_A = "pod:inference/qwen-a/vllm"
ROW_B = "pod:inference/qwen-b/vllm"


def config(reserved: str | None = "24-27", policy: str = "static") -> str:
    lines = [
        "apiVersion: kubelet.config.k8s.io/v1beta1",
        "kind: KubeletConfiguration",
        f"cpuManagerPolicy: {policy}",
        "cpuManagerPolicyOptions:",
        '  full-pcpus-only: "true"',
        "topologyManagerPolicy: none",
    ]
    if reserved is not None:
        lines.append(f'reservedSystemCPUs: "{reserved}"')
    return "\n".join(lines) + "\n"


@pytest.fixture
def tmp() -> Iterator[Path]:
    """A short folder (the API's unix socket path must stay under 108 bytes)."""
    with tempfile.TemporaryDirectory(prefix="k8sirq", dir="/tmp") as d:
        yield Path(d)


def node(tmp: Path, pinned: dict[int, tuple[int, int]], **kw: Any) -> Path:
    """The issue's node with NPU n's sq/cq interrupts on pinned[n], the others on every CPU."""
    root = K.k8s_node(tmp / "n", **kw)
    write_npu_irqs(SysrootBuilder(root), A2_BDF, 192, pinned)
    return root


def sq(n: int) -> int:
    return BASE_IRQ + STEP * n


def rows(cli: Cli, root: Path) -> dict[str, dict[str, Any]]:
    r = cli("doctor", "--sysroot", str(root), "--section", "k8s", "--json")
    assert r.exit_code in (0, 1), r.stderr
    return {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def codes(row: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in row["data"]["findings"]]


def irq_codes(row: dict[str, Any]) -> list[tuple[str, str]]:
    return [c for c in codes(row) if "irq" in c[0]]


def test_reserved_cpus_holding_the_irq_cpus_say_nothing(cli: Cli, tmp: Path) -> None:
    pinned = {n: (24 + n % 4, 24 + n % 4) for n in range(2, 8)}
    root = node(tmp, pinned, config=config("24-27"))
    got = rows(cli, root)
    kubelet = got["kubelet"]
    assert kubelet["status"] == "ok" and kubelet["data"]["findings"] == []
    assert "reserved CPUs 24-27" in kubelet["value"]
    assert irq_codes(got[ROW_A]) == [] and irq_codes(got[ROW_B]) == []
    # the same interrupts one CPU further: CPU 28 is the CPU manager's to give
    write_npu_irqs(SysrootBuilder(root), A2_BDF, 192, {**pinned, 7: (28, 28)})
    assert codes(rows(cli, root)["kubelet"]) == [("k8s_irq_unreserved", "warn")]


def test_an_irq_cpu_in_pod_bs_exclusive_cpus_warns_naming_b(cli: Cli, tmp: Path) -> None:
    # NPU 3's interrupts on CPUs 5 and 6, which the CPU manager gave pod B; NPU 0's on 144-145,
    # pod A's own NPU on the first CPUs of its pool (where vLLM-Ascend's binding pins them)
    root = node(tmp, {3: (5, 6), 0: (144, 145), 2: (24, 25)}, config=config("24-27"))
    got = rows(cli, root)
    b = got[ROW_B]
    assert ("k8s_irq_in_pod", "warn") in codes(b)
    f = next(x for x in b["data"]["findings"] if x["code"] == "k8s_irq_in_pod")
    assert f["message"].startswith("inference/qwen-b container vllm, exclusive CPUs 0-23: ")
    assert (
        f"CPUs 5-6 take NPU 3's interrupts (sq_send_trigger_irq IRQ {sq(3)}, cq_update_irq IRQ "
        f"{sq(3) + 1}, an NPU it does not hold)"
    ) in f["message"]
    assert "cpu_manager_state" in f["fix"]
    a = got[ROW_A]
    assert a["status"] == "ok" and irq_codes(a) == [("k8s_irq_in_pod", "info")]
    kubelet = got["kubelet"]
    assert kubelet["status"] == "warn" and codes(kubelet) == [("k8s_irq_unreserved", "warn")]
    # A's own interrupts stay out of the reservation: reserving them would only move the pod
    assert kubelet["fix_persistent"] == (
        'reservedSystemCPUs: "5-6,24-27"\n'
        "cpuManagerPolicyOptions:\n"
        '  full-pcpus-only: "true"\n'
        '  strict-cpu-reservation: "true"'
    )
    assert f["fragment"] == kubelet["fix_persistent"]
    assert "outside reservedSystemCPUs 24-27" in kubelet["detail"]
    text = cli("doctor", "--sysroot", str(root), "--section", "k8s").stdout
    assert '      reservedSystemCPUs: "5-6,24-27"' in text.splitlines()
    assert '        strict-cpu-reservation: "true"' in text.splitlines()


def test_no_reserved_cpus_warns_with_the_fragment(cli: Cli, tmp: Path) -> None:
    root = node(tmp, {4: (48, 49)}, config=config(None))
    kubelet = rows(cli, root)["kubelet"]
    assert kubelet["status"] == "warn"
    (f,) = kubelet["data"]["findings"]
    assert f["code"] == "k8s_irq_unreserved" and f["severity"] == "warn"
    assert "NPU 4's interrupts are pinned on CPUs 48-49" in f["message"]
    assert "no reservedSystemCPUs" in f["message"]
    assert f["fragment"].startswith('reservedSystemCPUs: "48-49"\n')
    assert "drain the node, remove var/lib/kubelet/cpu_manager_state" in f["fix"]
    topo = json.loads(cli("topo", "--sysroot", str(root), "--json").stdout)
    assert topo["kubernetes"]["findings"] == [f]
    shown = cli("topo", "--sysroot", str(root)).stdout
    assert "NPU 4's interrupts are pinned on CPUs 48-49" in " ".join(shown.split())


def test_strict_reservation_already_on_is_kept_out_of_the_fragment(cli: Cli, tmp: Path) -> None:
    cfg = config(None).replace(
        '  full-pcpus-only: "true"', '  full-pcpus-only: "true"\n  strict-cpu-reservation: "true"'
    )
    root = node(tmp, {4: (48, 49)}, config=cfg)
    f = rows(cli, root)["kubelet"]["data"]["findings"][0]
    assert f["fragment"] == 'reservedSystemCPUs: "48-49"'


def test_the_kubelets_reserved_cpus_flag_wins_over_the_file(cli: Cli, tmp: Path) -> None:
    root = node(tmp, {4: (48, 49)}, config=config("24-27"))
    assert codes(rows(cli, root)["kubelet"]) == [("k8s_irq_unreserved", "warn")]
    SysrootBuilder(root).proc(
        4242, comm="kubelet", cmdline=["/usr/bin/kubelet", "--reserved-cpus=24-27,48-49"]
    )
    kubelet = rows(cli, root)["kubelet"]
    assert kubelet["data"]["findings"] == [] and "reserved CPUs 24-27,48-49" in kubelet["value"]
    assert "--reserved-cpus=24-27,48-49 overrides reservedSystemCPUs" in kubelet["detail"]
    SysrootBuilder(root).proc(
        4242, comm="kubelet", cmdline=["/usr/bin/kubelet", "--reserved-cpus", "24-27"]
    )
    f = rows(cli, root)["kubelet"]["data"]["findings"][0]
    assert "outside --reserved-cpus 24-27" in f["message"]
    assert "set --reserved-cpus=24-27,48-49 instead" in f["fix"]


def test_the_none_cpu_manager_says_nothing(cli: Cli, tmp: Path) -> None:
    state = K.cpu_manager_v2({}, default="0-191", policy="none")
    root = node(tmp, {3: (5, 6), 4: (48, 49)}, config=config(None, "none"), cpu_state=state)
    got = rows(cli, root)
    assert got["kubelet"]["data"]["findings"] == []
    assert all(irq_codes(r) == [] for k, r in got.items() if k != "kubelet")
    # the same interrupts under the static policy: found
    root2 = node(tmp / "static", {3: (5, 6), 4: (48, 49)}, config=config(None))
    assert codes(rows(cli, root2)["kubelet"]) == [("k8s_irq_unreserved", "warn")]


def _irq_answers(got: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        k: (r["status"], r["fix"], r["fix_persistent"], r["data"]["findings"])
        for k, r in got.items()
        if k in ("kubelet", ROW_A, ROW_B)
    }


def test_the_api_and_the_files_find_the_same(cli: Cli, tmp: Path) -> None:
    pb = K.compile_proto(tmp / "pb")
    root = node(tmp, {3: (5, 6), 0: (144, 145), 4: (48, 49)}, config=config("24-27"))
    from_files = rows(cli, root)
    assert ("k8s_irq_in_pod", "warn") in codes(from_files[ROW_B])
    (root / "var/lib/kubelet/cpu_manager_state").unlink()
    (root / "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint").unlink()
    with K.PodResourcesServer(root, K.list_answer(pb, K.issue_pods())):
        from_api = rows(cli, root)
    assert from_api["kubelet"]["data"]["source"] == "pod-resources API"
    assert _irq_answers(from_api) == _irq_answers(from_files)


def test_a_snapshot_finds_the_same(cli: Cli, tmp: Path) -> None:
    root = node(tmp, {3: (5, 6), 4: (48, 49)}, config=config("24-27"))
    before = rows(cli, root)
    r = cli("snapshot", "--sysroot", str(root), str(tmp / "snap"))
    assert r.exit_code == 0, r.stderr
    after = rows(cli, tmp / "snap")
    assert ("k8s_irq_unreserved", "warn") in codes(after["kubelet"])
    assert _irq_answers(after) == _irq_answers(before)


def test_a_pod_without_npus_shows_when_it_takes_their_interrupts(cli: Cli, tmp: Path) -> None:
    uid_c = "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c03"
    entries = {K.UID_A: {"vllm": "144-167"}, K.UID_B: {"vllm": "0-23"}, uid_c: {"etl": "48-71"}}
    state = K.cpu_manager_v2(entries, default="24-47,72-143,168-191")
    root = node(tmp, {4: (50, 50)}, config=config("24-27"), cpu_state=state)
    row = rows(cli, root)[f"pod:{uid_c}/etl"]
    assert row["status"] == "warn" and irq_codes(row) == [("k8s_irq_in_pod", "warn")]
    assert "CPU 50 takes NPU 4's interrupts" in row["detail"]
    # its interrupts elsewhere: the pod holds no NPU, and no row
    write_npu_irqs(SysrootBuilder(root), A2_BDF, 192, {4: (24, 24)})
    assert f"pod:{uid_c}/etl" not in rows(cli, root)
