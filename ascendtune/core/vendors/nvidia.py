"""NVIDIA GPUs: `nvidia-smi topo -m` and NVML's view joined with sysfs into one record per GPU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import (
    Accelerator,
    AccelProcess,
    Host,
    NumaNode,
    PciDevice,
    Soc,
    Source,
    TopoMatrix,
    Vendor,
)
from ascendtune.core.vendors.base import (
    PCIE_LINKS,
    Command,
    LinkCode,
    VendorInput,
    VendorProfile,
    VendorReading,
    node_guessed,
    placed_by_affinity,
    single_node,
)

if TYPE_CHECKING:
    from ascendtune.core.parsers.nvidia_smi import TopoMDetails

PCI_VENDOR = "0x10de"
NVIDIA_SMI_TOPO = Command(("nvidia-smi", "topo", "-m"))
# NVML's view (GPU index, name, bus id; processes) as JSON: asked live, stored by a snapshot
NVML_FILE = "commands/nvml.json"

# PCI device ids (sysfs `device`) of common NVIDIA datacenter GPUs, named as in pci.ids
# (pciutils/pciids), so topo names a GPU when neither NVML nor nvidia-smi's name is at hand.
NVIDIA_GPU_NAMES = {
    "0x1bb3": "NVIDIA Tesla P4",
    "0x1db1": "NVIDIA Tesla V100 SXM2 16GB",
    "0x1db4": "NVIDIA Tesla V100 PCIe 16GB",
    "0x1db5": "NVIDIA Tesla V100 SXM2 32GB",
    "0x1db6": "NVIDIA Tesla V100 PCIe 32GB",
    "0x1eb8": "NVIDIA Tesla T4",
    "0x20b0": "NVIDIA A100 SXM4 40GB",
    "0x20b2": "NVIDIA A100 SXM4 80GB",
    "0x20b3": "NVIDIA A100-SXM-64GB",
    "0x20b5": "NVIDIA A100 PCIe 80GB",
    "0x20b7": "NVIDIA A30 PCIe",
    "0x20f1": "NVIDIA A100 PCIe 40GB",
    "0x2322": "NVIDIA H800 PCIe",
    "0x2324": "NVIDIA H800",
    "0x2330": "NVIDIA H100 SXM5 80GB",
    "0x2331": "NVIDIA H100 PCIe",
    "0x2335": "NVIDIA H200 SXM 141GB",
    "0x2336": "NVIDIA H100",
    "0x2339": "NVIDIA H100 SXM5 94GB",
    "0x233b": "NVIDIA H200 NVL",
    "0x2342": "NVIDIA GH200 120GB / 480GB",
    "0x2348": "NVIDIA GH200 144G HBM3e",
    "0x26b5": "NVIDIA L40",
    "0x26b9": "NVIDIA L40S",
    "0x27b8": "NVIDIA L4",
    "0x2901": "NVIDIA B200",
    "0x2941": "NVIDIA HGX GB200",
}
GENERIC_GPU_NAME = "NVIDIA GPU"
NVIDIA_NOT_GPU = frozenset({"0x1af1", "0x22a3", "0x22a4"})  # NVSwitch (A100 / H100 generations)


# ---- NVML's document --------------------------------------------------------------------------


class NvmlGpu(NamedTuple):
    gpu_index: int  # NVML's device index (`index` is a tuple method)
    name: str
    bus_id: str  # lower case, 0000:1b:00.0


def gpus_of(doc: Mapping[str, Any]) -> tuple[NvmlGpu, ...] | None:
    try:
        return tuple(
            NvmlGpu(int(g["index"]), str(g["name"]), str(g["bus_id"]).lower())
            for g in doc.get("gpus") or []
        )
    except (KeyError, TypeError, ValueError):
        return None


def processes_of(doc: Mapping[str, Any]) -> tuple[AccelProcess, ...] | None:
    raw = doc.get("processes")
    if raw is None:
        return None
    try:
        return tuple(
            AccelProcess(
                npu_id=int(p["gpu"]),
                chip_id=None,
                pid=int(p["pid"]),
                name="",
                mem_mib=None if p.get("mem_mib") is None else float(p["mem_mib"]),
            )
            for p in raw
        )
    except (KeyError, TypeError, ValueError):
        return None


def with_nvml(
    doc: Mapping[str, Any],
    nvml_gpus: tuple[NvmlGpu, ...],
    gpus: list[Accelerator],
    processes: tuple[AccelProcess, ...],
    notes: list[str],
) -> tuple[list[Accelerator], tuple[AccelProcess, ...]]:
    """GPU names as the driver gives them, and the processes holding each GPU."""
    by_bus = {g.bus_id: g for g in nvml_gpus}
    named = [a._replace(name=by_bus[a.bus_id].name) if a.bus_id in by_bus else a for a in gpus]
    procs = processes_of(doc)
    if procs is None:
        notes.append("NVML is installed but could not list GPU processes")
        return named, processes
    return named, processes + procs


# ---- nvidia-smi topo -m joined with sysfs -----------------------------------------------------


def nvidia_topo(text: str, notes: list[str]) -> TopoMDetails | None:
    """Parse `nvidia-smi topo -m`; a driver failure message is a note, not an error."""
    from ascendtune.core.parsers import nvidia_smi

    try:
        details = nvidia_smi.parse_topo_m_details(text)
    except ParseError as e:
        # nvidia-smi installed but the driver down: the host still has CPUs and PCI devices
        if e.hint and e.hint.startswith("nvidia-smi said"):
            notes.append(f"`nvidia-smi topo -m` printed no table: {e.hint}")
            return None
        raise
    if details.missing_rows:
        notes.append(
            f"`nvidia-smi topo -m` names GPU {format_cpulist(details.missing_rows)} in its header but "
            "prints no row for them (output cut short?): no links or affinity from it"
        )
    return details


class Notes:
    """Notes that differ only in the GPU they name, merged: "GPU 0-3: ...", not four lines."""

    def __init__(self) -> None:
        self._by_text: dict[str, list[int]] = {}

    def add(self, gpu: int, text: str) -> None:
        self._by_text.setdefault(text, []).append(gpu)

    def flush(self, notes: list[str]) -> None:
        notes.extend(f"GPU {format_cpulist(gpus)}: {text}" for text, gpus in self._by_text.items())


def gpu_affinity(
    g: int,
    dev: PciDevice | None,
    tool_aff: CpuSet | None,
    tool_numa: int | None,
    nodes: tuple[NumaNode, ...],
    allowed: CpuSet,
    notes: Notes,
) -> tuple[CpuSet, Source | None]:
    """The GPU's hardware affinity, and notes where nvidia-smi's view differs from it.

    nvidia-smi prints the GPU's local CPUs intersected with its caller's cpuset: empty inside
    a Slurm job on the other socket, a few CPUs in a container. sysfs local_cpulist is never
    cut; without it, the CPUs of the NUMA node nvidia-smi names stand for the hardware view,
    but only a node the kernel described: the node 0 assumed for a host without NUMA node
    files holds every CPU, and would widen what nvidia-smi printed to the whole machine.
    """
    f = format_cpulist
    if dev is not None and dev.local_cpus:
        hw = dev.local_cpus
        if tool_aff != hw:
            shown = f(tool_aff) if tool_aff else "empty"
            if not hw <= allowed and (tool_aff is None or tool_aff <= allowed):
                notes.add(
                    g,
                    f"nvidia-smi shows CPU affinity {shown}, cut down by this process's cpuset "
                    f"{f(allowed)}; hardware affinity (sysfs local_cpulist) is {f(hw)}",
                )
            else:
                notes.add(
                    g,
                    f"nvidia-smi shows CPU affinity {shown} but sysfs local_cpulist says "
                    f"{f(hw)}; sysfs is used",
                )
        return hw, Source.SYSFS
    node_cpus = next(
        (n.cpus for n in nodes if n.id == tool_numa and n.cpus and not n.guessed), None
    )
    if node_cpus is not None and (tool_aff is None or tool_aff < node_cpus):
        shown = f(tool_aff) if tool_aff else "empty"
        why = (
            f"cut down by this process's cpuset {f(allowed)}"
            if not node_cpus <= allowed and (tool_aff is None or tool_aff <= allowed)
            else "less than its NUMA node (nvidia-smi ran under a narrower cpuset?)"
        )
        notes.add(
            g,
            f"nvidia-smi shows CPU affinity {shown}, {why}; hardware affinity taken as the CPUs "
            f"of its NUMA node {tool_numa}: {f(node_cpus)}",
        )
        return node_cpus, Source.NVIDIA_SMI
    if tool_aff is not None:
        return tool_aff, Source.NVIDIA_SMI
    notes.add(g, "nvidia-smi printed no CPU affinity and no NUMA node; affinity unknown")
    return frozenset(), None


def gpu_numa(
    g: int,
    dev: PciDevice | None,
    tool_numa: int | None,
    aff: CpuSet,
    src: Source | None,
    nodes: tuple[NumaNode, ...],
    notes: Notes,
) -> tuple[int | None, Source | None]:
    """The NUMA node whose CPUs are local to the GPU: sysfs numa_node, else nvidia-smi's NUMA
    Affinity, else the one node its affinity lies on (a guess on a host without node files).

    GH200/GB200 expose GPU memory as CPU-less nodes; a GPU pointing at one of those is placed
    on the node of its CPUs, since a node without CPUs is nowhere to bind a worker.
    """
    numa: int | None = None
    nsrc: Source | None = None
    if dev is not None and dev.numa_node is not None:
        numa, nsrc = dev.numa_node, Source.SYSFS
    elif tool_numa is not None:
        numa, nsrc = tool_numa, Source.NVIDIA_SMI
    elif aff:
        numa, nsrc = placed_by_affinity(aff, src, nodes)
    node = next((n for n in nodes if n.id == numa), None)
    if node is not None and not node.cpus:
        home = single_node(aff, nodes) if aff else None
        if home is not None:
            notes.add(
                g,
                f"NUMA node {numa} holds no CPU (GPU memory exposed as a node?); the node "
                f"of its CPUs, {home}, is used",
            )
            numa, nsrc = home, Source.GUESS if node_guessed(home, nodes) else src
    if nsrc is Source.SYSFS and tool_numa is not None and tool_numa != numa:
        notes.add(g, f"nvidia-smi gives NUMA affinity {tool_numa} but sysfs numa_node is {numa}")
    return numa, nsrc


def build_gpus(
    topo: TopoMatrix | None,
    pci_devices: list[PciDevice],
    nodes: tuple[NumaNode, ...],
    allowed: CpuSet,
    notes: list[str],
    *,
    header_gpus: tuple[int, ...] | None = None,
    nvml_buses: Mapping[int, str] | None = None,
) -> list[Accelerator]:
    """One Accelerator per GPU index, joined with its PCI device.

    NVML (live hosts) names each index's bus id. Without it, GPU index g is the g-th NVIDIA PCI
    device in ascending bus order (nvidia-smi's default), which holds only when nvidia-smi and
    the PCI bus see the same GPUs: in a container given a few GPUs, nvidia-smi numbers those
    from 0 while sysfs lists every GPU of the host, so the two are not joined when their counts
    differ.
    """
    dev_of: dict[int, PciDevice] = {}
    if nvml_buses is not None:
        by_bus = {d.bus_id: d for d in pci_devices}
        dev_of = {g: by_bus[b] for g, b in nvml_buses.items() if b in by_bus}
        indices = sorted(set(topo.devices if topo else ()) | set(nvml_buses))
    elif topo is None:
        dev_of = dict(enumerate(sorted(pci_devices, key=lambda d: d.bus_id)))
        indices = sorted(dev_of)
    else:
        header = header_gpus if header_gpus is not None else topo.devices
        if pci_devices and len(header) != len(pci_devices):
            notes.append(
                f"`nvidia-smi topo -m` shows {len(header)} GPUs, the PCI bus "
                f"{len(pci_devices)}: which GPU index is which bus id is unknown (a container "
                "given some GPUs?), so sysfs facts are not used and bus ids are not shown"
            )
        else:
            dev_of = dict(enumerate(sorted(pci_devices, key=lambda d: d.bus_id)))
        # GPUs the header names without a row (cut output) still have their PCI device
        indices = sorted(set(topo.devices) | {g for g in header if g in dev_of})
    pending = Notes()
    out: list[Accelerator] = []
    for g in indices:
        dev = dev_of.get(g)
        tool_aff: CpuSet | None = None
        tool_numa: int | None = None
        aff: CpuSet = frozenset()
        src: Source | None = None
        if topo is not None and g in topo.devices:
            tool_aff, tool_numa = topo.affinity.get(g), topo.numa.get(g)
            aff, src = gpu_affinity(g, dev, tool_aff, tool_numa, nodes, allowed, pending)
        elif dev is not None and dev.local_cpus:  # no nvidia-smi, or no row for g
            aff, src = dev.local_cpus, Source.SYSFS
        numa, nsrc = gpu_numa(g, dev, tool_numa, aff, src, nodes, pending)
        out.append(
            Accelerator(
                vendor=Vendor.NVIDIA,
                logical_id=g,
                npu_id=g,  # the field is Ascend's card id; on NVIDIA it holds the GPU index
                chip_id=None,
                name=NVIDIA.device_name(dev),
                bus_id=dev.bus_id if dev else None,
                numa_node=numa,
                cpu_affinity=aff,
                affinity_source=src,
                tool_affinity=tool_aff,
                numa_source=nsrc,
                driver=dev.driver if dev else None,
                device_nodes=dev.device_nodes if dev else (),
            )
        )
    pending.flush(notes)
    return out


def read(inp: VendorInput) -> VendorReading:
    """nvidia-smi's matrix and NVML's document joined with the PCI bus and the NUMA nodes."""
    notes: list[str] = []
    text = inp.text(NVIDIA_SMI_TOPO)
    details = nvidia_topo(text, notes) if text else None
    topo = details.matrix if details else None
    doc = inp.documents.get(NVML_FILE) if inp.pci else None
    nvml_gpus = gpus_of(doc) if doc is not None else None
    gpus = build_gpus(
        topo,
        list(inp.pci),
        inp.nodes,
        inp.allowed,
        notes,
        header_gpus=details.header_gpus if details else None,
        nvml_buses={g.gpu_index: g.bus_id for g in nvml_gpus} if nvml_gpus else None,
    )
    processes: tuple[AccelProcess, ...] = ()
    if doc is not None:
        gpus, processes = with_nvml(doc, nvml_gpus or (), gpus, processes, notes)
    return VendorReading(
        accelerators=tuple(gpus),
        links={a: dict(row) for a, row in topo.links.items()} if topo is not None else {},
        processes=processes,
        notes=tuple(notes),
    )


def _topo_header(host: Host) -> str | None:
    if not any(a.vendor is Vendor.NVIDIA for a in host.accelerators):
        return None
    return "nvidia-smi" if "nvidia-smi" in host.tools else "no nvidia-smi"


NVIDIA = VendorProfile(
    vendor=Vendor.NVIDIA,
    word="GPU",
    tool="nvidia-smi",
    pci_vendor_id=PCI_VENDOR,
    # 3D/VGA controllers; NVSwitches (0x0680) and audio functions (0x0403) are not GPUs
    pci_class_prefix="0x03",
    device_names=NVIDIA_GPU_NAMES,
    generic_name=GENERIC_GPU_NAME,
    known_ids_only=False,
    # without a class file, leave out the NVSwitch ids at least (HGX boards carry 4-6)
    not_accelerators=NVIDIA_NOT_GPU,
    device_file="nvidia",  # nvidiactl and nvidia-uvm are shared control nodes, not devices
    visible_devices_env="CUDA_VISIBLE_DEVICES",
    commands=(NVIDIA_SMI_TOPO,),
    documents=(NVML_FILE,),
    processes_from="nvml",
    thread_roles=False,
    default_policy="numa-local",
    compare_families=("ascendtune", "torchrun"),  # ours and torchrun's modes
    card_columns=False,  # a GPU's index is its id
    merge_device_notes=True,
    cpuless_node_note=(
        "GPU memory of GH200/GB200 shows up so; workers are bound to the nodes with CPUs"
    ),
    read=read,
    soc_of=lambda host: Soc.GPU,
    maker="NVIDIA",
    links={**PCIE_LINKS, "NV#": LinkCode("a bond of # NVLinks", "N#")},
    topo_header=_topo_header,
)
