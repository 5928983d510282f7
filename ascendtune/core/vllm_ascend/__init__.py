"""vLLM-Ascend as ascendtune models it: every release from 0.9.1rc1 on and main snapshots, each one
entry with its CPU binding and its additional-config schema (`registry`), and how a version string
a host reports or a user types finds its entry (`resolve`).

Light to import (plan and bind use it at start-up): the config tables (`tables`) load on first use
of an entry's `config`.
"""

from __future__ import annotations

from ascendtune.core.vllm_ascend.registry import (
    BINDING_FIX,
    DEVICE_ID,
    DP_NARROWED,
    DP_RESTART,
    ENTRIES,
    NEWEST,
    PLANNER_DEFAULT,
    SORTED_BUSY,
    VERSIONS,
    VISIBLE_INDEX,
    Binding,
    Fact,
    VllmAscendVersion,
    spans,
)
from ascendtune.core.vllm_ascend.resolve import Resolved, package_version, target

__all__ = [
    "BINDING_FIX",
    "DEVICE_ID",
    "DP_NARROWED",
    "DP_RESTART",
    "ENTRIES",
    "NEWEST",
    "PLANNER_DEFAULT",
    "SORTED_BUSY",
    "VERSIONS",
    "VISIBLE_INDEX",
    "Binding",
    "Fact",
    "Resolved",
    "VllmAscendVersion",
    "get",
    "names",
    "package_version",
    "spans",
    "target",
]


def names() -> list[str]:
    """Every --target value but auto, oldest first (completion values)."""
    return list(VERSIONS)


def get(name: str) -> VllmAscendVersion:
    """The entry `--target name` means (a registry name or a release's package version)."""
    return target(name)
