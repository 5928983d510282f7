"""Policy `vllm-ascend` on sysroot hosts: the pools, roles and log lines vLLM-Ascend itself gives.

Expected values are worked out by hand from vllm_ascend/cpu_binding.py (v0.23.0 / main), and
the cases at the end are the ones its own unit tests (tests/ut/device_allocator) assert.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import InvalidInput, PlanError
from ascendtune.core.model import Host, Soc
from ascendtune.core.parsers.npu_smi import parse_topo
from ascendtune.core.planner import Plan, PlanRequest, Roles, make_plan
from ascendtune.core.planner import vllm_ascend as va
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from tests.support.builder import SysrootBuilder
from tests.support.planner_hosts import (
    A2_NONMONOTONIC,
    Hosts,
    a2_chips,
    a2_host,
    memory_host,
    topo_text,
)
from tests.support.planner_hosts import hosts_fixture as hosts_fixture  # the `hosts` fixture
from tests.support.samples import sample


def plan(host: Host, visible: Sequence[int] | None = None, **kw: object) -> Plan:
    vis = tuple(visible) if visible is not None else None
    return make_plan(host, PlanRequest("vllm-ascend", vis, **kw))  # type: ignore[arg-type]


def pools(p: Plan) -> dict[int, str]:
    return {r.logical_id: format_cpulist(r.cpus) for r in p.ranks}


def log_line(first: int, last: int, npu: int) -> str:
    """vLLM-Ascend's line for a pool first..last: IRQ = 2 first, acl and release the 2 last."""
    main = " ".join(str(c) for c in range(first + 2, last - 1))
    return f"NPU{npu}: main=[{main}]  acl=[{last - 1}]  release=[[{last}]]"


# ---------------------------------------------------------------- the table


@dataclass
class Case:
    id: str
    host: str  # a name in tests.support.planner_hosts.HOSTS
    visible: tuple[int, ...] | None
    mode: str
    pools: dict[int, str]  # logical id -> pool
    findings: list[str] = field(default_factory=list)  # fragments some finding must hold
    nodes: dict[int, list[int]] = field(default_factory=dict)  # logical id -> numa_nodes


A2_ALL = {
    0: "144-167",
    1: "168-191",
    2: "96-119",
    3: "120-143",
    4: "0-23",
    5: "24-47",
    6: "48-71",
    7: "72-95",
}

CASES = [
    Case(
        "910b3x8-pairs-on-every-second-node",
        "a2",
        None,
        va.TOPO_AFFINITY,
        A2_ALL,
        ["ranks 1,3,5,7 run wholly off their device's NUMA node"],
        {0: [6], 1: [7], 2: [4], 3: [5], 4: [0], 5: [1], 6: [2], 7: [3]},
    ),
    Case(
        "910b1x8-pairs-not-adjacent-ids",
        "b1",
        None,
        va.TOPO_AFFINITY,
        {
            0: "144-167",
            2: "168-191",
            1: "0-23",
            3: "24-47",
            4: "96-119",
            6: "120-143",
            5: "48-71",
            7: "72-95",
        },
        ["ranks 2,3,6,7 run wholly off"],
    ),
    Case(
        # the container holds nodes 6-7 and sees NPU 0 only; hidden NPU 2 shares its affinity,
        # so NPU 0 gets half the pair's pool (vLLM-Ascend PR #8792)
        "container-one-pair-npu0-of-nonmonotonic",
        "b1-pair",
        (0,),
        va.TOPO_AFFINITY,
        {0: "144-167"},
    ),
    Case(
        "container-one-pair-npu2-of-nonmonotonic",
        "b1-pair",
        (2,),
        va.TOPO_AFFINITY,
        {2: "168-191"},
        ["rank 0 runs wholly off its device's NUMA node"],
    ),
    Case(
        "container-one-pair-both-visible",
        "a2-pair",
        (0, 1),
        va.TOPO_AFFINITY,
        {0: "144-167", 1: "168-191"},
    ),
    Case(
        "container-one-pair-npu1-only",
        "a2-pair",
        (1,),
        va.TOPO_AFFINITY,
        {1: "168-191"},
    ),
    Case(
        # the node-7 pair wraps onto node 0 and sorts it first: NPU 14 lands on node 0
        "16-npus-on-8-nodes",
        "a2x16",
        None,
        va.TOPO_AFFINITY,
        {
            0: "0-23",
            1: "24-47",
            2: "24-47",
            3: "48-71",
            4: "48-71",
            5: "72-95",
            6: "72-95",
            7: "96-119",
            8: "96-119",
            9: "120-143",
            10: "120-143",
            11: "144-167",
            12: "144-167",
            13: "168-191",
            14: "0-23",
            15: "168-191",
        },
        [
            "ranks 1,3,5,7,9,11,13,14 run wholly off",
            "ranks 0 and 14 share CPUs 0-23",
            "ranks 1 and 2 share CPUs 24-47",
            "ranks 13 and 15 share CPUs 168-191",
        ],
    ),
    Case(
        "a3-16-logical-npus-smt",
        "a3",
        None,
        va.GLOBAL_SLICE,
        {g: f"{16 * g}-{16 * g + 15}" for g in range(16)},
        [
            "the two IRQ CPUs are one core's two SMT threads",
            "acl and release threads share one physical core",
        ],
    ),
    Case(
        # a container with half the cpuset and half the NPUs: still sliced by all 16
        "a3-half-container",
        "a3-half",
        tuple(range(8)),
        va.GLOBAL_SLICE,
        {g: f"{8 * g}-{8 * g + 7}" for g in range(8)},
        ["divides the cpuset by all 16 NPUs", "64 CPUs (50% of the cpuset) stay idle"],
    ),
    Case(
        "310p-duo-4-cards",
        "310p",
        None,
        va.TOPO_AFFINITY,
        {i: f"{24 * i}-{24 * i + 23}" for i in range(8)},
        ["ranks 2,3,6,7 run wholly off"],
    ),
    Case(
        # CPU 5 is offline: `lscpu -e` prints '-' as its node and the release fails, so no
        # rank is bound (its pools, NPU 4 one CPU short, are never applied)
        "offline-cpu",
        "a2-offline",
        None,
        va.TOPO_AFFINITY,
        dict.fromkeys(range(8), ""),
        ["CPUs 5 are offline", "binding fails"],
    ),
    Case(
        # node 2 holds no CPU: K=3. NPU 0 (node 1) looks up node 2, and the defaultdict adds it,
        # so K=4 and NPU 1 (node 3) extends onto node (3+1)%4 = 0, not node 1
        "cpuless-node-defaultdict-quirk",
        "cpuless",
        None,
        va.TOPO_AFFINITY,
        {0: "24-47", 1: "0-23,48-71"},
        ["rank 1: nodes 0,3, 50% local"],
        {0: [1], 1: [0, 3]},
    ),
    Case(
        # the same nodes, NPUs swapped: NPU 0 (node 3) extends while K is still 3, onto node 1,
        # and overlaps NPU 1's pool
        "cpuless-node-order-matters",
        "cpuless-swapped",
        None,
        va.TOPO_AFFINITY,
        {0: "24-71", 1: "24-47"},
        ["ranks 0 and 1 share CPUs 24-47"],
    ),
    Case(
        "no-topology-falls-back-to-global-slice",
        "a2-notopo",
        None,
        va.GLOBAL_SLICE,
        {g: f"{24 * g}-{24 * g + 23}" for g in range(8)},
    ),
    Case(
        "ascend-950-first-dp-group",
        "a5",
        (0, 1, 2, 3),
        va.A5_CLUSTERS,
        {0: "288-303", 1: "304-319", 2: "96-111", 3: "112-127"},
    ),
    Case(
        "ascend-950-second-dp-group",
        "a5",
        (4, 5, 6, 7),
        va.A5_CLUSTERS,
        {4: "128-143", 5: "144-159", 6: "320-335", 7: "336-351"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vllm_ascend_pools(hosts: Hosts, case: Case) -> None:
    p = plan(hosts.host(case.host), case.visible)
    assert p.mode == case.mode
    assert pools(p) == case.pools
    for fragment in case.findings:
        assert any(fragment in f.message for f in p.findings), (fragment, p.findings)
    for npu, nodes in case.nodes.items():
        rank = next(r for r in p.ranks if r.logical_id == npu)
        assert list(rank.numa_nodes) == nodes
    if case.mode != va.A5_CLUSTERS:
        for r in p.ranks:
            assert r.roles.irq == r.cpus[:2]
            assert r.roles.main == r.cpus[2:-2]
            assert r.roles.acl == r.cpus[-2:-1] and r.roles.release == r.cpus[-1:]


def test_910b3_roles_and_log_lines(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"))
    r0 = p.ranks[0]
    assert (r0.rank, r0.device, r0.logical_id) == (0, 0, 0)
    assert r0.roles.to_json() == {
        "irq": "144-145",
        "main": "146-165",
        "acl": "166",
        "release": "167",
    }
    assert r0.vllm_log_line(p.mode) == (
        "NPU0: main=[146 147 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 "
        "164 165]  acl=[166]  release=[[167]]"
    )
    assert [r.vllm_log_line(p.mode) for r in p.ranks] == [
        log_line(144, 167, 0),
        log_line(168, 191, 1),
        log_line(96, 119, 2),
        log_line(120, 143, 3),
        log_line(0, 23, 4),
        log_line(24, 47, 5),
        log_line(48, 71, 6),
        log_line(72, 95, 7),
    ]
    assert [r.locality for r in p.ranks] == [1.0, 0.0] * 4
    assert [r.device_node for r in p.ranks] == [6, 6, 4, 4, 0, 0, 2, 2]
    assert not p.overlaps and not p.idle_cpus


def test_ascend_950_log_line_and_roles(hosts: Hosts) -> None:
    p = plan(hosts.host("a5"), (0,))
    r0 = p.ranks[0]
    assert r0.roles.to_json() == {"irq": "", "main": "288-303", "acl": "", "release": ""}
    worker = " ".join(map(str, range(288, 304)))
    assert r0.vllm_log_line(p.mode) == f"Ascend 950 NPU0: worker=[{worker}]"


def test_hidden_npu_rule_keeps_two_services_apart(hosts: Hosts) -> None:
    """Two containers share nodes 6-7 and see NPU 0 and NPU 2 (of the 910B1 layout)."""
    host = hosts.host("b1-pair")
    a, b = plan(host, (0,)), plan(host, (2,))
    assert not a.ranks[0].cpuset & b.ranks[0].cpuset
    # counted only when their affinity meets the cpuset: NPUs 1,3-7 play no part
    assert set(a.hidden_pools) == {2} and set(b.hidden_pools) == {0}


def test_hidden_npu_pool_overlap_is_reported(hosts: Hosts) -> None:
    """16 NPUs, this job runs on NPUs 0-1: NPU 1's pool (node 1) is also hidden NPU 2's."""
    p = plan(hosts.host("a2x16"), (0, 1))
    assert pools(p) == {0: "0-23", 1: "24-47"}
    assert p.hidden_pools[2] == tuple(range(24, 48))
    assert any(
        "rank 1's CPUs 24-47 are also in the pool vLLM-Ascend gives NPU 2" in f.message
        for f in p.findings
    )


def test_visible_not_ascending_binds_rank_to_another_npus_pool(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), (6, 4))
    assert [(r.rank, r.device, r.logical_id) for r in p.ranks] == [(0, 6, 4), (1, 4, 6)]
    assert [format_cpulist(r.cpus) for r in p.ranks] == ["0-23", "48-71"]
    assert [r.locality for r in p.ranks] == [0.0, 0.0]
    assert p.ranks[0].vllm_log_line(p.mode) == log_line(0, 23, 4)
    assert any(
        "rank 0 runs on NPU 6 but is bound to NPU 4's CPUs (2 ranks affected)" in f.message
        for f in p.findings
    )


def test_ranks_limits_to_first_visible(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), ranks=2)
    # the other NPUs still count: their affinity meets the cpuset
    assert pools(p) == {0: "144-167", 1: "168-191"}
    assert len(p.hidden_pools) == 6


def test_reserve_is_taken_out_of_the_cpuset(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), reserve=frozenset({144, 145}))
    # the pair's pool 146-191 (46 CPUs) splits 23 + 23
    assert pools(p)[0] == "146-168" and pools(p)[1] == "169-191"
    assert any("--reserve 144-145" in n for n in p.notes)


def test_no_irq_reserve_does_not_change_vllm_ascend(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), irq_reserve=False)
    assert p.ranks[0].roles.irq == (144, 145)
    assert any("--no-irq-reserve does not apply" in n for n in p.notes)


def test_no_topology_note_and_unknown_locality(hosts: Hosts) -> None:
    p = plan(hosts.host("a2-notopo"))
    assert any("falls back to global slicing" in n for n in p.notes)
    assert all(r.locality is None for r in p.ranks)


def test_x86_host_finding(hosts: Hosts) -> None:
    p = plan(hosts.host("a2-x86"))
    assert any("binds CPUs only on ARM" in f.message for f in p.findings)


def test_soc_override_switches_rule(hosts: Hosts) -> None:
    p = plan(hosts.host("a2"), soc=Soc.A3)
    assert p.mode == va.GLOBAL_SLICE and pools(p)[1] == "24-47"


@pytest.mark.parametrize(
    ("topo", "info", "affinity"),
    [
        ("npu-smi_info_t_topo_910B3x8.txt", "npu-smi_info_910B3x8.txt", None),
        ("npu-smi_info_t_topo_910B1x8_nonmonotonic.txt", None, A2_NONMONOTONIC),
    ],
)
def test_real_samples_plan_like_the_written_hosts(
    sysroot: SysrootBuilder, hosts: Hosts, topo: str, info: str | None, affinity: list[str] | None
) -> None:
    """The same host with npu-smi's real text (read in place) in place of ours: same plan."""
    text = sample(topo)
    chips = a2_chips(affinity) if affinity else a2_chips()
    assert parse_topo(text).affinity == parse_topo(topo_text(chips)).affinity
    a2_host(sysroot, topo=text, **({"affinity": affinity} if affinity else {}))
    if info:
        sysroot.command("npu-smi_info", sample(info))
    real = plan(read_host(DirRoot(sysroot.root)))
    ours = plan(hosts.host("b1" if affinity else "a2"))
    assert pools(real) == pools(ours)
    assert [r.roles for r in real.ranks] == [r.roles for r in ours.ranks]


# ---------------------------------------------------------------- errors, with what was needed


def test_too_small_cpuset(hosts: Hosts) -> None:
    with pytest.raises(PlanError) as e:
        plan(hosts.host("a2-small"), (0, 1))
    msg = str(e.value)
    assert "Each NPU requires at least 5 CPUs" in msg
    assert "NPU 0's pool has 4 (144-147)" in msg


def test_a3_too_small_cpuset(hosts: Hosts) -> None:
    with pytest.raises(PlanError) as e:
        plan(hosts.host("a3-small"), (0,))
    assert "needs 80 CPUs (5 for each of the host's 16 NPUs" in e.value.message
    assert "found 64 in the cpuset, 4 per NPU" in e.value.message


def test_cpuset_disjoint_from_affinity(hosts: Hosts) -> None:
    with pytest.raises(PlanError) as e:
        plan(hosts.host("a2-disjoint"), (0,))
    assert "conflict with NUMA affinity" in e.value.message
    assert "NPU 0 needs CPUs of its affinity 144-167, found none in the cpuset 0-23" in (
        e.value.message
    )


def test_ascend_950_npu_on_node_0_cannot_bind(hosts: Hosts) -> None:
    """Node 0's CPUs (but CPU 0) go to uvb_poll_window_thread first: no cluster is left."""
    with pytest.raises(PlanError) as e:
        plan(hosts.host("a5-node0"), (0,))
    assert "insufficient CPU clusters on node 0" in e.value.message
    assert "uvb_poll_window_thread (1-95)" in e.value.message


def test_ascend_950_without_affinity(hosts: Hosts) -> None:
    with pytest.raises(PlanError, match="NPU topo affinity not found"):
        plan(hosts.host("a5-noaff"))


@pytest.mark.parametrize(
    ("visible", "message"),
    [((9,), "names device 9, which this host does not have"), ((), "no visible device")],
)
def test_bad_visible_devices(hosts: Hosts, visible: tuple[int, ...], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        plan(hosts.host("a2"), visible)


# ---------------------------------------------------------------- vLLM-Ascend's own unit tests


def _host(node_cpus: list[list[int]], affinity: dict[int, list[int]], allowed: list[int]) -> Host:
    h = memory_host(node_cpus, allowed=frozenset(allowed), npu_nodes=[0] * len(affinity))
    npus = tuple(
        a._replace(tool_affinity=frozenset(affinity[a.logical_id]), cpu_affinity=frozenset())
        for a in h.accelerators
    )
    return h._replace(accelerators=npus)


def test_ut_global_slice_uses_total_logic_npus() -> None:
    # running [1], 20 CPUs, 2 NPUs on the host: NPU 1 gets the second half
    pools_ = va.global_slice_pools([0, 1], [1], {0: frozenset({0, 1})}, frozenset(range(20)))
    assert pools_ == {1: list(range(10, 20))}


def test_ut_global_slice_same_cpuset_across_processes() -> None:
    a = va.global_slice_pools([0, 1, 2, 3], [0], {}, frozenset(range(20)))
    b = va.global_slice_pools([0, 1, 2, 3], [3], {}, frozenset(range(20)))
    assert a == {0: [0, 1, 2, 3, 4]} and b == {3: [15, 16, 17, 18, 19]}


def test_ut_global_slice_remainder_by_npu_id() -> None:
    got = va.global_slice_pools([0, 1, 2], [0, 1, 2], {}, frozenset(range(17)))
    assert got == {0: list(range(6)), 1: list(range(6, 12)), 2: list(range(12, 17))}


def test_ut_global_slice_fallbacks_to_affinity_then_running_count() -> None:
    aff = {0: frozenset({0, 1}), 1: frozenset({2, 3})}
    assert va.global_slice_pools([], [0, 1], aff, frozenset(range(12)))[1] == list(range(6, 12))
    assert va.global_slice_pools([], [0, 1], {}, frozenset(range(12)))[0] == list(range(6))


def test_ut_global_slice_errors() -> None:
    with pytest.raises(PlanError, match="Insufficient CPUs"):
        va.global_slice_pools([0, 1], [0, 1], {}, frozenset(range(8)))
    with pytest.raises(PlanError, match="Invalid NPU id 2, total_npus=2"):
        va.global_slice_pools([0, 1], [2], {}, frozenset(range(12)))


def test_ut_allocate_roles() -> None:
    assert va.split_roles([0, 1, 2, 3, 4]) == Roles(irq=(0, 1), main=(2,), acl=(3,), release=(4,))
    with pytest.raises(PlanError, match="at least 5 CPUs"):
        va.split_roles([0, 1, 2, 3])


def test_ut_topo_splits_duplicate_groups() -> None:
    # NPUs 1 and 2 share [2, 3]; the original patches extend_numa away: here every CPU is its
    # own node, so each affinity spans two nodes and is not extended
    host = _host([[0], [1], [2], [3]], {0: [0, 1], 1: [2, 3], 2: [2, 3]}, [0, 1, 2, 3])
    got = va.topo_affinity_pools(host, [0, 1, 2], [0, 1, 2], _aff(host), frozenset(range(4)))
    assert got == {0: [0, 1], 1: [2], 2: [3]}


def test_ut_topo_skips_hidden_npu_without_cpuset_overlap() -> None:
    host = _host(
        [list(range(128, 192)), list(range(192, 256))], {0: [192, 193], 1: [128, 129]}, [192, 193]
    )
    got = va.topo_affinity_pools(host, [0, 1], [0], _aff(host), frozenset({192, 193}))
    assert got == {0: [192, 193]}


def test_ut_topo_hidden_npu_with_same_affinity_takes_its_half() -> None:
    cpuset = list(range(192, 202))
    host = _host([list(range(192, 202))], {0: cpuset, 1: cpuset}, cpuset)
    got = va.topo_affinity_pools(host, [0, 1], [0], _aff(host), frozenset(cpuset))
    assert got[0] == [192, 193, 194, 195, 196]
    assert va.split_roles(got[0]).main == (194,)


def test_ut_topo_conflict() -> None:
    host = _host([list(range(16))], {0: [0, 1]}, [8, 9])
    with pytest.raises(PlanError, match="conflict with NUMA affinity"):
        va.topo_affinity_pools(host, [0], [0], _aff(host), frozenset({8, 9}))


def test_ut_extend_numa() -> None:
    host = _host([[0, 1], [2, 3]], {0: [0, 1]}, [0, 1, 2, 3])
    numa = va._NumaMap(host)
    assert numa.extend([0, 1], frozenset({0, 1, 2, 3})) == [0, 1, 2, 3]
    assert numa.extend([0, 1], frozenset({0, 1, 3})) == [0, 1, 3]
    assert numa.extend([1, 2], frozenset({0, 1, 2, 3})) == [1, 2]  # two nodes: unchanged


def test_ut_ascend_950_invalid_inputs() -> None:
    host = memory_host([list(range(32)), list(range(100, 132))], npu_nodes=[0], name="Ascend950")
    with pytest.raises(PlanError, match="affinity not found"):
        va.a5_cluster_pools(host, [0], [0], {}, frozenset(range(32)))
    with pytest.raises(PlanError, match="not on one NUMA node"):
        va.a5_cluster_pools(host, [0], [0], {0: frozenset({0, 100})}, frozenset({0, 100}))


def _aff(host: Host) -> dict[int, frozenset[int]]:
    return {a.logical_id: a.tool_affinity for a in host.npus if a.tool_affinity is not None}
