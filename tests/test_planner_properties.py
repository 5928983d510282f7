"""Property tests over random hosts built in memory: what every plan must respect."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Host, Soc
from ascendtune.core.planner import Plan, PlanRequest, make_plan
from ascendtune.core.planner.numa import home_node
from tests.planner_hosts import memory_host

POLICIES = ("vllm-ascend", "numa-local", "numa-slice")
BETTER = ("numa-local", "numa-slice")


@dataclass(frozen=True)
class Scenario:
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

    def request(self, policy: str, visible: tuple[int, ...] | None = None) -> PlanRequest:
        return PlanRequest(
            policy=policy,
            visible=self.visible if visible is None else visible,
            soc=self.soc,
            reserve=self.reserve,
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


def _plan(s: Scenario, policy: str, visible: tuple[int, ...] | None = None) -> Plan | None:
    """The plan, or None when the policy refuses this host with a PlanError (nothing else)."""
    try:
        return make_plan(s.host(), s.request(policy, visible))
    except PlanError:
        return None


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES))
def test_planned_cpus_are_online_allowed_not_reserved(s: Scenario, policy: str) -> None:
    host = s.host()
    plan = _plan(s, policy)
    if plan is None:
        return
    assert [r.device for r in plan.ranks] == list(s.visible)
    for r in plan.ranks:
        assert r.cpus, "a rank with no CPU"
        assert r.cpuset <= host.cpus_online
        assert r.cpuset <= host.cpus_allowed
        assert not r.cpuset & s.reserve
        roles = r.roles
        parts = [roles.irq, roles.main, roles.acl, roles.release]
        assert sorted(c for p in parts for c in p) == sorted(r.cpus), "roles partition the CPUs"


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.sampled_from(BETTER))
def test_better_policies_never_share_a_cpu_nor_cross_a_node(s: Scenario, policy: str) -> None:
    host = s.host()
    plan = _plan(s, policy)
    if plan is None:
        return
    assert not plan.overlaps
    seen: set[int] = set()
    for r in plan.ranks:
        assert not seen & r.cpuset
        seen |= r.cpuset
        assert len(r.numa_nodes) == 1, f"rank {r.rank} crosses nodes {r.numa_nodes}"
        # whole cores: a CPU's usable siblings come with it
        usable = host.cpus_allowed - s.reserve
        for c in r.cpus:
            assert host.cpus[c].siblings & usable <= r.cpuset
    assert plan.idle_cpus == (host.cpus_allowed - s.reserve) - seen


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES))
def test_same_inputs_same_plan(s: Scenario, policy: str) -> None:
    assert _plan(s, policy) == _plan(s, policy)


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_vllm_ascend_plans_or_raises_plan_error(s: Scenario) -> None:
    plan = _plan(s, "vllm-ascend")  # anything but a PlanError fails the test
    if plan is None:
        return
    running = sorted(s.visible)
    for r in plan.ranks:
        assert r.device == s.visible[r.rank]
        assert r.logical_id == running[r.rank]
        if plan.mode != "a5_clusters":
            assert len(r.cpus) >= 5 and len(r.roles.irq) == 2
            assert r.roles.acl == r.cpus[-2:-1] and r.roles.release == r.cpus[-1:]


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.sampled_from(BETTER), st.data())
def test_services_sharing_a_cpuset_do_not_overlap(
    s: Scenario, policy: str, data: st.DataObject
) -> None:
    """Two jobs on disjoint device sets under one cpuset get disjoint CPUs, as long as neither
    runs a device whose known node lies outside the cpuset (numa-slice deals those apart)."""
    host = s.host()
    usable = host.cpus_allowed - s.reserve
    usable_nodes = {n.id for n in host.numa_nodes if n.cpus & usable}
    far = {
        a.logical_id
        for a in host.npus
        if (h := home_node(host, a)) is not None and h not in usable_nodes
    }
    ids = [i for i in range(len(s.npu_nodes)) if i not in far]
    if len(ids) < 2:
        return
    cut = data.draw(st.integers(1, len(ids) - 1))
    a, b = _plan(s, policy, tuple(ids[:cut])), _plan(s, policy, tuple(ids[cut:]))
    if a is None or b is None:
        return
    cpus_a = {c for r in a.ranks for c in r.cpus}
    cpus_b = {c for r in b.ranks for c in r.cpus}
    assert not cpus_a & cpus_b
