"""The SoC family at run time from torch_npu, when it is installed (extra `ascendtune[npu]`)."""

from __future__ import annotations

from ascendtune.core.model import Soc


def soc_from_runtime_version(version: int) -> Soc | None:
    """torch_npu.npu.get_soc_version() -> family (ranges as vllm_ascend/device/hardware.py)."""
    if 220 <= version <= 225:
        return Soc.A2
    if 250 <= version <= 255:
        return Soc.A3
    if 200 <= version <= 205:
        return Soc.P310
    if version == 260:
        return Soc.A5
    return None


def runtime_soc() -> Soc | None:
    """Ask torch_npu (imported only here, only when needed); None when it is absent or fails."""
    try:
        import torch_npu
    except Exception:  # not installed, or torch without an NPU driver
        return None
    try:
        return soc_from_runtime_version(int(torch_npu.npu.get_soc_version()))
    except Exception:
        return None
