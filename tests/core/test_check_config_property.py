"""Property tests: any JSON object built from known keys checks without crashing, and the
effective config is a fixed point (checking it again gives it back unchanged)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendtune.core import vllm_ascend
from ascendtune.core.vllm_config import Facts, ModelFacts, check
from ascendtune.core.vllm_config.schema import Key

# every registry entry's check-config schema, by name
VERSIONS = {e.name: e.config for e in vllm_ascend.ENTRIES}

SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-3, max_value=5),
    st.sampled_from([0, 1, 2, 3, 128, 512, 4096, 131072, -1]),
    st.floats(min_value=-2, max_value=2, allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [
            "true",
            "false",
            "yes",
            "0",
            "1",
            "2",
            "",
            "x.json",
            "x",
            "all",
            "decode",
            "dspark",
            "static",
            "2.0",
        ]
    ),
    st.none(),
)
ODD = st.one_of(
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
VALUES = st.one_of(SCALARS, ODD)

ALL_TOP: dict[str, Key] = {}
for _v in VERSIONS.values():
    for _k in _v.keys:
        ALL_TOP.setdefault(_k.name, _k)
EXTRA_NAMES = [
    "enable_sleep_mode_extra_cleanup",
    "enable_flashcomm1",
    "torchair_graph_config",
    "multistream_overlap_shared_experts",
    "profiling_chunk_config",
    "recompute_scheduler_enable",
    "enable_balance_scheduling",
    "unknown_key",
]


def value_for(key: Key | None, depth: int = 0) -> st.SearchStrategy[Any]:
    if key is not None and key.is_section and depth < 3:
        children = {c.name: value_for(c, depth + 1) for c in key.children}
        section = st.fixed_dictionaries({}, optional=children) if children else st.just({})
        return st.one_of(section, section, VALUES)
    return VALUES


CONFIGS = st.fixed_dictionaries(
    {},
    optional={
        **{name: value_for(k) for name, k in ALL_TOP.items()},
        **{name: value_for(ALL_TOP.get(name)) for name in EXTRA_NAMES},
    },
)

MODELS = st.one_of(
    st.none(),
    st.builds(
        ModelFacts,
        architectures=st.sampled_from([(), ("MiniMaxM3ForCausalLM",), ("DeepseekV3ForCausalLM",)]),
        is_moe=st.booleans(),
        num_experts=st.sampled_from([None, 8, 256, 600]),
        hidden_size=st.sampled_from([None, 896, 4096, 7168]),
        moe_intermediate_size=st.sampled_from([None, 1024, 2048, 4000]),
        quantize=st.sampled_from([None, "w8a8", "fp8"]),
        is_mla=st.booleans(),
        index_topk=st.sampled_from([None, 0, 2048]),
        has_compress_ratios=st.booleans(),
    ),
)
MAYBE_INT = st.one_of(st.none(), st.integers(1, 8))
FACTS = st.builds(
    Facts,
    tp=MAYBE_INT,
    dp=MAYBE_INT,
    pp=MAYBE_INT,
    enable_expert_parallel=st.one_of(st.none(), st.booleans()),
    kv_role=st.sampled_from([None, "kv_producer", "kv_consumer", "kv_both", "none"]),
    enforce_eager=st.one_of(st.none(), st.booleans()),
    num_speculative_tokens=st.one_of(st.none(), st.integers(0, 3)),
    max_num_batched_tokens=st.one_of(st.none(), st.sampled_from([1024, 8192])),
    block_size=st.one_of(st.none(), st.sampled_from([64, 128])),
    scheduling_policy=st.sampled_from([None, "fcfs", "priority"]),
    numa_bind=st.one_of(st.none(), st.booleans()),
    soc=st.sampled_from([None, "A2", "A3", "310P", "A5"]),
    arch=st.sampled_from([None, "aarch64", "x86_64"]),
    model=MODELS,
    env=st.dictionaries(
        st.sampled_from(
            [
                "VLLM_ASCEND_ENABLE_FUSED_MC2",
                "VLLM_ASCEND_ENABLE_NZ",
                "DYNAMIC_EPLB",
                "OMP_PROC_BIND",
                "VLLM_BATCH_INVARIANT",
                "VLLM_ASCEND_BALANCE_SCHEDULING",
                "VLLM_ASCEND_ENABLE_FLASHCOMM1",
            ]
        ),
        st.sampled_from(["0", "1", "2", "true", "x"]),
        max_size=3,
    ),
    env_source=st.sampled_from(["environment", "file"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=CONFIGS, target=st.sampled_from(list(VERSIONS)), facts=FACTS)
def test_never_crashes_and_effective_is_a_fixed_point(
    config: dict[str, Any], target: str, facts: Facts
) -> None:
    first = check(config, target, facts)
    assert first.target == target
    for f in first.findings:
        assert f.severity in ("error", "warning", "info")
        assert f.code and f.message
    again = check(first.effective, target, facts)
    assert again.effective == first.effective
