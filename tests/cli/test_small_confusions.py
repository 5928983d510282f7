"""The small confusions a new user met (issue 26): each said in words that cannot mislead."""

from __future__ import annotations

import json
from pathlib import Path

from ascendtune.host.identity import same_host
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.gpu_hosts import Gpu, write_gpus
from tests.support.hosts import atlas_a2

SITE = "/usr/local/lib/python3.11/site-packages"


def test_a_plan_from_a_demo_names_the_demo_once() -> None:
    ok, why = same_host({"source": "demo", "root": "demo:atlas-800i-a2"}, {"source": "live"})
    assert not ok
    assert why == "it was computed from the demo atlas-800i-a2, not from a live host"
    ok, why = same_host({"source": "sysroot", "root": "/snap"}, {"source": "live"})
    assert why == "it was computed from the sysroot /snap, not from a live host"


def test_plan_of_a_snapshot_without_accelerators_says_snapshot(
    sysroot: SysrootBuilder, cli: Cli
) -> None:
    sysroot.cpus("0-3")
    res = cli("plan", "--sysroot", str(sysroot.root))
    assert res.exit_code == 3
    assert "no accelerator found in this snapshot" in res.stderr
    assert "on this host" not in res.stderr


def test_a_mixed_host_names_each_device_kind(sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot)
    write_gpus(sysroot, [Gpu(0, "0-23")], smi=False)
    doc = schemas.loads("topo", cli("topo", "--sysroot", str(sysroot.root), "--json").stdout)
    assert {a["vendor"] for a in doc["accelerators"]} == {"huawei", "nvidia"}
    out = cli("topo", "--sysroot", str(sysroot.root)).stdout
    table = out.split("accelerators", 1)[1].split("links", 1)[0]
    assert "┃ device " in table  # not "NPU" over a GPU
    gpu_row = next(line for line in table.splitlines() if "GPU " in line)
    cells = [c.strip() for c in gpu_row.strip("│").split("│")]
    assert cells[0].startswith("GPU ") and cells[1] == "" and cells[2] == ""  # no npu-smi id
    assert any(line.split("│")[1].strip().startswith("NPU ") for line in table.splitlines()
               if line.startswith("│"))  # fmt: skip


def test_check_config_header_says_the_version_came_from_the_pid(
    sysroot: SysrootBuilder, cli: Cli
) -> None:
    pid = 4242
    sysroot.cpus("0-3").proc(pid, fds={3: "/dev/davinci0"})
    argv = ["vllm", "serve", "/m", "--additional-config", "{}"]
    sysroot.file(f"proc/{pid}/cmdline", "\0".join(argv) + "\0")
    sysroot.file(
        f"proc/{pid}/maps",
        f"ffff0000-ffff1000 r-xp 00000000 fd:01 42 {SITE}/vllm_ascend/vllm_ascend_C.so\n",
    )
    base = f"proc/{pid}/root{SITE}"
    sysroot.file(f"{base}/vllm_ascend/__init__.py", "")
    sysroot.file(
        f"{base}/vllm_ascend-0.25.1rc1.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: vllm_ascend\nVersion: 0.25.1rc1\n",
    )
    res = cli("check-config", "--pid", str(pid), "--sysroot", str(sysroot.root))
    assert res.exit_code == 0, res.output
    head = res.stdout.splitlines()[0]
    assert head.startswith("target v0.25.1rc1  (vllm_ascend 0.25.1rc1 found in PID 4242's")


def test_megamoe_without_hidden_size_is_info(cli: Cli, tmp_path: Path) -> None:
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps({"model_type": "deepseek_v3", "n_routed_experts": 64}))
    res = cli("check-config", '{"enable_fused_mc2": 1}', "--hf-config", str(hf), "--json")
    f = next(
        f
        for f in schemas.loads("check-config", res.stdout)["findings"]
        if f["code"] == "fused-mc2-megamoe-fallback"
    )
    assert f["severity"] == "info" and "None" not in f["message"]
    assert "gives no hidden_size or moe_intermediate_size" in f["message"]
    hf.write_text(json.dumps({"hidden_size": 7168, "moe_intermediate_size": 4096}))
    res = cli("check-config", '{"enable_fused_mc2": 1}', "--hf-config", str(hf), "--json")
    codes = {
        f["code"]: f["severity"] for f in schemas.loads("check-config", res.stdout)["findings"]
    }
    assert codes["fused-mc2-megamoe-fallback"] == "warning"  # known to be outside


def test_snapshot_refuses_a_zip_name(cli: Cli, tmp_path: Path) -> None:
    dest = tmp_path / "x.zip"
    res = cli("snapshot", "--demo", "atlas-800i-a2", str(dest))
    assert res.exit_code == 2
    assert "a snapshot is a folder or a tar archive" in res.stderr
    assert not dest.exists()


def test_a_shipped_demo_shows_the_npu_irq_rows(cli: Cli) -> None:
    doc = json.loads(cli("doctor", "--demo", "atlas-800i-a2", "--json").stdout)
    irq = [c for c in doc["checks"] if c["id"].startswith("npu_irq:")]
    assert len(irq) == 8 and all(c["status"] in ("warn", "fail") for c in irq)
    # openEuler (its os-release): irqbalance's config is /etc/sysconfig/irqbalance
    assert "/etc/sysconfig/irqbalance" in irq[0]["fix_persistent"]


def test_an_ascend_950_demo_plans_in_clusters(cli: Cli) -> None:
    doc = json.loads(cli("plan", "--demo", "ascend-950", "--json").stdout)
    assert doc["mode"] == "a5_clusters" and len(doc["ranks"]) == 8
    assert all(r["roles"]["irq"] == "" for r in doc["ranks"])  # A5 reserves no IRQ CPUs
