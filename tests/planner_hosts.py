"""Hosts for the planner tests: npu-smi text in its real formats, sysroot scenarios built once
per session (the `hosts` fixture), and Host objects built in memory for property tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.model import Accelerator, Cpu, Host, NumaNode, Source, Vendor
from ascendtune.host.reader import read_host
from ascendtune.host.sysroot import DirRoot
from tests.builder import SysrootBuilder

# ---------------------------------------------------------------- npu-smi text


@dataclass(frozen=True)
class Chip:
    """One logical NPU as npu-smi prints it."""

    logical: int
    npu_id: int
    chip_id: int
    name: str  # "910B3", "310P3", "Ascend910", "Ascend950DT"
    bus: str  # "0000:C1:00.0"
    affinity: str | None  # the topo "CPU Affinity" cell (None: no cell)


_RULE = "+===========================+===============+====================================================+"


def info_text(chips: Sequence[Chip], *, second_col: str | None = None) -> str:
    """`npu-smi info`: second_col None (A2), "Device" (310P) or "Phy-ID" (A3)."""
    head2 = "Chip" if second_col is None else f"Chip  {second_col}"
    lines = [
        "+------------------------------------------------------------------------------------------------+",
        "| npu-smi 24.1.rc1.b030            Version: 24.1.rc1.b030                                        |",
        "+---------------------------+---------------+----------------------------------------------------+",
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        f"| {head2:<26}| Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
        _RULE,
    ]
    for c in chips:
        second = f"{c.chip_id}" if second_col is None else f"{c.chip_id}     {c.logical}"
        lines.append(
            f"| {c.npu_id:<6}{c.name:<20}| OK            | 101.8       43                0    / 0             |"
        )
        lines.append(
            f"| {second:<26}| {c.bus:<14}| 0           0    / 0          3318 / 65536         |"
        )
        lines.append(_RULE)
    return "\n".join(lines) + "\n"


def info_m_text(chips: Sequence[Chip], *, logic_col: bool = True, phy_col: bool = False) -> str:
    """`npu-smi info -m`, tab-led and padded as npu-smi prints it, one Mcu row per card."""
    cols = ["NPU ID", "Chip ID"]
    if logic_col:
        cols.append("Chip Logic ID")
    if phy_col:
        cols.append("Chip Phy-ID")
    cols.append("Chip Name")

    def row(cells: list[str]) -> str:
        return "\t" + "".join(f"{c:<31}" for c in cells[:-1]) + cells[-1]

    lines = [row(cols)]
    cards: dict[int, list[Chip]] = {}
    for c in chips:
        cards.setdefault(c.npu_id, []).append(c)
    for npu_id, members in cards.items():
        for c in members:
            cells = [str(npu_id), str(c.chip_id)]
            if logic_col:
                cells.append(str(c.logical))
            if phy_col:
                cells.append(str(c.logical))
            cells.append(c.name if c.name.startswith("Ascend") else f"Ascend {c.name}")
            lines.append(row(cells))
        if logic_col:
            mcu = [str(npu_id), str(max(m.chip_id for m in members) + 1), "-"]
            if phy_col:
                mcu.append("-")
            lines.append(row([*mcu, "Mcu"]))
    return "\n".join(lines) + "\n"


def topo_text(chips: Sequence[Chip], *, link: str = "HCCS") -> str:
    """`npu-smi info -t topo`: the link matrix with a CPU Affinity column (if any chip has one)."""
    ids = [c.logical for c in sorted(chips, key=lambda c: c.logical)]
    with_aff = any(c.affinity is not None for c in chips)
    head = "".join(f"{'NPU' + str(i):<11}" for i in ids)
    lines = ["\t   " + head + ("CPU Affinity" if with_aff else "").rstrip()]
    by_id = {c.logical: c for c in chips}
    for i in ids:
        cells = "".join(f"{'X' if j == i else link:<11}" for j in ids)
        aff = by_id[i].affinity or ""
        lines.append(f"{'NPU' + str(i):<11}{cells}{aff}".rstrip())
    lines += ["", "Legend:", "", "  X    = Self", f"  {link:<4} = Connection traversing HCCS."]
    return "\n".join(lines) + "\n"


TOPO_UNSUPPORTED = "This device does not support querying topo.\n"


def write_npus(
    sb: SysrootBuilder,
    chips: Sequence[Chip],
    *,
    second_col: str | None = None,
    map_file: bool = True,
    logic_col: bool = True,
    phy_col: bool = False,
    topo: str | None = None,
) -> SysrootBuilder:
    sb.command("npu-smi_info", info_text(chips, second_col=second_col))
    if map_file:
        sb.command("npu-smi_info_-m", info_m_text(chips, logic_col=logic_col, phy_col=phy_col))
    sb.command("npu-smi_info_-t_topo", topo if topo is not None else topo_text(chips))
    return sb


def smt_adjacent(sb: SysrootBuilder, cpus: Iterable[int], *, cores_per_socket: int) -> None:
    """Topology where CPUs 2k and 2k+1 are one core's two threads (the builder does upper-half).
    core_id is left out: the reader then numbers cores by CPU, which the planner never reads."""
    for c in cpus:
        base = f"sys/devices/system/cpu/cpu{c}/topology/"
        sb.file(base + "physical_package_id", f"{(c // 2) // cores_per_socket}\n")
        sb.file(base + "thread_siblings_list", f"{c - c % 2}-{c - c % 2 + 1}\n")


# ---------------------------------------------------------------- the scenarios

# 8x 910B3 (Atlas 800I A2), bus ids and affinity as in the real `npu-smi info -t topo`: the
# pairs sit on nodes 6, 4, 0, 2 of an 8-node, 192-CPU Kunpeng 920 host.
A2_AFFINITY = ["144-167", "144-167", "96-119", "96-119", "0-23", "0-23", "48-71", "48-71"]
A2_BUS = [
    "0000:C1:00.0",
    "0000:C2:00.0",
    "0000:81:00.0",
    "0000:82:00.0",
    "0000:01:00.0",
    "0000:02:00.0",
    "0000:41:00.0",
    "0000:42:00.0",
]
# 910B1 whose pairs are not adjacent ids: NPU0/2 share 144-167, NPU1/3 0-23, ...
A2_NONMONOTONIC = ["144-167", "0-23", "144-167", "0-23", "96-119", "48-71", "96-119", "48-71"]


def a2_chips(affinity: Sequence[str | None] = A2_AFFINITY, name: str = "910B3") -> list[Chip]:
    return [Chip(i, i, 0, name, A2_BUS[i], a) for i, a in enumerate(affinity)]


def a2_host(
    sb: SysrootBuilder,
    *,
    allowed: str | None = "0-191",
    affinity: Sequence[str | None] = A2_AFFINITY,
    name: str = "910B3",
    online: str = "0-191",
    present: str | None = None,
    topo: str | None = None,
    arch: str = "aarch64",
) -> SysrootBuilder:
    # no topology files: each CPU is its own core on one socket (SPEC.md section 2), as here
    sb.cpus(online, present=present, topology=False).nodes_even(8, 24)
    sb.meta(hostname="a2", arch=arch)
    if allowed is not None:
        sb.allowed(allowed, "0-7")
    return write_npus(sb, a2_chips(affinity, name), topo=topo)


def a2_16_host(sb: SysrootBuilder) -> SysrootBuilder:
    """16 910B NPUs on 8 nodes of 24 CPUs: NPUs 2n and 2n+1 hang off node n."""
    chips = [
        Chip(
            i,
            i,
            0,
            "910B2C",
            f"0000:{i + 1:02x}:00.0",
            format_cpulist(range(i // 2 * 24, i // 2 * 24 + 24)),
        )
        for i in range(16)
    ]
    sb.cpus("0-191", topology=False).nodes_even(8, 24).allowed("0-191", "0-7")
    sb.meta(arch="aarch64")
    return write_npus(sb, chips)


def a3_host(sb: SysrootBuilder, *, allowed: str = "0-255") -> SysrootBuilder:
    """Atlas 800I A3: 8 cards x 2 dies = 16 logical NPUs named `Ascend910`, 4 nodes of 32 cores
    with SMT (threads 2k, 2k+1 are one core); 4 logical NPUs per node."""
    sb.cpus("0-255", topology=False).nodes_even(4, 64).allowed(allowed, "0-3").meta(arch="aarch64")
    smt_adjacent(sb, range(256), cores_per_socket=32)
    chips = [
        Chip(
            i,
            i // 2,
            i % 2,
            "Ascend910",
            f"0000:{0x9D - 2 * i:02X}:00.0",
            format_cpulist(range(i // 4 * 64, i // 4 * 64 + 64)),
        )
        for i in range(16)
    ]
    return write_npus(sb, chips, second_col="Phy-ID", phy_col=True)


def p310_duo_host(sb: SysrootBuilder) -> SysrootBuilder:
    """Atlas 300I Duo x4 (two 310P3 chips per card), 4 nodes of 48: cards 1,2 on node 0 and
    cards 4,8 on node 2; both chips of a card share its bus id and affinity."""
    sb.cpus("0-191", topology=False).nodes_even(4, 48).allowed("0-191", "0-3")
    sb.meta(arch="aarch64")
    cards = [(1, "0000:01:00.0", "0-47"), (2, "0000:41:00.0", "0-47")]
    cards += [(4, "0000:81:00.0", "96-143"), (8, "0000:C1:00.0", "96-143")]
    chips = [
        Chip(2 * k + chip, npu, chip, "310P3", bus, aff)
        for k, (npu, bus, aff) in enumerate(cards)
        for chip in (0, 1)
    ]
    return write_npus(sb, chips, second_col="Device")


A5_AFFINITY = ["288-383", "288-383", "96-191", "96-191", "96-191", "96-191", "288-383", "288-383"]


def a5_host(
    sb: SysrootBuilder, *, allowed: str = "0-383", affinity: Sequence[str | None] = A5_AFFINITY
) -> SysrootBuilder:
    """Ascend 950 (the vLLM-Ascend unit test's layout): 384 CPUs with SMT 2 on 4 nodes of 96;
    NPUs 0,1,6,7 on node 3 (288-383), NPUs 2-5 on node 1 (96-191)."""
    sb.cpus("0-383", topology=False).nodes_even(4, 96).allowed(allowed, "0-3")
    sb.meta(arch="aarch64")
    smt_adjacent(sb, range(384), cores_per_socket=96)
    chips = [
        Chip(i, i, 0, "Ascend950DT", f"0000:{i + 1:02x}:00.0", a) for i, a in enumerate(affinity)
    ]
    return write_npus(sb, chips, logic_col=False, phy_col=True)


def cpuless_host(sb: SysrootBuilder, affinity: Sequence[str]) -> SysrootBuilder:
    """Nodes 0, 1, 3 hold 24 CPUs each; node 2 has memory but no CPU (a CXL or HBM node)."""
    sb.cpus("0-71", topology=False).meta(arch="aarch64").allowed("0-71", "0-3")
    sb.node(0, "0-23").node(1, "24-47").node(2, []).node(3, "48-71")
    chips = [Chip(i, i, 0, "910B3", f"0000:{i + 1:02x}:00.0", a) for i, a in enumerate(affinity)]
    return write_npus(sb, chips)


def _a2_sysfs(sb: SysrootBuilder) -> None:
    """No topology from npu-smi, but sysfs knows each NPU's node."""
    a2_host(sb, topo=TOPO_UNSUPPORTED)
    for i, bus in enumerate(A2_BUS):
        node = [6, 6, 4, 4, 0, 0, 2, 2][i]
        sb.pci(bus, numa_node=node, local_cpulist=f"{node * 24}-{node * 24 + 23}")


# Every sysroot host the planner tests read, by name. Each is built once per session.
HOSTS: dict[str, Callable[[SysrootBuilder], object]] = {
    "a2": a2_host,
    "a2-x86": lambda sb: a2_host(sb, arch="x86_64"),
    "a2-pair": lambda sb: a2_host(sb, allowed="144-191"),
    "a2-small": lambda sb: a2_host(sb, allowed="144-151"),
    "a2-disjoint": lambda sb: a2_host(sb, allowed="0-23"),
    "a2-offline": lambda sb: a2_host(sb, online="0-4,6-191", present="0-191"),
    "a2-notopo": lambda sb: a2_host(sb, topo=TOPO_UNSUPPORTED),
    "a2-notopo-sysfs": _a2_sysfs,
    "b1": lambda sb: a2_host(sb, affinity=A2_NONMONOTONIC, name="910B1"),
    "b1-pair": lambda sb: a2_host(sb, affinity=A2_NONMONOTONIC, allowed="144-191"),
    "a2x16": a2_16_host,
    "a3": a3_host,
    "a3-half": lambda sb: a3_host(sb, allowed="0-127"),
    "a3-small": lambda sb: a3_host(sb, allowed="0-63"),
    "310p": p310_duo_host,
    "cpuless": lambda sb: cpuless_host(sb, ["24-47", "48-71"]),
    "cpuless-swapped": lambda sb: cpuless_host(sb, ["48-71", "24-47"]),
    "a5": a5_host,
    "a5-node0": lambda sb: a5_host(sb, affinity=["0-95", "288-383"]),
    "a5-noaff": lambda sb: a5_host(sb, affinity=[None, None]),
}


class Hosts:
    """Sysroots of a host table (HOSTS by default), built on first use under one session
    folder, and their Host models."""

    def __init__(
        self, base: Path, table: Mapping[str, Callable[[SysrootBuilder], object]] | None = None
    ) -> None:
        self.base = base
        self.table = HOSTS if table is None else table
        self._hosts: dict[str, Host] = {}

    def root(self, name: str) -> str:
        path = self.base / name
        if not path.exists():
            self.table[name](SysrootBuilder(path))
        return str(path)

    def host(self, name: str) -> Host:
        if name not in self._hosts:
            self._hosts[name] = read_host(DirRoot(Path(self.root(name))))
        return self._hosts[name]


@pytest.fixture(scope="session", name="hosts")
def hosts_fixture(tmp_path_factory: pytest.TempPathFactory) -> Hosts:
    return Hosts(tmp_path_factory.mktemp("planner-hosts"))


# ---------------------------------------------------------------- hosts built in memory


def memory_host(
    node_cpus: Sequence[Sequence[int]],
    *,
    smt: int = 1,
    allowed: CpuSet | None = None,
    npu_nodes: Sequence[int | None] = (),
    name: str = "910B3",
    with_affinity: bool = True,
    offline: CpuSet = frozenset(),
) -> Host:
    """A Host without a sysroot: node i holds node_cpus[i] (an empty list is a CPU-less node);
    with smt=k, each node's CPUs are cut into consecutive groups of k siblings. NPU i hangs off
    node npu_nodes[i] (None: unknown) with that node's CPUs as its affinity."""
    cpus: dict[int, Cpu] = {}
    nodes: list[NumaNode] = []
    for nid, members in enumerate(node_cpus):
        ordered = sorted(set(members) - offline)
        for k in range(0, len(ordered), smt):
            group = frozenset(ordered[k : k + smt])
            for c in group:
                cpus[c] = Cpu(c, socket=nid // 2, core=ordered[k], siblings=group, node=nid)
        nodes.append(NumaNode(nid, frozenset(ordered), 65536))
    online = frozenset(cpus)
    npus = []
    for i, node in enumerate(npu_nodes):
        aff = nodes[node].cpus if node is not None else frozenset()
        npus.append(
            Accelerator(
                vendor=Vendor.HUAWEI,
                logical_id=i,
                npu_id=i,
                chip_id=0,
                name=name,
                bus_id=f"0000:{i + 1:02x}:00.0",
                numa_node=node,
                cpu_affinity=aff,
                affinity_source=Source.NPU_SMI if node is not None else None,
                tool_affinity=aff if with_affinity and node is not None else None,
            )
        )
    return Host(
        cpus_online=online,
        cpus=cpus,
        cpus_allowed=(allowed & online) if allowed is not None else online,
        mems_allowed=None,
        numa_nodes=tuple(nodes),
        accelerators=tuple(npus),
        cpus_present=online | offline,
        arch="aarch64",
    )
