"""Policy `vllm-ascend` per binding implementation: the cases the releases' own unit tests
(tests/ut/device_allocator/test_cpu_binding.py of 0.14.0rc1 ... 0.30.0rc2) set up and assert,
restated as whole plans of synthetic hosts, plus the differences between implementations the
reference tier (tests/reference) found. No download: these are pure plan tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import PlanError
from ascendtune.core.model import Host
from ascendtune.core.planner import Plan, PlanRequest, impls, make_plan
from ascendtune.host.reader import read_host
from ascendtune.host.roots import MemRoot
from ascendtune.synth.render import render
from ascendtune.synth.spec import Chip, Cpus, HostSpec, Node, NpuSmi, Pci, SelfProc, adjacent
from ascendtune.synth.standard import A5_AFFINITY, a2_chips, atlas_800i_a2
from ascendtune.synth.text import TOPO_UNSUPPORTED

# one release per implementation, by the name the registry gives it
RELEASE = {
    "2cb1e84a": "v0.9.1",
    "280e516e": "v0.13.0",
    "062ff4f9": "v0.14.0rc1",
    "c09e740a": "v0.15.0rc1",
    "abb80aa1": "v0.18.0rc1",
    "10967e04": "v0.18.0",
    "2d5ba9ec": "v0.20.2rc1",
    "7b815e31": "v0.21.0rc1",
    "5a947c7b": "v0.22.1rc1",
    "0cbc0e2b": "v0.25.1rc1",
    "cc55125b": "v0.26.0rc1",
    "daab93aa": "v0.29.0rc1",
    "7ed2022f": "v0.30.0rc2",
}


def host_of(spec: HostSpec) -> Host:
    tree = render(spec)
    return read_host(MemRoot(dict(tree.files), dict(tree.links)))


def plan(blob: str, host: Host, visible: Sequence[int] | None = None, **kw: object) -> Plan:
    from ascendtune.core import vllm_ascend

    target = vllm_ascend.get(RELEASE[blob])
    assert target.binding.impl == blob
    vis = tuple(visible) if visible is not None else None
    return make_plan(host, PlanRequest("vllm-ascend", vis, target=target, **kw))  # type: ignore[arg-type]


def pools(p: Plan) -> dict[int, str]:
    return {r.logical_id: format_cpulist(r.cpus) for r in p.ranks if r.skipped is None}


def flat(
    cpus: int, nodes: int, chips: Sequence[Chip], allowed: str | None = None, **kw: object
) -> Host:
    """cpus CPUs on `nodes` equal nodes, no SMT, the NPUs given (A2 names unless said)."""
    per = cpus // nodes
    return host_of(
        HostSpec(
            cpus=Cpus(frozenset(range(cpus))),
            nodes=tuple(Node(n, frozenset(range(n * per, (n + 1) * per))) for n in range(nodes)),
            self_proc=SelfProc(allowed or f"0-{cpus - 1}", "0"),
            npu_smi=NpuSmi(tuple(chips), **kw),  # type: ignore[arg-type]
            meta={"arch": "aarch64"},
        )
    )


def chips(affinity: Sequence[str | None], name: str = "910B3") -> list[Chip]:
    return [
        Chip(i, 0, i, name, f"0000:{0x10 + i:02X}:00.0", affinity=a) for i, a in enumerate(affinity)
    ]


# --- global slicing (0.16.0rc1 on, A3 and the no-affinity fallback) ---------------------------


def test_global_slice_divides_by_every_npu_so_processes_sharing_a_cpuset_do_not_overlap() -> None:
    # 4 NPUs, 20 CPUs: one process on NPU 0 and another on NPU 3 get disjoint fifths
    host = flat(20, 1, chips([None] * 4))
    assert pools(plan("7ed2022f", host, [0])) == {0: "0-4"}
    assert pools(plan("7ed2022f", host, [3])) == {3: "15-19"}


def test_global_slice_gives_the_remainder_to_the_lowest_npu_ids() -> None:
    # topo unsupported: no affinity at all (a topo table without the cells makes this release
    # fail on the link name in their place, and bind nothing)
    host = flat(17, 1, chips([None] * 3), topo=TOPO_UNSUPPORTED)
    assert pools(plan("abb80aa1", host)) == {0: "0-5", 1: "6-11", 2: "12-16"}


def test_global_slice_needs_five_cpus_per_npu_with_irq_cpus() -> None:
    with pytest.raises(PlanError, match="Insufficient CPUs"):
        plan("0cbc0e2b", flat(8, 1, chips([None] * 2)))


def test_ascend_950_on_0_22_slices_globally_without_irq_cpus() -> None:
    # 0.22.1rc1 put the 950 in global slicing with no IRQ reservation: 3 CPUs per NPU suffice
    host = flat(6, 1, chips([None, None], name="Ascend950DT"), logic_col=False, phy_col=True)
    p = plan("5a947c7b", host)
    assert p.mode == "global_slice"
    assert pools(p) == {0: "0-2", 1: "3-5"}
    assert p.ranks[0].roles.irq == () and p.ranks[0].roles.main == (0,)


# --- topo affinity: shared pools, hidden NPUs -----------------------------------------------


def test_npus_with_one_affinity_split_it_in_logical_id_order() -> None:
    host = flat(4, 1, chips(["0-1", "2-3", "2-3"]), allowed="0-3")
    # pools of 2 and 1 CPUs are below every line's minimum: the roles refuse them
    with pytest.raises(PlanError, match="insufficient"):
        plan("0cbc0e2b", host)


def test_hidden_npus_sharing_an_affinity_split_it_across_services_from_0_19_on() -> None:
    # the A2 pair (0, 1) shares 144-167 (node 6) and extends onto node 7: a service that
    # sees only NPU 0 keeps the first half, one that sees only NPU 1 the second
    host = host_of(atlas_800i_a2(allowed="144-191"))
    assert pools(plan("2d5ba9ec", host, [0], busy=(0,))) == {0: "144-167"}
    assert pools(plan("2d5ba9ec", host, [1], busy=(1,))) == {1: "168-191"}
    # before 0.19.1rc1 each service took the whole extended pool: they overlap
    assert pools(plan("10967e04", host, [0], busy=(0,))) == {0: "144-191"}
    assert pools(plan("10967e04", host, [1], busy=(1,))) == {1: "144-191"}


def test_a_hidden_npu_outside_the_cpuset_changes_nothing() -> None:
    # under a cpuset of nodes 0-1, NPU 4 and its hidden pair NPU 5 (node 0) share 0-47 and
    # split it; NPUs 0-3, 6, 7 (nodes 2-6) miss the cpuset and take no part
    host = host_of(atlas_800i_a2(allowed="0-47"))
    assert pools(plan("7ed2022f", host, [4], busy=(4,))) == {4: "0-23"}


def test_affinity_outside_the_cpuset_is_a_conflict_on_every_pools_line() -> None:
    host = host_of(atlas_800i_a2(allowed="0-23"))
    for blob in ("062ff4f9", "c09e740a", "abb80aa1", "0cbc0e2b", "7ed2022f"):
        with pytest.raises(PlanError, match="conflict with NUMA affinity"):
            plan(blob, host, [0], busy=(0,))


# --- roles --------------------------------------------------------------------------------


def test_0_14_keeps_no_irq_cpus_and_takes_pools_of_three() -> None:
    host = flat(6, 1, chips(["0-2", "3-5"]))
    p = plan("062ff4f9", host)
    r0 = p.ranks[0].roles
    assert (r0.irq, r0.main, r0.acl, r0.release) == ((), (0,), (1,), (2,))


def test_0_15_reserves_irq_cpus_but_still_takes_pools_of_three() -> None:
    # main is then empty: only the acl and release threads are bound
    host = flat(6, 1, chips(["0-2", "3-5"]))
    r0 = plan("c09e740a", host).ranks[0].roles
    assert (r0.irq, r0.main, r0.acl, r0.release) == ((0, 1), (), (1,), (2,))
    with pytest.raises(PlanError, match="at least 5"):
        plan("abb80aa1", host)


def test_ascend_950_clusters_have_no_roles_and_skip_irq() -> None:
    host = _a950(slot_and_npu_id=False)
    # two DP engines of 4 NPUs each under one cpuset: disjoint 16-CPU clusters per NPU
    a = plan("7ed2022f", host, [0, 1, 2, 3], busy=(0, 1, 2, 3))
    b = plan("7ed2022f", host, [4, 5, 6, 7], busy=(4, 5, 6, 7))
    assert pools(a) == {0: "288-303", 1: "304-319", 2: "96-111", 3: "112-127"}
    assert pools(b) == {4: "128-143", 5: "144-159", 6: "320-335", 7: "336-351"}
    assert all(r.roles.irq == () and r.roles.acl == () for r in a.ranks)


# --- how a rank finds its NPU ---------------------------------------------------------------


def test_0_26_binds_the_npu_vllm_assigned_not_the_sorted_busy_list() -> None:
    host = host_of(atlas_800i_a2())
    old = plan("0cbc0e2b", host, [6, 4], busy=(4, 6))
    new = plan("cc55125b", host, [6, 4], busy=(4, 6))
    assert [r.logical_id for r in old.ranks] == [4, 6]
    assert [r.logical_id for r in new.ranks] == [6, 4]


def test_an_npu_missing_from_the_process_table_is_skipped_from_0_26_on() -> None:
    host = host_of(atlas_800i_a2())
    p = plan("7ed2022f", host, [4, 5], busy=(4,))
    assert p.ranks[0].skipped is None and p.ranks[1].skipped is not None


# --- what makes a line bind nothing ---------------------------------------------------------


def test_non_arm_hosts_are_bound_up_to_0_14_only() -> None:
    spec = atlas_800i_a2()
    host = host_of(HostSpec(**{**spec.__dict__, "meta": {"arch": "x86_64"}}))
    assert impls.refusal(plan("062ff4f9", host)) is None
    assert "ARM" in (impls.refusal(plan("c09e740a", host)) or "")
    assert impls.refusal(plan("2cb1e84a", host)) is None


def test_an_offline_cpu_fails_every_line_reading_lscpu_e() -> None:
    spec = atlas_800i_a2()
    cpus = Cpus(frozenset(range(191)), present=frozenset(range(192)), threads=spec.cpus.threads)
    host = host_of(HostSpec(**{**spec.__dict__, "cpus": cpus}))
    assert impls.refusal(plan("062ff4f9", host)) is not None
    assert impls.refusal(plan("7ed2022f", host)) is not None
    assert impls.refusal(plan("280e516e", host)) is None  # plain lscpu: no node column


def test_topo_rows_without_affinity_fail_lines_before_0_22() -> None:
    host = host_of(atlas_800i_a2(chips=a2_chips(affinity=[None] * 8)))
    assert "int()" in (impls.refusal(plan("7b815e31", host)) or "")
    p = plan("5a947c7b", host)  # 0.22.1rc1 skips such rows: global slicing
    assert impls.refusal(p) is None and p.mode == "global_slice"


# --- the NUMA-split allocator of 0.9.1 and 0.13.0 -------------------------------------------


def _numa_split_host(allowed: str = "0-95", pci_node: bool = True) -> Host:
    spec = atlas_800i_a2(allowed=allowed)
    nodes = (0, 0, 1, 1, 2, 2, 3, 3)
    pci = tuple(
        Pci(
            c.bus.lower(),
            pci_class="0x120000",
            numa_node=nodes[c.logical_id] if pci_node else -1,
            local_cpus=frozenset(range(192)),
        )
        for c in (spec.npu_smi.chips if spec.npu_smi else ())
    )
    return host_of(HostSpec(**{**spec.__dict__, "pci": pci}))


def test_numa_split_shares_each_npus_pci_node_and_binds_the_whole_process() -> None:
    p = plan("280e516e", _numa_split_host(), [2, 3, 4, 5, 6, 7], busy=(2, 3, 4, 5, 6, 7))
    assert p.mode == "numa_split"
    # node 1 (24-47) split between NPUs 2 and 3; no roles: main is every CPU
    assert pools(p) == {2: "24-35", 3: "36-47", 4: "48-59", 5: "60-71", 6: "72-83", 7: "84-95"}
    assert p.ranks[0].roles.irq == () and p.ranks[0].roles.acl == ()


def test_numa_split_loses_logical_npu_0_to_the_last_cards_mcu_row() -> None:
    # `npu-smi info -m` rows "N 1 - Mcu" read as Chip Logic ID 0: NPU 0 has no PCI address
    p = plan("2cb1e84a", _numa_split_host(), [0, 1], busy=(0, 1))
    assert p.ranks[0].skipped is not None
    assert pools(p) == {1: "0-23"}  # NPU 1 then holds node 0 alone


def test_numa_split_ignores_the_cpuset_but_the_kernel_narrows_it() -> None:
    p = plan("2cb1e84a", _numa_split_host(allowed="0-29"), [2, 3], busy=(2, 3))
    assert pools(p) == {2: "24-29"}  # NPU 3's share 36-47 lies outside: not bound
    assert p.ranks[1].skipped is not None


def _crowded_node_host(allowed: str) -> Host:
    """Two nodes of 4 CPUs (0-3, 4-7); eight NPUs whose PCI devices all sit on node 1, so
    each one's share of node 1 (4 CPUs // 8 NPUs) is empty."""
    node_cpus = {0: frozenset(range(4)), 1: frozenset(range(4, 8))}
    chip_list = chips([None] * 8)
    return host_of(
        HostSpec(
            cpus=Cpus(frozenset(range(8))),
            nodes=tuple(Node(n, cs) for n, cs in node_cpus.items()),
            pci=tuple(
                Pci(c.bus.lower(), pci_class="0x120000", numa_node=1, local_cpus=node_cpus[1])
                for c in chip_list
            ),
            self_proc=SelfProc(allowed, "0"),
            npu_smi=NpuSmi(tuple(chip_list)),
            meta={"arch": "aarch64"},
        )
    )


@pytest.mark.parametrize("blob", ["2cb1e84a", "280e516e"])
@pytest.mark.parametrize(
    ("allowed", "bound"),
    [
        # psutil reads cpu_affinity([]) as its "eligible" CPUs: the first a-b range of
        # Cpus_allowed_list alone, not the whole cpuset
        ("0-2,5-6", "0-2"),
        ("1-7", "1-7"),
        # no range first: CPUs 0..(online - 1), which the kernel narrows to the cpuset
        ("3,5-6", "3,5-6"),
    ],
)
def test_numa_split_binds_an_empty_share_to_psutils_eligible_cpus(
    blob: str, allowed: str, bound: str
) -> None:
    p = plan(blob, _crowded_node_host(allowed), busy=tuple(range(8)))
    assert p.mode == "numa_split"
    # NPU 0 is lost to the MCU row (above); the seven others are bound
    assert [r.logical_id for r in p.ranks if r.skipped is None] == list(range(1, 8))
    assert set(pools(p).values()) == {bound}


# --- npu-smi's Ascend 950 layout, read by position (0.9.1-0.21.0rc1) or by header -----------


def _a950(slot_and_npu_id: bool = True) -> Host:
    """An Ascend 950 host (384 CPUs with SMT on 4 nodes; NPUs 0,1,6,7 on node 3, 2-5 on node
    1), in npu-smi's Ascend 950 layout (`info -m` with Slot ID and Chip Phy-ID and no Chip
    Logic ID, the process table keyed by NPU ID alone) or, slot_and_npu_id off, with neither."""
    spec = HostSpec(
        cpus=Cpus(frozenset(range(384)), threads=adjacent(range(384), sockets=2, core_ids=None)),
        nodes=tuple(Node(n, frozenset(range(96 * n, 96 * n + 96))) for n in range(4)),
        pci=tuple(
            Pci(
                f"0000:{i + 1:02x}:00.0",
                device="0xd806",
                pci_class="0x120000",
                numa_node=int(a.split("-")[0]) // 96,
                local_cpus=a,
            )
            for i, a in enumerate(A5_AFFINITY)
        ),
        self_proc=SelfProc("0-383", "0-3"),
        npu_smi=NpuSmi(
            tuple(
                Chip(i, 0, i, "Ascend950DT", f"0000:{i + 1:02x}:00.0", affinity=a)
                for i, a in enumerate(A5_AFFINITY)
            ),
            logic_col=False,
            phy_col=True,
            slot_col=slot_and_npu_id,
            npu_id_procs=slot_and_npu_id,
        ),
        meta={"arch": "aarch64"},
    )
    return host_of(spec)


def test_the_950_layout_is_read_as_it_is_printed() -> None:
    host = _a950()
    assert host.npu_procs_by_chip is False
    # by position: NPU ID, Slot ID, Chip ID, Chip Phy-ID, Chip Name
    assert host.npu_map_rows[1] == ("1", "1", "0", "1", "Ascend950DT")
    assert [a.logical_id for a in host.npus] == list(range(8))


@pytest.mark.parametrize("blob", ["062ff4f9", "c09e740a", "abb80aa1", "2d5ba9ec", "7b815e31"])
def test_releases_reading_the_process_table_by_position_bind_nothing_on_the_950_layout(
    blob: str,
) -> None:
    p = plan(blob, _a950(), [0, 1], busy=(0, 1))
    why = impls.refusal(p)
    assert why is not None and "NPU ID alone" in why and "IndexError" in why
    # the same host with Chip columns: no such refusal
    assert "NPU ID alone" not in (impls.refusal(plan(blob, _a950(False), [0, 1])) or "")


@pytest.mark.parametrize("blob", ["5a947c7b", "0cbc0e2b", "7ed2022f"])
def test_releases_reading_by_header_bind_the_950_layout(blob: str) -> None:
    p = plan(blob, _a950(), [0, 1], busy=(0, 1))
    assert impls.refusal(p) is None
    assert set(pools(p)) == {0, 1}


@pytest.mark.parametrize("blob", ["2cb1e84a", "280e516e"])
def test_numa_split_reads_the_950_map_by_position(blob: str) -> None:
    # `info -m` read by position: the third cell (the Chip ID, 0 on every row) is the logical
    # id, so the map holds id 0 alone, naming the last row (NPU 7, slot 7); its board has no
    # chip 7, so no NPU has a PCI node and the one device is dealt to node 0, rank 0 binds
    # all of node 0, and rank 1 finds no second device (IndexError)
    p = plan(blob, _a950(), busy=(0, 1))
    assert pools(p) == {0: "0-95"}
    assert "IndexError" in (p.ranks[1].skipped or "")
    # a visible list naming NPU 1, which the map lacks: the release stops for every rank
    q = plan(blob, _a950(), [0, 1], busy=(0, 1))
    assert all("Can not get device info" in (r.skipped or "") for r in q.ranks)
    # the Chip Logic ID column in its place (A2 layout): no such trouble
    assert pools(plan(blob, _numa_split_host(), [2, 3], busy=(2, 3))) == {2: "24-35", 3: "36-47"}


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ((("0", "0", "0"),), "unpacks four"),
        ((("x", "0", "0", "Ascend910B3"),), "as numbers"),
    ],
)
def test_numa_split_fails_where_the_release_cannot_read_the_map(
    rows: tuple[tuple[str, ...], ...], why: str
) -> None:
    host = _numa_split_host()._replace(npu_map_rows=rows)
    p = plan("2cb1e84a", host, [2, 3], busy=(2, 3))
    assert all(why in (r.skipped or "") for r in p.ranks)


def test_the_registry_and_the_planner_agree_on_who_reads_npu_smi_by_position() -> None:
    from ascendtune.core.vllm_ascend.registry import POSITIONAL_NPU_SMI

    assert {b for b, i in impls.IMPLS.items() if i.positional_npu_smi} == POSITIONAL_NPU_SMI


def test_a_map_cell_str_isdigit_takes_but_int_refuses_is_a_refusal_not_a_crash() -> None:
    host = _numa_split_host(allowed="0-191")._replace(npu_map_rows=(("0", "0", "²", "Ascend"),))
    p = plan("7b815e31", host, [2, 3], busy=(2, 3))
    assert "ValueError" in (impls.refusal(p) or "")
    assert all(r.skipped and not r.cpus for r in p.ranks)
    assert "ValueError" in (plan("2cb1e84a", host, [2, 3]).ranks[0].skipped or "")
    assert impls.refusal(plan("7ed2022f", host, [2, 3], busy=(2, 3))) is None  # by header
