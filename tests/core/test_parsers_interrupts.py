"""/proc/interrupts parsing, IRQ affinity files and picking an NPU's SQ/CQ pair, table by table."""

from __future__ import annotations

import re

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ascendtune.core.errors import ParseError
from ascendtune.core.parsers.interrupts import (
    NPU_IRQ_NAMES,
    Interrupts,
    IrqLine,
    irqs_to_read,
    msi_irq_numbers,
    npu_irqs,
    parse_affinity,
    parse_interrupts,
)
from tests.support.irqhosts import hwirq, npu_interrupts

HEAD4 = "           CPU0       CPU1       CPU2       CPU3\n"


def one(line: str, head: str = HEAD4) -> IrqLine:
    (got,) = parse_interrupts(head + line + "\n").lines
    return got


@pytest.mark.parametrize(
    ("line", "irq", "counts", "chip", "hw", "trigger", "names", "pci", "from_hwirq"),
    [
        # arm64 before 6.2: one ITS domain, the device in the hwirq
        (
            "2753:          0       4711          0          0   ITS-MSI 101187585 Edge      "
            "sq_send_trigger_irq",
            2753, (0, 4711, 0, 0), "ITS-MSI", "101187585", "Edge", ("sq_send_trigger_irq",),
            "0000:c1:00.0", True,
        ),
        # 6.2 on: a per-device MSI-X domain names the address
        (
            " 123:          0          0          0          0 ITS-PCI-MSIX-0002:00:00.0   1 Edge"
            "      eth0-rxtx0",
            123, (0, 0, 0, 0), "ITS-PCI-MSIX-0002:00:00.0", "1", "Edge", ("eth0-rxtx0",),
            "0002:00:00.0", False,
        ),
        (
            " 205:          0          0          0          0  ITS-PCI-MSI-0004:00:00.0   0 Edge"
            "      PCIe PME, aerdrv",
            205, (0, 0, 0, 0), "ITS-PCI-MSI-0004:00:00.0", "0", "Edge", ("PCIe PME", "aerdrv"),
            "0004:00:00.0", False,
        ),
        # x86: the flow handler glued to the hwirq
        (
            "  35:          0          0          0        120  IR-PCI-MSI 524288-edge      nvme0q0",
            35, (0, 0, 0, 120), "IR-PCI-MSI", "524288", "edge", ("nvme0q0",), "0000:01:00.0",
            True,
        ),
        # no PCI at all: a GIC line, several actions
        (
            "  11:     912345     912000     911000     910000     GICv3  27 Level     arch_timer",
            11, (912345, 912000, 911000, 910000), "GICv3", "27", "Level", ("arch_timer",), None,
            False,
        ),
        (
            "  44:          1          0          0          0   ITS-MSI 16384 Edge      aerdrv, "
            "PCIe PME, pciehp",
            44, (1, 0, 0, 0), "ITS-MSI", "16384", "Edge", ("aerdrv", "PCIe PME", "pciehp"),
            "0000:00:01.0", True,
        ),
        # the address in the action name
        (
            " 396:       1411          0          0          0 GICv3 396 Edge      "
            "mlx5_comp7@pci:0000:01:00.0",
            396, (1411, 0, 0, 0), "GICv3", "396", "Edge", ("mlx5_comp7@pci:0000:01:00.0",),
            "0000:01:00.0", False,
        ),
        (
            "  52:          0          0          0          0   IO-APIC  17-fasteoi   "
            "ahci[0000:00:17.0]",
            52, (0, 0, 0, 0), "IO-APIC", "17", "fasteoi", ("ahci[0000:00:17.0]",),
            "0000:00:17.0", False,
        ),
        # any shared-domain hwirq decodes (matched only against an NPU's address)
        (
            "  60:          0          0          0          0   ITS-MSI 1 Edge      x",
            60, (0, 0, 0, 0), "ITS-MSI", "1", "Edge", ("x",), "0000:00:00.0", True,
        ),
        # cut lines: counts only, then a cut name
        ("2753:          0       4711", 2753, (0, 4711), None, None, None, (), None, False),
        (
            "2753:          0       4711          0          0   ITS-MSI 101187585 Edge      sq_se",
            2753, (0, 4711, 0, 0), "ITS-MSI", "101187585", "Edge", ("sq_se",), "0000:c1:00.0",
            True,
        ),
        (
            "2753:          0       4711          0          0   ITS-MSI 1011",
            2753, (0, 4711, 0, 0), "ITS-MSI", "1011", None, (), "0000:00:00.0", True,
        ),
        ("2753:", 2753, (), None, None, None, (), None, False),
    ],
)  # fmt: skip
def test_line_forms(
    line: str,
    irq: int,
    counts: tuple[int, ...],
    chip: str | None,
    hw: str | None,
    trigger: str | None,
    names: tuple[str, ...],
    pci: str | None,
    from_hwirq: bool,
) -> None:
    got = one(line)
    assert (got.irq, got.counts, got.chip, got.hwirq, got.trigger) == (
        irq, counts, chip, hw, trigger,
    )  # fmt: skip
    assert got.names == names
    assert got.pci == pci
    assert got.pci_from_hwirq == from_hwirq


def test_many_cpu_columns_and_offline_cpus_in_the_header() -> None:
    text = npu_interrupts({0: "0000:c1:00.0", 1: "0000:c2:00.0"}, 192)
    parsed = parse_interrupts(text)
    assert parsed.cpu_columns == tuple(range(192))
    sq = [ln for ln in parsed.lines if ln.named("sq_send_trigger_irq")]
    assert [ln.irq for ln in sq] == [2753, 3009]
    assert all(len(ln.counts) == 192 for ln in parsed.lines)
    assert [ln.total for ln in sq] == [4711, 4711]
    assert [ln.pci for ln in sq] == ["0000:c1:00.0", "0000:c2:00.0"]
    # IPI0 and Err are not numbered IRQs
    assert {ln.irq for ln in parsed.lines} >= {11, 97}
    offline = parse_interrupts("   CPU0   CPU2   CPU3\n  5:  1  2  3  GICv3 27 Level  t\n")
    assert offline.cpu_columns == (0, 2, 3)
    assert offline.lines[0].counts == (1, 2, 3)


@pytest.mark.parametrize(
    ("text", "err"),
    [("", "empty"), ("\n\n", "empty"), ("  5: 1 2 GICv3\n", "no CPU header")],
)
def test_invalid(text: str, err: str) -> None:
    with pytest.raises(ParseError, match=err):
        parse_interrupts(text)


@pytest.mark.parametrize(
    ("bdf", "index"),
    [("0000:c1:00.0", 1), ("0000:01:00.0", 0), ("0001:01:00.0", 0), ("0000:3d:02.7", 31)],
)
def test_hwirq_decodes_back(bdf: str, index: int) -> None:
    line = (
        f"  60:          0          0          0          0   ITS-MSI {hwirq(bdf, index)} Edge  x"
    )
    assert one(line).pci == bdf


@pytest.mark.parametrize(
    ("lst", "mask", "want"),
    [
        ("144\n", None, {144}),
        ("0-3,8\n", "ignored", {0, 1, 2, 3, 8}),
        (None, "00000000,00000003\n", {0, 1}),
        ("", "00010000,00000000,00000000,00000000,00000000,00000000\n", {176}),
        (None, "ff\n", set(range(8))),
        (None, None, None),
        ("x-y", None, None),
        (None, "zz", None),
    ],
)
def test_affinity(lst: str | None, mask: str | None, want: set[int] | None) -> None:
    got = parse_affinity(lst, mask, source="proc/irq/1/smp_affinity_list")
    assert (None if got is None else set(got)) == want


def test_npu_pair_as_vllm_ascend_picks_it() -> None:
    parsed = parse_interrupts(npu_interrupts({0: "0000:c1:00.0", 1: "0000:c2:00.0"}, 4))
    # with the device's msi_irqs: the first sq line listed there; cq is sq + 1
    got = npu_irqs(parsed, "0000:C2:00.0", msi_irq_numbers(["3008", "3009", "3010", "x"]))
    assert (got.sq, got.cq, got.found_by, got.cq_named) == (3009, 3010, "msi_irqs", True)
    assert got.sq_candidates == 2
    # without: the hwirq of an old kernel's line
    got = npu_irqs(parsed, "0000:c1:00.0")
    assert (got.sq, got.cq, got.found_by) == (2753, 2754, "hwirq")
    # a newer kernel's per-device domain
    newer = parse_interrupts(npu_interrupts({0: "0000:c1:00.0"}, 4, "its-pci-msix"))
    got = npu_irqs(newer, "0000:c1:00.0")
    assert (got.sq, got.found_by) == (2753, "pci")
    # no such device, or msi_irqs that lists none of the sq lines
    assert npu_irqs(parsed, "0000:41:00.0").sq is None
    assert npu_irqs(parsed, "0000:c1:00.0", frozenset({1, 2})).sq is None


def test_the_bare_form_of_vllm_ascends_unit_tests() -> None:
    # no chip, no trigger: vLLM-Ascend still finds the name in the line, and so do we
    parsed = parse_interrupts(
        HEAD4 + "123: 0 0 0 0 sq_send_trigger_irq\n124: 0 0 0 0 cq_update_irq\n"
    )
    got = npu_irqs(parsed, "0000:c1:00.0", frozenset({123, 124}))
    assert (got.sq, got.cq, got.cq_named) == (123, 124, True)
    assert parsed.lines[0].chip == "sq_send_trigger_irq" and parsed.lines[0].pci is None


def test_cq_not_named_and_irqs_to_read() -> None:
    text = HEAD4 + (
        "  40:  0 0 0 0  ITS-MSI 101187585 Edge  sq_send_trigger_irq\n"
        "  41:  0 0 0 0  ITS-MSI 101187586 Edge  something_else\n"
        "  50:  0 0 0 0  ITS-MSI 101187590 Edge  cq_update_irq\n"
    )
    parsed = parse_interrupts(text)
    got = npu_irqs(parsed, "0000:c1:00.0")
    assert (got.sq, got.cq, got.cq_named) == (40, 41, False)
    assert irqs_to_read(parsed) == [40, 41, 50]


def _sound(parsed: Interrupts, text: str) -> None:
    """What any parse must give: the header's CPU columns, and for each numbered line its IRQ
    number, at most one count per column, and a PCI address only in the kernel's form."""
    assert parsed.cpu_columns and all(c >= 0 for c in parsed.cpu_columns)
    numbered = {
        int(head)
        for head, sep, _ in (ln.partition(":") for ln in text.splitlines())
        if sep and head.strip().isascii() and head.strip().isdigit()
    }
    for line in parsed.lines:
        assert line.irq in numbered
        assert len(line.counts) <= len(parsed.cpu_columns)
        assert all(c >= 0 for c in line.counts) and line.total == sum(line.counts)
        assert line.pci is None or re.fullmatch(
            r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", line.pci
        )
        assert not line.pci_from_hwirq or line.pci is not None
        assert all(n and n == n.strip() for n in line.names)
    assert len(parsed.lines) <= len(text.splitlines())


# lines shaped like the kernel's, from its own pieces, so most draws hold numbered lines
_TOKENS = st.sampled_from(
    ["0", "7", "123456", "ITS-MSI", "ITS-PCI-MSIX-0000:C1:00.0", "IR-PCI-MSI", "PCI-MSI",
     "GICv3", "Edge", "Level", "524288-edge", "9-fasteoi", "101187585", "sq_send_trigger_irq,",
     "cq_update_irq", "mlx5_comp0@pci:0000:01:00.0", "ahci[0001:11:00.0]", "NMI:", "-", "x"]
)  # fmt: skip
_LINE = st.tuples(
    st.integers(0, 5000) | st.just(-1), st.lists(_TOKENS | st.text(max_size=8), max_size=12)
).map(lambda t: (f"{t[0]}:" if t[0] >= 0 else "LOC:") + " " + " ".join(t[1]))
interrupts_like = st.lists(_LINE, max_size=12).map("\n".join)


@given(st.text(max_size=400) | interrupts_like)
def test_any_text_parses_or_says_why(text: str) -> None:
    # with a CPU header first, any text parses
    with_header = parse_interrupts(HEAD4 + text)
    _sound(with_header, HEAD4 + text)
    event("numbered lines" if with_header.lines else "no numbered line")
    try:
        parsed = parse_interrupts(text)
    except ParseError as e:
        assert e.source == "/proc/interrupts"
        assert "CPU" in str(e) or "empty" in str(e)
        return
    _sound(parsed, text)


def test_keep_parses_only_the_npu_lines() -> None:
    text = npu_interrupts({0: "0000:c1:00.0"}, 8)
    kept = parse_interrupts(text, keep=NPU_IRQ_NAMES)
    assert {ln.irq for ln in kept.lines} == {2753, 2754, 2755, 2756, 2757}
    assert kept.cpu_columns == tuple(range(8))
    full = parse_interrupts(text).by_irq()
    assert all(full[ln.irq] == ln for ln in kept.lines)
