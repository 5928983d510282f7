"""GPU hosts for the NVIDIA tests: `nvidia-smi topo -m` text in its real tab form (written by the
synthetic-host kit, ascendtune.synth), and sysroots
of the shapes issue 7 names (2 sockets with SMT, sub-NUMA clustering with uneven GPUs per node,
GH200 CPU-less nodes, interleaved numbering, AMD-like L3 core complexes).

tests/synth/test_tool_text.py checks that the written text and hosts look like the real samples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ascendtune.core.cpulist import format_cpulist, parse_cpulist
from ascendtune.core.model import Host
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from ascendtune.synth import spec, text
from ascendtune.synth.render import write_caches, write_threads
from ascendtune.synth.tree import Tree
from tests.support.builder import SysrootBuilder

H100_SAMPLE = "nvidia-smi_topo_m_8xH100_12nic_2numa_smt.txt"
SLURM_SAMPLE = "nvidia-smi_topo_m_8xH100_empty_cpu_affinity_slurm.txt"
P4_SAMPLE = "nvidia-smi_topo_m_1xP4_numa_NA.txt"
SNC_SAMPLE = "nvidia-smi_topo_m_8xGPU_snc_uneven_numa_EXCERPT.txt"

# the H100 sample's bus ids are not printed; these are a DGX H100's, in GPU index order
DGX_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


@dataclass(frozen=True)
class Gpu:
    """One GPU: its NUMA node and local CPUs as sysfs and nvidia-smi give them."""

    node: int | None  # None: sysfs numa_node -1 and nvidia-smi NUMA Affinity N/A
    local: str  # sysfs local_cpulist (and nvidia-smi CPU Affinity unless `shown` says else)
    device: str = "0x2330"  # H100 SXM5 80GB
    shown: str | None = None  # nvidia-smi's CPU Affinity cell when it differs (a cpuset cut)
    gpu_numa_id: int | None = None  # GH200: the node holding the GPU's own memory


def topo_m_text(
    gpus: Sequence[Gpu], *, link: Callable[[int, int], str] = lambda a, b: "NV18"
) -> str:
    """`nvidia-smi topo -m` as the driver prints it (the kit's renderer)."""
    rows = tuple(
        spec.Gpu(gpu.local if gpu.shown is None else gpu.shown, gpu.node, gpu.gpu_numa_id)
        for gpu in gpus
    )
    return text.nvidia_topo(spec.NvidiaSmi(rows, link=link))


def bus_of(g: int) -> str:
    return f"0000:{0x18 + 0x10 * g:02x}:00.0"


def write_gpus(
    sb: SysrootBuilder,
    gpus: Sequence[Gpu],
    *,
    sysfs: bool = True,
    smi: bool = True,
    link: Callable[[int, int], str] = lambda a, b: "NV18",
) -> SysrootBuilder:
    """GPU g at bus_of(g) (ascending, so index g = g-th device) and/or nvidia-smi's matrix."""
    if sysfs:
        for g, gpu in enumerate(gpus):
            sb.pci(
                bus_of(g),
                vendor="0x10de",
                device=gpu.device,
                numa_node=-1 if gpu.node is None else gpu.node,
                local_cpulist=gpu.local,
                driver="nvidia",
            )
    if smi:
        sb.command("nvidia-smi_topo_-m", topo_m_text(gpus, link=link))
    return sb


def l3(sb: SysrootBuilder, groups: Sequence[str], *, l1: bool = False) -> SysrootBuilder:
    """Cache files: each group of CPUs shares an L3 (index3); with l1, every CPU also has its
    own L1d and L1i (index0, index1), which the reader must pass over for the L3."""
    t = Tree()
    write_caches(t, [parse_cpulist(g) for g in groups], l1=l1)
    return sb.tree(t)


def read(sb: SysrootBuilder) -> Host:
    return read_host(DirRoot(sb.root))


# ---------------------------------------------------------------- the hosts

# 2 sockets x 16 cores x SMT 2: CPU c and c+32 are one core; one NUMA node per socket
TWO_SOCKET_NODES = ("0-15,32-47", "16-31,48-63")


def two_socket(sb: SysrootBuilder, *, allowed: str | None = None) -> SysrootBuilder:
    """8 GPUs, 4 per socket, NVLink mesh; L3 per socket (Intel-like)."""
    sb.cpus("0-63", smt=2, sockets=2).meta(arch="x86_64", hostname="gpu-2s")
    for i, cpus in enumerate(TWO_SOCKET_NODES):
        sb.node(i, cpus)
    if allowed is not None:
        sb.allowed(allowed, "0-1")
    l3(sb, TWO_SOCKET_NODES)
    gpus = [Gpu(g // 4, TWO_SOCKET_NODES[g // 4]) for g in range(8)]
    return write_gpus(sb, gpus)


# Sub-NUMA clustering: 2 sockets x 24 cores x SMT 2, 4 nodes of 12 cores; GPUs 3,1,2,2 per node
SNC_NODES = ("0-11,48-59", "12-23,60-71", "24-35,72-83", "36-47,84-95")
SNC_GPU_NODES = (0, 0, 0, 1, 2, 2, 3, 3)


def snc(sb: SysrootBuilder) -> SysrootBuilder:
    sb.cpus("0-95", smt=2, sockets=2).meta(arch="x86_64", hostname="gpu-snc")
    for i, cpus in enumerate(SNC_NODES):
        sb.node(i, cpus)
    l3(sb, ("0-23,48-71", "24-47,72-95"))  # one L3 per socket, shared by its two nodes
    gpus = [Gpu(n, SNC_NODES[n]) for n in SNC_GPU_NODES]

    def link(a: int, b: int) -> str:  # PCIe switches: SYS across sockets, NODE within
        return "NODE" if (SNC_GPU_NODES[a] < 2) == (SNC_GPU_NODES[b] < 2) else "SYS"

    return write_gpus(sb, gpus, link=link)


def gh200(sb: SysrootBuilder, *, numa_node: int | None = 0) -> SysrootBuilder:
    """GH200: 72 Grace cores on node 0, nodes 1-8 memory-only (GPU memory and its MIG
    partitions); the GPU's PCI numa_node is 0 (or what numa_node says)."""
    sb.cpus("0-71", topology=False).meta(arch="aarch64", hostname="gh200")  # no SMT
    sb.node(0, "0-71", mem_mib=491520)
    sb.node(1, [], mem_mib=97280)
    for i in range(2, 9):
        sb.node(i, [], mem_mib=0)
    l3(sb, ["0-71"])
    sb.pci(
        "0009:01:00.0",
        vendor="0x10de",
        device="0x2342",
        numa_node=-1 if numa_node is None else numa_node,
        local_cpulist="0-71",
        driver="nvidia",
    )
    gpu = Gpu(0, "0-71", device="0x2342", gpu_numa_id=1)
    return write_gpus(sb, [gpu], sysfs=False)


def interleaved(sb: SysrootBuilder) -> SysrootBuilder:
    """Interleaved numbering with SMT: even CPUs on socket/node 0, odd on 1; CPU c and c+32
    are one core (so node 0 is 0,2,...,62)."""
    sb.cpus("0-63", topology=False).meta(arch="x86_64", hostname="gpu-interleaved")
    t = Tree()
    write_threads(
        t, [spec.Thread(c, c % 2, c % 32 // 2, frozenset({c % 32, c % 32 + 32})) for c in range(64)]
    )
    sb.tree(t)
    nodes = (format_cpulist(range(0, 64, 2)), format_cpulist(range(1, 64, 2)))
    for i, cpus in enumerate(nodes):
        sb.node(i, cpus)
    l3(sb, nodes)
    return write_gpus(sb, [Gpu(g // 4, nodes[g // 4]) for g in range(8)])


# AMD-like: 2 sockets x 16 cores x SMT 2, one node per socket, 4 L3 complexes of 4 cores each
AMD_NODES = ("0-15,32-47", "16-31,48-63")
AMD_CCX = tuple(f"{4 * k}-{4 * k + 3},{32 + 4 * k}-{32 + 4 * k + 3}" for k in range(8))


def amd(
    sb: SysrootBuilder, *, gpu_nodes: Sequence[int] = (0, 0, 0, 0, 1, 1, 1, 1), l1: bool = False
) -> SysrootBuilder:
    sb.cpus("0-63", smt=2, sockets=2).meta(arch="x86_64", hostname="gpu-amd")
    for i, cpus in enumerate(AMD_NODES):
        sb.node(i, cpus)
    l3(sb, AMD_CCX, l1=l1)
    return write_gpus(sb, [Gpu(n, AMD_NODES[n], device="0x2335") for n in gpu_nodes])
