"""Issue 11: vLLM-Ascend versions as one axis: the registry, config rules per release line, data
parallel in the vllm-ascend planner, and detection of the version a server runs."""

from __future__ import annotations

from typing import Any

import pytest

from ascendtune.core import vllm_ascend as V
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import UsageError
from ascendtune.core.model import Host
from ascendtune.core.parsers.dist_metadata import dist_info_version, parse_metadata
from ascendtune.core.planner.engine import make_plan
from ascendtune.core.planner.model import Plan, PlanRequest
from ascendtune.core.vllm_ascend import pep440
from ascendtune.core.vllm_config import Facts, ModelFacts, check
from ascendtune.host import vllm_detect
from ascendtune.host.demos import open_demo
from ascendtune.host.facts import doctor_paths
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from tests.support.builder import SysrootBuilder

# --- the registry -------------------------------------------------------------------------------


def test_registry_holds_the_hand_tables_and_check_config_uses_them() -> None:
    hand = ["v0.23.0", "v0.24.0rc1", "v0.25.1rc1", "v0.26.0rc1", "main-2026-08", "v0.27.1rc1"]
    names = V.names()
    assert [n for n in names if n in (*hand, "main-2026-09")] == [*hand, "main-2026-09"]
    for name in names:
        entry = V.get(name)
        assert entry.config is entry.config  # built once
        assert check({}, entry.config).target == name == check({}, name).target
        assert (entry.table_note == "") is (entry.table().name == name)
    assert V.NEWEST is V.ENTRIES[-1] and check({}).target == V.NEWEST.name


def test_unknown_target_is_a_usage_error_saying_where_the_names_are() -> None:
    with pytest.raises(UsageError) as e:
        V.get("v9")
    assert "explain versions" in str(e.value.hint) and "auto" in str(e.value.hint)


@pytest.mark.parametrize("text", ["0.18.0", "v0.18.0", " v0.18.0 "])
def test_target_takes_names_and_package_versions(text: str) -> None:
    assert V.get(text).name == "v0.18.0"


def test_inferred_facts_are_marked() -> None:
    assert V.get("main-2026-09").inferred and V.get("v0.13.0").inferred
    assert not V.get("v0.23.0").inferred and not V.get("v0.27.1rc1").inferred


# --- check-config: every difference between two lines has a case where they disagree -----------


def codes(cfg: dict[str, Any], target: str, **facts: Any) -> dict[str, str]:
    r = check(cfg, target, Facts(**facts))
    return {f.code + ":" + ",".join(f.keys): f.severity for f in r.findings}


def severity(cfg: dict[str, Any], target: str, key: str, **facts: Any) -> set[str]:
    r = check(cfg, target, Facts(**facts))
    return {f.severity for f in r.findings if key in f.keys}


def effective(cfg: dict[str, Any], target: str, path: str, **facts: Any) -> Any:
    node: Any = check(cfg, target, Facts(**facts)).effective
    for p in path.split("."):
        node = node.get(p) if isinstance(node, dict) else None
    return node


# (config, key to look at, target where it is fine, target where it is not, severity there)
DIFFERENCES = [
    ({"enable_fused_mc2": 2}, "enable_fused_mc2", "v0.23.0", "v0.24.0rc1", "error"),
    ({"bogus_key": 1}, "bogus_key", "v0.26.0rc1", "main-2026-09", "error"),
    ({"bogus_key": 1}, "bogus_key", "main-2026-08", "v0.27.1rc1", "error"),
    ({"dp_allreduce_on_npu": True}, "dp_allreduce_on_npu", "v0.24.0rc1", "v0.25.1rc1", "warning"),
    ({"dp_allreduce_on_npu": True}, "dp_allreduce_on_npu", "v0.23.0", "main-2026-09", "error"),
    ({"weight_prefetch_config": {}}, "weight_prefetch_config", "v0.23.0", "v0.24.0rc1", "warning"),
    ({"layer_sharding": ["a"]}, "layer_sharding", "v0.23.0", "v0.24.0rc1", "warning"),
    (
        {"enable_matmul_allreduce": True},
        "enable_matmul_allreduce",
        "v0.24.0rc1",
        "v0.25.1rc1",
        "warning",
    ),
    ({"hamming_sparse": {}}, "hamming_sparse", "v0.24.0rc1", "v0.25.1rc1", "warning"),
    ({"enable_sparse_c8": True}, "enable_sparse_c8", "v0.25.1rc1", "v0.26.0rc1", "warning"),
    ({"enable_sparse_c8": True}, "enable_sparse_c8", "v0.24.0rc1", "v0.23.0", "warning"),
    ({"enable_sparse_li_c8": True}, "enable_sparse_li_c8", "v0.26.0rc1", "v0.25.1rc1", "warning"),
    ({"scheduler_config": {}}, "scheduler_config", "v0.25.1rc1", "v0.24.0rc1", "warning"),
    (
        {"sparse_kv_offload_config": {}},
        "sparse_kv_offload_config",
        "v0.26.0rc1",
        "v0.25.1rc1",
        "warning",
    ),
    ({"rl_config": {}}, "rl_config", "main-2026-08", "v0.26.0rc1", "warning"),
    ({"enable_flashcomm1": True}, "enable_flashcomm1", "v0.26.0rc1", "main-2026-08", "warning"),
    (
        {"enable_sleep_mode_extra_cleanup": True},
        "enable_sleep_mode_extra_cleanup",
        "v0.26.0rc1",
        "main-2026-08",
        "error",
    ),
    (
        {"short_request_first_config": {"enabled": False}},
        "short_request_first_config",
        "v0.24.0rc1",
        "v0.23.0",
        "warning",
    ),
]


@pytest.mark.parametrize(
    "cfg, key, fine, bad, sev", DIFFERENCES, ids=[f"{d[1]}:{d[2]}/{d[3]}" for d in DIFFERENCES]
)
def test_lines_disagree(cfg: dict[str, Any], key: str, fine: str, bad: str, sev: str) -> None:
    assert sev in severity(cfg, bad, key)
    assert sev not in severity(cfg, fine, key)
    assert "error" not in severity(cfg, fine, key)


def test_done_when_fused_mc2_2() -> None:
    assert check({"enable_fused_mc2": 2}, "v0.24.0rc1").has_errors
    assert not check({"enable_fused_mc2": 2}, "v0.23.0").has_errors


@pytest.mark.parametrize("target, default", [("v0.23.0", 65536), ("v0.24.0rc1", 131072)])
def test_mega_moe_max_tokens_default(target: str, default: int) -> None:
    assert effective({}, target, "mega_moe_max_tokens") == default


def test_scheduler_nesting_is_read_from_v0_25_on() -> None:
    cfg = {"recompute_scheduler_enable": True}
    assert "deprecated-key:recompute_scheduler_enable" in codes(cfg, "v0.25.1rc1")
    assert "deprecated-key:recompute_scheduler_enable" not in codes(cfg, "v0.24.0rc1")


@pytest.mark.parametrize("target, hit", [("v0.24.0rc1", True), ("v0.25.1rc1", False)])
def test_minimax_m3_assert(target: str, hit: bool) -> None:
    m = ModelFacts(architectures=("MiniMaxM3ForCausalLM",), is_moe=True)
    found = "fused-mc2-minimax:enable_fused_mc2" in codes({"enable_fused_mc2": 1}, target, model=m)
    assert found is hit


@pytest.mark.parametrize(
    "target, static_after", [("v0.24.0rc1", True), ("v0.25.1rc1", False), ("main-2026-09", False)]
)
def test_piecewise_graph_mode_writes_compilation_switches_back(
    target: str, static_after: bool
) -> None:
    cfg = {"ascend_compilation_config": {"enable_static_kernel": True}}
    cc = {"cudagraph_mode": "PIECEWISE"}
    comp = effective(cfg, target, "ascend_compilation_config", compilation_config=cc)
    assert comp["enable_npugraph_ex"] is False
    assert comp["enable_static_kernel"] is static_after
    full = effective(
        cfg, target, "ascend_compilation_config", compilation_config={"cudagraph_mode": "FULL"}
    )
    assert full["enable_npugraph_ex"] is True and full["enable_static_kernel"] is True


def test_vllm_omni_turns_main_unknown_keys_into_warnings_only_at_top_level() -> None:
    cfg = {"code2wav_enable_npu_graph": True, "eplb_config": {"bogus": 1}}
    without = codes(cfg, "main-2026-09", with_vllm_omni=False)
    with_omni = codes(cfg, "main-2026-09", with_vllm_omni=True)
    assert without["unknown-key:code2wav_enable_npu_graph"] == "error"
    assert with_omni["unknown-key-omni:code2wav_enable_npu_graph"] == "warning"
    assert with_omni["unknown-key:eplb_config.bogus"] == "error"
    # release lines ignore unknown keys whatever is installed
    assert codes(cfg, "v0.26.0rc1", with_vllm_omni=True)[
        "unknown-key:code2wav_enable_npu_graph"
    ] == ("warning")
    unsure = check(cfg, "main-2026-09").findings[0]
    assert "--with-vllm-omni" in unsure.hint


@pytest.mark.parametrize(
    "target, code, sev",
    [
        ("v0.26.0rc1", "upstream-key-ignored", "info"),
        ("v0.27.1rc1", "upstream-key-refused", "error"),
        ("main-2026-09", "upstream-key-unverified", "warning"),
    ],
)
def test_gdn_prefill_backend_flag(target: str, code: str, sev: str) -> None:
    found = codes({}, target, gdn_prefill_backend="flashinfer")
    assert found[f"{code}:gdn_prefill_backend"] == sev
    assert "unknown-key:gdn_prefill_backend" not in found


# --- data parallel in the planner ---------------------------------------------------------------


@pytest.fixture(scope="module")
def a2() -> Host:
    return read_host(open_demo("atlas-800i-a2"))


@pytest.fixture(scope="module")
def a3() -> Host:
    return read_host(open_demo("atlas-800i-a3"))


def plan(host: Host, target: str, **kw: Any) -> Plan:
    return make_plan(host, PlanRequest(policy="vllm-ascend", target=V.get(target), **kw))


def engine_cpus(p: Plan, dp_rank: int) -> list[str]:
    return [format_cpulist(r.cpus) for r in p.ranks if r.dp_rank == dp_rank]


DP_A2 = dict(dp=2, tp=2, visible=(4, 5, 6, 7))


@pytest.mark.parametrize("target", ["v0.24.0rc1", "v0.25.1rc1", "main-2026-08"])
def test_a2_dp_engine_1_overlaps_engine_0_without_the_fix(a2: Host, target: str) -> None:
    p = plan(a2, target, **DP_A2)
    assert engine_cpus(p, 1) == ["0-23", "24-47"] == engine_cpus(p, 0)
    r = p.rank(2)
    assert r is not None and (r.dp_rank, r.local, r.device, r.logical_id) == (1, 0, 6, 4)
    [f] = [f for f in p.findings if f.code == "dp_overlap"]
    text = f.message + " " + f.hint
    assert target in text and "48-95 stay idle" in text and "enable_cpu_binding" in text
    assert "v0.26.0rc1 or later" in text and "main-2026-09" in text and p.target == target


# v0.26.0rc1's own worker passes npu_id=device_id_to_physical_device_id(local_rank) (its source,
# run by tests/reference), so it carries the fix the registry once guessed it lacked
@pytest.mark.parametrize("target", ["v0.23.0", "v0.26.0rc1", "v0.27.1rc1", "main-2026-09"])
def test_a2_dp_engine_1_on_its_own_npus(a2: Host, target: str) -> None:
    p = plan(a2, target, **DP_A2)
    assert engine_cpus(p, 1) == ["48-71", "72-95"]
    assert [(r.rank, r.dp_rank, r.local, r.device, r.logical_id) for r in p.ranks] == [
        (0, 0, 0, 4, 4),
        (1, 0, 1, 5, 5),
        (2, 1, 0, 6, 6),
        (3, 1, 1, 7, 7),
    ]
    assert not [f for f in p.findings if f.code == "dp_overlap"]


@pytest.mark.parametrize("target, dp1", [("v0.25.1rc1", "0-159"), ("main-2026-09", "160-319")])
def test_a3_global_slice_dp2_tp8(a3: Host, target: str, dp1: str) -> None:
    p = plan(a3, target, dp=2, tp=8)
    assert p.mode == "global_slice"
    both = frozenset().union(*(r.cpuset for r in p.ranks if r.dp_rank == 1))
    assert format_cpulist(both) == dp1


def test_rank_whose_npu_is_not_busy_is_skipped_on_main_2026_09(a2: Host) -> None:
    p = plan(a2, "main-2026-09", busy=(4, 5, 6), **DP_A2)
    r = p.rank(3)
    assert r is not None and r.skipped and r.cpus == ()
    assert any(f.code == "binding_skipped" and "NPU 7" in f.message for f in p.findings)
    # the older lines bind something anyway: local rank 1 of the sorted busy list
    old = plan(a2, "main-2026-08", busy=(4, 5, 6), **DP_A2)
    assert all(r.skipped is None for r in old.ranks)


def test_non_ascending_visible_list_cann_refuses_it(a2: Host) -> None:
    old = plan(a2, "main-2026-08", visible=(6, 4))
    assert any(f.code == "cann_order" and "EE1001" in f.message + f.hint for f in old.findings)
    assert any(
        "are not in ascending order: rank 0 runs on NPU 6" in f.message for f in old.findings
    )
    new = plan(a2, "main-2026-09", visible=(6, 4))
    assert [format_cpulist(r.cpus) for r in new.ranks] == ["48-71", "0-23"]
    assert any(f.code == "cann_order" for f in new.findings)


@pytest.mark.parametrize("target, rank0", [("main-2026-08", "0-23"), ("main-2026-09", "48-71")])
def test_device_ids_6_4(a2: Host, target: str, rank0: str) -> None:
    p = plan(a2, target, device_ids=(6, 4))
    assert format_cpulist(p.ranks[0].cpus) == rank0 and p.ranks[0].device == 6
    assert not any(f.code == "cann_order" for f in p.findings)
    assert any(f.code == "rank_npu_mismatch" for f in p.findings) is (target != "main-2026-09")


def test_device_ids_do_not_exist_in_vllm_0_23(a2: Host) -> None:
    p = plan(a2, "v0.23.0", device_ids=(4, 5))
    assert any(f.code == "device_ids_unsupported" for f in p.findings)


def test_default_target_keeps_the_old_meaning(a2: Host) -> None:
    p = make_plan(a2, PlanRequest(policy="vllm-ascend", visible=(6, 4)))
    assert p.target == V.PLANNER_DEFAULT.name and format_cpulist(p.ranks[0].cpus) == "0-23"


def test_dp_larger_than_the_devices_is_invalid_input(a2: Host) -> None:
    from ascendtune.core.errors import InvalidInput

    with pytest.raises(InvalidInput):
        plan(a2, "main-2026-09", dp=4, tp=4)


def test_busy_from_the_process_table_shifts_the_old_lines() -> None:
    # container demo: npu-smi lists processes on both NPUs; the job uses only logical 1
    host = read_host(open_demo("container-a2-half"))
    old = plan(host, "main-2026-08", visible=None, device_ids=(1,))
    new = plan(host, "main-2026-09", visible=None, device_ids=(1,))
    assert old.ranks[0].logical_id == 0 and new.ranks[0].logical_id == 1


# --- detection ----------------------------------------------------------------------------------

SITE = "/usr/local/lib/python3.11/site-packages"
MAPS = (
    f"ffff0000-ffff1000 r-xp 00000000 fd:01 42 {SITE}/vllm_ascend/vllm_ascend_C.cpython-311.so\n"
    "ffff2000-ffff3000 r-xp 00000000 fd:01 43 /usr/lib/libc.so.6\n"
)


def worker(
    sysroot: SysrootBuilder, pid: int = 4242, version: str = "0.25.1rc1", omni: bool = False
) -> None:
    sysroot.cpus("0-3").proc(pid, fds={3: "/dev/davinci0"})
    sysroot.file(f"proc/{pid}/maps", MAPS)
    base = f"proc/{pid}/root{SITE}"
    sysroot.file(f"{base}/vllm_ascend/__init__.py", "")
    sysroot.file(
        f"{base}/vllm_ascend-{version}.dist-info/METADATA",
        f"Metadata-Version: 2.1\nName: vllm_ascend\nVersion: {version}\n\nlong text\nVersion: 9\n",
    )
    if omni:
        sysroot.file(
            f"{base}/vllm_omni-0.1.0.dist-info/METADATA", "Name: vllm-omni\nVersion: 0.1.0\n"
        )


def test_metadata_parser() -> None:
    meta = parse_metadata(
        "Metadata-Version: 2.1\nName: vllm_ascend\nVersion: 0.25.1rc1\n\nVersion: 1"
    )
    assert (meta.name, meta.version) == ("vllm_ascend", "0.25.1rc1")
    assert dist_info_version("vllm_ascend-0.23.0.dist-info", "vllm_ascend") == "0.23.0"
    assert dist_info_version("vllm-0.23.0.dist-info", "vllm_ascend") is None


def test_detects_the_version_a_worker_imports(sysroot: SysrootBuilder) -> None:
    worker(sysroot, omni=True)
    root = DirRoot(sysroot.root)
    found = vllm_detect.detect_pid(root, 4242)
    assert found is not None and found.version == "0.25.1rc1" and found.with_vllm_omni
    entry, reason, *_ = vllm_detect.resolve_target(root, "auto", [4242])
    assert entry.name == "v0.25.1rc1"
    assert reason == "vllm_ascend 0.25.1rc1 found in PID 4242's environment"


def test_auto_falls_back_to_the_newest(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-3")
    entry, reason, found, inferred = vllm_detect.resolve_target(
        DirRoot(sysroot.root), "auto", [999]
    )
    assert entry is V.NEWEST and reason.startswith("newest known") and found is None
    assert not inferred


def test_a_version_newer_than_every_release_says_so(sysroot: SysrootBuilder) -> None:
    worker(sysroot, version="0.31.0")
    got = vllm_detect.resolve_target(DirRoot(sysroot.root), None, [4242])
    assert got.entry is V.NEWEST and "0.31.0 is newer than every known release" in got.reason
    assert got.inferred in got.reason


def test_explicit_target_wins(sysroot: SysrootBuilder) -> None:
    worker(sysroot)
    entry, reason, *_ = vllm_detect.resolve_target(DirRoot(sysroot.root), "v0.23.0", [4242])
    assert entry.name == "v0.23.0" and reason == "given with --target"


def test_default_python(sysroot: SysrootBuilder) -> None:
    sysroot.cpus("0-3").file(
        "usr/lib/python3.10/dist-packages/vllm_ascend-0.23.0.dist-info/METADATA",
        "Name: vllm_ascend\nVersion: 0.23.0\n",
    )
    entry, reason, *_ = vllm_detect.resolve_target(DirRoot(sysroot.root), "auto")
    assert entry.name == "v0.23.0" and "default python" in reason


def test_snapshot_captures_what_detection_reads(sysroot: SysrootBuilder) -> None:
    worker(sysroot, omni=True)
    paths = doctor_paths(DirRoot(sysroot.root))
    assert "proc/4242/maps" in paths
    assert f"proc/4242/root{SITE}/vllm_ascend-0.25.1rc1.dist-info/METADATA" in paths
    assert f"proc/4242/root{SITE}/vllm_omni-0.1.0.dist-info/METADATA" in paths


@pytest.mark.parametrize(
    "text",
    [
        "0." + "9" * 5000,
        "9" * 5000,
        "0.9.1.post" + "9" * 5000,
        "0.25.1rc" + "9" * 5000,
        "\u0660.\u0661\u0661.\u0660",  # Arabic-Indic digits
        "\uff10.\uff11\uff11.\uff10",  # full-width digits
        "0.11.0\u2003",  # an em space after it
    ],
)
def test_a_version_of_thousands_of_digits_or_non_ascii_ones_is_no_version(text: str) -> None:
    # the campaign's release family: a METADATA `Version:` of 5,000 digits was "internal error:
    # ValueError" in every command that detects vllm_ascend, and Arabic-Indic digits read as
    # v0.11.0 (issue 27)
    assert pep440.parse(text) is None
    assert V.package_version(text) is None
