"""Every finding code has a case that triggers it and one that just misses it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ascendtune.core import vllm_ascend
from ascendtune.core.vllm_config import Facts, ModelFacts, check
from ascendtune.core.vllm_config.rules import RULES

# every registry entry's check-config schema, by name
VERSIONS = {e.name: e.config for e in vllm_ascend.ENTRIES}

M08, M09, V23 = "main-2026-08", "main-2026-09", "v0.23.0"

XLITE = {"xlite_graph_config": {"enabled": True}}
NPUGRAPH = {"ascend_compilation_config": {"enable_npugraph_ex": True}}
OPROJ = {"finegrained_tp_config": {"oproj_tensor_parallel_size": 2}}
PROF_ON = {"scheduler_config": {"profiling_chunk_config": {"enabled": True}}}
SRF_ON = {"short_request_first_config": {"enabled": True}}
DYNTRA_ON = {"dyntra_lb_config": {"enabled": True}}
SKO_ON = {"sparse_kv_offload_config": {"enabled": True}}
SPARSE = ModelFacts(is_moe=True, is_mla=True, index_topk=2048, num_experts=256)
DENSE = ModelFacts()
MOE = ModelFacts(is_moe=True, num_experts=256)
MEGAMOE_OK = ModelFacts(is_moe=True, hidden_size=4096, moe_intermediate_size=2048, quantize="w8a8")


@dataclass
class Case:
    code: str
    severity: str
    config: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)
    target: str = M08
    # the smallest change that makes the code go away
    miss_config: dict[str, Any] | None = None
    miss_facts: dict[str, Any] | None = None


def sched(**kw: Any) -> dict[str, Any]:
    return {"scheduler_config": kw}


CASES = [
    # --- the key table ---
    Case(
        "unknown-key",
        "warning",
        {"multistream_overlap_shared_experts": True},
        miss_config={"multistream_overlap_shared_expert": True},
    ),
    Case(
        "unknown-key",
        "error",
        {"multistream_overlap_shared_experts": True},
        target=M09,
        miss_config={"multistream_overlap_shared_expert": True},
    ),
    Case(
        "removed-key",
        "warning",
        {"torchair_graph_config": {"enabled": True}},
        miss_config={"xlite_graph_config": {"enabled": False}},
    ),
    Case(
        "removed-key",
        "error",
        {"enable_sleep_mode_extra_cleanup": True},
        miss_config={"rl_config": {"sleep_mode_extra_cleanup": True}},
    ),
    Case(
        "deprecated-key",
        "warning",
        {"recompute_scheduler_enable": False},
        miss_config=sched(recompute_scheduler_enable=False),
    ),
    Case(
        "legacy-key-ignored",
        "warning",
        {"batch_job_sched_config": {}, **sched(batch_job_sched_config={})},
        miss_config=sched(batch_job_sched_config={}),
    ),
    Case(
        "wrong-type",
        "error",
        {"mega_moe_max_tokens": "many"},
        miss_config={"mega_moe_max_tokens": 100},
    ),
    Case(
        "unchecked-type", "warning", {"enable_kv_nz": "false"}, miss_config={"enable_kv_nz": False}
    ),
    Case(
        "coerced-value",
        "info",
        {"mix_placement": "false"},
        target=M09,
        miss_config={"mix_placement": False},
    ),
    Case(
        "out-of-range", "error", {"mega_moe_max_tokens": 0}, miss_config={"mega_moe_max_tokens": 1}
    ),
    Case(
        "env-fallback",
        "info",
        {},
        {"env": {"VLLM_ASCEND_ENABLE_NZ": "2"}},
        miss_config={"weight_nz_mode": 1},
    ),
    Case(
        "env-invalid",
        "error",
        {},
        {"env": {"VLLM_ASCEND_ENABLE_NZ": "on"}},
        miss_facts={"env": {"VLLM_ASCEND_ENABLE_NZ": "0"}},
    ),
    Case(
        "unread-while-disabled",
        "info",
        {"sparse_kv_offload_config": {"topk_buffer_size": "big"}},
        miss_config={"sparse_kv_offload_config": {"topk_buffer_size": 8192}},
    ),
    Case(
        "removed-env",
        "warning",
        {},
        {"env": {"VLLM_ASCEND_ENABLE_FLASHCOMM1": "1"}},
        miss_facts={"env": {"VLLM_ASCEND_ENABLE_NZ": "1"}},
    ),
    # --- EPLB and the model runner (platform._validate_eplb_config) ---
    Case(
        "eplb-model-runner",
        "error",
        {"eplb_config": {"load_collection_phase": "all"}},
        {"env": {}, "env_source": "file"},
        miss_config={"eplb_config": {"eplb_heat_collection_stage": "decode"}},
    ),
    Case(
        "eplb-model-runner",
        "info",
        {"eplb_config": {"dynamic_eplb": False}},
        miss_config={},
    ),
    # --- xlite ---
    Case(
        "xlite-speculative",
        "error",
        XLITE,
        {"num_speculative_tokens": 2},
        miss_facts={"num_speculative_tokens": 1},
    ),
    Case("xlite-pipeline-parallel", "error", XLITE, {"pp": 2}, miss_facts={"pp": 1}),
    Case("xlite-block-size", "info", XLITE, {"block_size": 64}, miss_facts={"block_size": 128}),
    # --- compilation ---
    Case("compilation-310p", "warning", NPUGRAPH, {"soc": "310P"}, miss_facts={"soc": "A2"}),
    Case(
        "static-kernel-needs-npugraph-ex",
        "error",
        {"ascend_compilation_config": {"enable_static_kernel": True, "enable_npugraph_ex": False}},
        miss_config={"ascend_compilation_config": {"enable_static_kernel": True}},
    ),
    Case(
        "compilation-eager",
        "warning",
        NPUGRAPH,
        {"enforce_eager": True},
        miss_facts={"enforce_eager": False},
    ),
    # --- finegrained TP ---
    Case("finegrained-oproj-tp", "error", OPROJ, {"tp": 2}, miss_facts={"tp": 1}),
    Case(
        "finegrained-graph-mode",
        "error",
        OPROJ,
        {"enforce_eager": True},
        miss_facts={"enforce_eager": False},
    ),
    Case(
        "finegrained-decode-only",
        "error",
        OPROJ,
        {"kv_role": "kv_producer"},
        miss_facts={"kv_role": "kv_consumer"},
    ),
    Case("finegrained-moe-only", "error", OPROJ, {"model": DENSE}, miss_facts={"model": MOE}),
    Case(
        "finegrained-dp-divisible",
        "error",
        {"finegrained_tp_config": {"lmhead_tensor_parallel_size": 4}},
        {"dp": 2},
        miss_facts={"dp": 8},
    ),
    Case(
        "finegrained-needs-recompute",
        "error",
        {"finegrained_tp_config": {"embedding_tensor_parallel_size": 2}},
        miss_config={
            "finegrained_tp_config": {"embedding_tensor_parallel_size": 2},
            **sched(recompute_scheduler_enable=True),
        },
    ),
    # --- EPLB ---
    Case(
        "eplb-path-not-json",
        "error",
        {"eplb_config": {"expert_map_path": "/maps/map.txt"}},
        miss_config={"eplb_config": {"expert_map_path": "/maps/map.json"}},
    ),
    Case(
        "eplb-record-enables-dynamic",
        "warning",
        {"eplb_config": {"expert_map_record_path": "/maps/rec.json"}},
        miss_config={"eplb_config": {"expert_map_record_path": None}},
    ),
    Case(
        "eplb-dynamic-env",
        "error",
        {"eplb_config": {"dynamic_eplb": True}},
        {"env": {}, "env_source": "file"},
        miss_facts={"env": {"DYNAMIC_EPLB": "true"}, "env_source": "file"},
    ),
    # --- scheduler ---
    Case(
        "profiling-need-timing-ignored",
        "warning",
        sched(profiling_chunk_config={"need_timing": True}),
        miss_config=sched(profiling_chunk_config={"need_timing": True, "enabled": True}),
    ),
    Case(
        "dyntra-end-before-start",
        "error",
        sched(dyntra_lb_config={"start_step": 10, "end_step": 10}),
        miss_config=sched(dyntra_lb_config={"start_step": 10, "end_step": 11}),
    ),
    Case(
        "profiling-min-chunk-clamped",
        "warning",
        sched(profiling_chunk_config={"enabled": True, "min_chunk": 8192}),
        {"max_num_batched_tokens": 4096},
        miss_facts={"max_num_batched_tokens": 8192},
    ),
    Case("profiling-needs-pp", "error", PROF_ON, {"pp": 1}, miss_facts={"pp": 2}),
    Case(
        "profiling-with-balance",
        "error",
        sched(profiling_chunk_config={"enabled": True}, enable_balance_scheduling=True),
        miss_config=sched(
            profiling_chunk_config={"enabled": True}, enable_balance_scheduling=False
        ),
    ),
    # --- dump, shared-expert DP, fused MC2 ---
    Case(
        "hamming-sparse-keys",
        "error",
        {"hamming_sparse": {"enabled": False}},
        miss_config={"hamming_sparse": {"enabled": False, "sparse_json_location": ""}},
        target="v0.23.0",
    ),
    Case(
        "dump-config-conflict",
        "error",
        {"dump_config": {"task": "x"}, "dump_config_path": "d.json"},
        miss_config={"dump_config": {"task": "x"}},
    ),
    Case(
        "shared-expert-dp-off",
        "warning",
        {"enable_shared_expert_dp": True},
        {"tp": 1, "enable_expert_parallel": True},
        miss_facts={"tp": 2, "enable_expert_parallel": True},
    ),
    Case(
        "fused-mc2-minimax",
        "error",
        {"enable_fused_mc2": 1},
        {"model": ModelFacts(architectures=("MiniMaxM3ForCausalLM",))},
        miss_facts={"model": ModelFacts(architectures=("DeepseekV3ForCausalLM",))},
    ),
    Case(
        "fused-mc2-disables-overlap",
        "warning",
        {"enable_fused_mc2": 1, "multistream_overlap_shared_expert": True},
        miss_config={"enable_fused_mc2": 0, "multistream_overlap_shared_expert": True},
    ),
    Case(
        "fused-mc2-megamoe-fallback",
        "warning",
        {"enable_fused_mc2": 1},
        {"model": ModelFacts(is_moe=True, hidden_size=896, moe_intermediate_size=2048)},
        miss_facts={"model": MEGAMOE_OK},
    ),
    # --- KV NZ, sparse C8, hierarchy, reduce sample, mix placement ---
    Case(
        "kv-nz-mla-only",
        "error",
        {"enable_kv_nz": True},
        {"model": ModelFacts(is_mla=False)},
        miss_facts={"model": ModelFacts(is_mla=True)},
    ),
    Case(
        "kv-nz-decode-only",
        "error",
        {"enable_kv_nz": True},
        {"kv_role": "kv_producer"},
        miss_facts={"kv_role": "kv_consumer"},
    ),
    Case(
        "sparse-c8-needs-sparse-model",
        "warning",
        {"enable_sparse_sfa_c8": True},
        {"model": DENSE},
        miss_facts={"model": SPARSE},
    ),
    Case(
        "c8-reshape-needs-li-c8",
        "warning",
        {"c8_enable_reshape_optim": True},
        {"model": SPARSE},
        miss_config={"c8_enable_reshape_optim": True, "enable_sparse_li_c8": True},
    ),
    Case(
        "mc2-hierarchy-soc",
        "error",
        {"enable_mc2_hierarchy_comm": True},
        {"soc": "A5"},
        miss_facts={"soc": "A3"},
    ),
    Case(
        "mc2-hierarchy-experts",
        "error",
        {"enable_mc2_hierarchy_comm": True},
        {"model": ModelFacts(is_moe=True, num_experts=513)},
        miss_facts={"model": ModelFacts(is_moe=True, num_experts=512)},
    ),
    Case(
        "reduce-sample-experimental",
        "info",
        {"enable_reduce_sample": True},
        miss_config={"enable_reduce_sample": False},
    ),
    Case(
        "reduce-sample-lmhead-tp",
        "error",
        {"enable_reduce_sample": True, "finegrained_tp_config": {"lmhead_tensor_parallel_size": 2}},
        miss_config={"enable_reduce_sample": True},
    ),
    Case(
        "reduce-sample-producer",
        "error",
        {"enable_reduce_sample": True},
        {"kv_role": "kv_producer"},
        miss_facts={"kv_role": "kv_consumer"},
    ),
    Case(
        "mix-placement-conflict",
        "error",
        {"mix_placement": True, "multistream_overlap_shared_expert": True},
        # fused_mc2 = 1 switches overlap off first, so mix_placement passes (rule order)
        miss_config={
            "mix_placement": True,
            "multistream_overlap_shared_expert": True,
            "enable_fused_mc2": 1,
        },
    ),
    # --- sparse KV offload, RL ---
    Case(
        "sparse-kv-offload-model", "error", SKO_ON, {"model": DENSE}, miss_facts={"model": SPARSE}
    ),
    Case("sparse-kv-offload-pp", "error", SKO_ON, {"pp": 2}, miss_facts={"pp": 1}),
    Case(
        "sparse-kv-offload-decode-only",
        "error",
        SKO_ON,
        {"kv_role": "none"},
        miss_config={"sparse_kv_offload_config": {"enabled": True, "keep_device_kv_cache": True}},
    ),
    Case(
        "sparse-kv-offload-topk",
        "error",
        {"sparse_kv_offload_config": {"enabled": True, "topk_buffer_size": 1024}},
        {"model": SPARSE},
        miss_config={"sparse_kv_offload_config": {"enabled": True, "topk_buffer_size": 2048}},
    ),
    Case(
        "sparse-kv-offload-sfa-c8",
        "error",
        {**SKO_ON, "enable_sparse_sfa_c8": True},
        {"model": SPARSE},
        miss_config=SKO_ON,
    ),
    Case(
        "rl-forces-weight-nz-off",
        "warning",
        {"rl_config": {"enabled": True}, "weight_nz_mode": 2},
        miss_config={"rl_config": {"enabled": True}, "weight_nz_mode": 0},
    ),
    # --- platform.py ---
    Case(
        "fused-mc2-with-hierarchy",
        "error",
        {"enable_mc2_hierarchy_comm": True, "enable_fused_mc2": 1},
        miss_config={"enable_mc2_hierarchy_comm": True, "enable_fused_mc2": 0},
    ),
    Case(
        "balance-scheduling-pd",
        "error",
        sched(enable_balance_scheduling=True),
        {"kv_role": "kv_consumer"},
        miss_facts={"kv_role": "kv_both"},
    ),
    Case(
        "srf-policy",
        "error",
        sched(**SRF_ON),
        {"scheduling_policy": "priority"},
        miss_facts={"scheduling_policy": "fcfs"},
    ),
    Case(
        "srf-with-batch-job",
        "error",
        sched(**SRF_ON, batch_job_sched_config={"enabled": True}),
        miss_config=sched(**SRF_ON, batch_job_sched_config={"enabled": False}),
    ),
    Case(
        "srf-with-profiling-chunk",
        "error",
        sched(**SRF_ON, profiling_chunk_config={"enabled": True}),
        miss_config=sched(**SRF_ON),
    ),
    Case(
        "srf-on-decode-node",
        "error",
        sched(**SRF_ON),
        {"kv_role": "kv_consumer"},
        miss_facts={"kv_role": "kv_producer"},
    ),
    Case(
        "dyntra-with-balance",
        "error",
        sched(**DYNTRA_ON, enable_balance_scheduling=True),
        miss_config=sched(**DYNTRA_ON),
    ),
    Case(
        "dyntra-decode-only",
        "error",
        sched(**DYNTRA_ON),
        {"kv_role": "kv_both"},
        miss_facts={"kv_role": "kv_consumer"},
    ),
    Case("dyntra-needs-dp", "error", sched(**DYNTRA_ON), {"dp": 1}, miss_facts={"dp": 2}),
    Case(
        "dyntra-with-profiling-chunk",
        "error",
        sched(**DYNTRA_ON, profiling_chunk_config={"enabled": True}),
        miss_config=sched(**DYNTRA_ON),
    ),
    Case(
        "recompute-off-on-producer",
        "warning",
        sched(recompute_scheduler_enable=True),
        {"kv_role": "kv_producer"},
        miss_facts={"kv_role": "kv_consumer"},
    ),
    Case(
        "recompute-decode-only",
        "error",
        sched(recompute_scheduler_enable=True),
        {"kv_role": "none"},
        miss_facts={"kv_role": "kv_consumer"},
    ),
    Case(
        "dsa-cp-needs-indexer",
        "warning",
        {"enable_dsa_cp": True},
        {"model": DENSE},
        miss_facts={"model": SPARSE},
    ),
    Case("numa-bind-ignored", "info", {}, {"numa_bind": True}, miss_facts={"numa_bind": False}),
    # --- the host ---
    Case("cpu-binding-not-arm", "info", {}, {"arch": "x86_64"}, miss_facts={"arch": "aarch64"}),
    Case(
        "two-cpu-binders",
        "info",
        {},
        {"arch": "aarch64", "env": {"OMP_PROC_BIND": "close"}},
        miss_facts={"arch": "aarch64", "env": {"OMP_PROC_BIND": "false"}},
    ),
    Case(
        "two-cpu-binders",
        "info",
        {},
        {"arch": "aarch64", "env": {"CPU_AFFINITY_CONF": "1"}},
        miss_config={"enable_cpu_binding": False},
    ),
    Case(
        "outer-binder-narrowed",
        "warning",
        {},
        {"arch": "aarch64", "outer_binder": "taskset -c 144-155"},
        miss_config={"enable_cpu_binding": False},
    ),
    Case(
        "outer-binder-narrowed",
        "warning",
        {},
        {
            "arch": "aarch64",
            "process_cpus": frozenset(range(144, 156)),
            "process_cpuset": frozenset(range(192)),
        },
        miss_facts={
            "arch": "aarch64",
            "process_cpus": frozenset(range(192)),
            "process_cpuset": frozenset(range(192)),
        },
    ),
    Case(
        "outer-binder-narrowed",
        "warning",
        {},
        {"arch": "aarch64", "env": {"CPU_AFFINITY_CONF": "1,npu0:144-155"}},
        miss_facts={"arch": "x86_64", "env": {"CPU_AFFINITY_CONF": "1,npu0:144-155"}},
    ),
    # --- v0.23.0 only ---
    Case(
        "shared-expert-dp-enables-sp",
        "warning",
        {"enable_shared_expert_dp": True},
        {"tp": 2, "enable_expert_parallel": True},
        target=V23,
        miss_facts={"tp": 1, "enable_expert_parallel": True},
    ),
    Case(
        "async-exponential-batch-invariant",
        "warning",
        {"enable_async_exponential": True},
        {"env": {"VLLM_BATCH_INVARIANT": "1"}},
        target=V23,
        miss_facts={"env": {"VLLM_BATCH_INVARIANT": "0"}},
    ),
    Case(
        "layer-sharding-producer-only",
        "error",
        {"layer_sharding": ["o_proj"]},
        {"kv_role": "kv_consumer"},
        target=V23,
        miss_facts={"kv_role": "kv_producer"},
    ),
    Case(
        "flashcomm1-needs-tp",
        "error",
        {"enable_flashcomm1": True},
        {"tp": 1},
        target=V23,
        miss_facts={"tp": 2},
    ),
    Case(
        "flashcomm1-moe-needs-ep",
        "error",
        {"enable_flashcomm1": True},
        {"model": MOE, "enable_expert_parallel": False},
        target=V23,
        miss_facts={"model": MOE, "enable_expert_parallel": True},
    ),
    Case(
        "dsa-cp-needs-flashcomm1",
        "error",
        {"enable_dsa_cp": True},
        {"model": SPARSE},
        target=V23,
        miss_config={"enable_dsa_cp": True, "enable_flashcomm1": True},
    ),
]

# issue 11: --compilation-config, vLLM-Omni, and the keys upstream vLLM injects
PIECEWISE = {"compilation_config": {"cudagraph_mode": "PIECEWISE"}}
CASES += [
    Case(
        "compilation-piecewise",
        "warning",
        NPUGRAPH,
        PIECEWISE,
        miss_facts={"compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY"}},
    ),
    Case(
        "unknown-key-omni",
        "warning",
        {"code2wav_enable_npu_graph": True},
        {"with_vllm_omni": True},
        target=M09,
        miss_facts={"with_vllm_omni": False},
    ),
    Case(
        "upstream-key-ignored",
        "info",
        {},
        {"gdn_prefill_backend": "triton"},
        miss_facts={},
    ),
    Case(
        "upstream-key-unverified",
        "warning",
        {},
        {"gdn_prefill_backend": "triton"},
        target=M09,
        miss_facts={},
    ),
    Case(
        "upstream-key-fallback",
        "warning",
        {},
        {"kda_prefill_backend": "flashkda"},
        target=M09,
        miss_facts={"kda_prefill_backend": "triton"},
    ),
    Case(
        "upstream-key-refused",
        "error",
        {},
        {"gdn_prefill_backend": "triton"},
        target="v0.27.1rc1",
        miss_facts={},
    ),
]

SCHEMA_CODES = {
    "unknown-key",
    "unknown-key-omni",
    "upstream-key-ignored",
    "upstream-key-unverified",
    "upstream-key-fallback",
    "upstream-key-refused",
    "removed-key",
    "deprecated-key",
    "legacy-key-ignored",
    "wrong-type",
    "unchecked-type",
    "coerced-value",
    "out-of-range",
    "env-fallback",
    "env-invalid",
    "removed-env",
    "unread-while-disabled",
}


def found(code: str, config: dict[str, Any], facts: dict[str, Any], target: str) -> list[str]:
    report = check(config, target, Facts(**facts))
    return [f.severity for f in report.findings if f.code == code]


def _id(c: Case) -> str:
    return f"{c.code}[{c.target}]"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_triggers(case: Case) -> None:
    assert case.severity in found(case.code, case.config, case.facts, case.target)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_just_misses(case: Case) -> None:
    config = case.miss_config if case.miss_config is not None else case.config
    facts = case.miss_facts if case.miss_facts is not None else case.facts
    assert case.miss_config is not None or case.miss_facts is not None
    assert found(case.code, config, facts, case.target) == []


def test_every_code_has_a_case() -> None:
    assert {c.code for c in CASES} == set(RULES) | SCHEMA_CODES


def test_every_rule_is_used_and_every_listed_rule_exists() -> None:
    listed = {code for v in VERSIONS.values() for code in v.rules}
    assert listed == set(RULES)
    for v in VERSIONS.values():
        assert len(v.rules) == len(set(v.rules)), v.name


NEEDS = [
    ("xlite-pipeline-parallel", XLITE, ("--pp",)),
    ("finegrained-moe-only", OPROJ, ("--hf-config",)),
    ("kv-nz-decode-only", {"enable_kv_nz": True}, ("--kv-role",)),
    (
        "shared-expert-dp-off",
        {"enable_shared_expert_dp": True},
        ("--enable-expert-parallel", "--tp"),
    ),
    ("mc2-hierarchy-soc", {"enable_mc2_hierarchy_comm": True}, ("--soc",)),
    ("eplb-dynamic-env", {"eplb_config": {"dynamic_eplb": True}}, ("--env-file",)),
    ("srf-policy", sched(**SRF_ON), ("--cmdline (its --scheduling-policy)",)),
]


@pytest.mark.parametrize(("code", "config", "needs"), NEEDS, ids=[n[0] for n in NEEDS])
def test_rules_without_their_facts_say_what_they_need(
    code: str, config: dict[str, Any], needs: tuple[str, ...]
) -> None:
    report = check(config, M08, Facts())
    hits = [f for f in report.findings if f.code == code]
    assert len(hits) == 1
    assert hits[0].severity == "info"
    assert hits[0].needs == needs
    assert "not checked without" in hits[0].message


def test_needs_info_does_not_rewrite_effective() -> None:
    report = check({"enable_shared_expert_dp": True}, M08, Facts())
    assert report.effective["enable_shared_expert_dp"] is True


def test_partial_facts_are_enough_when_they_decide() -> None:
    # expert parallel off decides it, whatever the TP size
    report = check({"enable_shared_expert_dp": True}, M08, Facts(enable_expert_parallel=False))
    f = next(f for f in report.findings if f.code == "shared-expert-dp-off")
    assert f.severity == "warning" and not f.needs
    assert report.effective["enable_shared_expert_dp"] is False


def test_fused_overlap_rewrite_is_rendered_and_applied() -> None:
    report = check({"enable_fused_mc2": 1, "multistream_overlap_shared_expert": True})
    f = next(f for f in report.findings if f.code == "fused-mc2-disables-overlap")
    assert f.keys == ("multistream_overlap_shared_expert", "enable_fused_mc2")
    assert f.rewrite is not None
    assert f.rewrite.render() == (
        "multistream_overlap_shared_expert: true → false (because enable_fused_mc2 = 1)"
    )
    assert report.effective["multistream_overlap_shared_expert"] is False
    assert report.effective["enable_fused_mc2"] == 1


def test_rewrite_of_a_default_is_info_not_warning() -> None:
    # npugraph_ex defaults to true; under --enforce-eager it is turned off without being asked
    report = check({}, M08, Facts(enforce_eager=True))
    hits = [f for f in report.findings if f.code == "compilation-eager"]
    assert [f.severity for f in hits] == ["info"]
    assert report.effective["ascend_compilation_config"]["enable_npugraph_ex"] is False


def test_did_you_mean_suggests_a_nested_home_and_another_target() -> None:
    report = check({"num_redundant_experts": 2}, M08)
    assert "eplb_config.num_redundant_experts" in report.findings[0].hint
    report = check({"rl_config": {"enabled": True}}, V23)
    f = next(f for f in report.findings if f.code == "unknown-key")
    assert "main-2026-08" in f.hint and "--target" in f.hint
    report = check({"eplb_config": {"dynamic_epbl": True}}, M08)
    f = next(f for f in report.findings if f.code == "unknown-key")
    assert f.keys == ("eplb_config.dynamic_epbl",)
    assert f.severity == "error"  # EplbConfig raises on unknown keys, on every version
    assert f.hint == "did you mean eplb_config.dynamic_eplb?"


def test_removed_key_names_its_replacement() -> None:
    report = check({"expert_map_path": "/m.json"}, V23)
    f = report.findings[0]
    assert (f.code, f.severity) == ("removed-key", "warning")
    assert f.hint == "use eplb_config.expert_map_path"
    assert "expert_map_path" not in report.effective


def test_legacy_key_is_moved_into_effective() -> None:
    report = check({"recompute_scheduler_enable": True}, M08, Facts(kv_role="kv_consumer"))
    assert report.effective["scheduler_config"]["recompute_scheduler_enable"] is True
    assert "recompute_scheduler_enable" not in report.effective


def test_env_fallback_fills_effective_and_the_config_wins() -> None:
    facts = Facts(env={"VLLM_ASCEND_ENABLE_FUSED_MC2": "1"}, env_source="file")
    assert check({}, M08, facts).effective["enable_fused_mc2"] == 1
    report = check({"enable_fused_mc2": 0}, M08, facts)
    assert report.effective["enable_fused_mc2"] == 0
    assert "env-fallback" not in report.codes()


def test_defaults_are_filled() -> None:
    eff = check({}, M08).effective
    assert eff["enable_cpu_binding"] is True
    assert eff["eplb_config"]["eplb_policy_type"] == 2
    assert eff["scheduler_config"]["profiling_chunk_config"]["need_timing"] is False
    assert eff["scheduler_config"]["dyntra_lb_config"]["end_step"] == -1


def test_binders_that_are_switched_off_do_not_count() -> None:
    facts = Facts(arch="aarch64", env={"KMP_AFFINITY": "disabled", "CPU_AFFINITY_CONF": "0"})
    assert "two-cpu-binders" not in check({}, M08, facts).codes()


def test_binders_on_x86_are_moot() -> None:
    facts = Facts(arch="x86_64", env={"OMP_PROC_BIND": "true"})
    assert "two-cpu-binders" not in check({}, M08, facts).codes()


def test_unknown_target_is_a_usage_error() -> None:
    from ascendtune.core.errors import UsageError

    with pytest.raises(UsageError, match=r"unknown --target 'v0\.99'"):
        check({}, "v0.99")
