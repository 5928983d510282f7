"""The declarative description of a synthetic host: frozen dataclasses that say what the host
has (CPUs, NUMA nodes, PCI devices, npu-smi chips, processes, kernel knobs, meta.json), from
which `render` writes its sysroot and `expected_host` builds the Host a reader should see."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ascendtune.core.cpulist import CpuSet

HOST_CAPS = "000001ffffffffff"  # every capability of a 5.10/5.15 kernel (41 of them): root
DOCKER_CAPS = "00000000a80425fb"  # Docker's default set: no CAP_SYS_NICE, no CAP_SYS_ADMIN

Cells = CpuSet | str  # a CPU list as a set, or a cell written as it is (possibly malformed)


@dataclass(frozen=True)
class Thread:
    """One CPU's topology files; core None leaves core_id out (the reader then uses the id)."""

    cpu: int
    socket: int
    core: int | None
    siblings: CpuSet


@dataclass(frozen=True)
class Cpus:
    online: CpuSet
    present: CpuSet | None = None  # None: the online CPUs (also what `possible` lists)
    threads: tuple[Thread, ...] = ()  # empty: no topology files at all
    governor: str | None = None  # cpufreq/scaling_governor of every present CPU
    llc: tuple[CpuSet, ...] = ()  # groups sharing an L3 (cache/index3)
    l1: bool = False  # with llc: each CPU also has its own L1d/L1i (index0, index1)

    @property
    def all(self) -> CpuSet:
        return self.online if self.present is None else self.present | self.online


@dataclass(frozen=True)
class Node:
    id: int
    cpus: CpuSet
    mem_kb: int | None = 65536 * 1024  # None: no meminfo file
    free_kb: int | None = None  # None: half of mem_kb
    full: bool = False  # meminfo with MemUsed and HugePages lines, as a real kernel prints it


@dataclass(frozen=True)
class Pci:
    bdf: str
    vendor: str = "0x19e5"
    device: str = "0xd802"
    pci_class: str | None = None  # None: no class file
    numa_node: int = -1
    local_cpus: Cells = ""
    driver: str | None = None
    mask: bool = False  # also the local_cpus bitmap (%*pb of the host's possible CPUs)
    name: str | None = None  # a GPU's name as the reader's pci.ids table gives it (expect only)


@dataclass(frozen=True)
class Knobs:
    numa_balancing: int | None = None
    swappiness: int | None = None
    migration_cost_ns: int | None = None  # None: absent (moved to debugfs from 5.13 on)
    thp: str | None = None
    thp_defrag: str | None = None


@dataclass(frozen=True)
class Status:
    """The fields of a proc status file; None leaves a field out. full adds the constant lines
    a real kernel prints (Umask, Ngid, Gid, FDSize, CapBnd, ctxt switches, ...)."""

    name: str
    cpus: Cells
    pid: int | None = None
    tgid: int | None = None
    ppid: int | None = None
    uid: int | None = None
    state: str | None = None
    threads: int | None = None
    mems: Cells | None = None
    caps: str | None = None
    seccomp: int | None = None
    vm_rss_kb: int | None = None
    nr_cpus: int | None = None  # with full: the Cpus_allowed / Mems_allowed bitmaps' widths
    nr_nodes: int | None = None
    full: bool = False


@dataclass(frozen=True)
class SelfProc:
    """The reading process (proc/self) and, with cgroup, its cgroup and that cgroup's cpuset."""

    cpus: Cells
    mems: Cells | None = None
    cgroup: str | None = None
    caps: str | None = None
    seccomp: int | None = None
    uid: int | None = None
    full: bool = False


@dataclass(frozen=True)
class Task:
    tid: int
    name: str
    cpus: Cells


@dataclass(frozen=True)
class Process:
    """proc/PID: comm, cmdline, status, task/*/{comm,status} and fd links; tasks[0] is main."""

    pid: int
    comm: str
    tasks: tuple[Task, ...]
    cmdline: tuple[str, ...] = ()  # empty: just comm
    ppid: int | None = None
    uid: int | None = 0
    mems: Cells | None = None
    fds: Mapping[int, str] = field(default_factory=dict)
    caps: str | None = None
    seccomp: int | None = None
    vm_rss_kb: int | None = None
    full: bool = False
    environ: tuple[tuple[str, str], ...] = ()  # proc/PID/environ (empty: no file)


@dataclass(frozen=True)
class Chip:
    """One chip (die) as npu-smi prints it; readings are made up but plausible."""

    npu_id: int
    chip_id: int
    logical_id: int
    name: str  # "910B3", "310P3", "Ascend910", "Ascend950DT"
    bus: str  # "0000:C1:00.0" (printed upper case)
    affinity: Cells | None = None  # the topo CPU Affinity cell (None: no cell)
    power: float | None = 95.1  # None: "-" (the second die of an A3 card)
    temp: int = 41
    aicore: int = 0
    mem_used: int = 3314
    mem_total: int = 65536
    phy_id: int | None = None  # None: the logical id
    health: str = "OK"

    @property
    def phy(self) -> int:
        return self.logical_id if self.phy_id is None else self.phy_id


@dataclass(frozen=True)
class NpuProcess:
    npu_id: int
    chip_id: int
    pid: int
    name: str
    mem_mib: int = 56630


Layout = Literal["a2", "a3", "310p"]
Link = str | Callable[[int, int], str]


@dataclass(frozen=True)
class NpuSmi:
    """What npu-smi prints: `info` (layout a2 = Chip, a3 = Chip Phy-ID, 310p = Chip Device),
    `info -m` (map: with Chip Logic ID unless logic_col is off, Slot ID with slot_col, Chip
    Phy-ID with phy_col) and `info -t topo` (topo: a raw text such as TOPO_UNSUPPORTED replaces
    the matrix). npu_id_procs: the process table keyed by "NPU ID" alone, no Chip column (Ascend
    950, as vLLM-Ascend's unit tests show it)."""

    chips: tuple[Chip, ...]
    version: str = "24.1.rc1.b030"
    layout: Layout = "a2"
    processes: tuple[NpuProcess, ...] = ()
    info: bool = True
    map: bool = True
    logic_col: bool = True
    phy_col: bool = False
    slot_col: bool = False
    npu_id_procs: bool = False
    topo: str | None = None
    topo_file: bool = True
    link: Link = "HCCS"
    label: str = "NPU"  # "Phy-ID" on A3
    legend: str | None = None  # None: the 910B legend
    board: bool = False  # also `info -t board -i N -c M` of every chip


@dataclass(frozen=True)
class Gpu:
    """One row of `nvidia-smi topo -m`."""

    affinity: str  # the CPU Affinity cell
    node: int | None  # NUMA Affinity (None: N/A)
    gpu_numa_id: int | None = None  # GH200: the node holding the GPU's own memory


@dataclass(frozen=True)
class NvidiaSmi:
    gpus: tuple[Gpu, ...]
    link: Link = "NV18"
    nics: tuple[str, ...] = ()  # NIC names (mlx5_0, ...): NIC rows, columns and NIC Legend
    nic_link: Callable[[str, str], str] | None = None  # between labels "GPU0", "NIC3", ...
    gpu_numa_col: bool = True


@dataclass(frozen=True)
class HostSpec:
    cpus: Cpus
    nodes: tuple[Node, ...] = ()
    node_lists: bool = False  # node/online, possible, has_cpu, has_memory
    pci: tuple[Pci, ...] = ()
    knobs: Knobs | None = None
    self_proc: SelfProc | None = None
    processes: tuple[Process, ...] = ()
    npu_smi: NpuSmi | None = None
    nvidia_smi: NvidiaSmi | None = None
    meta: Mapping[str, object] | None = None
    meta_indent: int | None = 2
    files: Mapping[str, str] = field(default_factory=dict)  # anything else, verbatim


def upper_half(
    cpus: Iterable[int], *, smt: int = 1, sockets: int = 1, core_ids: str = "global"
) -> tuple[Thread, ...]:
    """SMT numbered in halves (x86, most kernels): with n CPUs and smt k, the i-th CPU and the
    (i + n/k)-th are one core; cores split evenly over sockets. core_ids "socket" numbers
    cores from 0 on each socket, "global" across the host."""
    allc = sorted(cpus)
    n = len(allc)
    cores = max(1, n // smt)
    per_socket = max(1, cores // sockets)
    out = []
    for i, c in enumerate(allc):
        core = i % cores
        sibs = frozenset(allc[core + k * cores] for k in range(smt) if core + k * cores < n)
        socket = min(core // per_socket, sockets - 1)
        out.append(Thread(c, socket, core % per_socket if core_ids == "socket" else core, sibs))
    return tuple(out)


def adjacent(
    cpus: Iterable[int],
    *,
    smt: int = 2,
    sockets: int = 1,
    core_ids: str | None = "socket",
) -> tuple[Thread, ...]:
    """SMT numbered in pairs (ARM): CPUs 2k and 2k+1 are one core. core_ids None leaves
    core_id out."""
    allc = sorted(cpus)
    per_socket = max(1, (len(allc) // smt) // sockets)
    out = []
    for i, c in enumerate(allc):
        core = i // smt
        sibs = frozenset(allc[core * smt : core * smt + smt])
        cid = None if core_ids is None else core % per_socket if core_ids == "socket" else core
        out.append(Thread(c, core // per_socket, cid, sibs))
    return tuple(out)


def even_nodes(count: int, per_node: int, **kw: object) -> tuple[Node, ...]:
    """count nodes of per_node consecutive CPUs."""
    return tuple(
        Node(i, frozenset(range(i * per_node, (i + 1) * per_node)), **kw)  # type: ignore[arg-type]
        for i in range(count)
    )


def node_list(cpus_of: Sequence[Iterable[int]]) -> tuple[Node, ...]:
    return tuple(Node(i, frozenset(c)) for i, c in enumerate(cpus_of))
