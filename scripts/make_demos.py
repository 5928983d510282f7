"""Generate the demo hosts shipped in ascendtune/demos/: one captured sysroot (SPEC.md section 2) each.

Run `python scripts/make_demos.py` after changing a host below; `--check` only verifies that the
committed archives are what this script writes. Output is deterministic: members sorted, mtime 0,
uid/gid 0, gzip mtime 0, so two runs give identical bytes (with the same zlib).

The tool outputs (npu-smi, nvidia-smi) are written with the column layouts and format strings of
the real tools; the numbers (power, temperature, memory use, PIDs) are made up.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python scripts/make_demos.py` from a checkout
    sys.path.insert(0, str(REPO))

from ascendtune.core.cpulist import format_cpulist  # noqa: E402
from ascendtune.host.demos import DEMOS  # noqa: E402

DEMO_DIR = REPO / "ascendtune" / "demos"


# --------------------------------------------------------------------------------------------
# A sysroot under construction


class Tree:
    """Files and symlinks of one sysroot, by path relative to its root."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.links: dict[str, str] = {}

    def file(self, rel: str, text: str) -> None:
        self.files[rel] = text

    def link(self, rel: str, target: str) -> None:
        self.links[rel] = target


def cpulist(cpus: Iterable[int]) -> str:
    return format_cpulist(cpus)


def bitmap(members: Iterable[int], nbits: int) -> str:
    """A kernel %*pb bitmap: 32-bit hex groups, most significant first, the first one trimmed."""
    value = 0
    for m in members:
        value |= 1 << m
    groups = []
    for g in range((nbits + 31) // 32):
        groups.append((value >> (32 * g)) & 0xFFFFFFFF)
    groups.reverse()
    first_digits = ((nbits - 1) % 32) // 4 + 1
    out = [f"{groups[0]:0{first_digits}x}"] + [f"{v:08x}" for v in groups[1:]]
    return ",".join(out)


def add_cpus(
    t: Tree,
    n: int,
    *,
    siblings: Callable[[int], list[int]],
    package: Callable[[int], int],
    core: Callable[[int], int],
    governor: str,
    l3: Callable[[int], list[int]] | None = None,
) -> None:
    allc = range(n)
    for name in ("online", "possible", "present"):
        t.file(f"sys/devices/system/cpu/{name}", cpulist(allc) + "\n")
    for c in allc:
        base = f"sys/devices/system/cpu/cpu{c}/"
        t.file(base + "topology/physical_package_id", f"{package(c)}\n")
        t.file(base + "topology/core_id", f"{core(c)}\n")
        t.file(base + "topology/thread_siblings_list", cpulist(siblings(c)) + "\n")
        t.file(base + "cpufreq/scaling_governor", governor + "\n")
        if l3 is not None:  # the last-level cache, as sysfs describes it (index3 = unified L3)
            t.file(base + "cache/index3/level", "3\n")
            t.file(base + "cache/index3/type", "Unified\n")
            t.file(base + "cache/index3/shared_cpu_list", cpulist(l3(c)) + "\n")


def add_nodes(t: Tree, nodes: dict[int, list[int]], mem_kb: dict[int, int]) -> None:
    ids = sorted(nodes)
    for name in ("online", "possible", "has_cpu", "has_memory"):
        t.file(f"sys/devices/system/node/{name}", cpulist(ids) + "\n")
    for nid in ids:
        base = f"sys/devices/system/node/node{nid}/"
        t.file(base + "cpulist", cpulist(nodes[nid]) + "\n")
        total = mem_kb[nid]
        free = total - total // 9 - 1_048_576 * (nid % 3)
        used = total - free
        t.file(
            base + "meminfo",
            f"Node {nid} MemTotal:       {total:8d} kB\n"
            f"Node {nid} MemFree:        {free:8d} kB\n"
            f"Node {nid} MemUsed:        {used:8d} kB\n"
            f"Node {nid} HugePages_Total:     0\n"
            f"Node {nid} HugePages_Free:      0\n"
            f"Node {nid} HugePages_Surp:      0\n",
        )


def add_knobs(
    t: Tree,
    *,
    numa_balancing: int,
    swappiness: int,
    migration_cost_ns: int | None,
    thp: str,
    thp_defrag: str,
) -> None:
    t.file("proc/sys/kernel/numa_balancing", f"{numa_balancing}\n")
    t.file("proc/sys/vm/swappiness", f"{swappiness}\n")
    # Kernels from 5.13 on moved this knob to debugfs; there it is simply absent.
    if migration_cost_ns is not None:
        t.file("proc/sys/kernel/sched_migration_cost_ns", f"{migration_cost_ns}\n")
    t.file("sys/kernel/mm/transparent_hugepage/enabled", thp + "\n")
    t.file("sys/kernel/mm/transparent_hugepage/defrag", thp_defrag + "\n")


def add_pci(
    t: Tree,
    bdf: str,
    *,
    vendor: str,
    device: str,
    pci_class: str,
    numa_node: int,
    local_cpus: Iterable[int],
    nr_cpus: int,
    driver: str | None = None,
) -> None:
    base = f"sys/bus/pci/devices/{bdf.lower()}/"
    cpus = list(local_cpus)
    t.file(base + "vendor", vendor + "\n")
    t.file(base + "device", device + "\n")
    t.file(base + "class", pci_class + "\n")
    t.file(base + "numa_node", f"{numa_node}\n")
    t.file(base + "local_cpulist", cpulist(cpus) + "\n")
    t.file(base + "local_cpus", bitmap(cpus, nr_cpus) + "\n")
    if driver:
        t.link(base + "driver", f"../../../../bus/pci/drivers/{driver}")


HOST_CAPS = "000001ffffffffff"  # every capability of a 5.10/5.15 kernel (41 of them): root
DOCKER_CAPS = "00000000a80425fb"  # Docker's default set: no CAP_SYS_NICE, no CAP_SYS_ADMIN


def status_text(
    *,
    name: str,
    pid: int,
    tgid: int,
    ppid: int,
    threads: int,
    cpus: Iterable[int],
    mems: Iterable[int],
    nr_cpus: int,
    nr_nodes: int,
    caps: str = HOST_CAPS,
    seccomp: int = 0,
    state: str = "S (sleeping)",
    vm_rss_kb: int = 0,
) -> str:
    cpus, mems = list(cpus), list(mems)
    return (
        f"Name:\t{name}\n"
        "Umask:\t0022\n"
        f"State:\t{state}\n"
        f"Tgid:\t{tgid}\n"
        "Ngid:\t0\n"
        f"Pid:\t{pid}\n"
        f"PPid:\t{ppid}\n"
        "TracerPid:\t0\n"
        "Uid:\t0\t0\t0\t0\n"
        "Gid:\t0\t0\t0\t0\n"
        "FDSize:\t256\n"
        "Groups:\t0 \n"
        f"NStgid:\t{tgid}\n"
        f"NSpid:\t{pid}\n"
        f"VmRSS:\t{vm_rss_kb:8d} kB\n"
        f"Threads:\t{threads}\n"
        "CapInh:\t0000000000000000\n"
        f"CapPrm:\t{caps}\n"
        f"CapEff:\t{caps}\n"
        f"CapBnd:\t{caps}\n"
        "CapAmb:\t0000000000000000\n"
        "NoNewPrivs:\t0\n"
        f"Seccomp:\t{seccomp}\n"
        f"Cpus_allowed:\t{bitmap(cpus, nr_cpus)}\n"
        f"Cpus_allowed_list:\t{cpulist(cpus)}\n"
        f"Mems_allowed:\t{bitmap(mems, nr_nodes)}\n"
        f"Mems_allowed_list:\t{cpulist(mems)}\n"
        "voluntary_ctxt_switches:\t12\n"
        "nonvoluntary_ctxt_switches:\t3\n"
    )


def add_self(
    t: Tree,
    *,
    cpus: Iterable[int],
    mems: Iterable[int],
    nr_cpus: int,
    nr_nodes: int,
    cgroup: str,
    caps: str = HOST_CAPS,
    seccomp: int = 0,
) -> None:
    """The reading process itself (`ascendtune`), its cgroup and that cgroup's cpuset."""
    cpus, mems = list(cpus), list(mems)
    t.file(
        "proc/self/status",
        status_text(
            name="ascendtune",
            pid=52117,
            tgid=52117,
            ppid=51980,
            threads=1,
            cpus=cpus,
            mems=mems,
            nr_cpus=nr_cpus,
            nr_nodes=nr_nodes,
            caps=caps,
            seccomp=seccomp,
            state="R (running)",
            vm_rss_kb=41_216,
        ),
    )
    t.file("proc/self/cgroup", f"0::{cgroup}\n")
    t.file("sys/fs/cgroup/cpuset.cpus.effective", cpulist(cpus) + "\n")
    t.file("sys/fs/cgroup/cpuset.mems.effective", cpulist(mems) + "\n")


def add_process(
    t: Tree,
    pid: int,
    *,
    comm: str,
    cmdline: list[str],
    ppid: int,
    threads: list[tuple[int, str, list[int]]],
    mems: Iterable[int],
    nr_cpus: int,
    nr_nodes: int,
    fds: dict[int, str] | None = None,
    caps: str = HOST_CAPS,
    seccomp: int = 0,
    vm_rss_kb: int = 0,
) -> None:
    """A process: threads are (tid, comm, Cpus_allowed); the first one is the main thread."""
    mems = list(mems)
    base = f"proc/{pid}/"
    main_cpus = threads[0][2]
    t.file(base + "comm", comm + "\n")
    t.file(base + "cmdline", "\0".join(cmdline) + "\0")

    def status(name: str, tid: int, cpus: list[int]) -> str:
        return status_text(
            name=name,
            pid=tid,
            tgid=pid,
            ppid=ppid,
            threads=len(threads),
            cpus=cpus,
            mems=mems,
            nr_cpus=nr_cpus,
            nr_nodes=nr_nodes,
            caps=caps,
            seccomp=seccomp,
            vm_rss_kb=vm_rss_kb,
        )

    t.file(base + "status", status(comm, pid, main_cpus))
    for tid, name, cpus in threads:
        tb = f"{base}task/{tid}/"
        t.file(tb + "comm", name + "\n")
        t.file(tb + "status", status(name, tid, cpus))
    for fd, target in (fds or {}).items():
        t.link(f"{base}fd/{fd}", target)


TOOLS_ASCEND = {
    "npu-smi": "/usr/local/sbin/npu-smi",
    "nvidia-smi": None,
    "numactl": "/usr/bin/numactl",
    "migratepages": "/usr/bin/migratepages",
    "taskset": "/usr/bin/taskset",
    "lscpu": "/usr/bin/lscpu",
    "irqbalance": "/usr/sbin/irqbalance",
}


def add_meta(t: Tree, **meta: object) -> None:
    """meta.json as `ascendtune snapshot` writes it (tools, env, proc_scanned included)."""
    meta.setdefault("tools", TOOLS_ASCEND)
    meta.setdefault("env", {"LANG": "C.UTF-8"})
    # the demo holds every process doctor would capture: one absent here was absent there
    meta.setdefault("proc_scanned", True)
    t.file("meta.json", json.dumps(meta, indent=2, sort_keys=False) + "\n")


# --------------------------------------------------------------------------------------------
# npu-smi output, written with the tool's own column widths (its printf formats)

A2_BAR = "+" + "-" * 96 + "+"
A2_SEP = "+---------------------------+---------------+----------------------------------------------------+"
A2_DBL = "+===========================+===============+====================================================+"
A2_HEAD = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
A2_HEAD2 = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
A3_HEAD2 = "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
A2_PROC = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"

P3_BAR = "+" + "-" * 104 + "+"
P3_SEP = "+-------------------------------+-----------------+------------------------------------------------------+"
P3_DBL = "+===============================+=================+======================================================+"
P3_HEAD = "| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |"
P3_HEAD2 = "| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |"
P3_PROC = "| NPU     Chip                  | Process id      | Process name             | Process memory(MB)        |"


class Chip:
    """One chip (die) as `npu-smi info` shows it; readings are made up but plausible."""

    def __init__(
        self,
        npu_id: int,
        chip_id: int,
        logical_id: int,
        name: str,
        bus: str,
        *,
        power: float | None,
        temp: int,
        aicore: int = 0,
        mem_used: int = 0,
        mem_total: int = 65536,
        phy_id: int | None = None,
    ) -> None:
        self.npu_id, self.chip_id, self.logical_id = npu_id, chip_id, logical_id
        self.name, self.bus = name, bus.upper()
        self.power, self.temp, self.aicore = power, temp, aicore
        self.mem_used, self.mem_total = mem_used, mem_total
        self.phy_id = logical_id if phy_id is None else phy_id


Proc = tuple[int, int, int, str, int]  # npu id, chip id, pid, name, memory MiB


def _proc_rows_hbm(card: int, procs: list[Proc]) -> list[str]:
    rows = [
        f"| {npu:<7d} {chip:<18d}| {pid:<13d} | {name:<24s} | {mem:<23d} |"
        for npu, chip, pid, name, mem in procs
        if npu == card
    ]
    if not rows:
        rows = [f"| No running processes found in NPU {card:<7d}".ljust(97) + "|"]
    return rows


def npu_smi_info_hbm(version: str, chips: list[Chip], procs: list[Proc], *, a3: bool) -> str:
    """`npu-smi info` of 910B (A2) and 910_93 (A3) hosts: HBM column, two lines per chip."""
    out = [A2_BAR, f"| npu-smi {version:<24s} Version: {version:<52s} |", A2_SEP, A2_HEAD]
    out += [A3_HEAD2 if a3 else A2_HEAD2, A2_DBL]
    cards = sorted({c.npu_id for c in chips})
    for card in cards:
        mine = [c for c in chips if c.npu_id == card]
        for i, c in enumerate(mine):
            power = "-" if c.power is None else f"{c.power:.1f}"
            out.append(
                f"| {c.npu_id:<5d} {c.name:<20s}| {'OK':<13s} | {power:<11s} {c.temp:<17d} "
                f"{0:<5d}/ {0:<13d} |"
            )
            left = f"| {c.chip_id:<5d} {c.phy_id:<20d}| " if a3 else f"| {c.chip_id:<26d}| "
            out.append(
                left + f"{c.bus:<13s} | {c.aicore:<11d} {0:<5d}/ {0:<10d} "
                f"{c.mem_used:<5d}/ {c.mem_total:<13d} |"
            )
            if i != len(mine) - 1:
                out.append(A2_BAR)
        out.append(A2_DBL)
    out += [A2_SEP, A2_PROC, A2_DBL]
    for card in cards:
        out += _proc_rows_hbm(card, procs)
        out.append(A2_DBL)
    return "\n".join(out) + "\n"


def npu_smi_info_310p(version: str, chips: list[Chip]) -> str:
    """`npu-smi info` of 310P cards: `Chip Device` rows, no HBM column, Bus-Id per card."""
    out = [P3_BAR, f"| npu-smi {version:<40s} Version: {version:<44s} |", P3_SEP, P3_HEAD]
    out += [P3_HEAD2, P3_DBL]
    cards = sorted({c.npu_id for c in chips})
    for card in cards:
        mine = [c for c in chips if c.npu_id == card]
        for i, c in enumerate(mine):
            out.append(
                f"| {c.npu_id:<7d} {c.name:<22s}| {'OK':<15s} | {'NA':<12s} {c.temp:<17d} "
                f"{0:<6d}/ {0:<13d} |"
            )
            out.append(
                f"| {c.chip_id:<7d} {c.logical_id:<22d}| {c.bus:<15s} | {c.aicore:<12d} "
                f"{c.mem_used:<5d}/ {c.mem_total:<32d} |"
            )
            if i != len(mine) - 1:
                out.append(P3_SEP)
        out.append(P3_DBL)
    out += [P3_SEP, P3_PROC, P3_DBL]
    for card in cards:
        out.append(f"| No running processes found in NPU {card:<7d}".ljust(105) + "|")
        out.append(P3_DBL)
    return "\n".join(out) + "\n"


def npu_smi_map(chips: list[Chip], *, chip_type: str | None, phy_id: bool, mcu: bool = True) -> str:
    """`npu-smi info -m`: a tab, then 30-wide columns; an Mcu row after each card's chips."""
    head = (
        ["NPU ID", "Chip ID", "Chip Logic ID"] + (["Chip Phy-ID"] if phy_id else []) + ["Chip Name"]
    )
    out = ["\t" + " ".join(f"{h:<30s}" for h in head)]
    cards = sorted({c.npu_id for c in chips})
    for card in cards:
        mine = [c for c in chips if c.npu_id == card]
        for c in mine:
            cols = [str(c.npu_id), str(c.chip_id), str(c.logical_id)]
            if phy_id:
                cols.append(str(c.phy_id))
            name = f"{chip_type} {c.name}" if chip_type else c.name
            out.append("\t" + " ".join(f"{v:<30s}" for v in cols) + " " + name)
        if mcu:
            cols = [str(card), str(len(mine)), "-"] + (["-"] if phy_id else []) + ["Mcu"]
            out.append("\t" + " ".join(f"{v:<30s}" for v in cols))
    return "\n".join(out) + "\n"


LEGEND_910B = """\
Legend:

  X    = Self
  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.
  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.
  PIX  = Path traversing a single PCIe switch
  PXB  = Path traversing multiple PCIe switches
  HCCS = Connection traversing HCCS.
  NA   = Unknown relationship.
"""

LEGEND_910_93 = """\
Legend:

  X    = Self
  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.
  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.
  PIX  = Path traversing a single PCIe switch
  PXB  = Path traversing multipul PCIe switches
  HCCS = Connection traversing HCCS.
  SIO  = Path traversing the SIO bus
  HCCS_SW = Connection traversing HCCS through a switch
  NA   = Unknown relationship.
"""


def npu_smi_topo(
    ids: list[int],
    link: Callable[[int, int], str],
    affinity: dict[int, str] | None,
    *,
    label: str = "NPU",
    legend: str = LEGEND_910B,
) -> str:
    """`npu-smi info -t topo`: header after a tab, 11-wide cells, CPU Affinity column or none.

    A3 (910_93) on ARM prints `Phy-ID<n>` labels and no CPU Affinity column: its NPUs reach the
    CPUs through a switch board, so npu-smi claims no affinity at all.
    """
    width = 5 if label == "Phy-ID" else 8
    head = "\t   " + "".join(f"{label}{i:<{width}d}" for i in ids)
    head += "CPU Affinity" if affinity is not None else ""
    out = [head]
    for a in ids:
        row = f"{label}{a:<{width}d}" + "".join(
            f"{('X' if a == b else link(a, b)):<11s}" for b in ids
        )
        out.append(row + (affinity[a] if affinity is not None else ""))
    return "\n".join(out) + "\n\n" + legend


# --------------------------------------------------------------------------------------------
# The hosts


def node_mem_kb(gib: int, nid: int) -> int:
    """MemTotal of a node: a little under its DIMMs (firmware and kernel keep some)."""
    return gib * 1024 * 1024 - 1_835_008 - 65_536 * ((nid * 7) % 5)


# ---- Atlas 800I A2: 8x 910B3, 4x Kunpeng 920 (48 cores each), 8 NUMA nodes of 24 CPUs

A2_NODES = {n: list(range(24 * n, 24 * n + 24)) for n in range(8)}
# NPU -> (bus id as npu-smi prints it, NUMA node): the pairs of a real 910B3 box
A2_NPUS = [
    (0, "0000:C1:00.0", 6),
    (1, "0000:C2:00.0", 6),
    (2, "0000:81:00.0", 4),
    (3, "0000:82:00.0", 4),
    (4, "0000:01:00.0", 0),
    (5, "0000:02:00.0", 0),
    (6, "0000:41:00.0", 2),
    (7, "0000:42:00.0", 2),
]
A2_POWER = [101.2, 93.4, 99.8, 97.1, 98.9, 100.3, 102.6, 95.8]
A2_TEMP = [42, 40, 41, 41, 44, 45, 44, 43]
A2_HBM_IDLE = [3312, 3308, 3311, 3309, 3310, 3308, 3313, 3309]


def a2_base(t: Tree) -> None:
    """The parts of the A2 host that a container on it sees unchanged (sysfs, kernel knobs)."""
    add_cpus(
        t,
        192,
        siblings=lambda c: [c],
        package=lambda c: c // 48,
        core=lambda c: c % 48,
        governor="ondemand",
    )
    add_nodes(t, A2_NODES, {n: node_mem_kb(128, n) for n in A2_NODES})
    for _npu, bus, node in A2_NPUS:
        add_pci(
            t,
            bus,
            vendor="0x19e5",
            device="0xd802",
            pci_class="0x120000",
            numa_node=node,
            local_cpus=A2_NODES[node],
            nr_cpus=192,
        )
    # The Kunpeng's on-die NIC: a Huawei PCI device that is not an NPU.
    add_pci(
        t,
        "0000:7d:00.0",
        vendor="0x19e5",
        device="0xa222",
        pci_class="0x020000",
        numa_node=0,
        local_cpus=A2_NODES[0],
        nr_cpus=192,
        driver="hns3",
    )
    add_knobs(
        t,
        numa_balancing=1,
        swappiness=60,
        migration_cost_ns=500000,
        thp="always [madvise] never",
        thp_defrag="always defer defer+madvise [madvise] never",
    )
    add_process(
        t,
        1634,
        comm="irqbalance",
        cmdline=["/usr/sbin/irqbalance", "--foreground"],
        ppid=1,
        threads=[(1634, "irqbalance", list(range(192))), (1641, "gmain", list(range(192)))],
        mems=range(8),
        nr_cpus=192,
        nr_nodes=8,
        vm_rss_kb=3_904,
    )


def a2_topo_text(ids: list[int], label_ids: list[int] | None = None) -> str:
    """-t topo of the A2: HCCS full mesh; affinity per NPU from its node."""
    node = {npu: n for npu, _, n in A2_NPUS}
    shown = label_ids if label_ids is not None else ids
    aff = {s: cpulist(A2_NODES[node[i]]) for s, i in zip(shown, ids, strict=True)}
    return npu_smi_topo(shown, lambda a, b: "HCCS", aff)


def build_atlas_800i_a2() -> Tree:
    t = Tree()
    a2_base(t)
    add_self(
        t,
        cpus=range(192),
        mems=range(8),
        nr_cpus=192,
        nr_nodes=8,
        cgroup="/user.slice/user-0.slice/session-3.scope",
    )
    chips = [
        Chip(
            npu,
            0,
            npu,
            "910B3",
            bus,
            power=A2_POWER[npu],
            temp=A2_TEMP[npu],
            mem_used=A2_HBM_IDLE[npu],
        )
        for npu, bus, _ in A2_NPUS
    ]
    t.file("commands/npu-smi_info.txt", npu_smi_info_hbm("24.1.rc1", chips, [], a3=False))
    t.file("commands/npu-smi_info_-m.txt", npu_smi_map(chips, chip_type="Ascend", phy_id=False))
    t.file("commands/npu-smi_info_-t_topo.txt", a2_topo_text(list(range(8))))
    add_meta(
        t,
        hostname="atlas-800i-a2-demo",
        arch="aarch64",
        tools={**TOOLS_ASCEND, "numactl": None, "migratepages": None},
        kernel="5.10.0-182.0.0.95.oe2203sp3.aarch64",
        os="openEuler 22.03 (LTS-SP3)",
        captured_by="ascendtune demo",
        npu_smi_version="24.1.rc1",
        description=DESCRIPTIONS["atlas-800i-a2"],
    )
    return t


# ---- The same A2 from inside a container given davinci4, davinci5 and cpuset 0-23

API_PID, ENGINE_PID, WORKER_PIDS = 3418201, 3418529, (3418790, 3418914)


def worker_threads(pid: int, bound: bool) -> list[tuple[int, str, list[int]]]:
    """A vLLM-Ascend worker's threads. Bound as vLLM-Ascend binds NPU 0 of a pool 0-23 split in two:
    IRQ 0-1 (left to the NPU's interrupts), main 2-9, acl_thread 10, release_thread 11."""
    everything = list(range(24))
    main = list(range(2, 10)) if bound else everything
    return [
        (pid, "VLLM::Worker_TP", main),
        (pid + 2, "python3", main),
        (pid + 3, "python3", main),
        (pid + 5, "ZMQbg/Reaper", main),
        (pid + 6, "ZMQbg/IO/0", main),
        (pid + 71, "acl_thread", [10] if bound else everything),
        (pid + 72, "release_thread", [11] if bound else everything),
    ]


def build_container_a2_half() -> Tree:
    t = Tree()
    a2_base(t)  # sysfs and /proc/sys are the host's: neither is namespaced
    add_self(
        t,
        cpus=range(24),
        mems=[0],
        nr_cpus=192,
        nr_nodes=8,
        cgroup="/",
        caps=DOCKER_CAPS,
        seccomp=2,
    )
    # npu-smi shows the mounted cards by their host NPU ids; CANN numbers them 0, 1 inside.
    hbm = {4: 61_874, 5: 61_690}
    chips = [
        Chip(4, 0, 0, "910B3", "0000:01:00.0", power=187.3, temp=52, aicore=38, mem_used=hbm[4]),
        Chip(5, 0, 1, "910B3", "0000:02:00.0", power=184.9, temp=53, aicore=37, mem_used=hbm[5]),
    ]
    procs: list[Proc] = [
        (4, 0, WORKER_PIDS[0], "VLLMWorker_TP0", 58_240),
        (5, 0, WORKER_PIDS[1], "VLLMWorker_TP1", 58_056),
    ]
    t.file("commands/npu-smi_info.txt", npu_smi_info_hbm("24.1.rc1", chips, procs, a3=False))
    t.file("commands/npu-smi_info_-m.txt", npu_smi_map(chips, chip_type="Ascend", phy_id=False))
    t.file("commands/npu-smi_info_-t_topo.txt", a2_topo_text([4, 5], label_ids=[0, 1]))

    def proc(
        pid: int,
        comm: str,
        cmdline: list[str],
        ppid: int,
        threads: list[tuple[int, str, list[int]]],
        rss_kb: int,
        fds: dict[int, str] | None = None,
    ) -> None:
        add_process(
            t,
            pid,
            comm=comm,
            cmdline=cmdline,
            ppid=ppid,
            threads=threads,
            mems=[0],
            nr_cpus=192,
            nr_nodes=8,
            fds=fds,
            caps=DOCKER_CAPS,
            seccomp=2,
            vm_rss_kb=rss_kb,
        )

    serve = [
        "/usr/bin/python3",
        "/usr/local/bin/vllm",
        "serve",
        "/models/Qwen2.5-32B-Instruct",
        "--served-model-name",
        "qwen2.5-32b",
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "32768",
        "--port",
        "8000",
    ]
    proc(API_PID, "vllm", serve, 3418177, [(API_PID, "vllm", list(range(24)))], 2_411_520)
    proc(
        ENGINE_PID,
        "VLLM::EngineCor",
        ["VLLM::EngineCore"],
        API_PID,
        [(ENGINE_PID, "VLLM::EngineCor", list(range(24)))],
        3_170_304,
    )
    for rank, pid in enumerate(WORKER_PIDS):
        npu = 4 + rank
        fds = {
            0: "/dev/null",
            1: "pipe:[91823411]",
            2: "pipe:[91823412]",
            3: "anon_inode:[eventpoll]",
            24: "/dev/davinci_manager",
            25: "/dev/devmm_svm",
            26: "/dev/hisi_hdc",
            27: f"/dev/davinci{npu}",
            31: f"socket:[9183{rank}077]",
        }
        # comm is cut to 15 characters, so both workers share it; cmdline tells them apart
        proc(
            pid,
            "VLLM::Worker_TP",
            [f"VLLM::Worker_TP{rank}"],
            ENGINE_PID,
            worker_threads(pid, bound=(rank == 0)),
            9_830_400,
            fds,
        )
    add_meta(
        t,
        hostname="vllm-qwen-7f9c2d4b1e",
        # a slim container image: no numactl, and vLLM's own env
        tools={**TOOLS_ASCEND, "numactl": None, "migratepages": None, "irqbalance": None},
        env={"LANG": "C.UTF-8", "ASCEND_RT_VISIBLE_DEVICES": "0,1"},
        arch="aarch64",
        kernel="5.10.0-182.0.0.95.oe2203sp3.aarch64",
        os="Ubuntu 22.04.5 LTS (container on openEuler 22.03 LTS-SP3)",
        captured_by="ascendtune demo",
        npu_smi_version="24.1.rc1",
        container="docker, --device /dev/davinci4 /dev/davinci5, --cpuset-cpus 0-23, "
        "--cpuset-mems 0, --pid=host",
        description=DESCRIPTIONS["container-a2-half"],
    )
    return t


# ---- Atlas 800I A3: 8 cards x 2 dies (910_93), 4 sockets x 40 cores x 2 threads, 8 nodes

A3_NODES = {n: list(range(40 * n, 40 * n + 40)) for n in range(8)}
# card k, die d -> bus (as a real A3 box numbers them: card 0 at 9D/9F down to card 7 at 81/83)
A3_BUS = {(k, d): f"0000:{0x9D - 4 * k + 2 * d:02X}:00.0" for k in range(8) for d in range(2)}


def a3_link(a: int, b: int) -> str:
    # the two dies of one card talk over SIO; cards reach each other through the HCCS switch
    return "SIO" if a // 2 == b // 2 else "HCCS_SW"


def build_atlas_800i_a3() -> Tree:
    t = Tree()
    add_cpus(
        t,
        320,
        # SMT on ARM numbers a core's two threads next to each other: CPU 2k and 2k+1
        siblings=lambda c: [c - c % 2, c - c % 2 + 1],
        package=lambda c: c // 80,
        core=lambda c: (c // 2) % 40,
        governor="performance",
    )
    add_nodes(t, A3_NODES, {n: node_mem_kb(256, n) for n in A3_NODES})
    chips = []
    for k in range(8):
        for d in range(2):
            logical = 2 * k + d
            chips.append(
                Chip(
                    k,
                    d,
                    logical,
                    "Ascend910",
                    A3_BUS[(k, d)],
                    power=None if d else 163.5 + (k * 37 % 11) / 2,
                    temp=35 + (k + d) % 3,
                    mem_used=3140 + (k * 3) % 9 if d == 0 else 2880 + (k * 5) % 9,
                )
            )
            # npu-smi has no affinity for A3; the PCI device's local_cpulist is the only hint
            add_pci(
                t,
                A3_BUS[(k, d)],
                vendor="0x19e5",
                device="0xd803",
                pci_class="0x120000",
                numa_node=k,
                local_cpus=A3_NODES[k],
                nr_cpus=320,
            )
    add_knobs(
        t,
        numa_balancing=0,
        swappiness=0,
        migration_cost_ns=5000000,
        thp="always [madvise] never",
        thp_defrag="always defer defer+madvise [madvise] never",
    )
    add_self(
        t,
        cpus=range(320),
        mems=range(8),
        nr_cpus=320,
        nr_nodes=8,
        cgroup="/user.slice/user-0.slice/session-1.scope",
    )
    t.file("commands/npu-smi_info.txt", npu_smi_info_hbm("25.2.1", chips, [], a3=True))
    t.file("commands/npu-smi_info_-m.txt", npu_smi_map(chips, chip_type=None, phy_id=True))
    t.file(
        "commands/npu-smi_info_-t_topo.txt",
        npu_smi_topo(list(range(16)), a3_link, None, label="Phy-ID", legend=LEGEND_910_93),
    )
    add_meta(
        t,
        hostname="atlas-800i-a3-demo",
        arch="aarch64",
        kernel="5.10.0-182.0.0.95.r1941_123.hce2.aarch64",
        os="Huawei Cloud EulerOS 2.0",
        captured_by="ascendtune demo",
        npu_smi_version="25.2.1",
        soc_version="Ascend910_9382",  # what torch_npu reports; npu-smi only says "Ascend910"
        description=DESCRIPTIONS["atlas-800i-a3"],
    )
    return t


# ---- x86_64 host with 4x Atlas 300I Duo (310P3, two chips per card)

DUO_NODES = {
    0: list(range(0, 32)) + list(range(64, 96)),
    1: list(range(32, 64)) + list(range(96, 128)),
}
# card (NPU id as npu-smi prints it) -> (bus, socket/node); NPU ids of 310P cards are sparse
DUO_CARDS = [
    (1, "0000:01:00.0", 0),
    (2, "0000:02:00.0", 0),
    (4, "0000:81:00.0", 1),
    (5, "0000:82:00.0", 1),
]


def build_atlas_300i_duo() -> Tree:
    t = Tree()
    add_cpus(
        t,
        128,
        siblings=lambda c: [c % 64, c % 64 + 64],
        package=lambda c: (c % 64) // 32,
        core=lambda c: (c % 64) % 32,
        governor="powersave",
    )
    add_nodes(t, DUO_NODES, {n: node_mem_kb(256, n) for n in DUO_NODES})
    chips: list[Chip] = []
    for i, (npu, bus, node) in enumerate(DUO_CARDS):
        for d in range(2):
            chips.append(
                Chip(
                    npu,
                    d,
                    2 * i + d,
                    "310P3",
                    bus,
                    power=None,
                    temp=44 + (i + 2 * d) % 5,
                    mem_used=1420 + 37 * i + 61 * d,
                    mem_total=44280 if d == 0 else 43693,
                )
            )
        # one PCI function per card: npu-smi prints the card's Bus-Id for both of its chips
        add_pci(
            t,
            bus,
            vendor="0x19e5",
            device="0xd500",
            pci_class="0x120000",
            numa_node=node,
            local_cpus=DUO_NODES[node],
            nr_cpus=128,
        )
    add_knobs(
        t,
        numa_balancing=1,
        swappiness=60,
        migration_cost_ns=None,
        thp="always [madvise] never",
        thp_defrag="always defer defer+madvise [madvise] never",
    )
    add_self(
        t,
        cpus=range(128),
        mems=range(2),
        nr_cpus=128,
        nr_nodes=2,
        cgroup="/user.slice/user-1000.slice/session-4.scope",
    )
    card_of = {c.logical_id: c.logical_id // 2 for c in chips}
    node_of_card = {i: node for i, (_, _, node) in enumerate(DUO_CARDS)}

    def duo_link(a: int, b: int) -> str:
        if card_of[a] == card_of[b]:
            return "PIX"  # the two chips of a card sit behind the card's own PCIe switch
        same = node_of_card[card_of[a]] == node_of_card[card_of[b]]
        return "PHB" if same else "SYS"

    aff = {c.logical_id: cpulist(DUO_NODES[node_of_card[card_of[c.logical_id]]]) for c in chips}
    t.file("commands/npu-smi_info.txt", npu_smi_info_310p("24.1.rc2", chips))
    t.file("commands/npu-smi_info_-m.txt", npu_smi_map(chips, chip_type="Ascend", phy_id=False))
    t.file("commands/npu-smi_info_-t_topo.txt", npu_smi_topo(list(range(8)), duo_link, aff))
    add_meta(
        t,
        hostname="atlas-300i-duo-demo",
        arch="x86_64",
        kernel="5.15.0-105-generic",
        os="Ubuntu 22.04.4 LTS",
        captured_by="ascendtune demo",
        npu_smi_version="24.1.rc2",
        description=DESCRIPTIONS["atlas-300i-duo"],
    )
    return t


# ---- NVIDIA DGX H100: 8x H100 SXM5, NV18 all-to-all, 2x Xeon 8480C (56 cores, SMT)

DGX_NODES = {
    0: list(range(0, 56)) + list(range(112, 168)),
    1: list(range(56, 112)) + list(range(168, 224)),
}
DGX_GPU_BUS = ["1b", "43", "52", "61", "9d", "c3", "d1", "df"]
DGX_NVSWITCH_BUS = ["05", "06", "07", "08"]


def nvidia_smi_topo(nodes: dict[int, list[int]]) -> str:
    """`nvidia-smi topo -m`: tab-separated, ' X ' on the diagonal, GPU then NIC rows, legends."""
    gpus = list(range(8))
    nics = list(range(8))
    names = [f"GPU{g}" for g in gpus] + [f"NIC{n}" for n in nics]
    head = "\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    sock = {f"GPU{g}": g // 4 for g in gpus} | {f"NIC{n}": n // 4 for n in nics}

    def rel(a: str, b: str) -> str:
        if a == b:
            return " X "
        if a.startswith("GPU") and b.startswith("GPU"):
            return "NV18"
        if a[3:] == b[3:]:
            return "PXB"  # each GPU and its ConnectX-7 share a PCIe switch
        return "NODE" if sock[a] == sock[b] else "SYS"

    out = [head]
    for a in names:
        cells = "\t".join(rel(a, b) for b in names)
        if a.startswith("GPU"):
            node = sock[a]
            out.append(f"{a}\t{cells}\t{cpulist(nodes[node])}\t{node}\t\tN/A")
        else:
            out.append(f"{a}\t{cells}\t\t\t\t")
    out += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
        "(e.g., QPI/UPI)",
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
        "within a NUMA node",
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
        "Bridge)",
        "  PIX  = Connection traversing at most a single PCIe bridge",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
        "",
        "NIC Legend:",
        "",
    ]
    out += [f"  NIC{n}: mlx5_{n}" for n in nics]
    return "\n".join(out) + "\n"


def build_dgx_h100() -> Tree:
    t = Tree()
    add_cpus(
        t,
        224,
        siblings=lambda c: [c % 112, c % 112 + 112],
        package=lambda c: (c % 112) // 56,
        core=lambda c: (c % 112) % 56,
        governor="performance",
        # Sapphire Rapids: one L3 per socket, shared by its 56 cores and their siblings
        l3=lambda c: DGX_NODES[(c % 112) // 56],
    )
    add_nodes(t, DGX_NODES, {n: node_mem_kb(1024, n) for n in DGX_NODES})
    for g, bus in enumerate(DGX_GPU_BUS):
        node = g // 4
        add_pci(
            t,
            f"0000:{bus}:00.0",
            vendor="0x10de",
            device="0x2330",
            pci_class="0x030200",
            numa_node=node,
            local_cpus=DGX_NODES[node],
            nr_cpus=224,
            driver="nvidia",
        )
    # NVSwitches are NVIDIA PCI devices too (bridges), below GPU0's address: not GPUs
    for bus in DGX_NVSWITCH_BUS:
        add_pci(
            t,
            f"0000:{bus}:00.0",
            vendor="0x10de",
            device="0x22a3",
            pci_class="0x068000",
            numa_node=0,
            local_cpus=DGX_NODES[0],
            nr_cpus=224,
            driver="nvidia",
        )
    add_knobs(
        t,
        numa_balancing=1,
        swappiness=60,
        migration_cost_ns=None,
        thp="always [madvise] never",
        thp_defrag="always defer defer+madvise [madvise] never",
    )
    add_self(
        t,
        cpus=range(224),
        mems=range(2),
        nr_cpus=224,
        nr_nodes=2,
        cgroup="/user.slice/user-1000.slice/session-7.scope",
    )
    t.file("commands/nvidia-smi_topo_-m.txt", nvidia_smi_topo(DGX_NODES))
    add_meta(
        t,
        hostname="dgx-h100-demo",
        tools={**TOOLS_ASCEND, "npu-smi": None, "nvidia-smi": "/usr/bin/nvidia-smi"},
        arch="x86_64",
        kernel="5.15.0-1053-nvidia",
        os="DGX OS 6 (Ubuntu 22.04.4 LTS)",
        captured_by="ascendtune demo",
        nvidia_driver_version="535.183.01",
        description=DESCRIPTIONS["dgx-h100"],
    )
    return t


# --------------------------------------------------------------------------------------------
# The index: one list of names and descriptions, in ascendtune/host/demos.py

DESCRIPTIONS: dict[str, str] = DEMOS

BUILDERS: dict[str, Callable[[], Tree]] = {
    "atlas-800i-a2": build_atlas_800i_a2,
    "atlas-800i-a3": build_atlas_800i_a3,
    "atlas-300i-duo": build_atlas_300i_duo,
    "container-a2-half": build_container_a2_half,
    "dgx-h100": build_dgx_h100,
}


# --------------------------------------------------------------------------------------------
# Deterministic archives


def tar_bytes(tree: Tree) -> bytes:
    """An uncompressed ustar archive of the tree: members sorted, every stamp fixed."""
    buf = io.BytesIO()
    entries = sorted([(p, "f") for p in tree.files] + [(p, "l") for p in tree.links])
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, kind in entries:
            info = tarfile.TarInfo(path)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if kind == "l":
                info.type = tarfile.SYMTYPE
                info.linkname = tree.links[path]
                info.mode = 0o777
                tar.addfile(info)
            else:
                data = tree.files[path].encode()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=buf, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def build(name: str) -> bytes:
    """The .tar.gz bytes of one demo host."""
    return gzip_bytes(tar_bytes(BUILDERS[name]()))


def build_all(out_dir: Path) -> list[Path]:
    """Write every demo as out_dir/<name>.tar.gz; return the paths in index order."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in BUILDERS:
        path = out_dir / f"{name}.tar.gz"
        path.write_bytes(build(name))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--out", type=Path, default=DEMO_DIR, help="folder to write (default: %(default)s)"
    )
    ap.add_argument(
        "--check", action="store_true", help="only check the archives in --out are current"
    )
    args = ap.parse_args(argv)
    if args.check:
        stale = [
            n
            for n in BUILDERS
            if not (args.out / f"{n}.tar.gz").is_file()
            or (args.out / f"{n}.tar.gz").read_bytes() != build(n)
        ]
        for n in stale:
            print(
                f"{args.out / (n + '.tar.gz')} is out of date; run scripts/make_demos.py",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in build_all(args.out):
        print(f"{path}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
