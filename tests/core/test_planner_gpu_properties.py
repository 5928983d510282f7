"""Property tests over random GPU hosts built in memory: what every GPU plan must respect, on
hosts with SMT, interleaved CPU numbering, CPU-less nodes, cut cpusets and L3 groups. The hosts
are synthetic-host kit specs (ascendtune.synth) and the Host each describes: the Host the reader
reads from its sysroot (tests/synth/test_spec_roundtrip.py).

`plannable_gpu_scenarios` builds hosts on which every policy must plan, so each draw checks a
plan (a refusal fails); `gpu_scenarios` builds any host, on which a policy plans soundly or
refuses with a PlanError."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import event, given, settings
from hypothesis import strategies as st

from ascendtune.core.errors import PlanError
from ascendtune.core.model import Host
from ascendtune.core.planner import Plan, PlanRequest, make_plan
from ascendtune.core.planner.numa import home_node
from ascendtune.synth.expect import expected_host
from ascendtune.synth.spec import Cpus, HostSpec, Node, Pci, SelfProc, Thread

POLICIES = ("numa-local", "numa-slice", "node", "socket", "exclusive", "core-complex")
PARTITIONS = ("numa-local", "numa-slice", "exclusive")  # never share a CPU, never cross a node


def cpu_ids(
    node_sizes: tuple[int, ...], smt: int, interleaved: bool
) -> dict[tuple[int, int, int], int]:
    """The CPU number of thread t of core k of node n: in node order, then numbered by the
    chosen rule."""
    slots = [
        (n, k, t) for n, cores in enumerate(node_sizes) for k in range(cores) for t in range(smt)
    ]
    if interleaved:  # the i-th CPU of each node before the (i+1)-th of any
        slots.sort(key=lambda s: (s[2], s[1], s[0]))
    else:  # upper-half SMT numbering: every node's first threads, then the second ones
        slots.sort(key=lambda s: (s[2], s[0], s[1]))
    return {slot: i for i, slot in enumerate(slots)}


@dataclass(frozen=True)
class GpuScenario:
    node_sizes: tuple[int, ...]  # cores per node; 0: a CPU-less node (GH200 GPU memory)
    smt: int
    interleaved: bool  # CPU ids dealt round-robin over the nodes (node 0 = even CPUs on two)
    nodes_per_socket: int
    llc_cores: int  # cores per L3 group; 0: no cache topology
    offline: frozenset[int]
    allowed: frozenset[int] | None
    # per GPU: (numa_node, node whose CPUs are its affinity); None for unknown / none
    gpus: tuple[tuple[int | None, int | None], ...]
    visible: tuple[int, ...]
    reserve: frozenset[int]

    def spec(self) -> HostSpec:
        """The host as the synthetic-host kit describes it: GPUs seen on the PCI bus."""
        cpu_id = cpu_ids(self.node_sizes, self.smt, self.interleaved)
        threads = [
            Thread(
                c,
                n // self.nodes_per_socket,
                k,
                frozenset(cpu_id[(n, k, u)] for u in range(self.smt)),
            )
            for (n, k, _t), c in cpu_id.items()
        ]
        node_cpus = [
            frozenset(c for (m, _k, _t), c in cpu_id.items() if m == n)
            for n in range(len(self.node_sizes))
        ]
        llc = tuple(
            frozenset(
                cpu_id[(n, j, u)]
                for j in range(first, min(first + self.llc_cores, cores))
                for u in range(self.smt)
            )
            for n, cores in enumerate(self.node_sizes)
            for first in range(0, cores, self.llc_cores or cores or 1)
            if self.llc_cores and cores
        )
        every = frozenset(cpu_id.values())
        online = every - self.offline
        pci = tuple(
            Pci(
                f"0000:{0x18 + g:02x}:00.0",
                vendor="0x10de",
                device="0x2330",
                numa_node=-1 if numa is None else numa,
                local_cpus=node_cpus[aff_node] & online if aff_node is not None else "",
                name="NVIDIA H100 SXM5 80GB",
            )
            for g, (numa, aff_node) in enumerate(self.gpus)
        )
        return HostSpec(
            cpus=Cpus(online, present=every, threads=tuple(threads), llc=llc),
            nodes=tuple(Node(n, c) for n, c in enumerate(node_cpus)),
            pci=pci,
            self_proc=SelfProc(self.allowed & online if self.allowed is not None else online),
            meta={"arch": "x86_64"},
        )

    def host(self) -> Host:
        return expected_host(self.spec())

    def request(self, policy: str) -> PlanRequest:
        return PlanRequest(policy=policy, visible=self.visible, reserve=self.reserve)


@st.composite
def gpu_scenarios(draw: st.DrawFn) -> GpuScenario:
    sizes = tuple(
        draw(st.lists(st.sampled_from([0, 2, 3, 4, 6, 8]), min_size=1, max_size=6).filter(any))
    )
    smt = draw(st.sampled_from([1, 2]))
    total = sum(sizes) * smt
    offline = frozenset(draw(st.lists(st.integers(0, total - 1), max_size=2)))
    if len(offline) == total:  # a host has an online CPU
        offline = frozenset()
    kind = draw(st.sampled_from(["all", "mask"]))
    allowed: frozenset[int] | None = None
    if kind == "mask":  # a mask, not a set of CPUs: far cheaper to draw and shrink
        mask = draw(st.integers(1, (1 << total) - 1))
        allowed = frozenset(c for c in range(total) if mask >> c & 1)
        if not allowed - offline:
            allowed = None
    usable = sorted((allowed if allowed is not None else frozenset(range(total))) - offline)
    cpu_nodes = [n for n, s in enumerate(sizes) if s]
    cpuless = [n for n, s in enumerate(sizes) if not s]
    gpu = st.one_of(
        st.sampled_from(cpu_nodes).map(lambda n: (n, n)),  # the common case, drawn most
        st.sampled_from(cpu_nodes).map(lambda n: (n, n)),
        st.sampled_from(cpu_nodes).map(lambda n: (None, n)),  # numa_node -1, affinity known
        st.just((None, None)),  # nothing known
        *(
            [st.tuples(st.sampled_from(cpuless), st.sampled_from(cpu_nodes))] if cpuless else []
        ),  # numa_node names a CPU-less node
    )
    gpus = tuple(draw(st.lists(gpu, min_size=1, max_size=8)))
    ids = list(range(len(gpus)))
    visible = tuple(draw(st.permutations(ids))[: draw(st.integers(1, len(ids)))])
    reserve = frozenset(draw(st.lists(st.sampled_from(usable), max_size=3))) if usable else None
    if not reserve or reserve >= set(usable):
        reserve = frozenset()
    return GpuScenario(
        node_sizes=sizes,
        smt=smt,
        interleaved=draw(st.booleans()),
        nodes_per_socket=draw(st.sampled_from([1, 2])),
        llc_cores=draw(st.sampled_from([0, 2, 4])),
        offline=offline,
        allowed=allowed,
        gpus=gpus,
        visible=visible,
        reserve=reserve,
    )


@st.composite
def plannable_gpu_scenarios(draw: st.DrawFn) -> GpuScenario:
    """Hosts on which every policy plans, built so rather than filtered: each GPU's node is
    known (its numa_node, or its affinity alone) and has a core for every GPU on it; offline,
    reserved and cut-out CPUs are only ones no GPU node needs (second threads, cores beyond
    its GPUs' count, nodes without GPUs); the cpuset holds every GPU node; and the cache
    topology is there (core-complex groups by it). CPU-less nodes, SMT, interleaved numbering
    and several sockets stay in."""
    sizes = tuple(
        draw(st.lists(st.sampled_from([0, 2, 3, 4, 6, 8]), min_size=1, max_size=6).filter(any))
    )
    smt = draw(st.sampled_from([1, 2]))
    interleaved = draw(st.booleans())
    cpu_nodes = [n for n, size in enumerate(sizes) if size]
    per_node = {n: draw(st.integers(0, min(sizes[n], 3))) for n in cpu_nodes}
    if not any(per_node.values()):
        per_node[draw(st.sampled_from(cpu_nodes))] = 1
    homes = [n for n in cpu_nodes for _ in range(per_node[n])][:8]
    known = st.sampled_from(["numa_node", "affinity"])
    gpus = tuple(
        (n if draw(known) == "numa_node" else None, n) for n in draw(st.permutations(homes))
    )
    cpu_id = cpu_ids(sizes, smt, interleaved)
    # what a GPU node needs: the first thread of one core per GPU on it
    needed = {c for (n, k, t), c in cpu_id.items() if t == 0 and k < per_node.get(n, 0)}
    spare = sorted(set(cpu_id.values()) - needed)
    gpu_nodes = {n for n in cpu_nodes if per_node[n]}
    allowed: frozenset[int] | None = None
    if draw(st.booleans()):  # a cpuset: every GPU node, some other nodes, less a few spares
        others = draw(st.sets(st.sampled_from(cpu_nodes)))
        whole = {c for (n, _k, _t), c in cpu_id.items() if n in gpu_nodes | others}
        cut = draw(st.sets(st.sampled_from(spare), max_size=2)) if spare else set()
        allowed = frozenset(whole - cut)
    offline = frozenset(draw(st.sets(st.sampled_from(spare), max_size=2))) if spare else frozenset()
    usable = sorted(
        ((allowed if allowed is not None else set(cpu_id.values())) - offline) & set(spare)
    )
    reserve = (
        frozenset(draw(st.sets(st.sampled_from(usable), max_size=3))) if usable else frozenset()
    )
    ids = list(range(len(gpus)))
    return GpuScenario(
        node_sizes=sizes,
        smt=smt,
        interleaved=interleaved,
        nodes_per_socket=draw(st.sampled_from([1, 2])),
        llc_cores=draw(st.sampled_from([2, 4])),
        offline=offline,
        allowed=allowed,
        gpus=gpus,
        visible=tuple(draw(st.permutations(ids))[: draw(st.integers(1, len(ids)))]),
        reserve=reserve,
    )


def _plan(s: GpuScenario, policy: str, host: Host | None = None) -> Plan | None:
    """The plan, or None when the policy refuses this host with a PlanError (nothing else)."""
    try:
        plan = make_plan(host or s.host(), s.request(policy))
    except PlanError:
        event(f"{policy}: refused")
        return None
    event(f"{policy}: planned")
    assert all(r.cpus for r in plan.ranks), "a rank got no CPU instead of a PlanError"
    return plan


def _planned(s: GpuScenario, policy: str, host: Host) -> Plan:
    """The plan of a plannable host: a refusal fails."""
    try:
        return make_plan(host, s.request(policy))
    except PlanError as e:
        raise AssertionError(f"{policy} refused a plannable host: {e}") from None


def _check_sound(s: GpuScenario, host: Host, plan: Plan) -> None:
    """Every GPU plan: the devices asked for, in order, each on online, allowed, unreserved
    CPUs, all of them main (CUDA has no acl/release threads, no device IRQs)."""
    assert plan.vendor == "nvidia"
    assert [r.device for r in plan.ranks] == list(s.visible)
    usable = host.cpus_allowed - s.reserve
    for r in plan.ranks:
        assert r.cpus, "a rank with no CPU"
        assert r.cpuset <= host.cpus_online and r.cpuset <= usable
        assert r.roles.main == r.cpus and not (r.roles.irq or r.roles.acl or r.roles.release)


def _check_partition(s: GpuScenario, host: Host, plan: Plan, policy: str) -> None:
    """numa-local, numa-slice, exclusive: no CPU shared, no node crossed, whole cores."""
    assert not plan.overlaps
    usable = host.cpus_allowed - s.reserve
    seen: set[int] = set()
    for r in plan.ranks:
        assert not seen & r.cpuset, f"rank {r.rank} shares CPUs"
        seen |= r.cpuset
        assert len(r.numa_nodes) == 1, f"rank {r.rank} crosses nodes {r.numa_nodes}"
        usable_nodes = {n.id for n in host.numa_nodes if n.cpus & usable}
        if r.device_node in usable_nodes:
            assert r.numa_nodes == (r.device_node,)
        elif policy == "exclusive" and r.device_node is None:  # torch: -1 is the one node
            assert [n.id for n in host.cpu_nodes] == list(r.numa_nodes)
        else:  # numa-slice deals a GPU of unknown node, or of a node outside the cpuset
            assert policy == "numa-slice"
        # whole cores: a CPU's usable siblings come with it
        for c in r.cpus:
            assert host.cpus[c].siblings & usable <= r.cpuset


# ---------------------------------------------------------------- plannable hosts: every policy plans


@settings(max_examples=100, deadline=None)
@given(plannable_gpu_scenarios(), st.sampled_from(POLICIES))
def test_planned_cpus_are_online_allowed_and_main_only(s: GpuScenario, policy: str) -> None:
    host = s.host()
    _check_sound(s, host, _planned(s, policy, host))


@settings(max_examples=100, deadline=None)
@given(plannable_gpu_scenarios(), st.sampled_from(PARTITIONS))
def test_partitions_never_share_a_cpu_nor_cross_a_node(s: GpuScenario, policy: str) -> None:
    host = s.host()
    _check_partition(s, host, _planned(s, policy, host), policy)


@settings(max_examples=100, deadline=None)
@given(plannable_gpu_scenarios())
def test_node_mode_stays_within_the_device_node(s: GpuScenario) -> None:
    host = s.host()
    plan = _planned(s, "node", host)
    usable = host.cpus_allowed - s.reserve
    for r in plan.ranks:
        dev = host.accelerator(r.device)
        assert dev is not None
        node = home_node(host, dev)
        assert node is not None  # a plannable host's GPUs have a known node
        [home] = [n for n in host.numa_nodes if n.id == node]
        assert r.cpuset == home.cpus & usable
        assert r.numa_nodes == (node,)


@settings(max_examples=100, deadline=None)
@given(plannable_gpu_scenarios())
def test_socket_and_core_complex_stay_on_their_socket_and_cache(s: GpuScenario) -> None:
    host = s.host()
    node_plan = _planned(s, "node", host)  # socket and core-complex plan from the device's node
    for plan in (_planned(s, "socket", host), _planned(s, "core-complex", host)):
        for r in plan.ranks:
            node_cpus = node_plan.ranks[r.rank].cpuset
            sockets = {host.cpus[c].socket for c in node_cpus}
            assert {host.cpus[c].socket for c in r.cpus} == sockets
            if plan.policy == "core-complex":
                assert r.cpuset <= node_cpus
                assert len({min(host.cpus[c].llc) for c in r.cpus}) == 1, "one L3 group"


# ---------------------------------------------------------------- any host: a sound plan or a PlanError


@settings(max_examples=100, deadline=None)
@given(gpu_scenarios(), st.sampled_from(POLICIES))
def test_any_gpu_host_plans_soundly_or_raises_plan_error(s: GpuScenario, policy: str) -> None:
    """Unknown nodes, GPUs on CPU-less nodes, cpusets that miss a GPU's node, too few cores, no
    cache topology: a policy refuses with a PlanError (nothing else), or plans soundly; the
    node-mode fallback of a GPU of unknown node on a one-node host is checked here."""
    host = s.host()
    plan = _plan(s, policy, host)
    if plan is None:
        return
    _check_sound(s, host, plan)
    if policy in PARTITIONS:
        _check_partition(s, host, plan, policy)
    if policy == "node":
        for r in plan.ranks:
            dev = host.accelerator(r.device)
            assert dev is not None
            if home_node(host, dev) is None:  # unknown node on a one-node host: that node
                [only] = host.cpu_nodes
                assert r.numa_nodes == (only.id,)


@settings(max_examples=100, deadline=None)
@given(gpu_scenarios(), st.sampled_from(POLICIES))
def test_same_inputs_same_plan(s: GpuScenario, policy: str) -> None:
    assert _plan(s, policy) == _plan(s, policy)
