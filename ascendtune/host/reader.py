"""Build the Host model from a Root: the one reader for live hosts and captured sysroots.

What it reads is exactly SPEC.md section 2; `ascendtune snapshot` writes the same paths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import InvalidInput, MissingError, ParseError
from ascendtune.core.model import (
    Accelerator,
    AccelProcess,
    Cpu,
    Host,
    NpuChip,
    NpuInfo,
    NumaNode,
    PciDevice,
    Soc,
    Source,
    TopoMatrix,
    Vendor,
    soc_of_names,
)
from ascendtune.host import pci
from ascendtune.host.sysroot import NPU_SMI_FALLBACKS, Root

if TYPE_CHECKING:
    from ascendtune.core.parsers.nvidia_smi import TopoMDetails
    from ascendtune.host.nvml import NvmlGpu

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"

NPU_SMI_INFO = ["npu-smi", "info"]
NPU_SMI_MAP = ["npu-smi", "info", "-m"]
NPU_SMI_TOPO = ["npu-smi", "info", "-t", "topo"]
NVIDIA_SMI_TOPO = ["nvidia-smi", "topo", "-m"]


def _cpulist_file(root: Root, rel: str) -> CpuSet | None:
    text = root.read_text(rel)
    if text is None:
        return None
    return parse_cpulist(text, source=rel)


def read_status_list(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def read_cpus(root: Root) -> tuple[CpuSet, CpuSet, dict[int, Cpu]]:
    online = _cpulist_file(root, f"{CPU_DIR}/online")
    if online is None:
        raise MissingError(
            f"{root.describe()}: {CPU_DIR}/online is missing",
            "a sysroot needs at least the list of online CPUs",
        )
    if not online:
        raise InvalidInput(f"{root.describe()}: {CPU_DIR}/online lists no CPU")
    # `possible` often lists hotplug slots that never come online: offline means present - online
    present_file = _cpulist_file(root, f"{CPU_DIR}/present")
    possible = _cpulist_file(root, f"{CPU_DIR}/possible")
    if possible:
        # the kernel never has a CPU outside `possible`: such a host was edited or garbled
        for name, listed in (("online", online), ("present", present_file or frozenset())):
            outside = listed - possible
            if outside:
                raise InvalidInput(
                    f"{root.describe()}: {CPU_DIR}/{name} lists CPUs {format_cpulist(outside)} "
                    f"outside {CPU_DIR}/possible ({format_cpulist(possible)})",
                    "the CPU files contradict each other; capture the host again",
                )
    present = (present_file or frozenset()) | online
    cpus: dict[int, Cpu] = {}
    for c in sorted(online):
        base = f"{CPU_DIR}/cpu{c}/topology/"
        sock = _int(root.read_text(base + "physical_package_id"), 0)
        core = _int(root.read_text(base + "core_id"), c)
        sib_text = root.read_text(base + "thread_siblings_list")
        siblings = (
            parse_cpulist(sib_text, source=base + "thread_siblings_list")
            if sib_text
            else frozenset({c})
        )
        cpus[c] = Cpu(
            id=c,
            socket=sock,
            core=core,
            siblings=frozenset(siblings) | {c},
            node=None,
            llc=read_llc(root, c),
        )
    return online, present, cpus


def read_llc(root: Root, cpu: int) -> CpuSet:
    """CPUs sharing cpu's highest-level data/unified cache (an L3 "core complex"), or empty."""
    base = f"{CPU_DIR}/cpu{cpu}/cache"
    best_level, best = -1, frozenset[int]()
    for entry in root.listdir(base) or []:
        if not re.fullmatch(r"index\d+", entry):
            continue
        kind = (root.read_text(f"{base}/{entry}/type") or "").strip()
        level = _int(root.read_text(f"{base}/{entry}/level"), -1)
        shared = root.read_text(f"{base}/{entry}/shared_cpu_list")
        if kind in ("Unified", "Data") and level > best_level and shared:
            try:
                best_level, best = (
                    level,
                    parse_cpulist(shared, source=f"{base}/{entry}/shared_cpu_list"),
                )
            except ParseError:
                continue
    return best


def _int(text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        return default


_MEM = re.compile(r"Node\s+\d+\s+MemTotal:\s+(\d+)\s*kB")


def read_nodes(root: Root, online: CpuSet, notes: list[str] | None = None) -> tuple[NumaNode, ...]:
    """The NUMA nodes; contradictions (a CPU on two nodes, a CPU the host does not have) are
    InvalidInput. Where the node view cannot be read, one node 0 holding every CPU is assumed
    and a note in `notes` says it is a guess."""
    entries = root.listdir(NODE_DIR)
    if entries is None:
        if notes is not None and "node" in (root.listdir(NODE_DIR.rsplit("/", 1)[0]) or []):
            notes.append(
                f"{NODE_DIR} cannot be read: the NUMA nodes are unknown, and every CPU is "
                "shown on one node 0 as a guess"
            )
        return (NumaNode(id=0, cpus=online, mem_mib=None),)
    possible = _cpulist_file(root, f"{CPU_DIR}/possible")
    present = _cpulist_file(root, f"{CPU_DIR}/present")
    # without possible/present an offline CPU cannot be told from one that does not exist
    known = (
        None
        if possible is None and present is None
        else (possible or frozenset()) | (present or frozenset()) | online
    )
    nodes: list[NumaNode] = []
    owner: dict[int, int] = {}
    for entry in entries:
        m = re.fullmatch(r"node(\d+)", entry)
        if not m:
            continue
        nid = int(m.group(1))
        listed = _cpulist_file(root, f"{NODE_DIR}/{entry}/cpulist")
        if listed is None:
            if notes is not None and root.listdir(f"{NODE_DIR}/{entry}") is None:
                notes.append(f"{NODE_DIR}/{entry} cannot be read: its CPUs are unknown")
            listed = frozenset()
        unknown = listed - known if known is not None else frozenset()
        if unknown and known is not None:
            raise InvalidInput(
                f"{root.describe()}: {NODE_DIR}/{entry}/cpulist names CPUs "
                f"{format_cpulist(unknown)} this host does not have "
                f"(CPUs possible: {format_cpulist(known)})",
                "the NUMA map contradicts the CPU list; capture the host again",
            )
        shared = sorted(c for c in listed if c in owner)
        if shared:
            other = owner[shared[0]]
            both = frozenset(c for c in shared if owner[c] == other)
            raise InvalidInput(
                f"{root.describe()}: node{other} and node{nid} both list CPUs "
                f"{format_cpulist(both)}: a CPU belongs to one NUMA node",
                "the NUMA map contradicts itself; capture the host again",
            )
        owner.update(dict.fromkeys(listed, nid))
        meminfo = root.read_text(f"{NODE_DIR}/{entry}/meminfo")
        mem_mib: int | None = None
        if meminfo is not None:
            mm = _MEM.search(meminfo)
            if mm:
                mem_mib = int(mm.group(1)) // 1024
        nodes.append(NumaNode(id=nid, cpus=listed & online, mem_mib=mem_mib))
    if not nodes:
        if notes is not None and entries:
            notes.append(
                f"{NODE_DIR} holds no nodeN folder: every CPU is shown on node 0 as a guess"
            )
        return (NumaNode(id=0, cpus=online, mem_mib=None),)
    return tuple(sorted(nodes, key=lambda n: n.id))


def read_allowed(
    root: Root, online: CpuSet, present: CpuSet
) -> tuple[CpuSet, frozenset[int] | None, bool]:
    status = root.read_text("proc/self/status")
    if status is None:
        return online, None, False
    raw = read_status_list(status, "Cpus_allowed_list")
    if raw is None:
        return online, None, False
    allowed = parse_cpulist(raw, source="proc/self/status Cpus_allowed_list")
    possible = _cpulist_file(root, f"{CPU_DIR}/possible")
    if possible is not None or root.read_text(f"{CPU_DIR}/present") is not None:
        # a task's mask may name offline CPUs, but never CPUs the kernel cannot have
        known = (possible or frozenset()) | present
        unknown = allowed - known
        if unknown:
            raise InvalidInput(
                f"{root.describe()}: Cpus_allowed_list names CPUs {format_cpulist(unknown)} "
                f"that this host does not have (CPUs possible: {format_cpulist(known)})"
            )
    mems_raw = read_status_list(status, "Mems_allowed_list")
    mems = parse_cpulist(mems_raw, source="Mems_allowed_list") if mems_raw else None
    if not allowed & online:
        raise InvalidInput(
            f"{root.describe()}: Cpus_allowed_list {format_cpulist(allowed)} holds no online CPU "
            f"(online: {format_cpulist(online)})"
        )
    return allowed & online, mems, True


def read_meta(root: Root) -> dict[str, object]:
    text = root.read_text("meta.json")
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(f"not JSON: {e.msg}", source="meta.json", line=e.lineno) from None
    return data if isinstance(data, dict) else {}


def read_pci(root: Root) -> tuple[PciDevice, ...]:
    if root.live:
        devices = pci.live_pci()
        if devices is not None:
            return devices
    return pci.pci_from_sysfs(root)


class _Tools:
    """Runs (or replays) the vendor tools once each; a failure is a note, never parsed."""

    def __init__(self, root: Root, notes: list[str]) -> None:
        self.root = root
        self.notes = notes
        self.found: set[str] = set()
        self.errors: list[str] = []
        self.hung: set[str] = set()

    def text(self, argv: list[str]) -> str | None:
        tool = argv[0]
        if tool in self.hung:
            return None  # one timeout is enough: do not wait out the others
        out = self.root.command(argv, NPU_SMI_FALLBACKS if tool == "npu-smi" else ())
        if out is None:
            return None
        self.found.add(tool)
        if out.ok:
            return out.text
        cmd = " ".join(argv)
        first = (out.error or "failed").splitlines()[0].removeprefix(f"{cmd}: ")
        self.errors.append(f"{cmd}: {first}")
        same = [
            n for n in self.notes if n.startswith(f"`{tool}") and n.endswith(f"({first}); left out")
        ]
        if same:  # the same failure for every subcommand: one note names them all
            self.notes[self.notes.index(same[0])] = same[0].replace(
                "` failed", f"`, `{cmd}` failed", 1
            )
        else:
            self.notes.append(f"`{cmd}` failed ({first}); left out")
        if out.timed_out:
            self.hung.add(tool)
        return None


def read_host(root: Root) -> Host:
    from ascendtune.core.parsers import npu_smi

    notes: list[str] = []
    online, present, cpus = read_cpus(root)
    nodes = read_nodes(root, online, notes)
    node_of = {c: n.id for n in nodes for c in n.cpus}
    cpus = {
        c: Cpu(
            cpu.id,
            cpu.socket,
            cpu.core,
            cpu.siblings & online | {c},
            node_of.get(c),
            cpu.llc & online,
        )
        for c, cpu in cpus.items()
    }
    allowed, mems, from_status = read_allowed(root, online, present)
    meta = read_meta(root)
    pci_devices = read_pci(root)

    # --- Ascend, through npu-smi
    tools = _Tools(root, notes)
    info_text = tools.text(NPU_SMI_INFO)
    map_text = tools.text(NPU_SMI_MAP)
    topo_text = tools.text(NPU_SMI_TOPO)
    npu_smi_found = "npu-smi" in tools.found
    info = npu_smi.parse_info(info_text) if info_text else None
    chips = npu_smi.parse_info_m(map_text) if map_text else ()
    topo = npu_smi.parse_topo(topo_text) if topo_text else None
    if topo is not None and topo.by_phy_id:
        topo = phy_to_logical(topo, chips, notes)
    huawei_pci = [d for d in pci_devices if d.vendor_id == pci.HUAWEI]
    npus = build_npus(info, chips, topo, huawei_pci, nodes, notes)
    if not (info_text or map_text or topo_text) and huawei_pci:
        notes.append(
            (
                "npu-smi gave no usable output"
                if npu_smi_found
                else "no Ascend driver tools found (npu-smi)"
            )
            + "; NPUs shown from the PCI bus only, with logical ids in bus order"
        )

    # --- NVIDIA, through nvidia-smi topo -m
    nv_text = tools.text(NVIDIA_SMI_TOPO)
    nv_details = _nvidia_topo(nv_text, notes) if nv_text else None
    nv_topo = nv_details.matrix if nv_details else None
    nvidia_pci = [d for d in pci_devices if d.vendor_id == pci.NVIDIA]
    nvml_doc = read_nvml(root) if nvidia_pci else None
    nvml_gpus = _nvml_gpus(nvml_doc)
    gpus = build_gpus(
        nv_topo,
        nvidia_pci,
        nodes,
        allowed,
        notes,
        header_gpus=nv_details.header_gpus if nv_details else None,
        nvml_buses={g.index: g.bus_id for g in nvml_gpus} if nvml_gpus else None,
    )

    soc = detect_soc(npus, chips, huawei_pci)
    if npus and soc in (None, Soc.UNKNOWN):
        soc = runtime_soc(root, meta) or soc
    processes = info.processes if info else ()
    if nvml_doc is not None:
        gpus, processes = _with_nvml(nvml_doc, nvml_gpus or (), gpus, processes, notes)
    links: dict[int, dict[int, str]] = {}
    if topo is not None:
        links.update({a: dict(row) for a, row in topo.links.items()})
    if nv_topo is not None and not npus:
        links.update({a: dict(row) for a, row in nv_topo.links.items()})

    arch = meta.get("arch")
    if arch is None and root.live:
        import platform

        arch = platform.machine()
    hostname = meta.get("hostname")
    if hostname is None and root.live:
        import socket

        hostname = socket.gethostname()
    return Host(
        cpus_online=online,
        cpus=cpus,
        cpus_allowed=allowed,
        mems_allowed=mems,
        numa_nodes=nodes,
        accelerators=tuple(npus) + tuple(gpus),
        links=links,
        processes=processes,
        cpus_present=present,
        allowed_from_status=from_status,
        npu_smi_found=npu_smi_found,
        npu_smi_version=(info.version if info else None) or _str(meta.get("npu_smi_version")),
        nvidia_smi_found="nvidia-smi" in tools.found,
        topo_supported=None if topo is None else topo.supported,
        arch=_str(arch),
        hostname=_str(hostname),
        notes=tuple(notes),
        soc_detected=soc,
        tool_errors=tuple(tools.errors),
    )


def phy_to_logical(topo: TopoMatrix, chips: tuple[NpuChip, ...], notes: list[str]) -> TopoMatrix:
    """Re-key an A3 matrix (rows Phy-ID<n>) by logical id, through `npu-smi info -m`'s Phy-ID column."""
    from dataclasses import replace

    phy = {
        c.phy_id: c.logical_id for c in chips if c.phy_id is not None and c.logical_id is not None
    }
    if not phy:
        notes.append(
            "npu-smi topo rows are Phy-IDs and `npu-smi info -m` gives no Phy-ID map; assumed equal to logical ids"
        )
        return topo
    m = {p: phy.get(p, p) for p in topo.devices}
    return replace(
        topo,
        devices=tuple(m[d] for d in topo.devices),
        links={m[a]: {m.get(b, b): t for b, t in row.items()} for a, row in topo.links.items()},
        affinity={m[a]: v for a, v in topo.affinity.items()},
        by_phy_id=False,
    )


# PCI device ids of Ascend families (sysfs `device`)
_SOC_OF_DEVICE_ID = {"0xd802": Soc.A2, "0xd803": Soc.A3, "0xd500": Soc.P310, "0xd806": Soc.A5}


def detect_soc(
    npus: list[Accelerator], chips: tuple[NpuChip, ...], pci_devices: list[PciDevice]
) -> Soc | None:
    """The SoC family from chip names, and where names are ambiguous from other signals.

    Real A3 hosts print the bare name `Ascend910` (also first-generation 910's name): two
    compute chips per card, or PCI device id 0xd803, tell A3 apart.
    """
    if not npus:
        return None
    by_name = soc_of_names([a.name for a in npus] + [c.name for c in chips])
    if by_name not in (Soc.A1, Soc.UNKNOWN):
        return by_name
    by_pci = {
        _SOC_OF_DEVICE_ID[d.device_id] for d in pci_devices if d.device_id in _SOC_OF_DEVICE_ID
    }
    if len(by_pci) == 1:
        return by_pci.pop()
    per_card: dict[int | None, int] = {}
    for a in npus:
        per_card[a.npu_id] = per_card.get(a.npu_id, 0) + 1
    if by_name is Soc.A1 and per_card and max(per_card.values()) >= 2:
        return Soc.A3
    return by_name


NVML_FILE = "commands/nvml.json"


def read_nvml(root: Root) -> dict[str, Any] | None:
    """NVML's view (GPU index, name, bus id; processes): asked live, replayed from a snapshot."""
    from ascendtune.host import nvml

    if root.live:
        lib = nvml.load()
        return nvml.capture(lib) if lib is not None else None
    text = root.read_text(NVML_FILE)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(f"not JSON: {e.msg}", source=NVML_FILE, line=e.lineno) from None
    return doc if isinstance(doc, dict) else None


def _nvml_gpus(doc: dict[str, Any] | None) -> tuple[NvmlGpu, ...] | None:
    from ascendtune.host import nvml

    return nvml.gpus_of(doc) if doc is not None else None


def _with_nvml(
    doc: dict[str, Any],
    nvml_gpus: tuple[NvmlGpu, ...],
    gpus: list[Accelerator],
    processes: tuple[AccelProcess, ...],
    notes: list[str],
) -> tuple[list[Accelerator], tuple[AccelProcess, ...]]:
    """GPU names as the driver gives them, and the processes holding each GPU."""
    from dataclasses import replace

    from ascendtune.host import nvml

    by_bus = {g.bus_id: g for g in nvml_gpus}
    named = [replace(a, name=by_bus[a.bus_id].name) if a.bus_id in by_bus else a for a in gpus]
    procs = nvml.processes_of(doc)
    if procs is None:
        notes.append("NVML is installed but could not list GPU processes")
        return named, processes
    return named, processes + procs


def runtime_soc(root: Root, meta: Mapping[str, object]) -> Soc | None:
    """torch_npu's SoC family when chip names do not tell (live), or what a snapshot recorded."""
    if not root.live:
        value = meta.get("soc_runtime")
        return next((s for s in Soc if s.value == value), None)
    from ascendtune.host.socinfo import runtime_soc as ask

    return ask()


def _str(v: object) -> str | None:
    return None if v is None else str(v)


def _single_node(cpus: CpuSet, nodes: tuple[NumaNode, ...]) -> int | None:
    hit = {n.id for n in nodes if n.cpus & cpus}
    return hit.pop() if len(hit) == 1 else None


def build_npus(
    info: NpuInfo | None,
    chips: tuple[NpuChip, ...],
    topo: TopoMatrix | None,
    pci_devices: list[PciDevice],
    nodes: tuple[NumaNode, ...],
    notes: list[str],
) -> list[Accelerator]:
    """Join npu-smi's three views (and sysfs) into one record per logical NPU."""
    rows = {(r.npu_id, r.chip_id): r for r in (info.devices if info else ())}
    by_bus = {d.bus_id: d for d in pci_devices}
    # (logical, npu_id, chip_id, name) from the most precise source available
    entries: list[tuple[int, int | None, int | None, str]] = []
    if chips:
        for ch in chips:
            if ch.logical_id is None or ch.name.lower().startswith("mcu"):
                continue
            entries.append((ch.logical_id, ch.npu_id, ch.chip_id, ch.name))
    elif rows:
        per_card: dict[int, int] = {}
        for r in rows.values():
            per_card[r.npu_id] = per_card.get(r.npu_id, 0) + 1
        ordered = sorted(rows.values(), key=lambda r: (r.npu_id, r.chip_id))
        for i, r in enumerate(ordered):
            if r.logical_id is not None:
                logical = r.logical_id
            elif per_card[r.npu_id] == 1:
                logical = r.npu_id
            else:
                logical = i
            entries.append((logical, r.npu_id, r.chip_id, r.name))
    elif topo is not None and topo.devices:
        entries = [(d, d, 0, "Ascend") for d in topo.devices]
    elif pci_devices:
        entries = [
            (i, None, None, pci.ASCEND_DEVICE_IDS.get(d.device_id, "Ascend NPU"))
            for i, d in enumerate(pci_devices)
        ]
    out: list[Accelerator] = []
    seen: set[int] = set()
    for i, (logical, npu_id, chip_id, name) in enumerate(sorted(entries)):
        if logical in seen:
            continue
        seen.add(logical)
        row = rows.get((npu_id, chip_id)) if npu_id is not None and chip_id is not None else None
        bus = row.bus_id if row and row.bus_id else None
        if bus is None and not rows and not chips and i < len(pci_devices):
            bus = pci_devices[i].bus_id
        dev = by_bus.get(bus) if bus else None
        if bus is None and dev is None and len(pci_devices) == len(entries) and not rows:
            dev = sorted(pci_devices, key=lambda d: d.bus_id)[i]
            bus = dev.bus_id
        display = row.name if row and row.name and row.name.lower() != "ascend" else name
        tool_aff = topo.affinity.get(logical) if topo is not None else None
        aff: CpuSet
        src: Source | None
        nsrc: Source | None
        if tool_aff is not None:
            aff, src = tool_aff, Source.NPU_SMI
            if dev is not None and dev.local_cpus and dev.local_cpus != tool_aff:
                notes.append(
                    f"NPU {logical}: npu-smi gives CPU affinity {format_cpulist(tool_aff)} but "
                    f"sysfs local_cpulist says {format_cpulist(dev.local_cpus)}"
                )
        elif dev is not None and dev.local_cpus:
            aff, src = dev.local_cpus, Source.SYSFS
        else:
            aff, src = frozenset(), None
        numa: int | None
        if dev is not None and dev.numa_node is not None:
            numa, nsrc = dev.numa_node, Source.SYSFS
        else:
            numa = _single_node(aff, nodes) if aff else None
            nsrc = src if numa is not None else None
        out.append(
            Accelerator(
                vendor=Vendor.HUAWEI,
                logical_id=logical,
                npu_id=npu_id,
                chip_id=chip_id,
                name=display,
                bus_id=bus,
                numa_node=numa,
                cpu_affinity=aff,
                affinity_source=src,
                tool_affinity=tool_aff,
                numa_source=nsrc,
                health=row.health if row else None,
                driver=dev.driver if dev else None,
                device_nodes=dev.device_nodes if dev else (),
            )
        )
    if out and topo is not None and not topo.supported:
        notes.append("npu-smi cannot report topology on this device (no CPU affinity, no links)")
    if out and all(a.tool_affinity is None for a in out) and any(a.cpu_affinity for a in out):
        notes.append(
            "npu-smi printed no CPU affinity; affinity shown comes from sysfs local_cpulist "
            "(vLLM-Ascend will fall back to global slicing)"
        )
    return out


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


def _nvidia_topo(text: str, notes: list[str]) -> TopoMDetails | None:
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


class _Notes:
    """Notes that differ only in the GPU they name, merged: "GPU 0-3: ...", not four lines."""

    def __init__(self) -> None:
        self._by_text: dict[str, list[int]] = {}

    def add(self, gpu: int, text: str) -> None:
        self._by_text.setdefault(text, []).append(gpu)

    def flush(self, notes: list[str]) -> None:
        notes.extend(f"GPU {format_cpulist(gpus)}: {text}" for text, gpus in self._by_text.items())


def _gpu_affinity(
    g: int,
    dev: PciDevice | None,
    tool_aff: CpuSet | None,
    tool_numa: int | None,
    nodes: tuple[NumaNode, ...],
    allowed: CpuSet,
    notes: _Notes,
) -> tuple[CpuSet, Source | None]:
    """The GPU's hardware affinity, and notes where nvidia-smi's view differs from it.

    nvidia-smi prints the GPU's local CPUs intersected with its caller's cpuset: empty inside
    a Slurm job on the other socket, a few CPUs in a container. sysfs local_cpulist is never
    cut; without it, the CPUs of the NUMA node nvidia-smi names stand for the hardware view.
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
    node_cpus = next((n.cpus for n in nodes if n.id == tool_numa and n.cpus), None)
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


def _gpu_numa(
    g: int,
    dev: PciDevice | None,
    tool_numa: int | None,
    aff: CpuSet,
    src: Source | None,
    nodes: tuple[NumaNode, ...],
    notes: _Notes,
) -> tuple[int | None, Source | None]:
    """The NUMA node whose CPUs are local to the GPU: sysfs numa_node, else nvidia-smi's NUMA
    Affinity, else the one node its affinity lies on.

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
        numa = _single_node(aff, nodes)
        nsrc = src if numa is not None else None
    node = next((n for n in nodes if n.id == numa), None)
    if node is not None and not node.cpus:
        home = _single_node(aff, nodes) if aff else None
        if home is not None:
            notes.add(
                g,
                f"NUMA node {numa} holds no CPU (GPU memory exposed as a node?); the node "
                f"of its CPUs, {home}, is used",
            )
            numa, nsrc = home, src
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
    pending = _Notes()
    out: list[Accelerator] = []
    for g in indices:
        dev = dev_of.get(g)
        tool_aff: CpuSet | None = None
        tool_numa: int | None = None
        aff: CpuSet = frozenset()
        src: Source | None = None
        if topo is not None and g in topo.devices:
            tool_aff, tool_numa = topo.affinity.get(g), topo.numa.get(g)
            aff, src = _gpu_affinity(g, dev, tool_aff, tool_numa, nodes, allowed, pending)
        elif dev is not None and dev.local_cpus:  # no nvidia-smi, or no row for g
            aff, src = dev.local_cpus, Source.SYSFS
        numa, nsrc = _gpu_numa(g, dev, tool_numa, aff, src, nodes, pending)
        name = NVIDIA_GPU_NAMES.get(dev.device_id, GENERIC_GPU_NAME) if dev else GENERIC_GPU_NAME
        out.append(
            Accelerator(
                vendor=Vendor.NVIDIA,
                logical_id=g,
                npu_id=g,
                chip_id=None,
                name=name,
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


def links_json(links: Mapping[int, Mapping[int, str]]) -> dict[str, dict[str, str]]:
    return {str(a): {str(b): t for b, t in sorted(row.items())} for a, row in sorted(links.items())}
