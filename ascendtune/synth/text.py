"""The text of the files and tool outputs a synthetic host holds, in the real formats: the
kernel's cpulists and %*pb bitmaps, proc status, node meminfo, and npu-smi / nvidia-smi output
written with the tools' own column widths (their printf formats)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ascendtune.core.cpulist import format_cpulist
from ascendtune.synth.spec import Cells, Chip, Link, NpuProcess, NpuSmi, NvidiaSmi, Status

TOPO_UNSUPPORTED = "This device does not support querying topo.\n"


def cells(value: Cells) -> str:
    return value if isinstance(value, str) else format_cpulist(value)


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


def _set(value: Cells) -> list[int]:
    from ascendtune.core.cpulist import parse_cpulist

    return sorted(parse_cpulist(value)) if isinstance(value, str) else sorted(value)


def status_text(s: Status) -> str:
    """proc/PID/status (or task/TID/status, self/status): fields in the kernel's order. A field
    is printed when the spec gives it (value not None), or always in a full status."""
    f, uid, caps = s.full, s.uid, s.caps
    masks = f and s.nr_cpus is not None
    mems = None if s.mems is None else cells(s.mems)
    mem_masks = f and mems is not None and s.nr_nodes is not None
    rows: list[tuple[str, object, bool]] = [  # key, value, printed
        ("Name", s.name, True),
        ("Umask", "0022", f),
        ("State", s.state, s.state is not None),
        ("Tgid", s.tgid, s.tgid is not None),
        ("Ngid", 0, f),
        ("Pid", s.pid, s.pid is not None),
        ("PPid", s.ppid, s.ppid is not None),
        ("TracerPid", 0, f),
        ("Uid", "\t".join([str(uid)] * 4), uid is not None),
        ("Gid", "\t".join([str(uid or 0)] * 4), f),
        ("FDSize", 256, f),
        ("Groups", "0 ", f),
        ("NStgid", s.tgid, f),
        ("NSpid", s.pid, f),
        ("VmRSS", f"{s.vm_rss_kb or 0:8d} kB", s.vm_rss_kb is not None),
        ("Threads", s.threads, s.threads is not None),
        ("CapInh", "0" * 16, caps is not None),
        ("CapPrm", caps, caps is not None),
        ("CapEff", caps, caps is not None),
        ("CapBnd", caps, f and caps is not None),
        ("CapAmb", "0" * 16, f and caps is not None),
        ("NoNewPrivs", 0, f),
        ("Seccomp", s.seccomp, s.seccomp is not None),
        ("Cpus_allowed", masks and bitmap(_set(s.cpus), s.nr_cpus or 0), masks),
        ("Cpus_allowed_list", cells(s.cpus), True),
        ("Mems_allowed", mem_masks and bitmap(_set(mems or ""), s.nr_nodes or 0), mem_masks),
        ("Mems_allowed_list", mems, mems is not None),
        ("voluntary_ctxt_switches", 12, f),
        ("nonvoluntary_ctxt_switches", 3, f),
    ]
    return "".join(f"{key}:\t{value}\n" for key, value, printed in rows if printed)


def meminfo_text(nid: int, total: int, free: int | None = None, *, full: bool = False) -> str:
    """node/nodeN/meminfo: MemTotal and MemFree (full: MemUsed and HugePages too)."""
    free = total // 2 if free is None else free
    out = f"Node {nid} MemTotal:       {total:8d} kB\nNode {nid} MemFree:        {free:8d} kB\n"
    if full:
        out += (
            f"Node {nid} MemUsed:        {total - free:8d} kB\n"
            f"Node {nid} HugePages_Total:     0\n"
            f"Node {nid} HugePages_Free:      0\n"
            f"Node {nid} HugePages_Surp:      0\n"
        )
    return out


# ---------------------------------------------------------------- npu-smi info

A2_BAR = "+" + "-" * 96 + "+"
A2_SEP = "+---------------------------+---------------+----------------------------------------------------+"
A2_DBL = "+===========================+===============+====================================================+"
A2_HEAD = "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
A2_HEAD2 = "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
A3_HEAD2 = "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
A2_PROC = "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"
NPU_ID_PROC = "| NPU ID                    | Process id    | Process name             | Process memory(MB)      |"

P3_BAR = "+" + "-" * 104 + "+"
P3_SEP = "+-------------------------------+-----------------+------------------------------------------------------+"
P3_DBL = "+===============================+=================+======================================================+"
P3_HEAD = "| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |"
P3_HEAD2 = "| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |"
P3_PROC = "| NPU     Chip                  | Process id      | Process name             | Process memory(MB)        |"


def _cards(chips: Sequence[Chip]) -> list[tuple[int, list[Chip]]]:
    return [
        (card, [c for c in chips if c.npu_id == card]) for card in sorted({c.npu_id for c in chips})
    ]


def npu_smi_info(smi: NpuSmi) -> str:
    if smi.layout == "310p":
        return info_310p(smi.version, smi.chips, smi.processes)
    return info_hbm(
        smi.version, smi.chips, smi.processes, a3=smi.layout == "a3", npu_id_procs=smi.npu_id_procs
    )


def _info(
    top: Sequence[str],
    chips: Sequence[Chip],
    procs: Sequence[NpuProcess],
    *,
    chip_rows: Callable[[Chip], list[str]],
    proc_row: Callable[[NpuProcess], str],
    between: str,
    rules: tuple[str, str, str],
    width: int,
) -> str:
    """The skeleton both `npu-smi info` layouts share: the device table, card by card (double
    rule after each), then the process table ("No running processes" for an idle card)."""
    sep, dbl, proc_head = rules
    out = list(top)
    cards = _cards(chips)
    for _card, mine in cards:
        for i, c in enumerate(mine):
            out += chip_rows(c)
            if i != len(mine) - 1:
                out.append(between)
        out.append(dbl)
    out += [sep, proc_head, dbl]
    for card, _mine in cards:
        rows = [proc_row(p) for p in procs if p.npu_id == card]
        out += rows or [f"| No running processes found in NPU {card:<7d}".ljust(width) + "|"]
        out.append(dbl)
    return "\n".join(out) + "\n"


def info_hbm(
    version: str,
    chips: Sequence[Chip],
    procs: Sequence[NpuProcess],
    *,
    a3: bool,
    npu_id_procs: bool = False,
) -> str:
    """`npu-smi info` of 910B (A2) and 910_93 (A3) hosts: HBM column, two lines per chip.
    npu_id_procs: the process table keyed by "NPU ID" alone (Ascend 950)."""

    def rows(c: Chip) -> list[str]:
        power = "-" if c.power is None else f"{c.power:.1f}"
        left = f"| {c.chip_id:<5d} {c.phy:<20d}| " if a3 else f"| {c.chip_id:<26d}| "
        return [
            f"| {c.npu_id:<5d} {c.name:<20s}| {c.health:<13s} | {power:<11s} {c.temp:<17d} "
            f"{0:<5d}/ {0:<13d} |",
            left + f"{c.bus.upper():<13s} | {c.aicore:<11d} {0:<5d}/ {0:<10d} "
            f"{c.mem_used:<5d}/ {c.mem_total:<13d} |",
        ]

    def proc(p: NpuProcess) -> str:
        if npu_id_procs:
            return f"| {p.npu_id:<26d}| {p.pid:<13d} | {p.name:<24s} | {p.mem_mib:<23d} |"
        return (
            f"| {p.npu_id:<7d} {p.chip_id:<18d}| {p.pid:<13d} | {p.name:<24s} | {p.mem_mib:<23d} |"
        )

    top = [A2_BAR, f"| npu-smi {version:<24s} Version: {version:<52s} |", A2_SEP, A2_HEAD]
    top += [A3_HEAD2 if a3 else A2_HEAD2, A2_DBL]
    rules = (A2_SEP, A2_DBL, NPU_ID_PROC if npu_id_procs else A2_PROC)
    return _info(
        top, chips, procs, chip_rows=rows, proc_row=proc, between=A2_BAR, rules=rules, width=97
    )


def info_310p(version: str, chips: Sequence[Chip], procs: Sequence[NpuProcess] = ()) -> str:
    """`npu-smi info` of 310P cards: `Chip Device` rows, no HBM column, Bus-Id per card."""

    def rows(c: Chip) -> list[str]:
        return [
            f"| {c.npu_id:<7d} {c.name:<22s}| {c.health:<15s} | {'NA':<12s} {c.temp:<17d} "
            f"{0:<6d}/ {0:<13d} |",
            f"| {c.chip_id:<7d} {c.logical_id:<22d}| {c.bus.upper():<15s} | {c.aicore:<12d} "
            f"{c.mem_used:<5d}/ {c.mem_total:<32d} |",
        ]

    def proc(p: NpuProcess) -> str:
        return (
            f"| {p.npu_id:<7d} {p.chip_id:<22d}| {p.pid:<15d} | {p.name:<24s} | {p.mem_mib:<25d} |"
        )

    top = [P3_BAR, f"| npu-smi {version:<40s} Version: {version:<44s} |", P3_SEP, P3_HEAD]
    top += [P3_HEAD2, P3_DBL]
    rules = (P3_SEP, P3_DBL, P3_PROC)
    return _info(
        top, chips, procs, chip_rows=rows, proc_row=proc, between=P3_SEP, rules=rules, width=105
    )


def info_m(
    chips: Sequence[Chip], *, logic_col: bool = True, phy_col: bool = False, slot_col: bool = False
) -> str:
    """`npu-smi info -m`: a tab, then 30-wide columns; an Mcu row after each card's chips
    (not on hosts without a Chip Logic ID column, Ascend 950). Names get npu-smi's "Ascend ".
    slot_col: a "Slot ID" column after the NPU ID (Ascend 950; the slot is the NPU ID here)."""
    head = ["NPU ID"] + (["Slot ID"] if slot_col else []) + ["Chip ID"]
    head += ["Chip Logic ID"] if logic_col else []
    head += (["Chip Phy-ID"] if phy_col else []) + ["Chip Name"]
    out = ["\t" + " ".join(f"{h:<30s}" for h in head)]
    for card, mine in _cards(chips):
        for c in mine:
            cols = [str(c.npu_id)] + ([str(c.npu_id)] if slot_col else []) + [str(c.chip_id)]
            cols += [str(c.logical_id)] if logic_col else []
            cols += [str(c.phy)] if phy_col else []
            name = c.name if c.name.startswith("Ascend") else f"Ascend {c.name}"
            out.append("\t" + " ".join(f"{v:<30s}" for v in cols) + " " + name)
        if logic_col:
            cols = [str(card)] + ([str(card)] if slot_col else [])
            cols += [str(max(c.chip_id for c in mine) + 1), "-"]
            cols += (["-"] if phy_col else []) + ["Mcu"]
            out.append("\t" + " ".join(f"{v:<30s}" for v in cols))
    return "\n".join(out) + "\n"


def _legend(*rows: str) -> str:
    return "Legend:\n\n" + "".join(f"  {r}\n" for r in rows)


_SYS = (
    "SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI."
)
_PCIE = (
    "PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.",
    "PIX  = Path traversing a single PCIe switch",
)
_HCCS, _NA = "HCCS = Connection traversing HCCS.", "NA   = Unknown relationship."
LEGEND_910B = _legend(
    "X    = Self", _SYS, *_PCIE, "PXB  = Path traversing multiple PCIe switches", _HCCS, _NA
)
LEGEND_910_93 = _legend(  # npu-smi's own spelling on 910_93
    "X    = Self",
    _SYS,
    *_PCIE,
    "PXB  = Path traversing multipul PCIe switches",
    _HCCS,
    "SIO  = Path traversing the SIO bus",
    "HCCS_SW = Connection traversing HCCS through a switch",
    _NA,
)


def _link_fn(link: Link) -> Callable[[int, int], str]:
    if isinstance(link, str):
        name = link
        return lambda a, b: name
    return link


def topo(
    chips: Sequence[Chip], *, link: Link = "HCCS", label: str = "NPU", legend: str | None = None
) -> str:
    """`npu-smi info -t topo`: header after a tab, 11-wide cells, a CPU Affinity column when any
    chip has an affinity. Rows are labelled by logical id, or by die (`Phy-ID<n>`) on A3, whose
    NPUs reach the CPUs through a switch board: there npu-smi claims no affinity at all."""
    ordered = sorted(chips, key=lambda c: c.phy if label == "Phy-ID" else c.logical_id)
    ids = [c.phy if label == "Phy-ID" else c.logical_id for c in ordered]
    with_aff = any(c.affinity is not None for c in ordered)
    fn = _link_fn(link)
    width = 5 if label == "Phy-ID" else 8
    head = "\t   " + "".join(f"{label}{i:<{width}d}" for i in ids)
    out = [head + ("CPU Affinity" if with_aff else "")]
    for a, c in zip(ids, ordered, strict=True):
        row = f"{label}{a:<{width}d}" + "".join(
            f"{('X' if a == b else fn(a, b)):<11s}" for b in ids
        )
        out.append(row + (cells(c.affinity) if with_aff and c.affinity is not None else ""))
    return "\n".join(out) + "\n\n" + (LEGEND_910B if legend is None else legend)


def board(chip: Chip, *, firmware: str = "7.1.0.4.218") -> str:
    """`npu-smi info -t board -i N -c M`: "Key : value" lines, keys padded to 31."""
    rows = [
        ("NPU ID", str(chip.npu_id)),
        ("Chip ID", str(chip.chip_id)),
        ("Chip Type", "Ascend"),
        ("Chip Name", chip.name.removeprefix("Ascend") or chip.name),
        ("Chip Version", "V1"),
        ("Board ID", "0x02"),
        ("PCB ID", "NA"),
        ("BOM ID", "1"),
        ("Chip Position ID", str(chip.chip_id)),
        ("PCIe Bus Info", chip.bus.lower()),
        ("Firmware Version", firmware),
    ]
    return "".join(f"{k:<31s}: {v}\n" for k, v in rows)


# ---------------------------------------------------------------- nvidia-smi topo -m

NV_LEGEND = [
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
]


def _pad(cell: str) -> str:
    # nvidia-smi ends a value cell with one tab, two when the value is shorter than a tab stop
    return cell + ("\t\t" if 0 < len(cell) < 8 else "\t")


def nvidia_topo(smi: NvidiaSmi) -> str:
    """`nvidia-smi topo -m` as the driver prints it: tab cells, ' X ' on the diagonal, GPU
    then NIC rows, padding tabs, the Legend (and the NIC Legend)."""
    gpu_fn = _link_fn(smi.link)
    names = [f"GPU{g}" for g in range(len(smi.gpus))] + [f"NIC{n}" for n in range(len(smi.nics))]

    def rel(a: str, b: str) -> str:
        if a == b:
            return " X "
        if a.startswith("GPU") and b.startswith("GPU"):
            return gpu_fn(int(a[3:]), int(b[3:]))
        assert smi.nic_link is not None
        return smi.nic_link(a, b)

    head = "\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity"
    out = [head + ("\tGPU NUMA ID" if smi.gpu_numa_col else "")]
    for a in names:
        row = f"{a}\t" + "\t".join(rel(a, b) for b in names)
        if a.startswith("GPU"):
            gpu = smi.gpus[int(a[3:])]
            numa = "N/A" if gpu.node is None else str(gpu.node)
            own = "N/A" if gpu.gpu_numa_id is None else str(gpu.gpu_numa_id)
            out.append(f"{row}\t{_pad(gpu.affinity)}{_pad(numa)}{own}")
        else:
            out.append(f"{row}\t\t\t\t")
    out += NV_LEGEND
    if smi.nics:
        out += ["", "NIC Legend:", ""] + [f"  NIC{n}: {name}" for n, name in enumerate(smi.nics)]
    return "\n".join(out) + "\n"
