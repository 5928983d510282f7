"""vLLM-Ascend as ascendtune models it: every release from 0.9.1rc1 on and main snapshots, each one
entry with its CPU binding and its additional-config schema (`registry`), and how a version string
a host reports or a user types finds its entry (`resolve`).

Light to import (plan and bind use it at start-up): the config tables (`tables`) load on first use
of an entry's `config`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascendtune.core.vllm_ascend.registry import (
    BINDING_FIX,
    DEVICE_ID,
    DP_NARROWED,
    DP_RESTART,
    ENTRIES,
    NEWEST,
    PLANNER_DEFAULT,
    RUNS_AFTER_WARMUP,
    RUNS_AT_DEVICE,
    RUNS_AT_START,
    SORTED_BUSY,
    VERSIONS,
    VISIBLE_INDEX,
    Binding,
    Fact,
    VllmAscendVersion,
    spans,
)

if TYPE_CHECKING:
    from ascendtune.core.vllm_ascend.resolve import Resolved

__all__ = [
    "BINDING_FIX",
    "DEVICE_ID",
    "DP_NARROWED",
    "DP_RESTART",
    "ENTRIES",
    "NEWEST",
    "PLANNER_DEFAULT",
    "RUNS_AFTER_WARMUP",
    "RUNS_AT_DEVICE",
    "RUNS_AT_START",
    "SORTED_BUSY",
    "VERSIONS",
    "VISIBLE_INDEX",
    "Binding",
    "Fact",
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
    entry = VERSIONS.get(name.strip()) or VERSIONS.get(f"v{name.strip()}")
    return entry if entry is not None else target(name)


def target(name: str) -> VllmAscendVersion:
    """`--target NAME` (ascendtune.core.vllm_ascend.resolve.target)."""
    from ascendtune.core.vllm_ascend import resolve

    return resolve.target(name)


def package_version(text: str) -> Resolved | None:
    """The entry a vllm_ascend `Version:` resolves to (ascendtune.core.vllm_ascend.resolve),
    loaded on first use: `plan --target NAME` needs no version ordering."""
    from ascendtune.core.vllm_ascend import resolve

    return resolve.package_version(text)
