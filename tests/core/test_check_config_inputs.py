"""Parsing what check-config is given: the JSON, vLLM command lines, env files, HF configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendtune.core.errors import InvalidInput, UsageError
from ascendtune.core.vllm_config import inputs

FIXTURES = Path(__file__).parents[1] / "fixtures" / "check_config"


def test_parse_config_reports_line_and_column() -> None:
    text = (FIXTURES / "malformed.json").read_text()
    with pytest.raises(InvalidInput) as e:
        inputs.parse_config(text, "malformed.json")
    assert e.value.message.startswith("malformed.json is not valid JSON: ")
    assert e.value.message.endswith("at line 3 column 40")


@pytest.mark.parametrize(
    ("text", "kind"),
    [("[1, 2]", "an array"), ("3", "a int"), ('"x"', "a str"), ("null", "a NoneType")],
)
def test_parse_config_wants_an_object(text: str, kind: str) -> None:
    with pytest.raises(InvalidInput, match=f"is {kind}, not a JSON object"):
        inputs.parse_config(text, "the config")


def test_cmdline_flags_become_facts() -> None:
    argv = inputs.split_cmdline(
        "vllm serve /models/dsv3 -tp 8 --data-parallel-size=2 --pipeline_parallel_size 2 "
        "--enable-expert-parallel --enforce-eager --max-num-batched-tokens 4096 "
        '--kv-transfer-config \'{"kv_connector": "M", "kv_role": "kv_consumer"}\' '
        '--speculative-config \'{"method": "mtp", "num_speculative_tokens": 2}\' '
        "--block-size 64 --scheduling-policy priority --enable-eplb --numa-bind "
        "--additional-config '{\"enable_fused_mc2\": 1}'"
    )
    c = inputs.parse_cmdline(argv, "--cmdline")
    assert (c.tp, c.dp, c.pp) == (8, 2, 2)
    assert c.enable_expert_parallel and c.enforce_eager and c.enable_eplb and c.numa_bind
    assert c.kv_role == "kv_consumer"
    assert c.num_speculative_tokens == 2
    assert (c.max_num_batched_tokens, c.block_size, c.scheduling_policy) == (4096, 64, "priority")
    assert json.loads(c.config_text or "") == {"enable_fused_mc2": 1}


def test_cmdline_defaults_are_vllms() -> None:
    c = inputs.parse_cmdline(["vllm", "serve", "m", "--additional-config={}"], "x")
    assert (c.tp, c.dp, c.pp, c.enable_expert_parallel, c.kv_role) == (1, 1, 1, False, "none")
    assert (c.enforce_eager, c.num_speculative_tokens, c.scheduling_policy) == (False, 0, "fcfs")
    assert c.config_text == "{}"


def test_cmdline_negated_flag_and_missing_config() -> None:
    c = inputs.parse_cmdline(["vllm", "serve", "m", "-ep", "--no-enable-expert-parallel"], "x")
    assert c.enable_expert_parallel is False
    assert c.config_text is None


def test_cmdline_bad_values() -> None:
    with pytest.raises(InvalidInput, match="not an integer"):
        inputs.parse_cmdline(["vllm", "serve", "-tp", "eight"], "--cmdline")
    with pytest.raises(InvalidInput, match="has no value"):
        inputs.parse_cmdline(["vllm", "serve", "--additional-config"], "--cmdline")
    with pytest.raises(InvalidInput, match="cannot be split"):
        inputs.split_cmdline("vllm serve --additional-config '{")


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["vllm", "serve", "m"], True),
        (["/usr/local/bin/vllm", "serve", "m"], True),
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], True),
        (["/usr/bin/python3", "/opt/vllm/entrypoints/cli/main.py", "serve"], True),
        (["bash", "-c", "sleep 1"], False),
        (["python3", "train.py", "--out", "vllm-results"], False),
        ([], False),
    ],
)
def test_is_vllm(argv: list[str], want: bool) -> None:
    assert inputs.is_vllm(argv) is want


def test_env_file() -> None:
    env = inputs.parse_env_file((FIXTURES / "server.env").read_text())
    assert env == {
        "OMP_PROC_BIND": "true",
        "CPU_AFFINITY_CONF": "mode:1",
        "VLLM_ASCEND_ENABLE_NZ": "2",
    }


def test_environ() -> None:
    assert inputs.parse_environ("A=1\0B=x=y\0\0") == {"A": "1", "B": "x=y"}


def test_model_facts_of_a_sparse_mla_moe_model() -> None:
    m = inputs.parse_hf_config((FIXTURES / "deepseek_v32_config.json").read_text(), "f")
    assert m.is_moe and m.is_mla and m.uses_sfa_sparse
    assert (m.num_experts, m.hidden_size, m.moe_intermediate_size) == (256, 7168, 2048)
    assert m.index_topk == 2048 and m.quantize == "w8a8_dynamic"


def test_model_facts_of_a_dense_model_and_a_nested_text_config() -> None:
    dense = inputs.parse_hf_config((FIXTURES / "qwen3_dense_config.json").read_text(), "f")
    assert not dense.is_moe and not dense.is_mla and not dense.has_indexer
    vl = inputs.parse_hf_config((FIXTURES / "vl_moe_config.json").read_text(), "f")
    assert vl.is_moe and vl.num_experts == 128 and vl.hidden_size == 2048
    assert vl.architectures == ("Qwen3VLMoeForConditionalGeneration",)


def test_hf_config_errors() -> None:
    with pytest.raises(InvalidInput, match="line 1 column"):
        inputs.parse_hf_config("{", "config.json")
    with pytest.raises(InvalidInput, match="not a JSON object"):
        inputs.parse_hf_config("[]", "config.json")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("A2", "A2"),
        ("a3", "A3"),
        ("310P", "310P"),
        ("910B3", "A2"),
        ("Ascend910_9382", "A3"),
        ("310P3", "310P"),
        ("950", "A5"),
    ],
)
def test_soc(text: str, want: str) -> None:
    assert inputs.parse_soc(text) == want


def test_unknown_soc() -> None:
    with pytest.raises(UsageError, match="unknown --soc"):
        inputs.parse_soc("H100")
