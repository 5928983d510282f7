"""The better policies, `numa-local` and `numa-slice`, on sysroot hosts and hosts in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import InvalidInput, PlanError
from ascendtune.core.model import Host
from ascendtune.core.planner import POLICIES, Plan, PlanRequest, make_plan
from ascendtune.core.planner import numa as numa_policy
from tests.support.planner_hosts import Hosts, memory_host
from tests.support.planner_hosts import hosts_fixture as hosts_fixture  # the `hosts` fixture


def plan(host: Host, policy: str, visible: Sequence[int] | None = None, **kw: object) -> Plan:
    vis = tuple(visible) if visible is not None else None
    return make_plan(host, PlanRequest(policy, vis, **kw))  # type: ignore[arg-type]


def cpus_of(p: Plan) -> dict[int, str]:
    return {r.device: format_cpulist(r.cpus) for r in p.ranks}


def halves(first: int, nodes: Sequence[int], per_node: int = 24) -> dict[int, str]:
    """Pairs of devices (2k, 2k+1) splitting node nodes[k] of per_node CPUs in two."""
    out = {}
    for k, n in enumerate(nodes):
        lo, half = n * per_node, per_node // 2
        out[first + 2 * k] = f"{lo}-{lo + half - 1}"
        out[first + 2 * k + 1] = f"{lo + half}-{lo + per_node - 1}"
    return out


@dataclass
class Case:
    id: str
    host: str  # a name in tests.support.planner_hosts.HOSTS
    policy: str
    visible: tuple[int, ...] | None
    cpus: dict[int, str]  # device -> CPUs


A2_LOCAL = halves(0, [6, 4, 0, 2])
CASES = [
    Case("910b3x8-local", "a2", "numa-local", None, A2_LOCAL),
    Case("910b3x8-slice", "a2", "numa-slice", None, A2_LOCAL),
    Case(
        "910b1-nonmonotonic-local",
        "b1",
        "numa-local",
        None,
        {
            0: "144-155",
            2: "156-167",
            1: "0-11",
            3: "12-23",
            4: "96-107",
            6: "108-119",
            5: "48-59",
            7: "60-71",
        },
    ),
    # the container holds nodes 6-7 and sees one NPU: the hidden NPU of its node keeps its half
    Case(
        "container-local",
        "a2-pair",
        "numa-local",
        (1,),
        {1: "156-167"},
    ),
    Case(
        "container-slice",
        "a2-pair",
        "numa-slice",
        (0,),
        {0: "144-155"},
    ),
    Case("16-npus-local", "a2x16", "numa-local", None, halves(0, range(8))),
    Case("16-npus-slice", "a2x16", "numa-slice", None, halves(0, range(8))),
    # A3: 4 NPUs per node of 32 cores: 8 whole cores (16 threads) each
    Case(
        "a3-local",
        "a3",
        "numa-local",
        None,
        {g: f"{16 * g}-{16 * g + 15}" for g in range(16)},
    ),
    Case(
        "310p-duo-local",
        "310p",
        "numa-local",
        None,
        {0: "0-11", 1: "12-23", 2: "24-35", 3: "36-47"}
        | {4: "96-107", 5: "108-119", 6: "120-131", 7: "132-143"},
    ),
    # no topology at all: devices dealt to nodes in id order, one node each here
    Case(
        "no-topology-slice",
        "a2-notopo",
        "numa-slice",
        None,
        {g: f"{24 * g}-{24 * g + 23}" for g in range(8)},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_policy_cpus(hosts: Hosts, case: Case) -> None:
    p = plan(hosts.host(case.host), case.policy, case.visible)
    assert cpus_of(p) == case.cpus
    assert not p.overlaps
    for r in p.ranks:
        assert len(r.numa_nodes) == 1
        assert r.locality in (1.0, None)
        assert r.logical_id == r.device


def test_numa_local_roles_whole_cores_with_smt(hosts: Hosts) -> None:
    r0 = plan(hosts.host("a3"), "numa-local").ranks[0]
    assert r0.roles.to_json() == {"irq": "0-1", "main": "2-11", "acl": "12-13", "release": "14-15"}


def test_numa_local_roles_without_smt(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), "numa-local")
    assert p.ranks[0].roles.to_json() == {
        "irq": "144-145",
        "main": "146-153",
        "acl": "154",
        "release": "155",
    }
    assert format_cpulist(p.idle_cpus) == "24-47,72-95,120-143,168-191"
    assert p.mode == "numa_local" and not p.findings


def test_no_irq_reserve(hosts: Hosts) -> None:
    r0 = plan(hosts.host("a2"), "numa-local", irq_reserve=False).ranks[0]
    assert r0.roles.irq == () and format_cpulist(r0.roles.main) == "144-153"


def test_reserve_honoured(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), "numa-local", reserve=frozenset({144, 145}))
    # node 6 keeps 146-167 (22 CPUs) for NPUs 0 and 1
    assert cpus_of(p)[0] == "146-156" and cpus_of(p)[1] == "157-167"
    assert {144, 145}.isdisjoint(c for r in p.ranks for c in r.cpus)


def test_numa_slice_container_fix_keeps_hidden_far_npus_out(hosts: Hosts) -> None:
    """Nodes 6-7 and NPU 0 visible: NPUs 2-7 live on nodes outside the cpuset and must not take
    slices of it (the old rule dealt all 8 NPUs over nodes 6-7: NPU 0 got 144-149)."""
    p = plan(hosts.host("a2-pair"), "numa-slice", (0,))
    assert cpus_of(p) == {0: "144-155"}


def test_numa_slice_visible_npu_far_from_cpuset_is_dealt(hosts: Hosts) -> None:
    """A container with nodes 6-7 given NPU 4 (node 0): NPU 4 and every NPU outside the cpuset
    are dealt in id order to the node with most cores per device; NPUs 0,1 stay on node 6.
    Nodes 6/7 end with NPUs 0,1,4,6 / 2,3,5,7: NPU 4 is node 6's third quarter."""
    host = hosts.host("a2-pair")
    p = plan(host, "numa-slice", (4,))
    assert cpus_of(p) == {4: "156-161"} and p.ranks[0].locality == 0.0
    with pytest.raises(PlanError, match="no CPU in the usable set"):
        plan(host, "numa-local", (4,))


def test_numa_slice_same_partition_for_services_sharing_a_cpuset(hosts: Hosts) -> None:
    host = hosts.host("a3-half")
    a, b = plan(host, "numa-slice", range(0, 4)), plan(host, "numa-slice", range(4, 8))
    assert not {c for r in a.ranks for c in r.cpus} & {c for r in b.ranks for c in r.cpus}
    both = plan(host, "numa-slice", range(8))
    assert cpus_of(both) == cpus_of(a) | cpus_of(b)


def test_numa_local_needs_topology(hosts: Hosts) -> None:
    with pytest.raises(PlanError, match="NUMA node is unknown"):
        plan(hosts.host("a2-notopo"), "numa-local")


def test_numa_local_uses_sysfs_numa_node_without_npu_smi_affinity(hosts: Hosts) -> None:
    host = hosts.host("a2-notopo-sysfs")
    assert cpus_of(plan(host, "numa-local")) == A2_LOCAL
    # vLLM-Ascend reads npu-smi only: it still falls back to global slicing
    assert plan(host, "vllm-ascend").mode == "global_slice"


def test_too_many_ranks_per_node() -> None:
    host = memory_host([range(8)], npu_nodes=[0, 0])
    with pytest.raises(PlanError, match=r"4 CPUs .* 5 are needed"):
        plan(host, "numa-local")
    p = plan(host, "numa-local", irq_reserve=False)
    assert [len(r.cpus) for r in p.ranks] == [4, 4]


def test_cpuless_node_and_unknown_home() -> None:
    host = memory_host([range(16), [], range(16, 32)], npu_nodes=[0, 2, None])
    p = plan(host, "numa-slice", (0, 1, 2))
    # NPU 2's node is unknown: it joins the node with most cores per device (node 0 on a tie)
    assert cpus_of(p) == {0: "0-7", 1: "16-31", 2: "8-15"}


def test_policy_registry_is_documented() -> None:
    assert set(POLICIES) == {
        "vllm-ascend",
        "numa-local",
        "numa-slice",
        "node",
        "socket",
        "exclusive",
        "core-complex",
    }
    from ascendtune.app.plan import policy_choices

    # the CLI's choices come from the registry
    assert policy_choices() == ("auto", *POLICIES)
    assert all(p.summary for p in POLICIES.values())
    with pytest.raises(InvalidInput, match="unknown policy"):
        plan(memory_host([range(8)], npu_nodes=[0]), "fastest")


@pytest.mark.parametrize(
    ("n_cores", "k", "sizes"),
    [(10, 3, [4, 3, 3]), (2, 3, [1, 1, 0]), (0, 2, [0, 0]), (6, 1, [6])],
)
def test_split_cores(n_cores: int, k: int, sizes: list[int]) -> None:
    cores = [(i,) for i in range(n_cores)]
    parts = numa_policy.split_cores(cores, k)
    assert [len(p) for p in parts] == sizes
    assert [c for p in parts for c in p] == cores


def test_numa_slice_unknown_home_rank_keeps_the_shared_partition() -> None:
    """Found by hypothesis: a job on NPU 1 (node unknown) once dealt far NPU 2 into the cpuset as
    well, so its partition differed from the job on NPU 0 under the same cpuset, and they met."""
    host = memory_host(
        [range(4), range(4, 8), range(8, 24)],
        allowed=frozenset(range(8, 24)),
        npu_nodes=[2, None, 0],
    )
    a, b = plan(host, "numa-slice", (0,)), plan(host, "numa-slice", (1,))
    assert cpus_of(a) == {0: "8-15"} and cpus_of(b) == {1: "16-23"}
