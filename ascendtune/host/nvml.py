"""NVIDIA GPUs and their processes through NVML (`nvidia-ml-py`, extra `ascendtune[nvidia]`).

Used on a live host only, when the module is installed; the module is passed in so tests can
give a fake. Every failure (no driver, no module) yields None: NVML is a bonus source.
"""

from __future__ import annotations

from typing import Any

from ascendtune.core.model import AccelProcess

# the document's shape and its reading are pure: they live with the NVIDIA profile
from ascendtune.core.vendors.nvidia import NvmlGpu, gpus_of, processes_of

__all__ = ["NvmlGpu", "capture", "gpus", "gpus_of", "load", "processes", "processes_of"]


def _bus(raw: Any) -> str:
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    # NVML prints an 8-digit domain (00000000:1B:00.0); sysfs uses 4
    dom, _, rest = text.partition(":")
    return f"{int(dom, 16):04x}:{rest}".lower()


def load() -> Any | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver on this host
        return None
    return pynvml


def gpus(nvml: Any) -> tuple[NvmlGpu, ...] | None:
    try:
        out = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(h)
            out.append(
                NvmlGpu(
                    gpu_index=i,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    bus_id=_bus(nvml.nvmlDeviceGetPciInfo(h).busId),
                )
            )
        return tuple(out)
    except Exception:
        return None


def processes(nvml: Any) -> tuple[AccelProcess, ...] | None:
    """Compute and graphics processes on every GPU (pid, GPU index, used memory)."""
    try:
        out: list[AccelProcess] = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            seen: set[int] = set()
            for getter in (
                "nvmlDeviceGetComputeRunningProcesses",
                "nvmlDeviceGetGraphicsRunningProcesses",
            ):
                for p in getattr(nvml, getter)(h):
                    if p.pid in seen:
                        continue
                    seen.add(p.pid)
                    mem = getattr(p, "usedGpuMemory", None)
                    out.append(
                        AccelProcess(
                            npu_id=i,
                            chip_id=None,
                            pid=int(p.pid),
                            name="",
                            mem_mib=None if mem is None else mem / (1 << 20),
                        )
                    )
        return tuple(out)
    except Exception:
        return None


def capture(nvml: Any) -> dict[str, Any] | None:
    """NVML's view as JSON: what the reader uses live and a snapshot stores (commands/nvml.json)."""
    found = gpus(nvml)
    if found is None:
        return None
    procs = processes(nvml)
    return {
        "gpus": [{"index": g.gpu_index, "name": g.name, "bus_id": g.bus_id} for g in found],
        "processes": None
        if procs is None
        else [{"gpu": p.npu_id, "pid": p.pid, "mem_mib": p.mem_mib} for p in procs],
    }
