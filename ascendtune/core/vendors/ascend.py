"""Huawei Ascend NPUs: npu-smi's three views joined with sysfs into one record per logical NPU."""

from __future__ import annotations

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.model import (
    Accelerator,
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
from ascendtune.core.vendors.base import (
    PCIE_LINKS,
    Command,
    LinkCode,
    ToolCheck,
    VendorInput,
    VendorProfile,
    VendorReading,
    placed_by_affinity,
)

PCI_VENDOR = "0x19e5"

# npu-smi lives outside PATH on many hosts (the driver installs it here).
NPU_SMI_FALLBACKS = ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi")
NPU_SMI_INFO = Command(("npu-smi", "info"), NPU_SMI_FALLBACKS)
NPU_SMI_MAP = Command(("npu-smi", "info", "-m"), NPU_SMI_FALLBACKS)
# the matrix's rows are the devices of `info -m` (or `info`) again: a worker's device is
# known without it
NPU_SMI_TOPO = Command(("npu-smi", "info", "-t", "topo"), NPU_SMI_FALLBACKS, links_only=True)

# The one table of Ascend PCI device ids (sysfs `device`): the name shown when npu-smi gives
# none, and the SoC family where chip names are ambiguous (None: not a family vLLM-Ascend runs).
# Huawei also makes NICs and RAID controllers; without a `class` file only these ids are NPUs.
DEVICES: dict[str, tuple[str, Soc | None]] = {
    "0xd100": ("Ascend 310", None),
    "0xd105": ("Ascend 310B", None),
    "0xd500": ("Ascend 310P", Soc.P310),
    "0xd801": ("Ascend 910", None),
    "0xd802": ("Ascend 910B", Soc.A2),
    "0xd803": ("Ascend 910_93", Soc.A3),
    "0xd806": ("Ascend 950", Soc.A5),
}
DEVICE_NAMES = {dev: name for dev, (name, _) in DEVICES.items()}
SOC_OF_DEVICE_ID = {dev: soc for dev, (_, soc) in DEVICES.items() if soc is not None}


def phy_to_logical(topo: TopoMatrix, chips: tuple[NpuChip, ...], notes: list[str]) -> TopoMatrix:
    """Re-key an A3 matrix (rows Phy-ID<n>) by logical id, through `npu-smi info -m`'s Phy-ID column."""
    phy = {
        c.phy_id: c.logical_id for c in chips if c.phy_id is not None and c.logical_id is not None
    }
    if not phy:
        notes.append(
            "npu-smi topo rows are Phy-IDs and `npu-smi info -m` gives no Phy-ID map; assumed equal to logical ids"
        )
        return topo
    m = {p: phy.get(p, p) for p in topo.devices}
    return topo._replace(
        devices=tuple(m[d] for d in topo.devices),
        links={m[a]: {m.get(b, b): t for b, t in row.items()} for a, row in topo.links.items()},
        affinity={m[a]: v for a, v in topo.affinity.items()},
        by_phy_id=False,
    )


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
    by_pci = {SOC_OF_DEVICE_ID[d.device_id] for d in pci_devices if d.device_id in SOC_OF_DEVICE_ID}
    if len(by_pci) == 1:
        return by_pci.pop()
    per_card: dict[int | None, int] = {}
    for a in npus:
        per_card[a.npu_id] = per_card.get(a.npu_id, 0) + 1
    if by_name is Soc.A1 and per_card and max(per_card.values()) >= 2:
        return Soc.A3
    return by_name


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
        entries = [(i, None, None, ASCEND.device_name(d)) for i, d in enumerate(pci_devices)]
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
            numa, nsrc = placed_by_affinity(aff, src, nodes)
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


def read(inp: VendorInput) -> VendorReading:
    """npu-smi's info, map and topo texts joined with the PCI bus and the NUMA nodes."""
    from ascendtune.core.parsers import npu_smi

    notes: list[str] = []
    info_text, map_text, topo_text = (
        inp.text(NPU_SMI_INFO),
        inp.text(NPU_SMI_MAP),
        inp.text(NPU_SMI_TOPO),
    )
    info = npu_smi.parse_info(info_text) if info_text else None
    chips = npu_smi.parse_info_m(map_text) if map_text else ()
    topo = npu_smi.parse_topo(topo_text) if topo_text else None
    if topo is not None and topo.by_phy_id:
        topo = phy_to_logical(topo, chips, notes)
    pci = list(inp.pci)
    npus = build_npus(info, chips, topo, pci, inp.nodes, notes)
    if not (info_text or map_text or topo_text) and pci:
        notes.append(
            (
                "npu-smi gave no usable output"
                if inp.tool_found
                else "no Ascend driver tools found (npu-smi)"
            )
            + "; NPUs shown from the PCI bus only, with logical ids in bus order"
        )
    soc = detect_soc(npus, chips, pci)
    if npus and soc in (None, Soc.UNKNOWN):
        soc = inp.runtime_soc() or soc
    return VendorReading(
        accelerators=tuple(npus),
        links={a: dict(row) for a, row in topo.links.items()} if topo is not None else {},
        processes=info.processes if info else (),
        notes=tuple(notes),
        soc=soc,
        tool_version=info.version if info else None,
        topo_supported=None if topo is None else topo.supported,
        map_rows=positional_rows(map_text) if map_text and chips else (),
        procs_by_chip=info.procs_by_chip if info else None,
    )


def positional_rows(text: str) -> tuple[tuple[str, ...], ...]:
    """`npu-smi info -m` as the releases up to 0.21.0rc1 read it: the text stripped and cut
    into lines, the first (the header) dropped, each other line split on white space."""
    return tuple(tuple(line.split()) for line in text.strip().split("\n")[1:])


def _topo_header(host: Host) -> str | None:
    return f"npu-smi {host.tools.get('npu-smi') or '?'}" if "npu-smi" in host.tools else None


def _logical_of_davinci(host: Host, n: int) -> int:
    """/dev/davinciN numbers the card (npu-smi's NPU id): its logical id when it holds one chip."""
    on_card = [a for a in host.npus if a.npu_id == n]
    return on_card[0].logical_id if len(on_card) == 1 else n


ASCEND = VendorProfile(
    vendor=Vendor.HUAWEI,
    word="NPU",
    tool="npu-smi",
    pci_vendor_id=PCI_VENDOR,
    pci_class_prefix="0x12",  # processing accelerators
    device_names=DEVICE_NAMES,
    generic_name="Ascend NPU",
    known_ids_only=True,
    not_accelerators=frozenset(),
    device_file="davinci",  # davinci_manager is a shared control node, not a device
    visible_devices_env="ASCEND_RT_VISIBLE_DEVICES",
    commands=(NPU_SMI_INFO, NPU_SMI_MAP, NPU_SMI_TOPO),
    documents=(),
    processes_from="npu-smi",
    thread_roles=True,
    default_policy="vllm-ascend",  # what will happen
    # vLLM-Ascend's own plan and ours; torchrun's modes are for GPU users' habits: plannable on
    # NPUs, left out of the comparison
    compare_families=("runtime", "ascendtune"),
    card_columns=True,
    merge_device_notes=False,
    cpuless_node_note="vLLM-Ascend's next-node rule skips them",
    read=read,
    soc_of=lambda host: host.soc,
    logical_of_device_file=_logical_of_davinci,
    maker="Huawei",
    links={
        "HCCS": LinkCode("Huawei Cache Coherence System, the NPU-to-NPU link", "HC"),
        "HCCS_SW": LinkCode("HCCS through the HCCS switch", "HW"),
        "SIO": LinkCode("the die-to-die link between the two chips of one card", "SI"),
        "UB": LinkCode("the unified bus", "UB"),
        **PCIE_LINKS,
    },
    tool_check=ToolCheck(
        fix="# install the Ascend driver; in a container add "
        "-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi -v /usr/local/dcmi:/usr/local/dcmi "
        "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/",
        missing="vLLM-Ascend cannot read the NPU map and binds nothing",
    ),
    tool_version=True,
    topo_header=_topo_header,
)
