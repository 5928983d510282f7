"""Validate a vLLM-Ascend `--additional-config` against the rules of one vLLM-Ascend version.

Each version's key table is data (ascendtune.core.vllm_ascend: the registry entry's `config`),
`rules` the cross-key rules, `checker` runs both and returns a Report with findings and the
effective config; `inputs` parses what users give.

The names below are loaded on first use: `plan` reaches `inputs` (a command line's parsing) and
must not pay for the rule tables (about 7 ms to import).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
