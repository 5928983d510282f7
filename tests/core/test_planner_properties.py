"""Property tests over random hosts built in memory: what every plan must respect.

`planned_scenarios` builds hosts with the synthetic-host kit (ascendtune.synth: a HostSpec and
the Host it describes, which tests/synth/test_spec_roundtrip.py shows the reader reads back) sized
so that every policy plans: each NPU's node has cores to spare, the cpuset holds every NPU's
node, every NPU has an affinity. The invariants are checked on each of those plans. Hosts on
which a policy must refuse (an unknown node, a cpuset off the NPU's node, too few CPUs) and
wholly random hosts (plan or PlanError, nothing else) are separate tests below."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Host, Soc
from ascendtune.core.planner import Plan, PlanRequest, impls, make_plan
from ascendtune.core.planner.numa import home_node
from ascendtune.synth.expect import expected_host
from ascendtune.synth.spec import Chip, Cpus, HostSpec, Node, NpuSmi, Pci, SelfProc, Thread
from tests.support.planner_hosts import Requests, Scenario, scenarios

POLICIES = ("vllm-ascend", "numa-local", "numa-slice")
BETTER = ("numa-local", "numa-slice")
NAMES = {Soc.A2: "910B3", Soc.A3: "Ascend910", Soc.P310: "310P3", Soc.A5: "Ascend950DT"}
DEVICE_IDS = {Soc.A2: "0xd802", Soc.A3: "0xd803", Soc.P310: "0xd500", Soc.A5: "0xd806"}


# ---------------------------------------------------------------- hosts on which every policy plans


@dataclass(frozen=True)
class Planned(Requests):
    spec: HostSpec
    visible: tuple[int, ...]
    reserve: CpuSet
    soc: Soc

    @cached_property
    def host(self) -> Host:
        return expected_host(self.spec)

    def plan(self, policy: str, visible: tuple[int, ...] | None = None) -> Plan:
        return make_plan(self.host, self.request(policy, visible))


@st.composite
def planned_scenarios(draw: st.DrawFn) -> Planned:
    soc = draw(st.sampled_from([Soc.A2, Soc.A2, Soc.A3, Soc.P310, Soc.A5]))
    smt = draw(st.sampled_from([1, 2]))
    count = draw(st.integers(2 if soc is Soc.A5 else 1, 4))
    # NPUs per node; on 950 node 0 is kept for uvb_poll_window_thread, so none there
    per_node = [draw(st.integers(0, 2)) for _ in range(count)]
    if soc is Soc.A5:
        per_node[0] = 0
    if not any(per_node):
        per_node[-1] = 1
    need = 8 if soc is Soc.A5 else 6  # cores per NPU (a 950 cluster is 8 cores)
    # 4 cores to spare per NPU node: room for an offline CPU and the reserved ones
    cores = [max(draw(st.sampled_from([0, 4, 8, 12])), need * m + 4 if m else 0) for m in per_node]
    if not any(cores):
        cores[0] = 4
    upper = draw(st.booleans())  # SMT numbered in halves (x86) or in pairs (ARM)
    total_cores = sum(cores)
    threads, node_cpus, k = [], [], 0
    for n, size in enumerate(cores):
        members: set[int] = set()
        for _ in range(size):
            ids = (
                [k + t * total_cores for t in range(smt)]
                if upper
                else [k * smt + t for t in range(smt)]
            )
            threads += [Thread(c, n // 2, k, frozenset(ids)) for c in ids]
            members |= set(ids)
            k += 1
        node_cpus.append(frozenset(members))
    every = frozenset(c for m in node_cpus for c in m)
    offline = frozenset(draw(st.lists(st.sampled_from(sorted(every - {0})), max_size=1)))
    npu_home = [n for n, m in enumerate(per_node) for _ in range(m)]
    homes = set(npu_home)
    extra = draw(st.sets(st.sampled_from(range(count))))
    allowed = (
        None if draw(st.booleans()) else frozenset().union(*(node_cpus[n] for n in homes | extra))
    )
    with_pci = draw(st.booleans())
    chips = tuple(
        Chip(i, 0, i, NAMES[soc], f"0000:{i + 1:02x}:00.0", affinity=node_cpus[n])
        for i, n in enumerate(npu_home)
    )
    pci = tuple(
        Pci(c.bus, device=DEVICE_IDS[soc], numa_node=n, local_cpus=node_cpus[n])
        for c, n in zip(chips, npu_home, strict=True)
        if with_pci
    )
    spec = HostSpec(
        cpus=Cpus(every - offline, present=every, threads=tuple(threads)),
        nodes=tuple(Node(n, c) for n, c in enumerate(node_cpus)),
        pci=pci,
        self_proc=SelfProc(allowed & (every - offline)) if allowed is not None else None,
        npu_smi=NpuSmi(chips, logic_col=soc is not Soc.A5, phy_col=soc is Soc.A5),
    )
    usable = sorted((allowed if allowed is not None else every) - offline)
    reserve = frozenset(draw(st.lists(st.sampled_from(usable), max_size=2)))
    ids = list(range(len(chips)))
    visible = tuple(draw(st.permutations(ids))[: draw(st.integers(1, len(ids)))])
    return Planned(spec, visible, reserve, soc)


def check_cpus(host: Host, plan: Plan, visible: tuple[int, ...], reserve: CpuSet) -> None:
    assert [r.device for r in plan.ranks] == list(visible)
    for r in plan.ranks:
        if r.skipped is not None:
            # only vLLM-Ascend leaves a rank unbound (a release that refuses the host), and then
            # with no CPU at all
            assert (
                plan.policy == "vllm-ascend" and not r.cpus and not any(r.roles.to_json().values())
            )
            continue
        assert r.cpus, "a rank with no CPU"
        assert r.cpuset <= host.cpus_online
        assert r.cpuset <= host.cpus_allowed
        assert not r.cpuset & reserve
        roles = r.roles
        parts = [roles.irq, roles.main, roles.acl, roles.release]
        assert sorted(c for p in parts for c in p) == sorted(r.cpus), "roles partition the CPUs"


def check_better(host: Host, plan: Plan, reserve: CpuSet) -> None:
    assert not plan.overlaps
    seen: set[int] = set()
    for r in plan.ranks:
        assert not seen & r.cpuset
        seen |= r.cpuset
        assert len(r.numa_nodes) == 1, f"rank {r.rank} crosses nodes {r.numa_nodes}"
        # whole cores: a CPU's usable siblings come with it
        usable = host.cpus_allowed - reserve
        for c in r.cpus:
            assert host.cpus[c].siblings & usable <= r.cpuset
    assert plan.idle_cpus == (host.cpus_allowed - reserve) - seen


def check_vllm(plan: Plan, visible: tuple[int, ...]) -> None:
    running = sorted(visible)
    for r in plan.ranks:
        assert r.device == visible[r.rank]
        assert r.logical_id == running[r.rank]
        if r.skipped is not None:
            assert impls.refusal(plan) is not None and not r.cpus
            continue
        if plan.mode != "a5_clusters":
            assert len(r.cpus) >= 5 and len(r.roles.irq) == 2
            assert r.roles.acl == r.cpus[-2:-1] and r.roles.release == r.cpus[-1:]


@settings(max_examples=200, deadline=None)
@given(planned_scenarios(), st.sampled_from(POLICIES))
def test_planned_cpus_are_online_allowed_not_reserved(s: Planned, policy: str) -> None:
    check_cpus(s.host, s.plan(policy), s.visible, s.reserve)


@settings(max_examples=200, deadline=None)
@given(planned_scenarios(), st.sampled_from(BETTER))
def test_better_policies_never_share_a_cpu_nor_cross_a_node(s: Planned, policy: str) -> None:
    check_better(s.host, s.plan(policy), s.reserve)


@settings(max_examples=200, deadline=None)
@given(planned_scenarios(), st.sampled_from(POLICIES))
def test_same_inputs_same_plan(s: Planned, policy: str) -> None:
    assert s.plan(policy) == make_plan(expected_host(s.spec), s.request(policy))


@settings(max_examples=200, deadline=None)
@given(planned_scenarios())
def test_vllm_ascend_plans(s: Planned) -> None:
    check_vllm(s.plan("vllm-ascend"), s.visible)


@settings(max_examples=200, deadline=None)
@given(planned_scenarios(), st.sampled_from(BETTER), st.data())
def test_services_sharing_a_cpuset_do_not_overlap(
    s: Planned, policy: str, data: st.DataObject
) -> None:
    """Two jobs on disjoint device sets under one cpuset get disjoint CPUs (every NPU's node
    lies in the cpuset here; numa-slice deals NPUs of nodes outside it apart)."""
    ids = [a.logical_id for a in s.host.npus]
    if len(ids) < 2:
        return
    cut = data.draw(st.integers(1, len(ids) - 1))
    a, b = s.plan(policy, tuple(ids[:cut])), s.plan(policy, tuple(ids[cut:]))
    cpus_a = {c for r in a.ranks for c in r.cpus}
    cpus_b = {c for r in b.ranks for c in r.cpus}
    assert not cpus_a & cpus_b


# ---------------------------------------------------------------- hosts a policy must refuse


def _without_affinity(s: Planned, npu: int) -> Planned:
    assert s.spec.npu_smi is not None
    chips = tuple(
        replace(c, affinity=None) if c.logical_id == npu else c for c in s.spec.npu_smi.chips
    )
    spec = replace(
        s.spec,
        npu_smi=replace(s.spec.npu_smi, chips=chips),
        pci=tuple(p for p in s.spec.pci if p.bdf != chips[npu].bus),
    )
    return replace(s, spec=spec)


@settings(max_examples=50, deadline=None)
@given(planned_scenarios())
def test_numa_local_refuses_an_npu_of_unknown_node(s: Planned) -> None:
    gone = _without_affinity(s, s.visible[0])
    with pytest.raises(PlanError, match="NUMA node is unknown"):
        gone.plan("numa-local")


@settings(max_examples=50, deadline=None)
@given(planned_scenarios().filter(lambda s: s.soc in (Soc.A2, Soc.P310)))
def test_vllm_ascend_refuses_a_cpuset_off_the_npus_node(s: Planned) -> None:
    """topo_affinity: an NPU whose affinity misses the cpuset stops vLLM-Ascend's binding."""
    npu = s.host.accelerator(s.visible[0])
    assert npu is not None
    away = s.host.cpus_online - npu.cpu_affinity
    if not away:
        return
    off = replace(s.spec, self_proc=SelfProc(away))
    with pytest.raises(PlanError, match="conflict with NUMA affinity"):
        replace(s, spec=off, reserve=frozenset()).plan("vllm-ascend")


@pytest.mark.parametrize("policy", POLICIES)
def test_too_few_cpus_is_a_plan_error(policy: str) -> None:
    """One NPU on a node of 4 CPUs: no policy can give it IRQ + main + acl + release."""
    spec = HostSpec(
        cpus=Cpus(frozenset(range(4))),
        nodes=(Node(0, frozenset(range(4))),),
        npu_smi=NpuSmi((Chip(0, 0, 0, "910B3", "0000:01:00.0", affinity=frozenset(range(4))),)),
    )
    with pytest.raises(PlanError):
        make_plan(expected_host(spec), PlanRequest(policy=policy, soc=Soc.A2))


# ---------------------------------------------------------------- wholly random hosts


def _plan(s: Scenario, policy: str, visible: tuple[int, ...] | None = None) -> Plan | None:
    """The plan, or None when the policy refuses this host with a PlanError (nothing else)."""
    try:
        return make_plan(s.host(), s.request(policy, visible))
    except PlanError:
        return None


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES))
def test_any_host_plans_or_raises_plan_error(s: Scenario, policy: str) -> None:
    """Anything but a PlanError fails the test; a plan, when there is one, is sound."""
    host = s.host()
    plan = _plan(s, policy)
    assert plan == _plan(s, policy)
    if plan is None:
        return
    check_cpus(host, plan, s.visible, s.reserve)
    if policy in BETTER:
        check_better(host, plan, s.reserve)
    else:
        check_vllm(plan, s.visible)


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.sampled_from(BETTER), st.data())
def test_services_on_any_host_do_not_overlap(s: Scenario, policy: str, data: st.DataObject) -> None:
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
