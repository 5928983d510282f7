"""Turn what the user gives `check-config` into a config dict and deployment facts.

Pure text handling: the additional-config JSON, a `vllm serve` command line (shell-split, or NUL
separated from /proc/PID/cmdline), an env file, and a model's Hugging Face config.json.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from ascendtune.core.errors import InvalidInput, UsageError
from ascendtune.core.model import Soc, soc_of_name
from ascendtune.core.text import loads_bounded
from ascendtune.core.vllm_config.model import KV_ROLES, ModelFacts


def parse_config(text: str, source: str) -> dict[str, Any]:
    """The additional-config JSON object; InvalidInput (one line, with line and column) if not."""
    doc = loads_bounded(
        text,
        source=source,
        hint="JSON wants double quotes and no trailing commas; on a shell, wrap it in '...'",
    )
    _check_key_count(doc, source)
    if not isinstance(doc, dict):
        kind = "an array" if isinstance(doc, list) else f"a {type(doc).__name__}"
        raise InvalidInput(
            f"{source} is {kind}, not a JSON object",
            "the additional config is an object: '{\"key\": value, ...}'",
        )
    return doc


# A real additional-config has tens of keys; a bound keeps the checker (and its did-you-mean
# over the known keys, per unknown key) linear and quick on any input.
MAX_CONFIG_KEYS = 1000


def _check_key_count(doc: Any, source: str) -> None:
    count = 0
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            count += len(v)
            if count > MAX_CONFIG_KEYS:
                raise InvalidInput(
                    f"{source} has more than {MAX_CONFIG_KEYS} keys (the limit)",
                    "an additional config holds tens of keys",
                )
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


@dataclass(frozen=True)
class Cmdline:
    """What a `vllm serve` command line says: the config text and vLLM's deployment flags."""

    config_text: str | None
    tp: int = 1
    dp: int = 1
    pp: int = 1
    enable_expert_parallel: bool = False
    kv_role: str = "none"
    enforce_eager: bool = False
    num_speculative_tokens: int = 0
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    scheduling_policy: str = "fcfs"
    enable_eplb: bool = False
    numa_bind: bool = False
    device_ids: str | None = None  # vLLM >= 0.24: which NPUs, in rank order, as typed
    compilation_config_text: str | None = None
    gdn_prefill_backend: str | None = None
    kda_prefill_backend: str | None = None


# vLLM flag -> (Cmdline field, kind); short aliases as vLLM's arg_utils defines them
_FLAGS: dict[str, tuple[str, str]] = {
    "--tensor-parallel-size": ("tp", "int"),
    "-tp": ("tp", "int"),
    "--data-parallel-size": ("dp", "int"),
    "-dp": ("dp", "int"),
    "--pipeline-parallel-size": ("pp", "int"),
    "-pp": ("pp", "int"),
    "--enable-expert-parallel": ("enable_expert_parallel", "flag"),
    "-ep": ("enable_expert_parallel", "flag"),
    "--enforce-eager": ("enforce_eager", "flag"),
    "--enable-eplb": ("enable_eplb", "flag"),
    "--numa-bind": ("numa_bind", "flag"),
    "--max-num-batched-tokens": ("max_num_batched_tokens", "int"),
    "--block-size": ("block_size", "int"),
    "--scheduling-policy": ("scheduling_policy", "str"),
    "--kv-transfer-config": ("kv_role", "kv"),
    "--speculative-config": ("num_speculative_tokens", "spec"),
    "--additional-config": ("config_text", "str"),
    "--device-ids": ("device_ids", "str"),
    "--compilation-config": ("compilation_config_text", "str"),
    "-O": ("compilation_config_text", "str"),
    "--gdn-prefill-backend": ("gdn_prefill_backend", "str"),
    "--kda-prefill-backend": ("kda_prefill_backend", "str"),
}


def is_vllm(argv: list[str]) -> bool:
    """Whether argv runs vLLM: `vllm serve ...`, `python -m vllm.entrypoints...`, a vllm script."""
    for a in argv[:4]:
        base = a.rsplit("/", 1)[-1]
        if base == "vllm" or base.startswith("vllm.entrypoints") or "vllm/entrypoints" in a:
            return True
    return any(a.startswith("vllm.entrypoints") for a in argv)


def split_cmdline(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as e:
        raise InvalidInput(
            f"--cmdline cannot be split like a shell would: {e}",
            "check the quotes around --additional-config",
        ) from None


def parse_cmdline(argv: list[str], source: str) -> Cmdline:
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            continue
        name, eq, inline = arg.partition("=")
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")  # vLLM accepts --snake_case spellings too
        negated = name.startswith("--no-") and ("--" + name[5:]) in _FLAGS
        if negated:
            name = "--" + name[5:]
        spec = _FLAGS.get(name)
        if spec is None:
            continue
        field_name, kind = spec
        if kind == "flag":
            values[field_name] = not negated
            continue
        if eq:
            raw = inline
        elif i < len(argv):
            raw = argv[i]
            i += 1
        else:
            raise InvalidInput(f"{source}: {name} has no value", f"give {name} a value")
        values[field_name] = _flag_value(name, kind, raw, source)
    if values.get("config_text") is None:
        values["config_text"] = None
    return Cmdline(**values)


# vLLM refuses sizes below 1; far above, no deployment exists (and int() stays cheap)
_INT_RANGE = (1, 1 << 24)


def _flag_value(name: str, kind: str, raw: str, source: str) -> Any:
    if kind == "int":
        try:
            value = int(raw) if len(raw) <= 20 else None
        except ValueError:
            value = None
        if value is None:
            raise InvalidInput(f"{source}: {name} {raw[:40]!r} is not an integer")
        lo, hi = _INT_RANGE
        if not lo <= value <= hi:
            raise InvalidInput(f"{source}: {name} {value} is out of range ({lo} to {hi})")
        return value
    if kind == "kv":
        doc = _json_arg(name, raw, source)
        role = doc.get("kv_role") if isinstance(doc, dict) else None
        return role if role in KV_ROLES else "none"
    if kind == "spec":
        doc = _json_arg(name, raw, source)
        n = doc.get("num_speculative_tokens") if isinstance(doc, dict) else None
        return n if isinstance(n, int) and not isinstance(n, bool) else 1
    return raw


def _json_arg(name: str, raw: str, source: str) -> Any:
    return loads_bounded(raw, source=f"{source}: {name}")


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines (`export` allowed, # comments, optional quotes), as a shell would set them."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, eq, value = line.partition("=")
        if not eq or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def parse_environ(text: str) -> dict[str, str]:
    """/proc/PID/environ: NUL-separated KEY=VALUE."""
    env: dict[str, str] = {}
    for item in text.split("\0"):
        key, eq, value = item.partition("=")
        if eq and key:
            env[key] = value
    return env


_EXPERT_COUNTS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


def _has_expert(doc: Any) -> bool:
    # vllm_ascend.utils._is_contain_expert: any key mentioning "expert", at any depth
    if isinstance(doc, dict):
        return any("expert" in str(k) or _has_expert(v) for k, v in doc.items())
    return False


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def model_facts(doc: dict[str, Any]) -> ModelFacts:
    """The rule-relevant facts of a Hugging Face config.json (its text_config when nested)."""
    text = doc.get("text_config") if isinstance(doc.get("text_config"), dict) else doc
    assert isinstance(text, dict)
    archs = doc.get("architectures") or text.get("architectures") or []
    experts = next((_int(text.get(k)) for k in _EXPERT_COUNTS if _int(text.get(k))), None)
    quant = text.get("moe_quantize", text.get("quantize"))
    # a present index_topk marks an indexer even when its value is odd (vLLM tests hasattr)
    topk = (_int(text.get("index_topk")) or 0) if "index_topk" in text else None
    return ModelFacts(
        architectures=tuple(str(a) for a in archs) if isinstance(archs, list) else (),
        model_type=str(text.get("model_type") or doc.get("model_type") or "") or None,
        is_moe=_has_expert(text),
        num_experts=experts,
        hidden_size=_int(text.get("hidden_size")),
        moe_intermediate_size=_int(text.get("moe_intermediate_size")),
        quantize=None if quant is None else str(quant),
        # vLLM's is_deepseek_mla: an MLA model carries kv_lora_rank
        is_mla=text.get("kv_lora_rank") is not None,
        index_topk=topk,
        has_compress_ratios="compress_ratios" in text or "compress_ratios" in doc,
    )


def parse_hf_config(text: str, source: str) -> ModelFacts:
    doc = loads_bounded(text, source=source)
    if not isinstance(doc, dict):
        raise InvalidInput(f"{source} is not a JSON object", "give the model's config.json")
    return model_facts(doc)


_SOCS = {"A2": "A2", "A3": "A3", "A5": "A5", "310P": "310P"}
_SOC_ENUM = {Soc.A2: "A2", Soc.A3: "A3", Soc.A5: "A5", Soc.P310: "310P"}


def parse_soc(text: str) -> str:
    """A2 / A3 / A5 / 310P, or a chip name (910B3, Ascend910_9382, 310P3, 950)."""
    t = text.strip().upper()
    if t in _SOCS:
        return _SOCS[t]
    found = _SOC_ENUM.get(soc_of_name(t))
    if found is None:
        raise UsageError(
            f"unknown --soc {text!r}", "give A2, A3, A5, 310P or a chip name such as 910B3"
        )
    return found
