"""Parse `/proc/interrupts` and IRQ affinity files, and find each Ascend NPU's SQ/CQ interrupts.

vLLM-Ascend (cpu_binding.py `bind_npu_irq`) takes the number before the colon of every line
naming `sq_send_trigger_irq`, keeps the first one listed in the device's
`/sys/bus/pci/devices/BDF/msi_irqs/`, and takes that number + 1 as `cq_update_irq`; it pins the
two to the first two CPUs of the rank's pool. This module does the same from text, and also
reads the PCI address the kernel prints in a line, for hosts captured without `msi_irqs`.
"""

import re
from collections.abc import Collection, Mapping
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet, parse_cpulist, parse_cpumask
from ascendtune.core.errors import ParseError

SQ_IRQ_NAME = "sq_send_trigger_irq"
CQ_IRQ_NAME = "cq_update_irq"

_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
# Kernels >= 6.2 name a per-device MSI domain in the chip column: ITS-PCI-MSIX-0000:c1:00.0,
# IR-PCI-MSI-0000:00:1f.6; some drivers put the address in the action name (mlx5_comp0@pci:
# 0000:01:00.0, ahci[0001:11:00.0]).
_BDF_IN_CHIP = re.compile(rf"PCI-MSIX?-({_BDF})$")
_BDF_ANYWHERE = re.compile(rf"(?<![0-9a-fA-F])({_BDF})(?![0-9a-fA-F])")
# Older kernels print one shared domain (ITS-MSI, PCI-MSI, IR-PCI-MSI) and the hwirq that
# pci_msi_domain_calc_hwirq() built: vector | (bus << 8 | devfn) << 11 | domain << 27.
_SHARED_MSI_CHIPS = frozenset({"ITS-MSI", "PCI-MSI", "IR-PCI-MSI", "DMAR-MSI"})
_TRIGGERS = ("edge", "level", "fasteoi")  # x86 prints the flow handler: 9-fasteoi


class IrqLine(NamedTuple):
    """One numbered line of /proc/interrupts."""

    irq: int
    counts: tuple[int, ...]  # per CPU column, as many as the line holds (a cut line: fewer)
    chip: str | None  # "ITS-MSI", "ITS-PCI-MSIX-0000:c1:00.0", "GICv3", ...
    hwirq: str | None
    trigger: str | None  # "Edge", "Level"
    names: tuple[str, ...]  # the actions, split on ", "
    pci: str | None  # the device's PCI address, lower case, when the line tells it
    pci_from_hwirq: bool = False  # pci decoded from an old kernel's hwirq number
    tail: str = ""  # the text after the counts, as the line holds it

    @property
    def total(self) -> int:
        return sum(self.counts)

    def named(self, name: str) -> bool:
        # vLLM-Ascend tests `name in line`: a line with no chip column still counts
        return name in self.tail


class Interrupts(NamedTuple):
    cpu_columns: tuple[int, ...]  # CPU numbers of the header (online CPUs at read time)
    lines: tuple[IrqLine, ...]

    def by_irq(self) -> dict[int, IrqLine]:
        return {line.irq: line for line in self.lines}


def _hwirq_bdf(hwirq: str) -> str | None:
    try:
        v = int(hwirq)
    except ValueError:
        return None
    devid = v >> 11 & 0xFFFF
    domain = v >> 27 & 0xFFFF
    bus, devfn = devid >> 8, devid & 0xFF
    if v >> 43:
        return None
    return f"{domain:04x}:{bus:02x}:{devfn >> 3:02x}.{devfn & 7}"


def _split_trigger(tokens: list[str]) -> tuple[str | None, int]:
    """(trigger, index of the token after it) in the part after the counts, or (None, -1).

    x86 glues it to the hwirq ("524288-edge"); other chips print it alone ("Edge")."""
    for i, tok in enumerate(tokens[:4]):
        low = tok.lower()
        if low in _TRIGGERS:
            return tok, i + 1
        head, sep, tail = low.rpartition("-")
        if sep and tail in _TRIGGERS and head:
            return tok[len(head) + 1 :], i + 1
    return None, -1


def _parse_line(irq: int, rest: str, ncols: int) -> IrqLine:
    tokens = rest.split()
    counts: list[int] = []
    i = 0
    while i < len(tokens) and len(counts) < ncols and (tokens[i].isascii() and tokens[i].isdigit()):
        counts.append(int(tokens[i]))
        i += 1
    tail = tokens[i:]
    chip = hwirq = trigger = None
    names_text = ""
    trig, after = _split_trigger(tail)
    if trig is not None:
        before = tail[: after - 1]
        glued = tail[after - 1]
        if glued.lower() != trig.lower():  # "524288-edge"
            before = [*before, glued[: -len(trig) - 1]]
        chip = before[0] if before else None
        hwirq = " ".join(before[1:]) or None
        trigger = trig
        names_text = " ".join(tail[after:])
    elif tail:  # no trigger column: "chip hwirq name" or a cut line
        chip = tail[0]
        hwirq = tail[1] if len(tail) > 1 else None
        names_text = " ".join(tail[2:])
    names = tuple(n.strip() for n in names_text.split(", ") if n.strip())
    pci, from_hwirq = None, False
    if chip is not None:
        m = _BDF_IN_CHIP.search(chip)
        if m:
            pci = m.group(1).lower()
    if pci is None:
        for n in names:
            m = _BDF_ANYWHERE.search(n)
            if m:
                pci = m.group(1).lower()
                break
    if pci is None and chip in _SHARED_MSI_CHIPS and hwirq is not None:
        pci = _hwirq_bdf(hwirq)
        from_hwirq = pci is not None
    return IrqLine(irq, tuple(counts), chip, hwirq, trigger, names, pci, from_hwirq, " ".join(tail))


NPU_IRQ_NAMES = (SQ_IRQ_NAME, CQ_IRQ_NAME)


def parse_interrupts(
    text: str, *, source: str = "/proc/interrupts", keep: Collection[str] | None = None
) -> Interrupts:
    """Parse /proc/interrupts; lines without a numbered IRQ (NMI, LOC, ERR) are skipped and a
    cut last line keeps what it holds. A text with no CPU header is invalid.

    `keep`: parse only lines holding one of these strings (a 192-CPU host's file is megabytes;
    doctor needs the NPU lines only)."""
    lines = text.splitlines()
    header_at = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if header_at is None:
        raise ParseError("empty /proc/interrupts", source=source)
    cols = re.findall(r"\bCPU(\d+)\b", lines[header_at])
    if not cols:
        raise ParseError(
            f"no CPU header (expected 'CPU0 CPU1 ...'), found {lines[header_at].strip()[:60]!r}",
            source=source,
        )
    ncols = len(cols)
    out: list[IrqLine] = []
    for ln in lines[header_at + 1 :]:
        if keep is not None and not any(k in ln for k in keep):
            continue
        head, sep, rest = ln.partition(":")
        head = head.strip()
        if not sep or not (head.isascii() and head.isdigit()):
            continue
        out.append(_parse_line(int(head), rest, ncols))
    return Interrupts(tuple(int(c) for c in cols), tuple(out))


def parse_affinity(list_text: str | None, mask_text: str | None, *, source: str) -> CpuSet | None:
    """An IRQ's CPUs from smp_affinity_list, else from the hex smp_affinity mask (None: neither
    readable, or unparsable)."""
    try:
        if list_text is not None and list_text.strip():
            return parse_cpulist(list_text, source=source)
        if mask_text is not None and mask_text.strip():
            return parse_cpumask(mask_text, source=source)
    except ParseError:
        return None
    return None


class NpuIrqs(NamedTuple):
    """The two interrupts vLLM-Ascend pins for one NPU, or why they were not found."""

    pci: str
    sq: int | None
    cq: int | None
    found_by: str  # "msi_irqs" (as vLLM-Ascend), "pci" (the address in the line), "hwirq"
    cq_named: bool = True  # the line of IRQ sq+1 names cq_update_irq
    sq_candidates: int = 0  # sq_send_trigger_irq lines on the whole host


def npu_irqs(interrupts: Interrupts, pci: str, msi_irqs: Collection[int] | None = None) -> NpuIrqs:
    """The SQ/CQ interrupt pair of the device at `pci`, chosen as vLLM-Ascend chooses it.

    With the device's msi_irqs listing: the first sq_send_trigger_irq line whose IRQ is in it.
    Without: the first whose line names this PCI address (a newer kernel's chip column), then
    one whose old-style hwirq decodes to it. cq is always sq + 1, as vLLM-Ascend takes it.
    """
    pci = pci.lower()
    sqs = [ln for ln in interrupts.lines if ln.named(SQ_IRQ_NAME)]
    by_irq = interrupts.by_irq()
    pick: IrqLine | None = None
    how = "msi_irqs"
    if msi_irqs is not None:
        pick = next((ln for ln in sqs if ln.irq in msi_irqs), None)
    else:
        how = "pci"
        pick = next((ln for ln in sqs if ln.pci == pci and not ln.pci_from_hwirq), None)
        if pick is None:
            pick = next((ln for ln in sqs if ln.pci == pci), None)
            how = "hwirq" if pick is not None else how
    if pick is None:
        return NpuIrqs(pci, None, None, how, sq_candidates=len(sqs))
    cq = pick.irq + 1
    cq_line = by_irq.get(cq)
    named = cq_line is not None and cq_line.named(CQ_IRQ_NAME)
    return NpuIrqs(pci, pick.irq, cq, how, named, len(sqs))


def msi_irq_numbers(entries: Collection[str]) -> frozenset[int]:
    """IRQ numbers from a sys/bus/pci/devices/BDF/msi_irqs listing (entries are numbers)."""
    return frozenset(int(e) for e in entries if (e.isascii() and e.isdigit()))


def affinity_paths(irq: int) -> tuple[str, str]:
    return f"proc/irq/{irq}/smp_affinity_list", f"proc/irq/{irq}/smp_affinity"


def irqs_to_read(interrupts: Interrupts) -> list[int]:
    """The IRQs whose affinity doctor needs: every SQ/CQ line, and each SQ + 1."""
    want: set[int] = set()
    for ln in interrupts.lines:
        if ln.named(SQ_IRQ_NAME):
            want.update((ln.irq, ln.irq + 1))
        elif ln.named(CQ_IRQ_NAME):
            want.add(ln.irq)
    return sorted(want)


def affinities(
    texts: Mapping[int, tuple[str | None, str | None]],
) -> dict[int, CpuSet | None]:
    return {
        irq: parse_affinity(lt, mt, source=affinity_paths(irq)[0])
        for irq, (lt, mt) in texts.items()
    }
