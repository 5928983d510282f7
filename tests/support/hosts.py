"""Host scenarios written in npu-smi's real formats, by the synthetic-host kit (ascendtune.synth)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ascendtune.synth import standard, text
from ascendtune.synth.spec import Chip, NpuProcess, Process, Task
from tests.support.builder import SysrootBuilder

# Atlas 800I A2: pairs of 910B3 on every second NUMA node, as on real boxes
A2_AFFINITY = dict(enumerate(standard.A2_AFFINITY))
A2_BUS = {i: bus[5:7] for i, bus in enumerate(standard.A2_BUS)}  # the bus number: "C1"
A2_NODE = dict(enumerate(standard.A2_NODE))
VERSION = "24.1.rc1.b030"


def npu_smi_info(
    names: dict[int, str], bus: dict[int, str], processes: Sequence[tuple[int, int, str]] = ()
) -> str:
    """`npu-smi info` of an A2: NPU i is logical i at 0000:<bus[i]>:00.0; processes are
    (npu, pid, name) rows of the process table."""
    chips = [
        Chip(npu, 0, npu, name, f"0000:{bus[npu]}:00.0") for npu, name in sorted(names.items())
    ]
    procs = [NpuProcess(npu, 0, pid, name) for npu, pid, name in processes]
    return text.info_hbm(VERSION, chips, procs, a3=False)


def a2_npu_smi_info(*processes: tuple[int, int, str]) -> str:
    """`npu-smi info` of the 8-NPU A2 with these (npu, pid, name) process rows."""
    return npu_smi_info(dict.fromkeys(range(8), "910B3"), A2_BUS, processes)


def npu_smi_m(ids: list[int], name: str = "Ascend 910B3") -> str:
    return text.info_m([Chip(i, 0, i, name, "") for i in ids])


def npu_smi_topo(affinity: dict[int, str | None], link: str = "HCCS") -> str:
    return text.topo([Chip(i, 0, i, "", "", affinity=a) for i, a in affinity.items()], link=link)


def atlas_a2(
    b: SysrootBuilder, *, cpuset: str = "0-191", pci: bool = True, topo: bool = True
) -> SysrootBuilder:
    spec = standard.atlas_800i_a2(allowed=cpuset, pci=pci)
    if not topo:
        assert spec.npu_smi is not None
        spec = replace(spec, npu_smi=replace(spec.npu_smi, topo_file=False))
    return b.spec(spec)


def a2_with_worker(b: SysrootBuilder, pid: int, threads: int) -> SysrootBuilder:
    """The A2 host with one vLLM worker (pid, `threads` threads named worker-0..2, all on CPUs
    0-23) holding NPU 0, in the vendor tool's process table too."""
    spec = standard.atlas_800i_a2()
    tasks = tuple(Task(pid + t, f"worker-{t % 3}", "0-23") for t in range(threads))
    worker = Process(
        pid, "python3", tasks, cmdline=("python3", "-m", "vllm"), fds={3: "/dev/davinci0"}
    )
    assert spec.npu_smi is not None
    npu_smi = replace(spec.npu_smi, processes=(NpuProcess(0, 0, pid, "python3", 4096),))
    return b.spec(replace(spec, processes=(worker,), npu_smi=npu_smi))
