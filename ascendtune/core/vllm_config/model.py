"""Value objects of `check-config`: deployment facts, findings, rewrites and the report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ascendtune.core.findings import CONFIG_SHAPE

# check-config's findings, rewrites and values shown as written are the shared ones
from ascendtune.core.findings import Finding as Finding
from ascendtune.core.findings import Rewrite as Rewrite
from ascendtune.core.findings import Severity as Severity
from ascendtune.core.findings import show as show

SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

# vLLM's --kv-transfer-config kv_role values, plus "none" for "no KV transfer configured".
KV_ROLES = ("kv_producer", "kv_consumer", "kv_both", "none")
# vLLM's switch between Model Runner V1 and V2 (the only one on Ascend)
RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"


@dataclass(frozen=True)
class ModelFacts:
    """What the rules need from a model's Hugging Face config.json."""

    architectures: tuple[str, ...] = ()
    model_type: str | None = None
    is_moe: bool = False
    num_experts: int | None = None
    hidden_size: int | None = None
    moe_intermediate_size: int | None = None
    quantize: str | None = None
    is_mla: bool = False
    index_topk: int | None = None
    has_compress_ratios: bool = False

    @property
    def has_indexer(self) -> bool:
        return self.index_topk is not None

    @property
    def uses_sfa_sparse(self) -> bool:
        # vllm_ascend.utils.model_uses_sfa_sparse: an indexer, and no compressed (DSV4) attention
        return self.has_indexer and not self.has_compress_ratios


@dataclass(frozen=True)
class Facts:
    """The deployment around the config; None means "not given", and rules that need it say so."""

    tp: int | None = None
    dp: int | None = None
    pp: int | None = None
    enable_expert_parallel: bool | None = None
    kv_role: str | None = None  # one of KV_ROLES
    enforce_eager: bool | None = None
    num_speculative_tokens: int | None = None  # 0 = no speculative decoding
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    scheduling_policy: str | None = None
    enable_eplb: bool | None = None
    numa_bind: bool | None = None
    soc: str | None = None  # "A2", "A3", "310P", "A5"
    arch: str | None = None  # platform.machine() of the serving host
    model: ModelFacts | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    # "file" (--env-file), "pid" (the process's own environment), "environment" (this shell's),
    # or "unknown" (a captured host without the server's environment)
    env_source: str = "environment"
    # vLLM-Omni importable by the server's python (main's unknown-key exception, PR #15515)
    with_vllm_omni: bool | None = None
    # vLLM's --compilation-config as given (its cudagraph_mode decides the graph-mode rewrites)
    compilation_config: Mapping[str, Any] | None = None
    # vLLM's --gdn-prefill-backend / --kda-prefill-backend: upstream puts them in additional_config
    gdn_prefill_backend: str | None = None
    kda_prefill_backend: str | None = None
    # the server process's own CPU mask and its cgroup cpuset (a running PID), and the outer
    # binder it was started under ("taskset -c 0-3", "numactl --physcpubind=...", an ascendtune
    # launch), when known
    process_cpus: frozenset[int] | None = None
    process_cpuset: frozenset[int] | None = None
    outer_binder: str | None = None

    @property
    def cudagraph_mode(self) -> str | None:
        cc = self.compilation_config or {}
        mode = cc.get("cudagraph_mode")
        return str(mode).upper() if mode is not None else None

    @property
    def env_explicit(self) -> bool:
        """The server's own environment was given (not guessed from this shell's)."""
        return self.env_source in ("file", "pid")

    @property
    def v2_model_runner(self) -> bool | None:
        """Whether vLLM runs Model Runner V2. vLLM-Ascend's patch_use_v2_model_runner makes
        `VllmConfig.use_v2_model_runner` read VLLM_USE_V2_MODEL_RUNNER alone (vLLM parses it with
        bool(int(...)); unset means V1). None when the server's environment was not given (this
        shell's is only a guess) or the value does not parse."""
        if not self.env_explicit:
            return None
        raw = self.env.get(RUNNER_ENV)
        if raw is None:
            return False
        try:
            return bool(int(raw))
        except ValueError:
            return None

    @property
    def env_label(self) -> str:
        return {
            "file": "--env-file",
            "pid": "process's environment",
            "unknown": "unrecorded environment",
        }.get(self.env_source, "current environment")


@dataclass(frozen=True)
class Report:
    target: str
    findings: tuple[Finding, ...]
    effective: dict[str, Any]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    @property
    def has_warnings(self) -> bool:
        return self.count("warning") > 0

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "findings": [f.to_json(CONFIG_SHAPE) for f in self.findings],
            "effective": self.effective,
            "counts": {s: self.count(s) for s in SEVERITIES},
        }
