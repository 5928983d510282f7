"""The synthetic-host kit says what it writes: the Host a spec describes, built in memory
(ascendtune.synth.expect), equals the Host the reader reads back from the rendered sysroot, as
a folder, as a tar.gz archive and as an in-memory mapping."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core.model import Host
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot, MemRoot, open_archive
from ascendtune.synth.expect import expected_host
from ascendtune.synth.render import render
from ascendtune.synth.spec import (
    Chip,
    Cpus,
    HostSpec,
    Node,
    NpuProcess,
    NpuSmi,
    Pci,
    SelfProc,
    adjacent,
    upper_half,
)

SOCS = {  # name, npu-smi layout, chips per card, Chip Logic ID column, PCI device id
    "a2": ("910B3", "a2", 1, True, "0xd802"),
    "a3": ("Ascend910", "a3", 2, True, "0xd803"),
    "310p": ("310P3", "310p", 2, True, "0xd500"),
    "950": ("Ascend950DT", "a2", 1, False, "0xd806"),
}


@st.composite
def specs(draw: st.DrawFn) -> HostSpec:
    smt = draw(st.sampled_from([1, 2]))
    sizes = draw(st.lists(st.sampled_from([0, 2, 4, 6]), min_size=1, max_size=4).filter(any))
    sizes = [s * smt for s in sizes]
    total = sum(sizes)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    node_cpus = [frozenset(range(a, a + s)) for a, s in zip(starts, sizes, strict=True)]
    offline = frozenset(draw(st.lists(st.integers(0, total - 1), max_size=2)))
    online = frozenset(range(total)) - offline or frozenset(range(total))
    layout = draw(st.sampled_from(["none", "upper", "adjacent"]))
    sockets = draw(st.sampled_from([1, 2]))
    threads = (
        ()
        if layout == "none"
        else upper_half(range(total), smt=smt, sockets=sockets)
        if layout == "upper"
        else adjacent(
            range(total), smt=smt, sockets=sockets, core_ids=draw(st.sampled_from([None, "socket"]))
        )
    )
    llc = tuple(c for c in node_cpus if c) if draw(st.booleans()) else ()
    mem = draw(st.sampled_from([None, 0, 16384 * 1024, 65536 * 1024]))
    nodes = tuple(Node(i, c, mem_kb=mem) for i, c in enumerate(node_cpus))
    self_proc = None
    if draw(st.booleans()):
        mask = draw(st.integers(1, (1 << total) - 1))
        allowed = frozenset(c for c in range(total) if mask >> c & 1)
        if not allowed & online:
            allowed = online
        mems = frozenset(draw(st.sets(st.integers(0, len(sizes) - 1), min_size=1)))
        self_proc = SelfProc(allowed, mems)
    npu_smi, pci = None, ()
    soc = draw(st.sampled_from(["none", "gpu", *SOCS]))
    if soc == "gpu":  # GPUs seen on the PCI bus (no nvidia-smi), and an NVSwitch that is none
        cpu_nodes = [i for i, c in enumerate(node_cpus) if c]
        homes = draw(
            st.lists(st.one_of(st.sampled_from(cpu_nodes), st.none()), min_size=1, max_size=4)
        )
        pci_class = draw(st.sampled_from([None, "0x030200"]))
        pci = tuple(
            Pci(
                f"0000:{0x18 + 0x10 * g:02x}:00.0",
                vendor="0x10de",
                device="0x2330",
                pci_class=pci_class,
                numa_node=draw(st.sampled_from([-1, home])) if home is not None else -1,
                local_cpus=node_cpus[home] if home is not None else "",
                driver=draw(st.sampled_from([None, "nvidia"])),
                name="NVIDIA H100 SXM5 80GB",
            )
            for g, home in enumerate(homes)
        )
        if draw(st.booleans()):
            pci += (Pci("0000:05:00.0", vendor="0x10de", device="0x22a3", pci_class=pci_class),)
    elif soc != "none":
        name, info_layout, per_card, logic_col, device = SOCS[soc]
        cpu_nodes = [i for i, c in enumerate(node_cpus) if c]
        homes = draw(
            st.lists(st.one_of(st.sampled_from(cpu_nodes), st.none()), min_size=1, max_size=4)
        )
        chips = []
        for i, home in enumerate(homes):
            for d in range(per_card if logic_col else 1):
                logical = len(chips)
                aff = node_cpus[home] if home is not None else None
                chips.append(
                    Chip(i, d, logical, name, f"0000:{logical + 1:02X}:00.0", affinity=aff)
                )
        with_pci = draw(st.booleans())
        pci = tuple(
            Pci(
                c.bus,
                device=device,
                numa_node=homes[c.npu_id],
                local_cpus=node_cpus[homes[c.npu_id]],
            )
            for c in chips
            if with_pci and homes[c.npu_id] is not None
        )
        procs = tuple(
            NpuProcess(c.npu_id, c.chip_id, 1000 + c.logical_id, "VLLMWorker")
            for c in chips
            if draw(st.booleans())
        )
        npu_smi = NpuSmi(
            tuple(chips),
            layout=info_layout,  # type: ignore[arg-type]
            processes=procs,
            logic_col=logic_col,
            phy_col=soc in ("a3", "950"),
            label="Phy-ID" if soc == "a3" and draw(st.booleans()) else "NPU",
        )
    meta = draw(
        st.sampled_from([None, {"arch": "aarch64", "hostname": "synth"}, {"arch": "x86_64"}])
    )
    return HostSpec(
        cpus=Cpus(online, present=frozenset(range(total)), threads=threads, llc=llc),
        nodes=nodes,
        pci=pci,
        self_proc=self_proc,
        npu_smi=npu_smi,
        meta=meta,
        meta_indent=draw(st.sampled_from([None, 2])),
    )


def _same(read: Host, expected: Host) -> None:
    for name in Host._fields:  # field by field, so a failure names the field
        assert getattr(read, name) == getattr(expected, name), name
    assert read == expected


@settings(max_examples=150, deadline=None)
@given(specs())
def test_memory_and_archive_read_back_as_the_spec_says(spec: HostSpec) -> None:
    tree = render(spec)
    expected = expected_host(spec)
    mapping = {p: b.decode() for p, b in tree.mapping().items()}
    _same(read_host(MemRoot(mapping, tree.links)), expected)
    _same(read_host(open_archive(tree.tar_gz(), "<synth>")), expected)


@settings(max_examples=40, deadline=None)
@given(specs())
def test_folder_reads_back_as_the_spec_says(spec: HostSpec) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = render(spec).write(Path(tmp) / "host")
        _same(read_host(DirRoot(root)), expected_host(spec))


def test_archives_are_deterministic() -> None:
    from ascendtune.synth.standard import atlas_800i_a3

    tree = render(atlas_800i_a3())
    assert tree.tar_gz() == render(atlas_800i_a3()).tar_gz()
    assert tree.tar_gz()[4:8] == b"\0\0\0\0"  # gzip mtime 0
