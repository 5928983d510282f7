"""NVML as a source of GPU names and processes, through a fake nvidia-ml-py module."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from ascendtune.host import nvml
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from tests.support.builder import SysrootBuilder


class FakeNvml:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.devs = [
            ("NVIDIA H100 80GB HBM3", b"00000000:1B:00.0"),
            ("NVIDIA H100 80GB HBM3", b"00000000:43:00.0"),
        ]

    def nvmlDeviceGetCount(self) -> int:
        if self.fail:
            raise RuntimeError("NVML_ERROR_DRIVER_NOT_LOADED")
        return len(self.devs)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.devs[h][0]

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return SimpleNamespace(busId=self.devs[h][1])

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return [SimpleNamespace(pid=1000 + h, usedGpuMemory=2 << 30)]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list[Any]:
        return [SimpleNamespace(pid=1000 + h, usedGpuMemory=None)]  # same process: listed once


def test_gpus_and_processes() -> None:
    fake = FakeNvml()
    assert nvml.gpus(fake) == (
        nvml.NvmlGpu(0, "NVIDIA H100 80GB HBM3", "0000:1b:00.0"),
        nvml.NvmlGpu(1, "NVIDIA H100 80GB HBM3", "0000:43:00.0"),
    )
    procs = nvml.processes(fake)
    assert procs is not None
    assert [(p.npu_id, p.pid, p.mem_mib) for p in procs] == [(0, 1000, 2048.0), (1, 1001, 2048.0)]


def test_failures_are_none() -> None:
    assert nvml.gpus(FakeNvml(fail=True)) is None
    assert nvml.processes(FakeNvml(fail=True)) is None


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
