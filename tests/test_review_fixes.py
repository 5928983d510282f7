"""Failing tools, offline CPUs in the cpuset, NVML and runtime SoC replay, NVSwitches, exits."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ascendtune.cli.app import app
from ascendtune.core.bindplan import target_from_cpus
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import MissingError
from ascendtune.core.model import Soc
from ascendtune.host import affinity
from ascendtune.host.reader import read_host
from ascendtune.host.sysroot import DirRoot
from tests import schemas
from tests.builder import SysrootBuilder
from tests.hosts import atlas_a2

runner = CliRunner()
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}
ERR = "dcmi module initialize failed. ret is -8005\n"


def test_a_failed_tool_replays_as_a_failure(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    (sysroot.root / "commands/npu-smi_info_-t_topo.txt").unlink()
    sysroot.file("commands/npu-smi_info_-t_topo.err", ERR)
    host = read_host(DirRoot(sysroot.root))
    # info and -m still give the NPUs; topo's failure is a note and a tool error, not exit 5
    assert len(host.npus) == 8 and "npu-smi" in host.tools
    assert host.tool_errors == ("npu-smi info -t topo: " + ERR.strip(),)
    assert host.npus[0].affinity_source is not None  # from sysfs now
    doc = schemas.loads(
        "doctor",
        runner.invoke(app, ["doctor", "--sysroot", str(sysroot.root), "--json"], env=ENV).stdout,
    )
    row = next(c for c in doc["checks"] if c["id"] == "npu_smi")
    assert row["status"] == "fail" and "8005" in row["detail"]


def test_every_npu_smi_view_failing_leaves_the_pci_view(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    for name in ("npu-smi_info", "npu-smi_info_-m", "npu-smi_info_-t_topo"):
        (sysroot.root / f"commands/{name}.txt").unlink()
        sysroot.file(f"commands/{name}.err", ERR)
    host = read_host(DirRoot(sysroot.root))
    assert len(host.npus) == 8  # from PCI, in bus order
    assert sum("left out" in n for n in host.notes) == 1  # one note for the three failures


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


def test_offline_cpus_in_the_cpuset_are_not_an_error(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-3,5-7", topology=False)  # writes possible/present 0-3,5-7 ...
    (sysroot.root / "sys/devices/system/cpu/possible").unlink()
    (sysroot.root / "sys/devices/system/cpu/present").unlink()
    sysroot.allowed("0-7")  # ... and the task mask still names offline CPU 4
    host = read_host(DirRoot(sysroot.root))
    assert format_cpulist(host.cpus_allowed) == "0-3,5-7"


def test_nvml_view_replays_from_a_snapshot(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-15").node(0, "0-15")
    sysroot.pci("0000:1b:00.0", vendor="0x10de", device="0x9999", numa_node=0, local_cpulist="0-15")
    sysroot.file(
        "commands/nvml.json",
        json.dumps({"gpus": [{"index": 0, "name": "NVIDIA Test GPU", "bus_id": "0000:1b:00.0"}],
                    "processes": [{"gpu": 0, "pid": 77, "mem_mib": 512.0}]}),
    )  # fmt: skip
    host = read_host(DirRoot(sysroot.root))
    assert host.gpus[0].name == "NVIDIA Test GPU"
    assert [(p.npu_id, p.pid) for p in host.processes] == [(0, 77)]


def test_runtime_soc_replays_from_meta(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    text = (sysroot.root / "commands/npu-smi_info.txt").read_text().replace("910B3", "XYZ  ")
    sysroot.command("npu-smi_info", text)
    sysroot.command(
        "npu-smi_info_-m",
        (sysroot.root / "commands/npu-smi_info_-m.txt")
        .read_text()
        .replace("Ascend 910B3", "Ascend XYZ"),
    )
    for d in (sysroot.root / "sys/bus/pci/devices").iterdir():
        (d / "device").write_text("0xd8ff\n")
    assert read_host(DirRoot(sysroot.root)).soc is Soc.UNKNOWN
    sysroot.meta(arch="aarch64", soc_runtime="A3")
    assert read_host(DirRoot(sysroot.root)).soc is Soc.A3


def test_nvswitches_without_class_are_not_gpus(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-7").node(0, "0-7")
    sysroot.pci("0000:05:00.0", vendor="0x10de", device="0x22a3", numa_node=0, local_cpulist="0-7")
    sysroot.pci("0000:18:00.0", vendor="0x10de", device="0x2330", numa_node=0, local_cpulist="0-7")
    host = read_host(DirRoot(sysroot.root))
    assert [g.bus_id for g in host.gpus] == ["0000:18:00.0"]


class _Exited(affinity.Tasks):
    def alive(self, pid: int) -> bool:
        return False


def test_a_process_that_exits_mid_bind_is_not_verified() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(MissingError, match="exited while it was being bound"):
            affinity.bind_process(child.pid, target_from_cpus("0-1"), tasks=_Exited())
    finally:
        child.kill()
        child.wait()


def test_snapshot_onto_a_file_is_one_line(tmp_path: Path, sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = runner.invoke(
        app, ["snapshot", "--sysroot", str(sysroot.root), str(afile / "x.tar.gz")], env=ENV
    )
    assert res.exit_code == 5 and len(res.stderr.strip().splitlines()) == 1
