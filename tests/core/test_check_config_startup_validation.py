"""check-config refuses what vLLM-Ascend's own start-up validation refuses: a float where an
isinstance int check runs, finegrained TP with the recompute scheduler off, an EPLB config the
model runner does not take, xlite full mode without speculation, an env fallback that does not
parse, SparseKVOffloadConfig's children, and v0.23.0's own spellings; each has a case that
triggers it and one that just misses it.

Sources: vllm-project/vllm-ascend main 182b75ea (main-2026-08), v0.23.0 (5cb98caa) and the head of
PR #13838 (234aa00ca8, main-2026-09).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ascendtune.core.vllm_config import Facts, Finding, ModelFacts, check
from tests.support import schemas
from tests.support.cli import Cli

V23, M08, M09 = "v0.23.0", "main-2026-08", "main-2026-09"
MOE = ModelFacts(is_moe=True, num_experts=256)
# the server's environment given (as by --env-file), with nothing in it
NO_ENV = {"env": {}, "env_source": "file"}


def hits(code: str, config: dict[str, Any], target: str, **facts: Any) -> list[Finding]:
    return [f for f in check(config, target, Facts(**facts)).findings if f.code == code]


def severities(code: str, config: dict[str, Any], target: str, **facts: Any) -> list[str]:
    return [f.severity for f in hits(code, config, target, **facts)]


# --- 1. a float where an isinstance(..., int) check runs --------------------------------------

FLOAT_FOR_INT = [
    (M08, {"mega_moe_max_tokens": 1024.0}, "mega_moe_max_tokens"),
    (V23, {"mega_moe_max_tokens": 1024.0}, "mega_moe_max_tokens"),
    (M08, {"eplb_config": {"num_redundant_experts": 2.0}}, "eplb_config.num_redundant_experts"),
    (V23, {"eplb_config": {"num_redundant_experts": 2.0}}, "eplb_config.num_redundant_experts"),
    (
        M08,
        {"eplb_config": {"expert_heat_collection_interval": 600.0}},
        "eplb_config.expert_heat_collection_interval",
    ),
    (
        M08,
        {"scheduler_config": {"dyntra_lb_config": {"start_step": 10.0}}},
        "scheduler_config.dyntra_lb_config.start_step",
    ),
]


@pytest.mark.parametrize(("target", "config", "path"), FLOAT_FOR_INT)
def test_float_for_an_isinstance_int_is_a_wrong_type_error(
    target: str, config: dict[str, Any], path: str
) -> None:
    found = hits("wrong-type", config, target)
    assert [(f.severity, f.keys) for f in found] == [("error", (path,))]
    assert "isinstance" in found[0].message
    assert "unchecked-type" not in check(config, target).codes()


@pytest.mark.parametrize(("target", "config", "path"), FLOAT_FOR_INT)
def test_the_integer_itself_passes(target: str, config: dict[str, Any], path: str) -> None:
    def ints(v: Any) -> Any:
        return {k: ints(x) for k, x in v.items()} if isinstance(v, dict) else int(v)

    assert severities("wrong-type", ints(config), target) == []


def test_float_where_the_value_is_only_compared_still_only_warns() -> None:
    # FinegrainedTPConfig only compares (`> 0`, `%`): 2.0 runs
    config = {"finegrained_tp_config": {"mlp_tensor_parallel_size": 2.0}}
    assert severities("unchecked-type", config, M08) == ["warning"]
    assert severities("wrong-type", config, M08) == []


def test_float_on_the_typed_target_is_coerced() -> None:
    # main-2026-09: pydantic lax mode turns 1024.0 into 1024
    assert severities("wrong-type", {"mega_moe_max_tokens": 1024.0}, M09) == []
    assert severities("coerced-value", {"mega_moe_max_tokens": 1024.0}, M09) == ["info"]


# --- 2. recompute scheduler switched off on a prefill node, finegrained TP then asserts --------

EMBED_TP = {"finegrained_tp_config": {"embedding_tensor_parallel_size": 2}}
PRODUCER = {"kv_role": "kv_producer", "dp": 4, "model": MOE}


@pytest.mark.parametrize(
    ("target", "config", "key"),
    [
        (
            M08,
            {"scheduler_config": {"recompute_scheduler_enable": True}, **EMBED_TP},
            "scheduler_config.recompute_scheduler_enable",
        ),
        (V23, {"recompute_scheduler_enable": True, **EMBED_TP}, "recompute_scheduler_enable"),
    ],
)
def test_recompute_off_on_producer_breaks_embedding_tp(
    target: str, config: dict[str, Any], key: str
) -> None:
    report = check(config, target, Facts(**PRODUCER))
    f = next(f for f in report.findings if f.code == "recompute-off-on-producer")
    assert f.severity == "error"
    assert f.keys == (key, "finegrained_tp_config.embedding_tensor_parallel_size")
    assert "rebuild AscendConfig" in f.message
    assert f.rewrite is not None and f.rewrite.after is False
    assert report.has_errors


def test_recompute_off_on_producer_without_finegrained_tp_stays_a_warning() -> None:
    config = {"scheduler_config": {"recompute_scheduler_enable": True}}
    assert severities("recompute-off-on-producer", config, M08, **PRODUCER) == ["warning"]


def test_embedding_tp_with_recompute_on_a_decode_node_is_fine() -> None:
    config = {"scheduler_config": {"recompute_scheduler_enable": True}, **EMBED_TP}
    facts = {**PRODUCER, "kv_role": "kv_consumer"}
    assert not check(config, M08, Facts(**facts)).has_errors


# --- 3. platform._validate_eplb_config: which EPLB the model runner takes --------------------


def runner(v2: bool | None, **env: str) -> dict[str, Any]:
    if v2 is not None:
        env["VLLM_USE_V2_MODEL_RUNNER"] = "1" if v2 else "0"
    return {"env": env, "env_source": "file"}


def test_v1_refuses_load_collection_phase_and_enable_eplb() -> None:
    config = {"eplb_config": {"load_collection_phase": "all"}}
    found = hits("eplb-model-runner", config, M08, **runner(False))
    assert [(f.severity, f.keys) for f in found] == [
        ("error", ("eplb_config.load_collection_phase",))
    ]
    # unset means V1
    assert severities("eplb-model-runner", config, M08, **NO_ENV) == ["error"]
    assert severities("eplb-model-runner", {}, M08, enable_eplb=True, **NO_ENV) == ["error"]


def test_v1_accepts_the_legacy_eplb_fields() -> None:
    config = {"eplb_config": {"eplb_heat_collection_stage": "decode", "num_redundant_experts": 2}}
    assert severities("eplb-model-runner", config, M08, enable_eplb=False, **NO_ENV) == []


def test_v2_refuses_legacy_fields_and_v1_env() -> None:
    config = {"eplb_config": {"num_redundant_experts": 0}}
    found = hits("eplb-model-runner", config, M08, **runner(True))
    assert [(f.severity, f.keys) for f in found] == [
        ("error", ("eplb_config.num_redundant_experts",))
    ]
    found = hits("eplb-model-runner", {}, M08, **runner(True, DYNAMIC_EPLB="true"))
    assert [f.severity for f in found] == ["error"]
    assert "DYNAMIC_EPLB=true" in found[0].message
    found = hits("eplb-model-runner", {}, M08, **runner(True, EXPERT_MAP_RECORD="1"))
    assert [f.severity for f in found] == ["error"]


def test_v2_accepts_load_collection_phase_alone() -> None:
    assert severities("eplb-model-runner", {}, M08, **runner(True, DYNAMIC_EPLB="false")) == []
    config = {"eplb_config": {"load_collection_phase": "decode"}}
    assert severities("eplb-model-runner", config, M08, enable_eplb=True, **runner(True)) == []


def test_v2_phase_other_than_all_needs_enable_eplb() -> None:
    config = {"eplb_config": {"load_collection_phase": "decode"}}
    assert severities("eplb-model-runner", config, M08, enable_eplb=False, **runner(True)) == [
        "error"
    ]
    found = hits("eplb-model-runner", config, M08, **runner(True))
    assert [(f.severity, f.needs) for f in found] == [("info", ("--cmdline (its --enable-eplb)",))]
    just_all = {"eplb_config": {"load_collection_phase": "all"}}
    assert severities("eplb-model-runner", just_all, M08, enable_eplb=False, **runner(True)) == []


def test_unknown_runner_says_how_to_tell() -> None:
    config = {"eplb_config": {"dynamic_eplb": False}}
    # this shell's environment is only a guess: the runner stays unknown
    found = hits("eplb-model-runner", config, M08, env={"VLLM_USE_V2_MODEL_RUNNER": "1"})
    assert [f.severity for f in found] == ["info"]
    assert found[0].needs == ("--env-file (its VLLM_USE_V2_MODEL_RUNNER)",)
    assert "VLLM_USE_V2_MODEL_RUNNER" in found[0].message
    # nothing EPLB-related: nothing to say
    assert severities("eplb-model-runner", {"mix_placement": False}, M08) == []


def test_unparsable_runner_env_fails_start_up() -> None:
    found = hits("eplb-model-runner", {}, M08, env={"VLLM_USE_V2_MODEL_RUNNER": "yes"})
    assert [f.severity for f in found] == ["error"]
    assert severities("eplb-model-runner", {}, M08, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}) == []


def test_runner_fact() -> None:
    assert Facts(**runner(True)).v2_model_runner is True
    assert Facts(**NO_ENV).v2_model_runner is False
    assert Facts(env={"VLLM_USE_V2_MODEL_RUNNER": "1"}).v2_model_runner is None
    assert Facts(env={"VLLM_USE_V2_MODEL_RUNNER": "x"}, env_source="file").v2_model_runner is None


def test_eplb_runner_rule_is_main_only() -> None:
    config = {"eplb_config": {"eplb_heat_collection_stage": "decode"}}
    assert severities("eplb-model-runner", config, V23, enable_eplb=True, **NO_ENV) == []
    assert severities("eplb-model-runner", config, M09, enable_eplb=True, **NO_ENV) == ["error"]


# --- 4. xlite full_mode without speculation makes the model eager ----------------------------

XLITE_FULL = {"xlite_graph_config": {"enabled": True, "full_mode": True}}
STATIC = {"ascend_compilation_config": {"enable_static_kernel": True}}
OLORA = {"finegrained_tp_config": {"olora_tensor_parallel_size": 2}}
GRAPH = {"enforce_eager": False, "num_speculative_tokens": 0}


def test_xlite_full_mode_turns_npugraph_ex_and_static_kernel_off() -> None:
    report = check({**XLITE_FULL, **STATIC}, M08, Facts(**GRAPH))
    found = [f for f in report.findings if f.code == "compilation-eager"]
    assert sorted((f.keys[0], f.severity) for f in found) == [
        ("ascend_compilation_config.enable_npugraph_ex", "info"),
        ("ascend_compilation_config.enable_static_kernel", "warning"),
    ]
    assert all(f.rewrite and "xlite" in f.rewrite.because for f in found)
    compilation = report.effective["ascend_compilation_config"]
    assert compilation["enable_npugraph_ex"] is False
    assert compilation["enable_static_kernel"] is False


@pytest.mark.parametrize(
    ("config", "facts"),
    [
        ({"xlite_graph_config": {"enabled": True}, **STATIC}, GRAPH),  # decode-only mode
        ({**XLITE_FULL, **STATIC}, {**GRAPH, "num_speculative_tokens": 1}),  # speculation on
    ],
)
def test_xlite_without_the_eager_fallback_keeps_graph_mode(
    config: dict[str, Any], facts: dict[str, Any]
) -> None:
    report = check(config, M08, Facts(**facts))
    assert "compilation-eager" not in report.codes()
    assert report.effective["ascend_compilation_config"]["enable_static_kernel"] is True


def test_xlite_full_mode_with_unknown_speculation_needs_the_cmdline() -> None:
    found = hits("compilation-eager", {**XLITE_FULL, **STATIC}, M08, enforce_eager=False)
    assert [f.severity for f in found] == ["info"]
    assert found[0].needs == ("--cmdline (its --enforce-eager, --speculative-config)",)


def test_xlite_full_mode_fails_olora_tp_in_the_workers() -> None:
    facts = {**GRAPH, "kv_role": "kv_consumer"}
    found = hits("finegrained-graph-mode", {**XLITE_FULL, **OLORA}, M08, **facts)
    assert [f.severity for f in found] == ["error"]
    assert "xlite_graph_config.full_mode" in found[0].keys
    assert "workers" in found[0].message
    assert hits("finegrained-graph-mode", {**XLITE_FULL, **OLORA}, V23, **facts)
    speculating = {**facts, "num_speculative_tokens": 1}
    assert severities("finegrained-graph-mode", {**XLITE_FULL, **OLORA}, M08, **speculating) == []


# --- 5. an env fallback that does not parse crashes even when the key is set ------------------

EAGER_ENV = [
    (M08, "VLLM_ASCEND_ENABLE_FUSED_MC2", {"enable_fused_mc2": 0}),
    (M08, "VLLM_ASCEND_ENABLE_NZ", {"weight_nz_mode": 1}),
    (M08, "VLLM_ASCEND_ENABLE_MLAPO", {"enable_mlapo": True}),
    (M08, "MSMONITOR_USE_DAEMON", {"msmonitor_use_daemon": False}),
    (
        M08,
        "VLLM_ASCEND_FUSION_OP_TRANSPOSE_KV_CACHE_BY_BLOCK",
        {"enable_transpose_kv_cache_by_block": True},
    ),
    (
        M08,
        "VLLM_ASCEND_BALANCE_SCHEDULING",
        {"scheduler_config": {"enable_balance_scheduling": False}},
    ),
    (V23, "VLLM_ASCEND_BALANCE_SCHEDULING", {"enable_balance_scheduling": False}),
    (V23, "VLLM_ASCEND_ENABLE_FUSED_MC2", {"enable_fused_mc2": 0}),
    (V23, "VLLM_ASCEND_ENABLE_MATMUL_ALLREDUCE", {"enable_matmul_allreduce": False}),
]


@pytest.mark.parametrize(("target", "env", "config"), EAGER_ENV)
def test_unparsable_env_is_an_error_even_when_the_key_is_set(
    target: str, env: str, config: dict[str, Any]
) -> None:
    found = hits("env-invalid", config, target, env={env: "true"})
    assert [f.severity for f in found] == ["error"]
    assert "even though" in found[0].message


@pytest.mark.parametrize(("target", "env", "config"), EAGER_ENV)
def test_parsable_env_with_the_key_set_is_quiet(
    target: str, env: str, config: dict[str, Any]
) -> None:
    report = check(config, target, Facts(env={env: "1"}))
    assert "env-invalid" not in report.codes()
    assert "env-fallback" not in report.codes()


def test_typed_target_reads_the_env_only_when_the_key_is_absent() -> None:
    # main-2026-09: the before-validator reads the env only for keys not in the config
    env = {"VLLM_ASCEND_ENABLE_FUSED_MC2": "true"}
    assert severities("env-invalid", {"enable_fused_mc2": 0}, M09, env=env) == []
    assert severities("env-invalid", {}, M09, env=env) == ["error"]


def test_cli_reproducer_for_the_env(tmp_path: Path, cli: Cli) -> None:
    env = tmp_path / "server.env"
    env.write_text("VLLM_ASCEND_ENABLE_FUSED_MC2=true\n")
    args = ["check-config", '{"enable_fused_mc2":0}', "--target", M08, "--json"]
    r = cli(*args, "--env-file", str(env), "--arch", "aarch64")
    assert r.exit_code == 1, r.output
    codes = {f["code"]: f["severity"] for f in schemas.loads("check-config", r.stdout)["findings"]}
    assert codes["env-invalid"] == "error"
    env.write_text("VLLM_ASCEND_ENABLE_FUSED_MC2=0\n")
    r = cli(*args, "--env-file", str(env), "--arch", "aarch64")
    assert r.exit_code == 0, r.output


# --- 6. SparseKVOffloadConfig reads nothing else while disabled (main-2026-08) ----------------

BAD_SKO = {"topk_buffer_size": "big"}


def test_disabled_sparse_kv_offload_does_not_validate_its_children() -> None:
    config = {"sparse_kv_offload_config": BAD_SKO}
    report = check(config, M08)
    assert not report.has_errors
    f = next(f for f in report.findings if f.code == "unread-while-disabled")
    assert f.severity == "info"
    assert f.keys == (
        "sparse_kv_offload_config.topk_buffer_size",
        "sparse_kv_offload_config.enabled",
    )
    assert report.effective["sparse_kv_offload_config"]["topk_buffer_size"] == "big"


def test_enabled_sparse_kv_offload_validates_its_children() -> None:
    config = {"sparse_kv_offload_config": {"enabled": True, **BAD_SKO}}
    assert severities("wrong-type", config, M08) == ["error"]
    assert severities("unread-while-disabled", config, M08) == []
    # "false" is a non-empty string: bool() makes it true
    config = {"sparse_kv_offload_config": {"enabled": "false", **BAD_SKO}}
    assert severities("wrong-type", config, M08) == ["error"]


def test_typed_target_validates_sparse_kv_offload_regardless() -> None:
    config = {"sparse_kv_offload_config": {"dram_size_per_dp_GB": 0, **BAD_SKO}}
    assert sorted(f.code for f in check(config, M09).findings if f.severity == "error") == [
        "out-of-range",
        "wrong-type",
    ]
    assert severities("unread-while-disabled", config, M09) == []


# --- 7. v0.23.0: profiling_chunk_config null means {} -----------------------------------------


def test_v0_23_profiling_chunk_config_null_is_accepted() -> None:
    report = check({"profiling_chunk_config": None}, V23)
    assert "wrong-type" not in report.codes()
    assert report.effective["profiling_chunk_config"]["enabled"] is False


def test_v0_23_profiling_chunk_config_of_another_type_is_refused() -> None:
    assert severities("wrong-type", {"profiling_chunk_config": []}, V23) == ["error"]


# --- 8. v0.23.0 reads the top-level enable_hamming_sparse --------------------------------------


def test_v0_23_knows_enable_hamming_sparse() -> None:
    report = check({"enable_hamming_sparse": True}, V23)
    assert "unknown-key" not in report.codes()
    assert report.effective["enable_hamming_sparse"] is True


def test_main_no_longer_reads_enable_hamming_sparse() -> None:
    assert severities("removed-key", {"enable_hamming_sparse": True}, M08) == ["warning"]
    assert severities("removed-key", {"enable_hamming_sparse": True}, M09) == ["error"]
