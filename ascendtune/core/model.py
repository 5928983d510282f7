"""The host model: typed, frozen facts about CPUs, NUMA nodes, the cpuset and accelerators.

Built by ascendtune.host.reader from a root folder (live `/` or a captured sysroot); everything
above the host layer (planner, doctor rules, renderers) works on these objects only.

The records are NamedTuples, not frozen dataclasses: every command defines all of them at
start-up, and a dataclass costs about 0.5 ms to define (it compiles six methods) against 0.1 ms;
a NamedTuple is also cheaper to build per instance (4,096 Cpu records on a large host). Copy
with `_replace`, list fields with `_fields`; never rely on their being tuples.
"""

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet, format_cpulist


class Vendor(str, Enum):
    """Accelerator vendors; each has one VendorProfile in ascendtune.core.vendors."""

    HUAWEI = "huawei"
    NVIDIA = "nvidia"


class Soc(str, Enum):
    """SoC families whose binding rules differ in vLLM-Ascend."""

    A2 = "A2"  # Ascend 910B* (Atlas 800I/800T A2)
    A3 = "A3"  # Ascend 910_93xx / 910C (Atlas 800I/900 A3)
    P310 = "310P"  # Ascend 310P* (Atlas 300I Duo/Pro)
    A5 = "A5"  # Ascend 950
    A1 = "910"  # first-generation 910/910A (training)
    UNKNOWN = "unknown"
    GPU = "gpu"  # NVIDIA


class Source(str, Enum):
    """Where a fact about an accelerator came from."""

    NPU_SMI = "npu-smi"
    NVIDIA_SMI = "nvidia-smi"
    NVML = "nvml"
    SYSFS = "sysfs"
    UDEV = "udev"
    GUESS = "guess"  # the single NUMA node assumed for a host without NUMA node files


class Cpu(NamedTuple):
    id: int
    socket: int
    core: int
    siblings: CpuSet  # SMT siblings including itself
    node: int | None  # NUMA node holding it
    llc: CpuSet = frozenset()  # CPUs sharing its last-level cache (empty: unknown)


class NumaNode(NamedTuple):
    id: int
    cpus: CpuSet  # online CPUs of the node (may be empty: memory-only node)
    mem_mib: int | None  # None: unknown; 0: a node without memory
    guessed: bool = False  # no NUMA node files: one node 0 holding every online CPU assumed

    @property
    def cpulist(self) -> str:
        return format_cpulist(self.cpus)


class PciDevice(NamedTuple):
    """One accelerator as sysfs (or pyudev) sees it on the PCI bus."""

    bus_id: str  # lower case, 0000:c1:00.0
    vendor_id: str  # "0x19e5"
    device_id: str  # "0xd802"
    numa_node: int | None  # None when the kernel reports -1
    local_cpus: CpuSet
    driver: str | None = None
    device_nodes: tuple[str, ...] = ()


class NpuChip(NamedTuple):
    """One row of `npu-smi info -m`: a chip of a card, with its logical id (None for Mcu rows)."""

    npu_id: int
    chip_id: int
    logical_id: int | None
    name: str
    phy_id: int | None = None


class NpuInfoRow(NamedTuple):
    """One device of `npu-smi info` (the upper table)."""

    npu_id: int
    chip_id: int
    name: str
    health: str | None
    bus_id: str | None
    logical_id: int | None = None  # the 310P layout prints a "Device" (logical) column
    phy_id: int | None = None  # A3 layouts print the die's "Phy-ID" (not a logical id)


class AccelProcess(NamedTuple):
    """A process that holds an accelerator, from npu-smi's process table (or nvidia-smi/NVML)."""

    npu_id: int  # npu-smi's card id on Ascend; the GPU index on NVIDIA (name kept for JSON)
    chip_id: int | None
    pid: int
    name: str
    mem_mib: float | None


class NpuInfo(NamedTuple):
    """Parsed `npu-smi info`."""

    version: str | None
    devices: tuple[NpuInfoRow, ...]
    processes: tuple[AccelProcess, ...]
    # the process table's header: "NPU Chip" (True) or "NPU ID" alone (False, Ascend 950);
    # None: no process table
    procs_by_chip: bool | None = None


class TopoMatrix(NamedTuple):
    """Parsed `npu-smi info -t topo` or `nvidia-smi topo -m`.

    `links[a][b]` is the link type between devices a and b (by the index in their row label);
    `affinity[a]` is None when the tool printed no CPU affinity for a (no column, empty cell).
    """

    devices: tuple[int, ...]
    links: Mapping[int, Mapping[int, str]]
    affinity: Mapping[int, CpuSet | None]
    numa: Mapping[int, int | None] = MappingProxyType({})
    supported: bool = True
    nics: tuple[str, ...] = ()
    by_phy_id: bool = False  # A3 labels devices by physical die id (Phy-ID<n>), not logical id


class Accelerator(NamedTuple):
    """One device as the host shows it. Field names are Ascend's (npu-smi's), values any
    vendor's: `npu_id` is the GPU index on NVIDIA, `tool_affinity` what nvidia-smi printed."""

    vendor: Vendor
    logical_id: int  # the id the runtime uses (its profile's visible_devices_env)
    # Named for Ascend, holds every vendor's value: the card id npu-smi prints on Ascend, the
    # GPU index (equal to logical_id) on NVIDIA
    npu_id: int | None
    chip_id: int | None
    name: str
    bus_id: str | None
    numa_node: int | None
    cpu_affinity: CpuSet  # hardware affinity from the best source available
    affinity_source: Source | None
    # What the vendor tool itself printed as CPU affinity (None: it printed none). vLLM-Ascend
    # binds from npu-smi only, so the planner's parity policy must see this, not sysfs.
    tool_affinity: CpuSet | None = None
    numa_source: Source | None = None
    health: str | None = None
    driver: str | None = None
    device_nodes: tuple[str, ...] = ()


class Host(NamedTuple):
    cpus_online: CpuSet
    cpus: Mapping[int, Cpu]
    cpus_allowed: CpuSet
    mems_allowed: frozenset[int] | None
    numa_nodes: tuple[NumaNode, ...]
    accelerators: tuple[Accelerator, ...] = ()
    links: Mapping[int, Mapping[int, str]] = MappingProxyType({})
    processes: tuple[AccelProcess, ...] = ()
    cpus_present: CpuSet = frozenset()  # every CPU the kernel knows (online or not)
    allowed_from_status: bool = True  # False: no proc/self/status, every online CPU assumed
    topo_supported: bool | None = None  # the vendor tool could (True) or not (False) report topo
    arch: str | None = None
    hostname: str | None = None
    notes: tuple[str, ...] = ()  # facts an operator must know that arose while reading
    soc_detected: Soc | None = None  # family from every signal (names, PCI ids, chips per card)
    tool_errors: tuple[str, ...] = ()  # vendor tools that were found but failed, with their error
    # the cgroup cpuset of this process (None: unknown) and the file it came from; cpus_allowed
    # is already narrowed to it
    cgroup_cpuset: CpuSet | None = None
    cgroup_cpuset_file: str | None = None
    # every vendor tool that ran (or replayed), in registry order, with the version it printed
    # (None: it printed none); a tool absent here was not found
    tools: Mapping[str, str | None] = MappingProxyType({})
    # `npu-smi info -m` as vLLM-Ascend up to 0.21.0rc1 reads it: every line after the first
    # split on white space, by position, whatever the header names (empty: no map was read)
    npu_map_rows: tuple[tuple[str, ...], ...] = ()
    # npu-smi's process table keyed by "NPU Chip" (True) or by "NPU ID" alone (False: Ascend
    # 950's layout, which the releases up to 0.21.0rc1 cannot read); None: no table read
    npu_procs_by_chip: bool | None = None

    @property
    def cpus_offline(self) -> CpuSet:
        return self.cpus_present - self.cpus_online

    @property
    def cpu_nodes(self) -> tuple[NumaNode, ...]:
        """Nodes holding at least one online CPU, ascending id."""
        return tuple(n for n in self.numa_nodes if n.cpus)

    def node_of(self, cpu: int) -> int | None:
        c = self.cpus.get(cpu)
        return c.node if c else None

    def nodes_of(self, cpus: CpuSet) -> tuple[int, ...]:
        # node_of inlined: the planner asks this of every rank's CPUs and device affinity
        table = self.cpus
        return tuple(
            sorted({n for c in cpus if (cpu := table.get(c)) and (n := cpu.node) is not None})
        )

    def accelerator(self, logical_id: int) -> Accelerator | None:
        for a in self.accelerators:
            if a.logical_id == logical_id:
                return a
        return None

    @property
    def npus(self) -> tuple[Accelerator, ...]:
        return tuple(a for a in self.accelerators if a.vendor is Vendor.HUAWEI)

    @property
    def gpus(self) -> tuple[Accelerator, ...]:
        return tuple(a for a in self.accelerators if a.vendor is Vendor.NVIDIA)

    @property
    def soc(self) -> Soc:
        if self.soc_detected is not None:
            return self.soc_detected
        return soc_of_names([a.name for a in self.npus])


def soc_of_name(name: str) -> Soc:
    """Map a chip name as npu-smi prints it ("910B3", "Ascend910_9382", "310P3") to its family."""
    n = name.replace(" ", "").upper().removeprefix("ASCEND")
    if n.startswith("910_93") or n.startswith("910C") or n.startswith("910_9"):
        return Soc.A3
    if n.startswith("910B"):
        return Soc.A2
    if n.startswith("310P"):
        return Soc.P310
    if n.startswith("950"):
        return Soc.A5
    if n.startswith("910"):
        return Soc.A1
    return Soc.UNKNOWN


def soc_of_names(names: list[str]) -> Soc:
    socs = {soc_of_name(n) for n in names if n}
    socs.discard(Soc.UNKNOWN)
    if len(socs) == 1:
        return socs.pop()
    return Soc.UNKNOWN
