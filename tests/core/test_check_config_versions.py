"""Every difference between the version tables shows up as two targets that disagree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ascendtune.core import vllm_ascend
from ascendtune.core.vllm_config import Facts, ModelFacts, check
from ascendtune.core.vllm_config.schema import get_path

V23, M08, M09 = "v0.23.0", "main-2026-08", "main-2026-09"


@dataclass
class Diff:
    """`config` gives `code` at `severity` on `target`, and no such finding on `other`."""

    name: str
    config: dict[str, Any]
    code: str
    severity: str
    target: str
    other: str
    facts: dict[str, Any] = field(default_factory=dict)


DIFFS = [
    # AscendConfig asserts enable_fused_mc2 in (0, 1) on main; v0.23.0 has mode 2
    Diff("fused_mc2 = 2", {"enable_fused_mc2": 2}, "out-of-range", "error", M08, V23),
    Diff("fused_mc2 = 2 (typed)", {"enable_fused_mc2": 2}, "out-of-range", "error", M09, V23),
    # main-2026-09: pydantic lax types; main-2026-08 reads the raw value
    Diff("mega_moe string", {"mega_moe_max_tokens": "131072"}, "wrong-type", "error", M08, M09),
    Diff("bool as string", {"enable_cpu_binding": "false"}, "unchecked-type", "warning", M08, M09),
    Diff("bool coerced", {"enable_cpu_binding": "false"}, "coerced-value", "info", M09, M08),
    Diff("bool out of 0/1", {"enable_prefill_mc2": 2}, "wrong-type", "error", M09, M08),
    Diff(
        "draft_window_size typed", {"draft_window_size": "4096"}, "coerced-value", "info", M09, M08
    ),
    Diff("weight_nz_mode range", {"weight_nz_mode": 3}, "out-of-range", "error", M09, M08),
    Diff(
        "finegrained size >= 0",
        {"finegrained_tp_config": {"mlp_tensor_parallel_size": -1}},
        "out-of-range",
        "error",
        M09,
        M08,
    ),
    Diff(
        "dram size > 0",
        {"sparse_kv_offload_config": {"dram_size_per_dp_GB": 0}},
        "out-of-range",
        "error",
        M09,
        M08,
    ),
    # extra="forbid": unknown keys refused on main-2026-09, ignored before
    Diff("unknown top-level", {"enable_turbo": True}, "unknown-key", "error", M09, V23),
    Diff(
        "unknown compilation key",
        {"ascend_compilation_config": {"fuse_everything": True}},
        "unknown-key",
        "error",
        M09,
        M08,
    ),
    Diff(
        "removed key refused", {"multistream_overlap_gate": True}, "removed-key", "error", M09, V23
    ),
    Diff(
        "removed key ignored",
        {"multistream_overlap_gate": True},
        "removed-key",
        "warning",
        M08,
        V23,
    ),
    Diff(
        "fuse_allreduce_rms",
        {"ascend_compilation_config": {"fuse_allreduce_rms": True}},
        "removed-key",
        "warning",
        M08,
        V23,
    ),
    Diff(
        "sleep cleanup", {"enable_sleep_mode_extra_cleanup": True}, "removed-key", "error", M08, V23
    ),
    Diff("flashcomm1 key", {"enable_flashcomm1": True}, "removed-key", "warning", M08, V23),
    # main nests the scheduler switches; v0.23.0 reads them at top level
    Diff(
        "legacy scheduler key",
        {"recompute_scheduler_enable": False},
        "deprecated-key",
        "warning",
        M08,
        V23,
    ),
    Diff("scheduler_config", {"scheduler_config": {}}, "unknown-key", "warning", V23, M08),
    Diff("rl_config", {"rl_config": {}}, "unknown-key", "warning", V23, M09),
    Diff(
        "load_collection_phase",
        {"eplb_config": {"load_collection_phase": "decode"}},
        "unknown-key",
        "error",
        V23,
        M08,
    ),
    # v0.23.0 ignores a non-object eplb_config; main raises
    Diff("eplb_config list", {"eplb_config": []}, "wrong-type", "error", M08, V23),
    Diff("eplb_config list ignored", {"eplb_config": []}, "unchecked-type", "warning", V23, M08),
    # need_timing: main forces it false when the feature is off, v0.23.0 keeps it
    Diff(
        "need_timing",
        {"profiling_chunk_config": {"need_timing": True}},
        "profiling-need-timing-ignored",
        "warning",
        M08,
        V23,
    ),
    # rules that came after v0.23.0
    Diff(
        "MiniMax M3",
        {"enable_fused_mc2": 1},
        "fused-mc2-minimax",
        "error",
        M08,
        V23,
        {"model": ModelFacts(architectures=("MiniMaxM3ForCausalLM",))},
    ),
    Diff(
        "hierarchy SoC",
        {"enable_mc2_hierarchy_comm": True},
        "mc2-hierarchy-soc",
        "error",
        M09,
        V23,
        {"soc": "A5"},
    ),
    # v0.23.0: shared-expert DP switches FlashComm1 on; main keeps them independent
    Diff(
        "shared DP -> SP",
        {"enable_shared_expert_dp": True},
        "shared-expert-dp-enables-sp",
        "warning",
        V23,
        M08,
        {"tp": 4, "enable_expert_parallel": True},
    ),
    # VLLM_ASCEND_BALANCE_SCHEDULING: read on main-2026-08, no longer on main-2026-09
    Diff(
        "balance env read",
        {},
        "env-fallback",
        "info",
        M08,
        M09,
        {"env": {"VLLM_ASCEND_BALANCE_SCHEDULING": "1"}},
    ),
    Diff(
        "balance env gone",
        {},
        "removed-env",
        "warning",
        M09,
        M08,
        {"env": {"VLLM_ASCEND_BALANCE_SCHEDULING": "1"}},
    ),
    Diff(
        "flashcomm env",
        {},
        "removed-env",
        "warning",
        M08,
        V23,
        {"env": {"VLLM_ASCEND_ENABLE_FLASHCOMM1": "1"}},
    ),
]


@pytest.mark.parametrize("d", DIFFS, ids=[d.name for d in DIFFS])
def test_targets_disagree(d: Diff) -> None:
    facts = Facts(**d.facts)
    on = [f.severity for f in check(d.config, d.target, facts).findings if f.code == d.code]
    off = [f.severity for f in check(d.config, d.other, facts).findings if f.code == d.code]
    assert d.severity in on
    assert d.severity not in off


def test_fused_mc2_two_is_valid_on_v0_23_and_an_error_on_main() -> None:
    assert not check({"enable_fused_mc2": 2}, V23).has_errors
    for target in (M08, M09):
        assert check({"enable_fused_mc2": 2}, target).has_errors


def test_fused_mc2_two_does_not_disable_overlap_on_v0_23() -> None:
    report = check({"enable_fused_mc2": 2, "multistream_overlap_shared_expert": True}, V23)
    assert report.effective["multistream_overlap_shared_expert"] is True


@pytest.mark.parametrize(
    ("path", "values"),
    [
        ("mega_moe_max_tokens", {V23: 65536, M08: 131072, M09: 131072}),
        ("scheduler_config.enable_balance_scheduling", {V23: None, M08: False, M09: False}),
        ("enable_balance_scheduling", {V23: False, M08: None, M09: None}),
        ("ascend_compilation_config.fuse_allreduce_rms", {V23: False, M08: None, M09: None}),
        ("weight_prefetch_config.prefetch_ratio.moe.gate_up", {V23: 0.8, M08: None, M09: None}),
        ("eplb_config.load_collection_phase", {V23: None, M08: "all", M09: "all"}),
    ],
)
def test_defaults_per_version(path: str, values: dict[str, Any]) -> None:
    for target, want in values.items():
        assert get_path(check({}, target).effective, path) == want, target


def test_lax_coercion_shows_in_effective_only_where_types_are_validated() -> None:
    cfg = {"enable_cpu_binding": "false", "weight_nz_mode": "2"}
    assert check(cfg, M09).effective["enable_cpu_binding"] is False
    assert check(cfg, M09).effective["weight_nz_mode"] == 2
    assert check(cfg, M08).effective["enable_cpu_binding"] == "false"


def test_the_newest_target_is_the_default() -> None:
    assert check({}).target == vllm_ascend.NEWEST.name == vllm_ascend.ENTRIES[-1].name
    # the registry grew (issues 11, 23); the three original names keep their order
    names = vllm_ascend.names()
    assert [v for v in names if v in (V23, M08, M09)] == [V23, M08, M09]
