"""The pure side of `bind` (plan documents to targets, per-thread masks, CPU checks, the report),
and the cgroup cpuset reader on fake trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.bindplan import (
    BindReport,
    BindTarget,
    ThreadFailure,
    check_cpus_usable,
    target_from_cpus,
    target_from_plan,
)
from ascendtune.core.errors import InvalidInput, ParseError
from ascendtune.host.affinity import cpuset_cpus
from ascendtune.host.roots import DirRoot

PLAN = {
    "schema_version": 1,
    "policy": "vllm-ascend",
    "mode": "topo_affinity",
    "ranks": [
        {
            "rank": 0,
            "device": 0,
            "logical_id": 0,
            "cpus": "0-23",
            "numa_nodes": [0],
            "roles": {"irq": "0-1", "main": "2-21", "acl": "22", "release": "23"},
        },
        {
            "rank": 1,
            "device": 1,
            "logical_id": 1,
            "cpus": "24-47",
            "numa_nodes": [0],
            "roles": {"irq": "", "main": "", "acl": "", "release": ""},
        },
    ],
}


def test_target_from_plan_reads_cpus_roles_and_nodes() -> None:
    t = target_from_plan(PLAN, 0, source="p.json")
    assert t.cpus == frozenset(range(24))
    assert t.roles["acl"] == {22} and t.roles["release"] == {23}
    assert t.roles["main"] == frozenset(range(2, 22))
    assert t.numa_nodes == (0,) and t.rank == 0 and t.has_roles


def test_a_plan_without_roles_has_none() -> None:
    t = target_from_plan(PLAN, 1, source="p.json")
    assert not t.has_roles and t.roles == {}
    assert t.thread_target("acl_thread", use_roles=True) == ("pool", t.cpus)


@pytest.mark.parametrize(
    ("name", "use_roles", "role", "cpus"),
    [
        ("acl_thread", True, "acl", {22}),
        ("release_thread", True, "release", {23}),
        ("python3", True, "main", set(range(2, 22))),
        ("acl_thread\n", True, "acl", {22}),
        ("acl_thread_x", True, "main", set(range(2, 22))),
        ("acl_thread", False, "pool", set(range(24))),
        ("python3", False, "pool", set(range(24))),
    ],
)
def test_thread_target(name: str, use_roles: bool, role: str, cpus: set[int]) -> None:
    t = target_from_plan(PLAN, 0, source="p.json")
    assert t.thread_target(name, use_roles=use_roles) == (role, frozenset(cpus))


def test_unknown_rank_names_the_ranks_there_are() -> None:
    with pytest.raises(InvalidInput, match=r"no rank 5 .*ranks: 0, 1"):
        target_from_plan(PLAN, 5, source="p.json")


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"ranks": "0"},
        {"ranks": [{"cpus": "0"}]},
        {"ranks": [{"rank": 0, "cpus": "0-x"}]},
        {"ranks": [{"rank": 0, "cpus": "0", "roles": "acl"}]},
        {"schema_version": 2, "ranks": []},
    ],
)
def test_malformed_plans_are_parse_errors(doc: object) -> None:
    with pytest.raises(ParseError):
        target_from_plan(doc, 0, source="p.json")


def test_a_rank_without_cpus_is_invalid() -> None:
    with pytest.raises(InvalidInput, match="no CPU"):
        target_from_plan({"ranks": [{"rank": 0, "cpus": ""}]}, 0, source="p.json")


def test_cpus_option() -> None:
    assert target_from_cpus("0,2-3").cpus == {0, 2, 3}
    with pytest.raises(InvalidInput):
        target_from_cpus(" ")
    with pytest.raises(ParseError):
        target_from_cpus("1-0")


def test_check_names_offline_cpus_and_what_may_be_used() -> None:
    t = BindTarget(cpus=frozenset({1, 7}))
    with pytest.raises(InvalidInput) as e:
        check_cpus_usable(t, online=frozenset({0, 1}), allowed=frozenset({0, 1}), whom="process 9")
    assert "CPUs 7 are not online" in e.value.message
    assert e.value.hint == "process 9 may use CPUs 0-1"


def test_check_names_the_cpuset() -> None:
    t = BindTarget(cpus=frozenset({2, 3}))
    with pytest.raises(InvalidInput) as e:
        check_cpus_usable(t, online=frozenset(range(8)), allowed=frozenset({0, 1}), whom="p")
    assert "CPUs 2-3 are outside the cpuset of p" in e.value.message
    assert e.value.hint == "p may use CPUs 0-1"
    check_cpus_usable(t, online=frozenset(range(8)), allowed=None, whom="p")


def test_role_cpus_are_checked_too() -> None:
    t = BindTarget(cpus=frozenset({0}), roles={"acl": frozenset({5})})
    with pytest.raises(InvalidInput, match="CPUs 5"):
        check_cpus_usable(t, online=frozenset({0, 1}), allowed=None, whom="p")


def test_report_json_has_the_spec_keys() -> None:
    t = target_from_plan(PLAN, 0, source="p.json")
    r = BindReport(
        pid=10,
        target=t,
        use_roles=True,
        threads_total=3,
        threads_bound=2,
        threads_failed=(ThreadFailure(12, "EPERM: Operation not permitted", "EPERM"),),
        passes=2,
        verified=False,
        roles_placed={"acl": (11,)},
    )
    doc = r.to_json()
    for key in ("pid", "cpus", "threads_total", "threads_bound", "threads_failed", "passes"):
        assert key in doc
    assert doc["cpus"] == "0-23" and doc["verified"] is False
    assert doc["threads_failed"] == [
        {"tid": 12, "error": "EPERM: Operation not permitted", "errno": "EPERM"}
    ]
    assert doc["roles"] == {"irq": "0-1", "main": "2-21", "acl": "22", "release": "23"}
    assert doc["roles_placed"] == {"acl": [11]}
    assert r.errno_names == {"EPERM"}


cpusets = st.frozensets(st.integers(0, 63), min_size=1, max_size=16)


@given(cpus=cpusets, acl=cpusets, release=cpusets, main=cpusets, name=st.text(max_size=16))
def test_every_thread_target_is_one_of_the_target_masks(
    cpus: frozenset[int],
    acl: frozenset[int],
    release: frozenset[int],
    main: frozenset[int],
    name: str,
) -> None:
    t = BindTarget(cpus=cpus, roles={"acl": acl, "release": release, "main": main})
    for use in (True, False):
        _role, mask = t.thread_target(name, use_roles=use)
        assert mask in t.masks(use_roles=use)
        assert mask <= t.all_cpus


# ---- the cgroup cpuset of a process (a sysroot with proc and a cgroup tree under tmp_path) ---
# (the resolver itself is tested table by table in test_cgroup.py)


def _fake_proc(tmp_path: Path, cgroup: str, mountinfo: str) -> DirRoot:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "42").mkdir()
    (proc / "42" / "cgroup").write_text(cgroup)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    return DirRoot(tmp_path)


def test_cpuset_v2_walks_up_to_the_nearest_cgroup_with_the_controller(tmp_path: Path) -> None:
    cg = tmp_path / "sys/fs/cgroup"
    (cg / "kubepods" / "pod1").mkdir(parents=True)
    (cg / "kubepods" / "cpuset.cpus.effective").write_text("4-7,12\n")
    root = _fake_proc(
        tmp_path,
        "0::/kubepods/pod1\n",
        "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    )
    assert cpuset_cpus(42, root=root) == {4, 5, 6, 7, 12}


def test_cpuset_v1_is_read_from_the_cpuset_hierarchy(tmp_path: Path) -> None:
    cg = tmp_path / "sys/fs/cgroup/cpuset"
    (cg / "docker" / "abc").mkdir(parents=True)
    (cg / "docker" / "abc" / "cpuset.effective_cpus").write_text("2-3\n")
    root = _fake_proc(
        tmp_path,
        "4:memory:/docker/abc\n3:cpuset:/docker/abc\n0::/\n",
        "35 25 0:30 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset\n",
    )
    assert cpuset_cpus(42, root=root) == {2, 3}


def test_cpuset_unknown_is_none(tmp_path: Path) -> None:
    root = _fake_proc(tmp_path, "0::/\n", "")
    assert cpuset_cpus(42, root=root) is None
    assert cpuset_cpus(43, root=root) is None
