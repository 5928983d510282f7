"""Validate a vLLM-Ascend `--additional-config` against the rules of one vLLM-Ascend version.

`versions` holds each version's key table as data, `rules` the cross-key rules, `checker` runs
both and returns a Report with findings and the effective config; `inputs` parses what users give.
"""

from ascendtune.core.vllm_config.checker import check, version
from ascendtune.core.vllm_config.model import Facts, Finding, ModelFacts, Report, Rewrite
from ascendtune.core.vllm_config.versions import DEFAULT_TARGET, VERSIONS

__all__ = [
    "DEFAULT_TARGET",
    "VERSIONS",
    "Facts",
    "Finding",
    "ModelFacts",
    "Report",
    "Rewrite",
    "check",
    "version",
]
