"""The hand-written additional-config tables of the vLLM-Ascend versions that have one, as data.

Each registry entry (ascendtune.core.vllm_ascend.registry) names the table its schema comes from;
a release without a table of its own names the nearest one and says so. Read from
vllm-project/vllm-ascend, `vllm_ascend/ascend_config.py` and `vllm_ascend/platform.py`:
- main-2026-08: main at 182b75ea (2026-08-22), written out in full below;
- v0.23.0: release tag v0.23.0 (5cb98caa), main-2026-08 plus the differences listed;
- main-2026-09: a71b766ce, where AscendConfig became a pydantic `@config` dataclass (PR #13838):
  every field typed (bool/int/float/str/list, lax coercion), unknown keys refused everywhere;
- v0.24.0rc1, v0.25.1rc1 (tags) and v0.26.0rc1 (branch releases/v0.26.0rc), each read from its
  own ascend_config.py / platform.py and written as the differences from the nearest table;
- v0.27.1rc1: main-2026-09's table (its ascend_config.py is the typed AscendConfig).
A new table is derived from the nearest one and named by the registry entry it belongs to.
"""

from __future__ import annotations

import dataclasses

from ascendtune.core.vllm_config.schema import (
    Anything,
    Bool,
    Int,
    Key,
    List,
    Num,
    Obj,
    Removed,
    Section,
    Str,
    Version,
    add,
    drop,
    patch,
    typed,
)

# --- main-2026-08 (182b75ea): AscendConfig.__init__ and its sub-config classes ------------------

_PROFILING_CHUNK = Section(
    "profiling_chunk_config",
    Bool("enabled"),
    Num("smooth_factor", 1.0, "cast", gt=0, le=1),
    Int("min_chunk", 4096, "cast", gt=0),
    Bool("need_timing", None, optional=True, default_from="enabled"),
    Int("max_fit_chunk", 30, "cast", gt=5),
    null_ok=True,
)

_SCHEDULER = Section(
    "scheduler_config",
    # env fallback only when neither the nested nor the legacy top-level key is set
    Bool("enable_balance_scheduling", env="VLLM_ASCEND_BALANCE_SCHEDULING", env_bool=True),
    Bool("recompute_scheduler_enable"),
    Section(
        "short_request_first_config",
        Bool("enabled", check="cast"),
        Int("threshold", 256, "cast", ge=0),
        Num("long_max_wait_ms", 0.0, "cast", ge=0),
        extra="error",
        null_ok=True,
    ),
    _PROFILING_CHUNK,
    Section(
        "batch_job_sched_config",
        Bool("enabled"),
        Int("max_jobs", 20, "cast", ge=0),
        Int("reserve_margin_blocks", 2, "cast", ge=0),
        Int("reserve_max_blocks", 8, "cast", gt=0),
        Int("low_available_tokens_threshold", 4096, "cast", gt=0),
        Int("short_decode_token_threshold", 32, "cast", gt=0),
        null_ok=True,
    ),
    Section(
        "dyntra_lb_config",
        Bool("enabled", check="isinstance"),
        Bool("enable_diagnostics", check="isinstance"),
        Str("mode", "dynamic", "isinstance", choices=("static", "dynamic")),
        Int("start_step", 250, "isinstance", ge=0, no_bool=True),
        Int("end_step", -1, "isinstance", ge=-1, no_bool=True),
        Num("bubble_threshold", 5.0, "isinstance", gt=0, no_bool=True),
        Int("long_req_block_threshold", 700, "isinstance", gt=0, no_bool=True),
        Int("dynamic_max_step", 256, "isinstance", gt=0, no_bool=True),
        extra="error",
        null_ok=True,
    ),
    null_ok=True,
)

_COMPILATION = Section(
    "ascend_compilation_config",
    Bool("enable_npugraph_ex", True),
    Bool("enable_static_kernel"),
    Bool("fuse_norm_quant", True),
    Bool("fuse_qknorm_rope", True),
    Bool("fuse_muls_add", True),
)

MAIN_2026_08_KEYS: tuple[Key, ...] = (
    Section("xlite_graph_config", Bool("enabled"), Bool("full_mode")),
    _COMPILATION,  # AscendCompilationConfig(**kwargs): unknown sub-keys ignored
    Section("ascend_fusion_config", Bool("fusion_ops_gmmswigluquant", True)),
    Section(
        "finegrained_tp_config",
        Int("oproj_tensor_parallel_size"),
        Int("lmhead_tensor_parallel_size"),
        Int("embedding_tensor_parallel_size"),
        Int("mlp_tensor_parallel_size"),
        Int("olora_tensor_parallel_size"),
    ),
    Section(
        "dynamic_spec_config",
        Str("method", None, optional=True, choices=(None, "dspark", "dflash")),
        Obj("method_params", {}, "isinstance"),
    ),
    Section(
        "eplb_config",  # EplbConfig raises on unknown keys
        Bool("dynamic_eplb"),
        Str("expert_map_path", None, "isinstance", optional=True),
        Int("expert_heat_collection_interval", 600, "isinstance", ge=0),
        Int("algorithm_execution_interval", 50, "isinstance", ge=0),
        Str("expert_map_record_path", None, "isinstance", optional=True),
        Int("num_redundant_experts", 0, "isinstance", ge=0),
        Int("eplb_policy_type", 2, "any", choices=(0, 1, 2, 3)),
        Str("eplb_heat_collection_stage", "all", choices=("all", "prefill", "decode")),
        Str("load_collection_phase", "all", choices=("all", "prefill", "decode")),
        extra="error",
    ),
    _SCHEDULER,
    Obj("dump_config", None, "isinstance", optional=True),
    Str("dump_config_path", None, "isinstance", optional=True),
    Str("ascend_log_path", "~/ascend/log/vllm_ascend"),
    Bool("enable_shared_expert_dp"),
    Bool("multistream_overlap_shared_expert"),
    Bool("enable_cpu_binding", True),
    Bool("multistream_dsv4_dsa_overlap", True),
    Bool("enable_prefill_mc2", check="cast"),
    Int("enable_fused_mc2", 0, "any", choices=(0, 1), env="VLLM_ASCEND_ENABLE_FUSED_MC2"),
    Bool("enable_mlapo", True, env="VLLM_ASCEND_ENABLE_MLAPO", env_bool=True),
    Bool("msmonitor_use_daemon", env="MSMONITOR_USE_DAEMON", env_bool=True),
    Bool(
        "enable_transpose_kv_cache_by_block",
        True,
        env="VLLM_ASCEND_FUSION_OP_TRANSPOSE_KV_CACHE_BY_BLOCK",
        env_bool=True,
    ),
    List("pa_shape_list"),
    # 0 off, 1 quantized weights only, 2 also BF16/FP16
    Int("weight_nz_mode", 1, "any", env="VLLM_ASCEND_ENABLE_NZ"),
    Bool("enable_kv_nz"),
    Bool("enable_sparse_sfa_c8"),
    Bool("enable_sparse_li_c8"),
    Bool("c8_enable_reshape_optim"),
    Bool("enable_mc2_hierarchy_comm"),
    Int("mega_moe_max_tokens", 131072, "isinstance", gt=0),
    Bool("enable_reduce_sample"),
    Bool("mix_placement"),
    Section(
        "rejection_sampler_config",
        Bool("enable_block_verify", check="isinstance"),
        Bool("enable_entropy_verify", check="isinstance"),
        Num("posterior_threshold", 0.95, "isinstance", gt=0, le=1),
        Num("posterior_alpha", 0.4, "isinstance", ge=0),
    ),
    Section(
        "sparse_kv_offload_config",
        Bool("enabled", check="cast"),
        Int("topk_buffer_size", 4096, "cast", gt=0),
        Int("dram_size_per_dp_GB", 128, "cast"),
        Bool("keep_device_kv_cache", check="cast"),
        # SparseKVOffloadConfig.__init__ returns right after `enabled` is false
        gate="enabled",
    ),
    Section(
        "rl_config",  # RlConfig: unknown keys and non-bool values raise
        Bool("enabled", check="isinstance"),
        Bool("sleep_mode_extra_cleanup", check="isinstance"),
        Bool("enable_training_consistency", check="isinstance"),
        Bool("enable_batch_invariant", check="isinstance"),
        extra="error",
        null_ok=True,
    ),
    Bool("refresh"),  # init_ascend_config: rebuild the cached config
    Bool("enable_dsa_cp"),  # read by platform.py / utils.enable_dsa_cp
    Anything("draft_window_size"),  # read by spec_decode/llm_base_proposer.py
)


def _gone(path: str, replacement: str | None, why: str, severity: str = "warning") -> Removed:
    return Removed(path, replacement, severity, why)  # type: ignore[arg-type]


# Keys of v0.11-era releases that no release since reads (VLLM_ASCEND_RULES.md section 2.4).
_ANCIENT: tuple[Removed, ...] = (
    _gone(
        "torchair_graph_config", None, "torchair graph mode was removed; ACL graph is the default"
    ),
    _gone("ascend_scheduler_config", None, "the Ascend v0 scheduler was removed"),
    _gone("chunked_prefill_for_mla", None, "removed with the v0 scheduler"),
    _gone("expert_map_path", "eplb_config.expert_map_path", "EPLB options moved into eplb_config"),
    _gone("dynamic_eplb", "eplb_config.dynamic_eplb", "EPLB options moved into eplb_config"),
    _gone("expert_map_record_path", "eplb_config.expert_map_record_path", "moved into eplb_config"),
    _gone("eplb_policy_type", "eplb_config.eplb_policy_type", "moved into eplb_config"),
    _gone("init_redundancy_expert", "eplb_config.num_redundant_experts", "moved into eplb_config"),
    _gone(
        "num_iterations_eplb_update",
        "eplb_config.expert_heat_collection_interval",
        "EPLB timing is now set in eplb_config",
    ),
    _gone(
        "num_wait_worker_iterations",
        "eplb_config.algorithm_execution_interval",
        "EPLB timing is now set in eplb_config",
    ),
    _gone("gate_eplb", None, "removed with the old EPLB options"),
    _gone(
        "lmhead_tensor_parallel_size",
        "finegrained_tp_config.lmhead_tensor_parallel_size",
        "moved into finegrained_tp_config",
    ),
    _gone(
        "oproj_tensor_parallel_size",
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "moved into finegrained_tp_config",
    ),
)

# v0.23.0 keys that main no longer reads (absent from main's vllm_ascend/ at 182b75ea).
_AFTER_V0_23: tuple[Removed, ...] = (
    _gone("weight_prefetch_config", None, "weight prefetch was removed after v0.23.0"),
    _gone("layer_sharding", None, "removed after v0.23.0"),
    _gone("multistream_overlap_gate", None, "removed after v0.23.0"),
    _gone("enable_matmul_allreduce", None, "removed after v0.23.0"),
    _gone("enable_flashcomm2_parallel_size", None, "FlashComm2 was removed after v0.23.0"),
    _gone("SLO_limits_for_dynamic_batch", None, "the dynamic-batch scheduler was removed"),
    _gone("enable_async_exponential", None, "removed after v0.23.0"),
    _gone("dp_allreduce_on_npu", None, "removed after v0.23.0"),
    _gone("hamming_sparse", None, "removed after v0.23.0"),
    _gone("enable_hamming_sparse", None, "removed after v0.23.0"),
    _gone("ascend_compilation_config.fuse_allreduce_rms", None, "removed after v0.23.0"),
)

# Rules in the order vLLM-Ascend applies them: AscendConfig.__init__, then platform.py.
_MAIN_RULES: tuple[str, ...] = (
    # platform._fix_incompatible_config runs _validate_eplb_config before AscendConfig is built
    "eplb-model-runner",
    "xlite-speculative",
    "xlite-pipeline-parallel",
    "xlite-block-size",
    "compilation-310p",
    "static-kernel-needs-npugraph-ex",
    "finegrained-oproj-tp",
    "finegrained-graph-mode",
    "finegrained-decode-only",
    "finegrained-moe-only",
    "finegrained-dp-divisible",
    "eplb-path-not-json",
    "eplb-record-enables-dynamic",
    "eplb-dynamic-env",
    "profiling-need-timing-ignored",
    "dyntra-end-before-start",
    "profiling-min-chunk-clamped",
    "profiling-needs-pp",
    "profiling-with-balance",
    "dump-config-conflict",
    "shared-expert-dp-off",
    "finegrained-needs-recompute",
    "fused-mc2-minimax",
    "fused-mc2-disables-overlap",
    "fused-mc2-megamoe-fallback",
    "kv-nz-mla-only",
    "kv-nz-decode-only",
    "sparse-c8-needs-sparse-model",
    "c8-reshape-needs-li-c8",
    "mc2-hierarchy-soc",
    "mc2-hierarchy-experts",
    "reduce-sample-experimental",
    "reduce-sample-lmhead-tp",
    "reduce-sample-producer",
    "mix-placement-conflict",
    "sparse-kv-offload-model",
    "sparse-kv-offload-pp",
    "sparse-kv-offload-decode-only",
    "sparse-kv-offload-topk",
    "sparse-kv-offload-sfa-c8",
    "rl-forces-weight-nz-off",
    # platform.py
    "fused-mc2-with-hierarchy",
    "balance-scheduling-pd",
    "srf-policy",
    "srf-with-batch-job",
    "srf-with-profiling-chunk",
    "srf-on-decode-node",
    "dyntra-with-balance",
    "dyntra-decode-only",
    "dyntra-needs-dp",
    "dyntra-with-profiling-chunk",
    "recompute-off-on-producer",
    "recompute-decode-only",
    "compilation-eager",
    "compilation-piecewise",
    "dsa-cp-needs-indexer",
    "numa-bind-ignored",
    # the host
    "cpu-binding-not-arm",
    "two-cpu-binders",
    "outer-binder-narrowed",
)

MAIN_2026_08 = Version(
    name="main-2026-08",
    source="main 182b75ea (2026-08-22)",
    keys=MAIN_2026_08_KEYS,
    removed=(
        *_ANCIENT,
        *_AFTER_V0_23,
        # raises ValueError in AscendConfig.__init__
        _gone(
            "enable_sleep_mode_extra_cleanup",
            "rl_config.sleep_mode_extra_cleanup",
            "removed; AscendConfig raises ValueError while it is set",
            "error",
        ),
        # only logs "FlashComm is deprecated" (#13946)
        _gone("enable_flashcomm1", None, "FlashComm is deprecated and no longer read"),
    ),
    rules=_MAIN_RULES,
    eager_env=True,
    legacy={
        # SchedulerConfig._get_config_value: nested wins, top-level still read with a warning
        "enable_balance_scheduling": "scheduler_config.enable_balance_scheduling",
        "recompute_scheduler_enable": "scheduler_config.recompute_scheduler_enable",
        "short_request_first_config": "scheduler_config.short_request_first_config",
        "profiling_chunk_config": "scheduler_config.profiling_chunk_config",
        "batch_job_sched_config": "scheduler_config.batch_job_sched_config",
    },
    scheduler="scheduler_config.",
    removed_env={
        "VLLM_ASCEND_ENABLE_FLASHCOMM1": "FlashComm is deprecated; vLLM-Ascend only logs a "
        "warning and no longer reads it",
    },
)

# --- v0.23.0 (5cb98caa): main-2026-08 with these differences ------------------------------------

_V0_23_KEYS = drop(
    MAIN_2026_08_KEYS,
    "scheduler_config",  # scheduler switches are top-level in v0.23.0
    "rl_config",
    "dynamic_spec_config",
    "sparse_kv_offload_config",
    "eplb_config.load_collection_phase",
)
_V0_23_KEYS = patch(
    _V0_23_KEYS,
    {
        # 0 off, 1 dispatch_ffn_combine, 2 dispatch_gmm_combine_decode; no assert in
        # AscendConfig, but any other value raises in moe_comm_method.py at the first MoE layer
        "enable_fused_mc2": {"choices": (0, 1, 2)},
        "mega_moe_max_tokens": {"default": 65536},
        # EplbConfig ignores a non-dict eplb_config; main's platform.py raises TypeError
        "eplb_config": {"non_object": "ignore"},
    },
)
_V0_23_KEYS = add(
    _V0_23_KEYS,
    "ascend_compilation_config",
    Bool("fuse_allreduce_rms"),
)
_V0_23_KEYS = add(
    _V0_23_KEYS,
    "",
    Bool("enable_balance_scheduling", env="VLLM_ASCEND_BALANCE_SCHEDULING", env_bool=True),
    Bool("recompute_scheduler_enable"),
    Section(
        "profiling_chunk_config",
        Bool("enabled"),
        Num("smooth_factor", 1.0, "cast", gt=0, le=1),
        Int("min_chunk", 4096, "cast", gt=0),
        # v0.23.0 keeps need_timing as given (main forces it false when not enabled)
        Bool("need_timing", None, optional=True, default_from="enabled"),
        Int("max_fit_chunk", 30, "cast", gt=5),
        null_ok=True,  # ProfilingChunkConfig(None) means {}
    ),
    Bool("enable_flashcomm1", env="VLLM_ASCEND_ENABLE_FLASHCOMM1", env_bool=True),
    Bool("enable_matmul_allreduce", env="VLLM_ASCEND_ENABLE_MATMUL_ALLREDUCE", env_bool=True),
    Int("enable_flashcomm2_parallel_size", 0, "any", env="VLLM_ASCEND_FLASHCOMM2_PARALLEL_SIZE"),
    Anything("layer_sharding"),
    Bool("multistream_overlap_gate"),
    Bool("enable_sleep_mode_extra_cleanup"),
    Int("SLO_limits_for_dynamic_batch", -1, "any"),
    Bool("enable_async_exponential", check="cast"),
    Bool("dp_allreduce_on_npu"),
    Section("hamming_sparse", Bool("enabled"), Str("sparse_json_location", "")),
    # read on its own by attention/kvcomp_attn/attention_utils.is_enable_hamming_sparse (ANDed
    # with "no speculative decoding"); the model runner reads hamming_sparse.enabled instead
    Bool("enable_hamming_sparse"),
    Section(
        "weight_prefetch_config",
        Bool("enabled"),
        Obj(
            "prefetch_ratio",
            {
                "attn": {"qkv": 1.0, "o": 1.0},
                "moe": {"gate_up": 0.8},
                "mlp": {"gate_up": 1.0, "down": 1.0},
            },
        ),
    ),
)

# main's rules that v0.23.0 does not have
_NOT_IN_V0_23 = {
    "eplb-model-runner",  # platform._validate_eplb_config came after v0.23.0
    "fused-mc2-minimax",  # the MiniMax M3 assert came after v0.23.0
    "fused-mc2-megamoe-fallback",  # the MegaMoE auto-disable came after v0.23.0
    "mc2-hierarchy-soc",  # _validate_mc2_hierarchy_comm came after v0.23.0
    "mc2-hierarchy-experts",
    "profiling-need-timing-ignored",  # v0.23.0 keeps need_timing as given
    "dyntra-end-before-start",  # no scheduler_config / DyntraLB in v0.23.0
    "sparse-kv-offload-model",  # no sparse_kv_offload_config in v0.23.0
    "sparse-kv-offload-pp",
    "sparse-kv-offload-decode-only",
    "sparse-kv-offload-topk",
    "sparse-kv-offload-sfa-c8",
    "rl-forces-weight-nz-off",  # no rl_config in v0.23.0
    "srf-policy",  # no short-request-first scheduler in v0.23.0
    "srf-with-batch-job",
    "srf-with-profiling-chunk",
    "srf-on-decode-node",
    "dyntra-with-balance",
    "dyntra-decode-only",
    "dyntra-needs-dp",
    "dyntra-with-profiling-chunk",
}
# v0.23.0's own rules; they read keys no main rule touches, so running them last keeps the order
_V0_23_ONLY = (
    "shared-expert-dp-enables-sp",  # utils.enable_sp(enable_shared_expert_dp=True)
    "async-exponential-batch-invariant",  # AscendConfig.__init__
    "layer-sharding-producer-only",  # platform._validate_layer_sharding_config
    "flashcomm1-needs-tp",  # platform.check_and_update_config asserts
    "flashcomm1-moe-needs-ep",
    "dsa-cp-needs-flashcomm1",  # utils.enable_dsa_cp
    "hamming-sparse-keys",  # AscendConfig.__init__ indexes hamming_sparse directly
)

V0_23_0 = Version(
    name="v0.23.0",
    source="release v0.23.0 (5cb98caa)",
    keys=_V0_23_KEYS,
    removed=_ANCIENT,
    rules=(*(r for r in _MAIN_RULES if r not in _NOT_IN_V0_23), *_V0_23_ONLY),
    scheduler="",
    eager_env=True,
)

# --- main-2026-09 (a71b766ce): main-2026-08 as pydantic @config dataclasses ---------------------

_MAIN_09_KEYS = patch(
    typed(MAIN_2026_08_KEYS),
    {
        # AscendConfig._validate_user_input_ranges
        "weight_nz_mode": {"choices": (0, 1, 2)},
        # FinegrainedTPConfig._validate_sizes
        "finegrained_tp_config.oproj_tensor_parallel_size": {"ge": 0},
        "finegrained_tp_config.lmhead_tensor_parallel_size": {"ge": 0},
        "finegrained_tp_config.embedding_tensor_parallel_size": {"ge": 0},
        "finegrained_tp_config.mlp_tensor_parallel_size": {"ge": 0},
        "finegrained_tp_config.olora_tensor_parallel_size": {"ge": 0},
        # SparseKVOffloadConfig._validate_values, now checked even when disabled
        "sparse_kv_offload_config.dram_size_per_dp_GB": {"gt": 0},
        # typed `int | None` field
        "draft_window_size": {"type": "int", "check": "lax"},
        # SchedulerConfig.from_additional_config no longer reads VLLM_ASCEND_BALANCE_SCHEDULING
        "scheduler_config.enable_balance_scheduling": {"env": None},
        # a non-dict scheduler_config still raises ValueError; null still means {}
        "scheduler_config": {"null_ok": True},
    },
)

MAIN_2026_09 = Version(
    name="main-2026-09",
    source="main a71b766ce (AscendConfig as pydantic @config, PR #13838)",
    keys=_MAIN_09_KEYS,
    removed=(
        *(
            _gone(r.path, r.replacement, r.why + "; refused as an unknown key", "error")
            for r in (*_ANCIENT, *_AFTER_V0_23)
        ),
        _gone(
            "enable_sleep_mode_extra_cleanup",
            "rl_config.sleep_mode_extra_cleanup",
            "removed; refused as an unknown key",
            "error",
        ),
        # init_ascend_config strips it before the schema and only logs a deprecation warning
        _gone("enable_flashcomm1", None, "FlashComm is deprecated and no longer read"),
    ),
    rules=_MAIN_RULES,
    extra="error",  # AscendConfig model_config = ConfigDict(extra="forbid")
    # PR #15515 (described 2026-09-01, merged before a71b766ce as far as visible) [PR]
    omni_exception=True,
    # PR #16661 merged 2026-09-16 or later: whether a71b766ce (09-23) has it is not visible
    strips_upstream_keys=None,
    legacy=MAIN_2026_08.legacy,
    scheduler="scheduler_config.",
    removed_env={
        **MAIN_2026_08.removed_env,
        "VLLM_ASCEND_BALANCE_SCHEDULING": "no longer read; set "
        "scheduler_config.enable_balance_scheduling in the additional config instead",
    },
)

# --- release lines after v0.23.0 (old `.get()` AscendConfig: unknown keys silently ignored) ------


def _rules(
    base: tuple[str, ...], without: set[str], extra: tuple[str, ...] = ()
) -> tuple[str, ...]:
    return (*(r for r in base if r not in without), *extra)


# the c8 rules read enable_sparse_li_c8 / enable_sparse_sfa_c8; the single enable_sparse_c8 of
# v0.24.0rc1 / v0.25.1rc1 is not modelled beyond its key (ANDed with "model uses sparse")
_C8_RULES = {"sparse-c8-needs-sparse-model", "c8-reshape-needs-li-c8"}
_SINGLE_C8: tuple[Removed, ...] = (
    _gone("enable_sparse_li_c8", "enable_sparse_c8", "this line has one sparse C8 switch"),
    _gone("enable_sparse_sfa_c8", "enable_sparse_c8", "this line has one sparse C8 switch"),
)

# v0.24.0rc1 (tag): v0.23.0 minus weight prefetch, layer sharding, the gate overlap and the
# dynamic-batch SLO; one enable_sparse_c8; fused_mc2 asserted 0/1 (#12031) with the MiniMax M3
# assert; mega_moe_max_tokens 131072; ShortRequestFirstConfig read at top level
_V0_24_KEYS = drop(
    _V0_23_KEYS,
    "weight_prefetch_config",
    "layer_sharding",
    "multistream_overlap_gate",
    "SLO_limits_for_dynamic_batch",
    "enable_sparse_li_c8",
    "enable_sparse_sfa_c8",
)
_V0_24_KEYS = patch(
    _V0_24_KEYS,
    {"enable_fused_mc2": {"choices": (0, 1)}, "mega_moe_max_tokens": {"default": 131072}},
)
_V0_24_KEYS = add(
    _V0_24_KEYS,
    "",
    Bool("enable_sparse_c8"),
    Section(
        "short_request_first_config",  # ShortRequestFirstConfig: unknown keys raise ValueError
        Bool("enabled", check="cast"),
        Int("threshold", 256, "cast", ge=0),
        Num("long_max_wait_ms", 0.0, "cast", ge=0),
        extra="error",
        null_ok=True,
    ),
)
_V0_24_GONE = {
    "weight_prefetch_config",
    "layer_sharding",
    "multistream_overlap_gate",
    "SLO_limits_for_dynamic_batch",
}

V0_24_0RC1 = Version(
    name="v0.24.0rc1",
    source="release tag v0.24.0rc1",
    keys=_V0_24_KEYS,
    removed=(
        *_ANCIENT,
        *(
            _gone(r.path, r.replacement, r.why.replace("v0.23.0", "v0.23.0 (gone in v0.24.0rc1)"))
            for r in _AFTER_V0_23
            if r.path in _V0_24_GONE
        ),
        *_SINGLE_C8,
    ),
    # platform._validate_layer_sharding_config is gone with layer_sharding; the SRF checks of
    # v0.24.0rc1 only warn (not modelled)
    rules=_rules(
        V0_23_0.rules,
        {"layer-sharding-producer-only", *_C8_RULES},
        ("fused-mc2-minimax",),
    ),
    scheduler="",
    eager_env=True,
    # platform.py of v0.24.0rc1 sets only ascend_config's enable_npugraph_ex to False in piecewise
    # and NONE graph modes; enable_static_kernel is left as given
    piecewise_off=("ascend_compilation_config.enable_npugraph_ex",),
)

# v0.25.1rc1 (tag): main-2026-08's layout (scheduler_config nesting #12177, batch_job_sched_config
# #12240, SRF checks in platform.py) without what main added after the branch point (rl_config,
# dynamic_spec_config, sparse_kv_offload_config, DyntraLB, _validate_eplb_config, the MegaMoE
# fallback, the MiniMax M3 assert, mc2 hierarchy validation); FlashComm1 and
# enable_sleep_mode_extra_cleanup still read; one enable_sparse_c8
_SCHED_25 = drop((_SCHEDULER,), "scheduler_config.dyntra_lb_config")[0]
_V0_25_KEYS = drop(
    MAIN_2026_08_KEYS,
    "rl_config",
    "dynamic_spec_config",
    "sparse_kv_offload_config",
    "eplb_config.load_collection_phase",
    "enable_sparse_sfa_c8",
    "enable_sparse_li_c8",
    "scheduler_config",
)
_V0_25_KEYS = patch(
    _V0_25_KEYS,
    # _validate_eplb_config (main's TypeError for a non-dict eplb_config) is not on this line
    {"eplb_config": {"non_object": "ignore"}},
)
_V0_25_KEYS = add(
    _V0_25_KEYS,
    "",
    _SCHED_25,
    Bool("enable_sparse_c8"),
    Bool("enable_flashcomm1", env="VLLM_ASCEND_ENABLE_FLASHCOMM1", env_bool=True),
    Bool("enable_sleep_mode_extra_cleanup"),
)
_NOT_ON_RELEASE_LINES = {
    "eplb-model-runner",
    "fused-mc2-megamoe-fallback",
    "mc2-hierarchy-soc",
    "mc2-hierarchy-experts",
    "profiling-need-timing-ignored",
    "dyntra-end-before-start",
    "rl-forces-weight-nz-off",
    "dyntra-with-balance",
    "dyntra-decode-only",
    "dyntra-needs-dp",
    "dyntra-with-profiling-chunk",
}
_SKO_RULES = {
    "sparse-kv-offload-model",
    "sparse-kv-offload-pp",
    "sparse-kv-offload-decode-only",
    "sparse-kv-offload-topk",
    "sparse-kv-offload-sfa-c8",
}
# FlashComm1 is still read on these lines, with its platform.py asserts and utils.enable_sp
_FLASHCOMM1_RULES = (
    "shared-expert-dp-enables-sp",
    "flashcomm1-needs-tp",
    "flashcomm1-moe-needs-ep",
    "dsa-cp-needs-flashcomm1",
)

V0_25_1RC1 = Version(
    name="v0.25.1rc1",
    source="release tag v0.25.1rc1",
    keys=_V0_25_KEYS,
    removed=(*_ANCIENT, *_AFTER_V0_23, *_SINGLE_C8),
    rules=_rules(
        _MAIN_RULES,
        {*_NOT_ON_RELEASE_LINES, *_SKO_RULES, *_C8_RULES, "fused-mc2-minimax"},
        _FLASHCOMM1_RULES,
    ),
    eager_env=True,
    legacy=MAIN_2026_08.legacy,
    scheduler="scheduler_config.",
)

# v0.26.0rc1 (branch releases/v0.26.0rc): v0.25.1rc1 plus sparse_kv_offload_config (#13711), the
# split c8 switches again (#12470), the MiniMax M3 assert, and enable_shared_expert_dp defaulting
# to enable_flashcomm1 (#14513)
_V0_26_KEYS = drop(_V0_25_KEYS, "enable_sparse_c8")
_V0_26_KEYS = patch(_V0_26_KEYS, {"enable_shared_expert_dp": {"default_from": "enable_flashcomm1"}})
_V0_26_KEYS = add(
    _V0_26_KEYS,
    "",
    Bool("enable_sparse_sfa_c8"),
    Bool("enable_sparse_li_c8"),
    next(k for k in MAIN_2026_08_KEYS if k.name == "sparse_kv_offload_config"),
)

V0_26_0RC1 = Version(
    name="v0.26.0rc1",
    source="release branch releases/v0.26.0rc",
    keys=_V0_26_KEYS,
    removed=(*_ANCIENT, *_AFTER_V0_23),
    rules=_rules(_MAIN_RULES, _NOT_ON_RELEASE_LINES, _FLASHCOMM1_RULES),
    eager_env=True,
    legacy=MAIN_2026_08.legacy,
    scheduler="scheduler_config.",
)

# v0.27.1rc1 (release 0.27.1rc1): the typed AscendConfig with the vLLM-Omni exception and without
# the gdn/kda strip (read in its ascend_config.py); its keys are main-2026-09's as far as this
# table goes (not compared key by key).
V0_27_1RC1 = dataclasses.replace(
    MAIN_2026_09,
    name="v0.27.1rc1",
    source="release v0.27.1rc1 (main-2026-09's typed table; keys not compared key by key)",
    strips_upstream_keys=False,
)
