"""numa-local --spill: nodes without a device lend their cores to the nearest device node."""

from __future__ import annotations

from hypothesis import given, settings

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.model import Host
from ascendtune.core.planner import PlanRequest, make_plan
from tests.support.planner_hosts import Scenario, memory_host, scenarios


def a2_like() -> Host:
    # 8 nodes of 24 CPUs, two nodes per socket; NPU pairs on nodes 6, 4, 0, 2 as on an A2
    return memory_host(
        [range(24 * n, 24 * n + 24) for n in range(8)], npu_nodes=[6, 6, 4, 4, 0, 0, 2, 2]
    )


def test_spill_lends_the_idle_node_of_the_same_socket() -> None:
    host = a2_like()
    plan = make_plan(host, PlanRequest(policy="numa-local", spill=True))
    r0 = plan.ranks[0]
    assert format_cpulist(r0.cpus) == "144-155,168-179"
    # IRQ, acl and release stay on the device's own node; only main takes the lent cores
    assert r0.roles.irq == (144, 145) and r0.roles.acl == (154,) and r0.roles.release == (155,)
    assert format_cpulist(r0.roles.main) == "146-153,168-179"
    assert r0.locality == 0.5
    assert not plan.overlaps and not plan.idle_cpus
    assert any("--spill" in n for n in plan.notes)


def test_without_spill_idle_nodes_stay_idle() -> None:
    plan = make_plan(a2_like(), PlanRequest(policy="numa-local"))
    assert format_cpulist(plan.idle_cpus) == "24-47,72-95,120-143,168-191"


def test_spill_never_crosses_a_socket() -> None:
    # sockets: nodes 0,1 and nodes 2,3; the only device lives on node 2, so node 3 is lent to
    # it and nodes 0 and 1, on the other socket, stay idle
    host = memory_host([range(0, 8), range(8, 16), range(16, 24), range(24, 32)], npu_nodes=[2])
    plan = make_plan(host, PlanRequest(policy="numa-local", spill=True))
    assert format_cpulist(plan.ranks[0].cpus) == "16-31"
    assert format_cpulist(plan.idle_cpus) == "0-15"


def test_spill_is_ignored_elsewhere_and_says_so() -> None:
    plan = make_plan(a2_like(), PlanRequest(policy="numa-slice", spill=True))
    assert any("numa-local only" in n for n in plan.notes)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_spill_keeps_ranks_apart_and_roles_home(s: Scenario) -> None:
    host = s.host()
    try:
        plan = make_plan(host, s.request("numa-local", None)._replace(spill=True))
    except Exception as e:  # only the planner's own refusal is acceptable
        assert type(e).__name__ == "PlanError", e
        return
    assert not plan.overlaps
    for r in plan.ranks:
        assert r.cpuset <= host.cpus_allowed - s.reserve
        sockets = {host.cpus[c].socket for c in r.cpus}
        assert len(sockets) == 1, "spilled across sockets"
        for role in (r.roles.irq, r.roles.acl, r.roles.release):
            assert all(host.cpus[c].node == r.device_node for c in role)
