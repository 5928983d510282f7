"""Host scenarios written in npu-smi's real formats (our own text, not copied samples)."""

from __future__ import annotations

from tests.builder import SysrootBuilder

# Atlas 800I A2: pairs of 910B3 on every second NUMA node, as on real boxes
A2_AFFINITY = {
    0: "144-167",
    1: "144-167",
    2: "96-119",
    3: "96-119",
    4: "0-23",
    5: "0-23",
    6: "48-71",
    7: "48-71",
}
A2_BUS = {0: "C1", 1: "C2", 2: "81", 3: "82", 4: "01", 5: "02", 6: "41", 7: "42"}
A2_NODE = {0: 6, 1: 6, 2: 4, 3: 4, 4: 0, 5: 0, 6: 2, 7: 2}


def npu_smi_info(
    names: dict[int, str], bus: dict[int, str], processes: list[tuple[int, int, str]] = ()
) -> str:  # type: ignore[assignment]
    sep = "+===========================+===============+====================================================+"
    lines = [
        "+------------------------------------------------------------------------------------------------+",
        "| npu-smi 24.1.rc1.b030            Version: 24.1.rc1.b030                                        |",
        "+---------------------------+---------------+----------------------------------------------------+",
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
        sep,
    ]
    for npu, name in sorted(names.items()):
        lines.append(
            f"| {npu:<5} {name:<19} | OK            | 95.1        41                0    / 0             |"
        )
        lines.append(
            f"| 0                         | 0000:{bus[npu]}:00.0  | 0           0    / 0          3314 / 65536         |"
        )
        lines.append(sep)
    lines.append(
        "+---------------------------+---------------+----------------------------------------------------+"
    )
    lines.append(
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"
    )
    lines.append(sep)
    if not processes:
        lines.append(
            "| No running processes found in NPU 0                                                            |"
        )
    for npu, pid, pname in processes:
        lines.append(
            f"| {npu:<7} 0                 | {pid:<13} | {pname:<24} | 56630                   |"
        )
    lines.append(sep)
    return "\n".join(lines) + "\n"


def npu_smi_m(ids: list[int], name: str = "Ascend 910B3") -> str:
    out = [
        "\tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name                     "
    ]
    for i in ids:
        out.append(f"\t{i:<31}0                              {i:<31}{name}")
        out.append(
            f"\t{i:<31}1                              -                              Mcu                           "
        )
    return "\n".join(out) + "\n"


def npu_smi_topo(affinity: dict[int, str | None], link: str = "HCCS") -> str:
    ids = sorted(affinity)
    with_aff = any(v is not None for v in affinity.values())
    head = "\t   " + "".join(f"NPU{i:<8}" for i in ids) + ("CPU Affinity" if with_aff else "")
    rows = [head]
    for a in ids:
        cells = "".join(f"{('X' if a == b else link):<11}" for b in ids)
        rows.append(f"NPU{a:<8}{cells}{affinity[a] or '' if with_aff else ''}".rstrip())
    rows += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        f"  {link} = Connection traversing {link}.",
        "  NA   = Unknown relationship.",
    ]
    return "\n".join(rows) + "\n"


def atlas_a2(
    b: SysrootBuilder, *, cpuset: str = "0-191", pci: bool = True, topo: bool = True
) -> SysrootBuilder:
    b.cpus("0-191").nodes_even(8, 24).allowed(cpuset, "0-7").meta(arch="aarch64", hostname="a2")
    b.command("npu-smi_info", npu_smi_info(dict.fromkeys(range(8), "910B3"), A2_BUS))
    b.command("npu-smi_info_-m", npu_smi_m(list(range(8))))
    if topo:
        b.command("npu-smi_info_-t_topo", npu_smi_topo(dict(A2_AFFINITY)))
    if pci:
        for n in range(8):
            node = A2_NODE[n]
            b.pci(
                f"0000:{A2_BUS[n].lower()}:00.0",
                numa_node=node,
                local_cpulist=f"{24 * node}-{24 * node + 23}",
            )
    return b
