"""Hypothesis strategies for the hosts and jobs of the reference tier: A2, A3, 310P and 950
layouts with cpusets, visible-device lists in any order, offline CPUs, CPU-less nodes, NPUs
hidden from the container or busy with other services, too few CPUs and no topo support.

`draw_cases` collects a fixed number of examples with derandomize=True, so CI sees the same
hosts every run."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendtune.core.cpulist import format_cpulist
from ascendtune.synth.spec import Chip, Cpus, HostSpec, Node, NpuSmi, Pci, SelfProc, adjacent
from ascendtune.synth.text import LEGEND_910_93, TOPO_UNSUPPORTED
from tests.reference.harness import Case

FAMILIES = ("A2", "A3", "_310P", "A5")
CHIP_NAME = {"A2": "910B3", "A3": "Ascend910", "_310P": "310P3", "A5": "Ascend950DT"}
PCI_DEVICE = {"A2": "0xd802", "A3": "0xd803", "_310P": "0xd500", "A5": "0xd806"}


def _rare() -> st.SearchStrategy[bool]:
    """True about one time in eight."""
    return st.sampled_from((False,) * 7 + (True,))


@st.composite
def cases(draw: st.DrawFn, family: str) -> Case:
    # --- CPUs and NUMA nodes
    k = draw(st.sampled_from((1, 2, 4, 8) if family != "A3" else (2, 4)))
    smt = draw(st.sampled_from((1, 2))) if family in ("A3", "A5") else 1
    # a realistic size first (hypothesis favours a list's first entries), small ones too
    per_node = draw(st.sampled_from((24, 48, 32, 64, 12, 16, 6, 8, 4, 10, 2, 3, 5))) * smt
    ncpu = k * per_node
    present = frozenset(range(ncpu))
    offline: frozenset[int] = frozenset()
    if draw(_rare()):
        offline = frozenset(draw(st.sets(st.sampled_from(sorted(present)), min_size=1, max_size=2)))
        if offline == present:
            offline = frozenset()
    online = present - offline
    node_cpus = {n: frozenset(range(n * per_node, (n + 1) * per_node)) for n in range(k)}
    nodes = [Node(n, cs) for n, cs in node_cpus.items()]
    if draw(_rare()):  # a memory-only node (CXL, HBM)
        nodes.append(Node(k, frozenset()))
    # --- NPUs: cards, chips, logical ids, their node
    if family == "A3":
        ncards, chips_per = draw(st.sampled_from((8, 4, 2))), 2
    elif family == "_310P":
        ncards, chips_per = draw(st.integers(1, 4)), 2
    else:
        ncards, chips_per = draw(st.sampled_from((2, 4, 8, 16 if family == "A5" else 8))), 1
    total = ncards * chips_per
    card_node = [draw(st.integers(0, k - 1)) for _ in range(ncards)]
    if draw(st.booleans()):
        card_node = sorted(card_node)
    card_ids = list(range(ncards))
    if family == "_310P" and draw(st.booleans()):
        card_ids = sorted(draw(st.sets(st.integers(1, 12), min_size=ncards, max_size=ncards)))
    chips: list[Chip] = []
    pci: list[Pci] = []
    topo_kind = draw(st.sampled_from(("affinity", "affinity", "affinity", "none", "unsupported")))
    if family == "A3":
        topo_kind = draw(st.sampled_from(("none", "none", "unsupported", "affinity")))
    pci_node_known = not draw(_rare())
    for ci, card in enumerate(card_ids):
        node = card_node[ci]
        bus = f"0000:{0x01 + 0x10 * ci:02x}:00.0"
        aff = format_cpulist(node_cpus[node]) if topo_kind == "affinity" else None
        for chip in range(chips_per):
            logical = ci * chips_per + chip
            chip_bus = bus if family == "_310P" else f"0000:{0x01 + 0x10 * ci + chip:02x}:00.0"
            chips.append(
                Chip(card, chip, logical, CHIP_NAME[family], chip_bus.upper(), affinity=aff)
            )
            if family != "_310P" or chip == 0:
                pci.append(
                    Pci(
                        chip_bus,
                        device=PCI_DEVICE[family],
                        pci_class="0x120000",
                        numa_node=node if pci_node_known else -1,
                        # a device the firmware gives no node: its local_cpulist is left out.
                        # (A real one lists every CPU; ascendtune's host model then places it
                        # on the node holding every CPU when only one node has CPUs, where
                        # lspci, like 0.9.1-0.13.0, sees no node: a known blind spot.)
                        local_cpus=node_cpus[node] if pci_node_known else "",
                    )
                )
    smi_kw: dict[str, object] = {}
    if family == "A3":
        smi_kw = dict(layout="a3", phy_col=True, label="Phy-ID", legend=LEGEND_910_93)
    elif family == "_310P":
        smi_kw = dict(layout="310p")
    elif family == "A5":
        smi_kw = dict(logic_col=False, phy_col=True)
    if topo_kind == "unsupported":
        smi_kw["topo"] = TOPO_UNSUPPORTED
    smi = NpuSmi(tuple(chips), **smi_kw)  # type: ignore[arg-type]
    # --- the cpuset
    how = draw(st.sampled_from(("all", "nodes", "all", "all", "range", "random")))
    allowed = online
    if how == "range":
        a = draw(st.integers(0, ncpu - 1))
        b = draw(st.integers(a, ncpu - 1))
        allowed = online & frozenset(range(a, b + 1))
    elif how == "nodes":
        picked = draw(st.sets(st.integers(0, k - 1), min_size=1, max_size=k))
        allowed = online & frozenset().union(*(node_cpus[n] for n in picked))
    elif how == "random":
        allowed = frozenset(draw(st.sets(st.sampled_from(sorted(online)), min_size=1)))
    if not allowed:
        allowed = online
    # --- the job: visible list (any order), busy NPUs
    ids = list(range(total))
    visible: tuple[int, ...] | None = None
    if draw(st.integers(0, 2)) != 0:
        visible = tuple(draw(st.permutations(ids))[: draw(st.integers(1, total))])
        if draw(st.booleans()):
            visible = tuple(sorted(visible))
    job = list(visible) if visible is not None else ids
    busy = set(job)
    if draw(st.integers(0, 3)) == 0:
        busy |= set(draw(st.sets(st.sampled_from(ids), max_size=total)))
    if draw(st.integers(0, 5)) == 0:
        busy -= set(draw(st.sets(st.sampled_from(job), max_size=len(job))))
    arch = "x86_64" if draw(_rare()) else "aarch64"
    spec = HostSpec(
        cpus=Cpus(online, present=present, threads=adjacent(sorted(present), smt=smt)),
        nodes=tuple(nodes),
        pci=tuple(pci),
        self_proc=SelfProc(format_cpulist(allowed), "0"),
        npu_smi=smi,
        meta={"arch": arch},
        meta_indent=None,
    )
    return Case(
        id="",
        spec=spec,
        family=family,
        visible=visible,
        busy=tuple(sorted(busy)),
        engram_offload=draw(st.booleans()),
        irq_writable=not draw(_rare()),
        note=f"{family} k={k} smt={smt} cpus={ncpu} topo={topo_kind} cpuset={how}",
    )


def draw_cases(family: str, count: int, seed_tag: str = "") -> list[Case]:
    """count generated cases of one family, the same every run."""
    out: list[Case] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases(family))
    def collect(case: Case) -> None:
        out.append(case)

    collect()
    return [replace(c, id=f"{family}{seed_tag}-{i}") for i, c in enumerate(out)]


def a5_cases(count: int, seed: int = 950) -> list[Case]:
    """Ascend 950 hosts the cluster allocator can bind (big nodes, NPUs mostly off node 0,
    whose CPUs go to uvb_poll_window_thread), in npu-smi's Ascend 950 layout (`info -m` with
    Slot ID and Chip Phy-ID and no Chip Logic ID, the process table keyed by NPU ID alone) and,
    for one in four, the older layout with Chip columns. Drawn from a fixed seed: the same
    every run. (cases() above seldom gives one that binds.)"""
    import random

    rnd = random.Random(seed)
    out: list[Case] = []
    for i in range(count):
        k = rnd.choice((2, 4, 4, 8))
        smt = rnd.choice((1, 2))
        per = rnd.choice((96, 64, 48, 80, 40, 32) if smt == 1 else (48, 32, 40, 24, 64)) * smt
        n = k * per
        node_cpus = {j: frozenset(range(j * per, (j + 1) * per)) for j in range(k)}
        nnpu = rnd.choice((8, 8, 16, 4, 2, 1))
        card_node = [rnd.randrange(1, k) if rnd.random() < 0.9 else 0 for _ in range(nnpu)]
        if rnd.random() < 0.5:
            card_node.sort()
        offline = frozenset(rnd.sample(range(n), 2)) if rnd.random() < 0.15 else frozenset()
        online = frozenset(range(n)) - offline
        allowed = online
        r = rnd.random()
        if r < 0.2:
            a = rnd.randrange(n)
            allowed = online & frozenset(range(a, rnd.randrange(a, n) + 1)) or online
        elif r < 0.3:
            allowed = frozenset(rnd.sample(sorted(online), rnd.randint(1, len(online))))
        chips = []
        pci = []
        for c in range(nnpu):
            bus = f"0000:{c + 1:02X}:00.0"
            aff = format_cpulist(node_cpus[card_node[c]]) if rnd.random() < 0.95 else None
            chips.append(Chip(c, 0, c, CHIP_NAME["A5"], bus, affinity=aff))
            pci.append(
                Pci(
                    bus.lower(),
                    device=PCI_DEVICE["A5"],
                    pci_class="0x120000",
                    numa_node=card_node[c],
                    local_cpus=node_cpus[card_node[c]],
                )
            )
        layout_950 = rnd.random() < 0.75
        smi = NpuSmi(
            tuple(chips),
            logic_col=False,
            phy_col=True,
            slot_col=layout_950,
            npu_id_procs=layout_950,
        )
        spec = HostSpec(
            cpus=Cpus(online, present=frozenset(range(n)), threads=adjacent(range(n), smt=smt)),
            nodes=tuple(Node(j, cs) for j, cs in node_cpus.items()),
            pci=tuple(pci),
            self_proc=SelfProc(format_cpulist(allowed), "0"),
            npu_smi=smi,
            meta={"arch": "aarch64"},
            meta_indent=None,
        )
        ids = list(range(nnpu))
        visible: tuple[int, ...] | None = None
        if rnd.random() < 0.6:
            visible = tuple(rnd.sample(ids, rnd.randint(1, nnpu)))
            if rnd.random() < 0.5:
                visible = tuple(sorted(visible))
        job = list(visible) if visible is not None else ids
        busy = set(job)
        if rnd.random() < 0.3:
            busy |= set(rnd.sample(ids, rnd.randint(0, nnpu)))
        if rnd.random() < 0.15:
            busy -= set(rnd.sample(job, rnd.randint(0, len(job))))
        out.append(
            Case(
                id=f"A5-bindable-{i}",
                spec=spec,
                family="A5",
                visible=visible,
                busy=tuple(sorted(busy)),
                engram_offload=rnd.random() < 0.5,
                irq_writable=rnd.random() > 0.1,
                note=f"A5 k={k} smt={smt} per={per} npus={nnpu} layout_950={layout_950}",
            )
        )
    return out


def relayout(cases: list[Case], seed: int = 7) -> list[Case]:
    """The same hosts with npu-smi's columns laid out otherwise: `info -m` with or without
    Chip Logic ID (only where each card holds one chip), Chip Phy-ID (ids shuffled half the
    time) and Slot ID, and the process table keyed by NPU ID alone (one chip per card). The
    releases up to 0.21.0rc1 read these by position, the later ones by header. Fixed seed."""
    import random

    rnd = random.Random(seed)
    out: list[Case] = []
    for c in cases:
        smi = c.spec.npu_smi
        assert smi is not None
        chips = smi.chips
        one_chip = len({ch.npu_id for ch in chips}) == len(chips)
        if rnd.random() < 0.5:
            perm = list(range(len(chips)))
            rnd.shuffle(perm)
            chips = tuple(replace(ch, phy_id=perm[i]) for i, ch in enumerate(chips))
        smi = replace(
            smi,
            chips=chips,
            logic_col=not one_chip or rnd.random() < 0.5,
            phy_col=rnd.random() < 0.6,
            slot_col=rnd.random() < 0.4,
            npu_id_procs=one_chip and smi.layout != "310p" and rnd.random() < 0.3,
        )
        layout = f"logic={smi.logic_col} phy={smi.phy_col} slot={smi.slot_col}"
        out.append(
            replace(
                c,
                id=f"{c.id}-relaid",
                spec=replace(c.spec, npu_smi=smi),
                note=f"{c.note} {layout} npu_id_procs={smi.npu_id_procs}",
                _tree=None,
                _host=None,
            )
        )
    return out
