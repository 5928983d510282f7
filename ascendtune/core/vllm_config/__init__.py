"""Validate a vLLM-Ascend `--additional-config` against the rules of one vLLM-Ascend version.

Each version's key table is data (ascendtune.core.vllm_ascend: the registry entry's `config`),
`rules` the cross-key rules, `checker` runs both and returns a Report with findings and the
effective config; `inputs` parses what users give.

The names below are loaded on first use: `plan` reaches `inputs` (a command line's parsing) and
must not pay for the rule tables (about 7 ms to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.core.lazy import lazy_names

if TYPE_CHECKING:
    from ascendtune.core.vllm_config.checker import check, version
    from ascendtune.core.vllm_config.model import Facts, Finding, ModelFacts, Report, Rewrite

_HOME = {
    "check": "checker",
    "version": "checker",
    "Facts": "model",
    "Finding": "model",
    "ModelFacts": "model",
    "Report": "model",
    "Rewrite": "model",
}

__all__ = [
    "Facts",
    "Finding",
    "ModelFacts",
    "Report",
    "Rewrite",
    "check",
    "version",
]


__getattr__ = lazy_names(__name__, _HOME)
