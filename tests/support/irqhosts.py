"""NPU interrupts for sysroot scenarios: /proc/interrupts as the kernel prints it (our own text,
laid out as kernel/irq/proc.c `show_interrupts` does), the devices' msi_irqs listings and the
proc/irq/N affinity files.

Styles: "its-msi" (arm64 before 6.2: `ITS-MSI <hwirq> Edge`), "its-pci-msix" (6.2 on: a
per-device domain `ITS-PCI-MSIX-<bdf> <index> Edge`), "x86" (`IR-PCI-MSI <hwirq>-edge`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ascendtune.core.cpulist import format_cpulist, format_cpumask, parse_cpulist
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI

BASE_IRQ = 2753  # NPU0's sq_send_trigger_irq in a public vLLM-Ascend run log
STEP = 256
CQ_LINES = 4  # the driver registers several cq_update_irq vectors; vLLM-Ascend pins sq + 1


def hwirq(bdf: str, index: int) -> int:
    """pci_msi_domain_calc_hwirq(): vector | (bus << 8 | devfn) << 11 | domain << 27."""
    dom, bus, devfn = bdf.split(":")
    dev, fn = devfn.split(".")
    rid = int(bus, 16) << 8 | int(dev, 16) << 3 | int(fn)
    return index | rid << 11 | int(dom, 16) << 27


def device_irqs(i: int) -> dict[int, tuple[int, str]]:
    """IRQ -> (MSI-X index, action name) of the i-th NPU (in logical id order)."""
    base = BASE_IRQ + STEP * i
    out = {base - 1: (0, f"trs-mbox-{i}-0"), base: (1, "sq_send_trigger_irq")}
    for k in range(CQ_LINES):
        out[base + 1 + k] = (2 + k, "cq_update_irq")
    return out


def _line(irq: int, ncpus: int, chip: str, hw: str, trig: str, name: str, busy: int) -> str:
    counts = "".join(f"{(busy if c == irq % ncpus else 0):10d} " for c in range(ncpus))
    if trig.startswith("-"):  # x86: the flow handler's name glued to the hwirq
        return f"{irq:4d}: {counts} {chip:>8s} {hw}{trig}   {name}"
    return f"{irq:4d}: {counts} {chip:>8s} {hw:>4s} {trig:<8s}  {name}"


def npu_interrupts(buses: Mapping[int, str], ncpus: int, style: str = "its-msi") -> str:
    """A /proc/interrupts with the NPUs of `buses` (logical id -> 0000:c1:00.0)."""
    head = " " * 12 + "".join(f"CPU{c:<8d}" for c in range(ncpus))
    lines = [head.rstrip()]
    lines.append(_line(11, ncpus, "GICv3", "27", "Level", "arch_timer", 912345))
    lines.append(_line(97, ncpus, "ITS-MSI", str(hwirq("0000:05:00.0", 0)), "Edge", "nvme0q0", 3))
    for i, (_lid, bdf) in enumerate(sorted(buses.items())):
        for irq, (index, name) in sorted(device_irqs(i).items()):
            busy = 4711 if name == "sq_send_trigger_irq" else 17
            if style == "its-msi":
                lines.append(
                    _line(irq, ncpus, "ITS-MSI", str(hwirq(bdf, index)), "Edge", name, busy)
                )
            elif style == "its-pci-msix":
                chip = f"ITS-PCI-MSIX-{bdf}"
                lines.append(_line(irq, ncpus, chip, str(index), "Edge", name, busy))
            else:
                lines.append(
                    _line(irq, ncpus, "IR-PCI-MSI", str(hwirq(bdf, index)), "-edge", name, busy)
                )
    lines.append(
        "IPI0:" + "".join(f"{7:10d} " for _ in range(ncpus)) + "      Rescheduling interrupts"
    )
    lines.append("Err:          0")
    return "\n".join(lines) + "\n"


def plan_irq_cpus(b: SysrootBuilder, *extra: str) -> dict[int, tuple[int, int]]:
    """logical id -> (sq CPU, cq CPU) as `ascendtune plan` places each rank's IRQ CPUs ({}: no
    plan on this host)."""
    res = CLI("plan", "--sysroot", str(b.root), "--json", *extra)
    if res.exit_code != 0:
        return {}
    out: dict[int, tuple[int, int]] = {}
    for r in schemas.loads("plan", res.stdout)["ranks"]:
        irq = [int(x) for x in r["roles"]["irq"].replace("-", ",").split(",") if x]
        out[r["pool_device"]] = (irq[0], irq[-1])
    return out


def write_npu_irqs(
    b: SysrootBuilder,
    buses: Mapping[int, str],
    ncpus: int,
    pinned: Mapping[int, tuple[int, int]],
    *,
    style: str = "its-msi",
    msi_irqs: bool = True,
    mask_only: bool = False,
    unpinned: str | None = None,
) -> SysrootBuilder:
    """proc/interrupts, msi_irqs and affinity files; NPU n's sq and sq + 1 on pinned[n],
    every other NPU IRQ (and NPUs not in `pinned`) on `unpinned` (default: every CPU)."""
    b.file("proc/interrupts", npu_interrupts(buses, ncpus, style))
    every = unpinned or f"0-{ncpus - 1}"
    for i, (lid, bdf) in enumerate(sorted(buses.items())):
        irqs = device_irqs(i)
        sq = BASE_IRQ + STEP * i
        for irq in irqs:
            if msi_irqs:
                b.file(f"sys/bus/pci/devices/{bdf}/msi_irqs/{irq}", "msix\n")
            cpus = every
            if lid in pinned and irq in (sq, sq + 1):
                cpus = str(pinned[lid][0] if irq == sq else pinned[lid][1])
            if mask_only:
                mask = format_cpumask(parse_cpulist(cpus))
                groups = [mask[max(0, k - 8) : k] for k in range(len(mask), 0, -8)][::-1]
                b.file(f"proc/irq/{irq}/smp_affinity", ",".join(g.zfill(8) for g in groups) + "\n")
            else:
                b.file(
                    f"proc/irq/{irq}/smp_affinity_list", format_cpulist(parse_cpulist(cpus)) + "\n"
                )
    return b
