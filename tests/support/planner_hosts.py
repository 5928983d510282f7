"""Hosts for the planner tests: sysroot scenarios written by the synthetic-host kit
(ascendtune.synth) and built once per session (the `hosts` fixture), and Host objects built in
memory for property tests (`scenarios`: random hosts, plannable or not)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import strategies as st

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.model import Host, Soc
from ascendtune.core.planner import PlanRequest
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from ascendtune.synth import standard, text
from ascendtune.synth.expect import expected_host
from ascendtune.synth.spec import (
    Chip,
    Cpus,
    HostSpec,
    Node,
    NpuSmi,
    Pci,
    SelfProc,
    Thread,
    even_nodes,
    node_list,
)
from ascendtune.synth.text import TOPO_UNSUPPORTED
from tests.support.builder import SysrootBuilder

# ---------------------------------------------------------------- the scenarios

# 8x 910B3 (Atlas 800I A2), bus ids and affinity as in the real `npu-smi info -t topo`: the
# pairs sit on nodes 6, 4, 0, 2 of an 8-node, 192-CPU Kunpeng 920 host.
A2_AFFINITY = list(standard.A2_AFFINITY)
A2_BUS = list(standard.A2_BUS)
# 910B1 whose pairs are not adjacent ids: NPU0/2 share 144-167, NPU1/3 0-23, ...
A2_NONMONOTONIC = ["144-167", "0-23", "144-167", "0-23", "96-119", "48-71", "96-119", "48-71"]
A2_CPUS = Cpus(frozenset(range(192)))  # no topology files: each CPU its own core, one socket


def topo_text(chips: Sequence[Chip]) -> str:
    """`npu-smi info -t topo` of these chips (HCCS links, their CPU Affinity cells)."""
    return text.topo(chips)


def a2_chips(affinity: Sequence[str | None] = A2_AFFINITY, name: str = "910B3") -> list[Chip]:
    return list(standard.a2_chips(affinity, name))


def _spec(
    cpus: Cpus,
    nodes: tuple[Node, ...],
    chips: Sequence[Chip],
    *,
    allowed: str | None,
    mems: str,
    meta: dict[str, object],
    **npu: object,
) -> HostSpec:
    return HostSpec(
        cpus=cpus,
        nodes=nodes,
        self_proc=SelfProc(allowed, mems) if allowed is not None else None,
        npu_smi=NpuSmi(tuple(chips), **npu),  # type: ignore[arg-type]
        meta=meta,
        meta_indent=None,
    )


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
    cpus = Cpus(parse_cpulist(online), present=parse_cpulist(present) if present else None)
    return sb.spec(
        _spec(
            cpus,
            even_nodes(8, 24),
            a2_chips(affinity, name),
            allowed=allowed,
            mems="0-7",
            meta={"hostname": "a2", "arch": arch},
            topo=topo,
        )
    )


def a2_16_host(sb: SysrootBuilder) -> SysrootBuilder:
    """16 910B NPUs on 8 nodes of 24 CPUs: NPUs 2n and 2n+1 hang off node n."""
    chips = [
        Chip(i, 0, i, "910B2C", f"0000:{i + 1:02x}:00.0", affinity=A2_NODES[i // 2])
        for i in range(16)
    ]
    spec = _spec(A2_CPUS, even_nodes(8, 24), chips, allowed="0-191", mems="0-7", meta=ARM)
    return sb.spec(spec)


def a3_host(sb: SysrootBuilder, *, allowed: str = "0-255") -> SysrootBuilder:
    """Atlas 800I A3: 8 cards x 2 dies = 16 logical NPUs named `Ascend910`, 4 nodes of 32 cores
    with SMT (threads 2k, 2k+1 are one core); 4 logical NPUs per node."""
    return sb.spec(standard.atlas_800i_a3(allowed=allowed))


def p310_duo_host(sb: SysrootBuilder) -> SysrootBuilder:
    """Atlas 300I Duo x4 (two 310P3 chips per card), 4 nodes of 48: cards 1,2 on node 0 and
    cards 4,8 on node 2; both chips of a card share its bus id and affinity."""
    return sb.spec(standard.atlas_300i_duo())


A5_AFFINITY = list(standard.A5_AFFINITY)


def a5_host(
    sb: SysrootBuilder, *, allowed: str = "0-383", affinity: Sequence[str | None] = A5_AFFINITY
) -> SysrootBuilder:
    """Ascend 950 (the vLLM-Ascend unit test's layout): 384 CPUs with SMT 2 on 4 nodes of 96;
    NPUs 0,1,6,7 on node 3 (288-383), NPUs 2-5 on node 1 (96-191)."""
    return sb.spec(standard.ascend_950(allowed=allowed, affinity=affinity))


def cpuless_host(sb: SysrootBuilder, affinity: Sequence[str]) -> SysrootBuilder:
    """Nodes 0, 1, 3 hold 24 CPUs each; node 2 has memory but no CPU (a CXL or HBM node)."""
    nodes = node_list([range(0, 24), range(24, 48), [], range(48, 72)])
    chips = [
        Chip(i, 0, i, "910B3", f"0000:{i + 1:02x}:00.0", affinity=a) for i, a in enumerate(affinity)
    ]
    cpus = Cpus(frozenset(range(72)))
    return sb.spec(_spec(cpus, nodes, chips, allowed="0-71", mems="0-3", meta=ARM))


def _a2_sysfs(sb: SysrootBuilder) -> None:
    """No topology from npu-smi, but sysfs knows each NPU's node."""
    a2_host(sb, topo=TOPO_UNSUPPORTED)
    for dev in standard.a2_pci():
        sb.pci(dev.bdf, numa_node=dev.numa_node, local_cpulist=text.cells(dev.local_cpus))


ARM: dict[str, object] = {"arch": "aarch64"}
A2_NODES = [frozenset(range(24 * n, 24 * n + 24)) for n in range(8)]


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
    """A Host without a sysroot (the kit's spec and the Host it describes): node i holds
    node_cpus[i] (an empty list is a CPU-less node); with smt=k, each node's online CPUs are cut
    into consecutive groups of k siblings. NPU i hangs off node npu_nodes[i] (None: unknown)
    with that node's CPUs as its npu-smi affinity (with_affinity=False: its sysfs local CPUs)."""
    threads: list[Thread] = []
    nodes: list[Node] = []
    for nid, members in enumerate(node_cpus):
        ordered = sorted(set(members) - offline)
        for k in range(0, len(ordered), smt):
            group = frozenset(ordered[k : k + smt])
            threads += [Thread(c, nid // 2, ordered[k], group) for c in sorted(group)]
        nodes.append(Node(nid, frozenset(members)))
    online = frozenset(t.cpu for t in threads)
    chips, pci = [], []
    for i, node in enumerate(npu_nodes):
        local = nodes[node].cpus & online if node is not None else None
        bus = f"0000:{i + 1:02x}:00.0"
        chips.append(Chip(i, 0, i, name, bus, affinity=local if with_affinity else None))
        if not with_affinity and node is not None:
            pci.append(Pci(bus, numa_node=node, local_cpus=local or frozenset()))
    spec = HostSpec(
        cpus=Cpus(online, present=online | offline, threads=tuple(threads)),
        nodes=tuple(nodes),
        pci=tuple(pci),
        self_proc=SelfProc((allowed & online) if allowed is not None else online),
        npu_smi=NpuSmi(tuple(chips)) if chips else None,
        meta={"arch": "aarch64"},
    )
    return expected_host(spec)


# ---------------------------------------------------------------- random hosts in memory


class Requests:
    """A scenario's plan request: its visible devices (or others), SoC and reserved CPUs."""

    visible: tuple[int, ...]
    reserve: CpuSet
    soc: Soc

    def request(self, policy: str, visible: tuple[int, ...] | None = None) -> PlanRequest:
        return PlanRequest(
            policy=policy,
            visible=self.visible if visible is None else visible,
            soc=self.soc,
            reserve=self.reserve,
        )


@dataclass(frozen=True)
class Scenario(Requests):
    node_sizes: tuple[int, ...]
    smt: int
    offline: CpuSet
    allowed: CpuSet | None
    npu_nodes: tuple[int | None, ...]
    visible: tuple[int, ...]
    reserve: CpuSet
    soc: Soc

    def host(self) -> Host:
        nodes, start = [], 0
        for size in self.node_sizes:
            nodes.append(range(start, start + size))
            start += size
        return memory_host(
            nodes,
            smt=self.smt,
            allowed=self.allowed,
            npu_nodes=self.npu_nodes,
            offline=self.offline,
        )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    sizes = draw(
        st.lists(st.sampled_from([0, 4, 6, 8, 12, 16, 24]), min_size=1, max_size=6).filter(any)
    )
    smt = draw(st.sampled_from([1, 2]))
    total = sum(sizes)
    offline = frozenset(draw(st.lists(st.integers(0, total - 1), max_size=2)))
    cpu_nodes = [i for i, s in enumerate(sizes) if s]
    kind = draw(st.sampled_from(["all", "nodes", "random"]))
    allowed: CpuSet | None = None
    if kind == "nodes":
        picked = draw(st.sets(st.sampled_from(cpu_nodes), min_size=1))
        start = [sum(sizes[:i]) for i in range(len(sizes))]
        allowed = frozenset(c for n in picked for c in range(start[n], start[n] + sizes[n]))
    elif kind == "random":  # a mask, not a set of CPUs: far cheaper to draw and shrink
        mask = draw(st.integers(1, (1 << total) - 1))
        allowed = frozenset(c for c in range(total) if mask >> c & 1)
    if allowed is not None and not allowed - offline:
        allowed = None
    usable = sorted((allowed if allowed is not None else frozenset(range(total))) - offline)
    npu_nodes = tuple(
        draw(st.lists(st.one_of(st.sampled_from(cpu_nodes), st.none()), min_size=1, max_size=8))
    )
    ids = list(range(len(npu_nodes)))
    visible = tuple(draw(st.permutations(ids))[: draw(st.integers(1, len(ids)))])
    reserve = frozenset(draw(st.lists(st.sampled_from(usable), max_size=4)))
    if reserve >= set(usable):
        reserve = frozenset()
    soc = draw(st.sampled_from([Soc.A2, Soc.A2, Soc.A3, Soc.P310, Soc.A5]))
    return Scenario(tuple(sizes), smt, offline, allowed, npu_nodes, visible, reserve, soc)
