"""`ascendtune topo` through the CLI: JSON keys, warnings, bad input, the live machine."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2


def test_topo_json_keys(sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot, cpuset="0-47")
    res = cli("topo", "--sysroot", str(sysroot.root), "--json")
    assert res.exit_code == 0, res.output
    doc = schemas.loads("topo", res.stdout)
    assert doc["schema_version"] == 1
    assert doc["cpus_online"] == "0-191" and doc["cpus_allowed"] == "0-47"
    assert doc["numa_nodes"][0] == {
        "id": 0,
        "cpus": "0-23",
        "mem_mib": 65536,
        "accelerators": [4, 5],
    }
    a0 = doc["accelerators"][0]
    assert {
        k: a0[k]
        for k in (
            "vendor",
            "logical_id",
            "npu_id",
            "chip_id",
            "name",
            "bus_id",
            "numa_node",
            "cpu_affinity",
        )
    } == {
        "vendor": "huawei",
        "logical_id": 0,
        "npu_id": 0,
        "chip_id": 0,
        "name": "910B3",
        "bus_id": "0000:c1:00.0",
        "numa_node": 6,
        "cpu_affinity": "144-167",
    }
    assert doc["links"]["0"]["1"] == "HCCS"
    assert any(
        "NPU 0: its CPU affinity 144-167 lies wholly outside the cpuset 0-47" in w
        for w in doc["warnings"]
    )


def test_topo_table(sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot)
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == 0
    assert "0000:c1:00.0" in res.stdout and "144-167" in res.stdout and "HCCS" in res.stdout


def test_topo_flags_cpuless_and_offline(sysroot: SysrootBuilder, cli: Cli) -> None:
    sysroot.cpus("0-6", present="0-7").node(0, "0-7").node(1, "", mem_mib=4096)
    doc = schemas.loads("topo", cli("topo", "--sysroot", str(sysroot.root), "--json").stdout)
    text = " ".join(doc["warnings"])
    assert "NUMA node 1 holds no online CPU" in text
    assert "CPUs 7 are offline" in text
    assert doc["cpus_offline"] == "7"


@pytest.mark.parametrize(
    ("mutate", "code", "words"),
    [
        (lambda b: (b.root / "sys/devices/system/cpu/online").unlink(), 3, "online is missing"),
        (lambda b: b.file("sys/devices/system/cpu/online", ""), 5, "lists no CPU"),
        (lambda b: b.allowed("0-999"), 5, "does not have"),
        (
            lambda b: b.command("npu-smi_info_-t_topo", "\tNPU0 NPU1 CPU Affinity\nNPU0 X\n"),
            5,
            "npu-smi info -t topo",
        ),
    ],
)
def test_bad_sysroot_is_one_line(
    sysroot: SysrootBuilder, mutate: object, code: int, words: str, cli: Cli
) -> None:
    atlas_a2(sysroot)
    mutate(sysroot)  # type: ignore[operator]
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == code
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in res.stderr


def test_missing_sysroot(tmp_path: Path, cli: Cli) -> None:
    res = cli("topo", "--sysroot", str(tmp_path / "nope"))
    assert res.exit_code == 3 and "does not exist" in res.stderr


def test_demo_and_sysroot_together(sysroot: SysrootBuilder, cli: Cli) -> None:
    res = cli("topo", "--sysroot", str(sysroot.root), "--demo", "atlas-800i-a2")
    assert res.exit_code == 2


def test_live_machine_runs(cli: Cli) -> None:
    # This machine has no NPU: the command must still work and say so (the host itself is not
    # asserted, only that reading it succeeds and the JSON has the stable keys).
    res = cli("topo", "--json")
    assert res.exit_code == 0, res.stderr
    doc = schemas.loads("topo", res.stdout)
    assert {"cpus_online", "cpus_allowed", "numa_nodes", "accelerators", "links"} <= set(doc)
    table = cli("topo")
    if not doc["accelerators"]:
        assert "no accelerator found" in table.stdout and "--demo" in table.stdout


@pytest.mark.parametrize("content", [b"hello\n", b"\x1f\x8b\x08\x00garbage", b""])
def test_bad_archive_is_one_line(tmp_path: Path, content: bytes, cli: Cli) -> None:
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(content)
    res = cli("topo", "--sysroot", str(bad))
    assert res.exit_code == 5
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_live_failing_npu_smi_is_a_note(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "npu-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'dcmi module initialize failed. ret is -8005'\nexit 255\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, "-m", "ascendtune", "topo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = schemas.loads("topo", done.stdout)
    assert doc["npu_smi"]["found"] is True
    assert any("8005" in w for w in doc["warnings"])
    snap = tmp_path / "snap"
    done = subprocess.run(
        [sys.executable, "-m", "ascendtune", "snapshot", str(snap)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (snap / "commands/npu-smi_info.err").read_text().strip().endswith("-8005")
    assert not (snap / "commands/npu-smi_info.txt").exists()
