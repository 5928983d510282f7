"""What an accelerator vendor is to ascendtune: one frozen VendorProfile, and the joins it shares.

A profile names the commands to run, how to read their text (with the parsers of
ascendtune.core.parsers) and join it with the PCI bus and the NUMA nodes into Accelerators, its
PCI ids, its device files, its visible-devices variable and its device word. Everything here is
pure: the host layer runs the commands and hands their text in.
"""

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.model import (
    Accelerator,
    AccelProcess,
    Host,
    NumaNode,
    PciDevice,
    Soc,
    Source,
    Vendor,
)


class Command(NamedTuple):
    """A program to run (or replay from commands/), and where it lives when PATH lacks it."""

    argv: tuple[str, ...]
    fallbacks: tuple[str, ...] = ()
    # it prints links and CPU affinity only, nothing a device or a worker is known by: a read
    # for worker discovery alone leaves it out (host.reader.read_host(workers_only=True))
    links_only: bool = False

    @property
    def tool(self) -> str:
        return self.argv[0]


class VendorInput(NamedTuple):
    """What the host layer read for one vendor; `texts[argv]` is None when the tool was absent
    or failed (a failure is a note the host already wrote, never text to parse)."""

    texts: Mapping[tuple[str, ...], str | None]
    pci: tuple[PciDevice, ...]  # this vendor's devices, ascending bus id
    nodes: tuple[NumaNode, ...]
    allowed: CpuSet
    tool_found: bool = False  # the vendor's tool ran at all (even if it failed)
    documents: Mapping[str, Mapping[str, Any] | None] = MappingProxyType({})
    # asked only when the tool's names do not tell the SoC family (torch_npu on a live host)
    runtime_soc: Callable[[], Soc | None] = lambda: None

    def text(self, command: Command) -> str | None:
        return self.texts.get(command.argv)


class VendorReading(NamedTuple):
    """One vendor's part of the Host."""

    accelerators: tuple[Accelerator, ...] = ()
    links: Mapping[int, Mapping[int, str]] = MappingProxyType({})
    processes: tuple[AccelProcess, ...] = ()
    notes: tuple[str, ...] = ()
    soc: Soc | None = None
    tool_version: str | None = None
    topo_supported: bool | None = None
    map_rows: tuple[tuple[str, ...], ...] = ()  # Host.npu_map_rows
    procs_by_chip: bool | None = None  # Host.npu_procs_by_chip


class LinkCode(NamedTuple):
    """A link type of the vendor tool's topology matrix: what it means, and its two-letter form
    for a matrix too wide for the terminal. A `#` in a code stands for a number (NV#: NV4)."""

    about: str
    short: str


# the PCIe and CPU-interconnect codes both npu-smi and nvidia-smi print
PCIE_LINKS: Mapping[str, LinkCode] = MappingProxyType(
    {
        "PIX": LinkCode("at most one PCIe bridge", "PX"),
        "PXB": LinkCode("several PCIe bridges, no host bridge", "PB"),
        "PHB": LinkCode("a PCIe host bridge (the CPU)", "PH"),
        "NODE": LinkCode("PCIe host bridges within one NUMA node", "ND"),
        "SYS": LinkCode("the CPU interconnect between NUMA nodes", "SY"),
    }
)


class ToolCheck(NamedTuple):
    """doctor's row for the vendor's tool (id: the tool's name with `_` for `-`)."""

    fix: str  # how to get the tool
    missing: str  # what goes wrong when the devices are there and the tool is not


class VendorProfile(NamedTuple):
    """Everything vendor-specific, in one place per vendor (ascend.py, nvidia.py)."""

    vendor: Vendor
    word: str  # what one device is called in messages: "NPU", "GPU"
    tool: str  # the vendor's driver tool: "npu-smi", "nvidia-smi"
    pci_vendor_id: str  # sysfs `vendor`, lower case: "0x19e5"
    pci_class_prefix: str  # sysfs `class` of its accelerators: "0x12" (processing accelerator)
    device_names: Mapping[str, str]  # sysfs `device` -> a name to show when the tool gives none
    generic_name: str  # the name of a device nobody named
    # Without a `class` file: True accepts only device_names' ids (the vendor also makes NICs),
    # False accepts every id but not_accelerators (NVSwitches)
    known_ids_only: bool
    not_accelerators: frozenset[str]
    device_file: str  # /dev/<device_file>N is one device a worker holds open
    visible_devices_env: str  # the runtime's visible-devices variable
    commands: tuple[Command, ...]  # run in this order, each once
    # JSON the host layer gets from a library on a live host and a snapshot stores under this path
    documents: tuple[str, ...]
    processes_from: str  # how found_by names the tool that listed the device's processes
    thread_roles: bool  # the runtime splits a rank's CPUs into IRQ / main / acl / release
    # what the front end shows differently per vendor (cli/ still decides these itself)
    default_policy: str  # the plan policy `auto` stands for
    card_columns: bool  # npu_id / chip_id say more than logical_id (topo's npu and chip columns)
    merge_device_notes: bool  # topo merges notes differing only in the device ("GPU 0-3: ...")
    cpuless_node_note: str  # why NUMA nodes without CPUs do not matter here
    read: Callable[[VendorInput], VendorReading]  # join the tools' texts, PCI and NUMA
    soc_of: Callable[[Host], Soc]  # the family the planner plans for
    # /dev/<device_file>N -> logical id (best effort: N is what the driver numbers)
    logical_of_device_file: Callable[[Host, int], int] = lambda host, n: n
    # the policy families (core.policies) `plan --policy compare` sets side by side here
    compare_families: tuple[str, ...] = ("ascendtune",)
    maker: str = ""  # who makes the devices: "Huawei", "NVIDIA"
    links: Mapping[str, LinkCode] = PCIE_LINKS  # the link codes its tool prints, legend order
    tool_check: ToolCheck | None = None  # doctor checks the tool is there
    tool_version: bool = False  # the tool prints its version (topo shows it)
    # what topo's first line says of the vendor's tool on this host (None: nothing)
    topo_header: Callable[[Host], str | None] = lambda host: None

    def is_accelerator(self, device_id: str, pci_class: str | None) -> bool:
        cls = (pci_class or "").lower()
        if cls:
            return cls.startswith(self.pci_class_prefix)
        if self.known_ids_only:
            return device_id.lower() in self.device_names
        return device_id.lower() not in self.not_accelerators

    def device_name(self, dev: PciDevice | None) -> str:
        return self.device_names.get(dev.device_id, self.generic_name) if dev else self.generic_name

    def accelerators(self, host: Host) -> tuple[Accelerator, ...]:
        return tuple(a for a in host.accelerators if a.vendor is self.vendor)

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.tool for c in self.commands))

    def fallbacks(self, tool: str) -> tuple[str, ...]:
        return next((c.fallbacks for c in self.commands if c.tool == tool and c.fallbacks), ())

    @property
    def tool_key(self) -> str:
        """The tool's name as a JSON key or check id: npu_smi."""
        return self.tool.replace("-", "_")

    def link_key(self, code: str) -> str | None:
        """The legend entry of a link code (NV4 -> NV#), None for a code it does not know."""
        if code in self.links:
            return code
        for key in self.links:
            head, sep, tail = key.partition("#")
            number = code[len(head) : len(code) - len(tail)] if sep else ""
            if sep and code.startswith(head) and code.endswith(tail) and number.isdigit():
                return key
        return None

    def link_short(self, code: str) -> str:
        """The two-letter form of a link code (NV4 -> N4), the code itself when it has none."""
        key = self.link_key(code)
        if key is None:
            return code
        if "#" in key:
            head, _, tail = key.partition("#")
            return self.links[key].short.replace("#", code[len(head) : len(code) - len(tail)])
        return self.links[key].short

    def tool_document(self, host: Host) -> dict[str, Any]:
        """topo --json's record of the tool: found, and the version where it prints one."""
        doc: dict[str, Any] = {"found": self.tool in host.tools}
        if self.tool_version:
            doc["version"] = host.tools.get(self.tool)
        return doc

    def device_file_number(self, path: str) -> int | None:
        m = re.fullmatch(rf"/dev/{re.escape(self.device_file)}(\d+)", path)
        return int(m.group(1)) if m else None


def single_node(cpus: CpuSet, nodes: tuple[NumaNode, ...]) -> int | None:
    """The one NUMA node cpus lie on, or None when they span several (or none)."""
    hit = {n.id for n in nodes if n.cpus & cpus}
    return hit.pop() if len(hit) == 1 else None


def node_guessed(node: int | None, nodes: tuple[NumaNode, ...]) -> bool:
    """True when node is the single node assumed for a host without NUMA node files."""
    return any(n.id == node and n.guessed for n in nodes)


def placed_by_affinity(
    cpus: CpuSet, src: Source | None, nodes: tuple[NumaNode, ...]
) -> tuple[int | None, Source | None]:
    """The node a device's affinity lies on, sourced as its affinity, or as a guess when the
    node itself is the one assumed for a host without NUMA node files."""
    numa = single_node(cpus, nodes) if cpus else None
    if numa is None:
        return None, None
    return numa, Source.GUESS if node_guessed(numa, nodes) else src


def links_json(links: Mapping[int, Mapping[int, str]]) -> dict[str, dict[str, str]]:
    return {str(a): {str(b): t for b, t in sorted(row.items())} for a, row in sorted(links.items())}
