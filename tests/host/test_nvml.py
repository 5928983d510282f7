"""NVML as a source of GPU names and processes, through a fake nvidia-ml-py module."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ascendtune.host import nvml


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
