"""The download tiers (tests/reference, tests/release_schemas) run only when asked for: `-m
MARKER`, or ASCENDTUNE_<TIER>_TIER=run. They fetch vLLM-Ascend source distributions; asked for,
a failed download fails them (they never skip)."""

from __future__ import annotations

import os

import pytest


def deselect_unless_asked(
    config: pytest.Config, items: list[pytest.Item], marker: str, env: str
) -> None:
    """Drop the items marked `marker` from this run unless `-m` names it or `env` is "run"."""
    if marker in (config.getoption("-m") or "") or os.environ.get(env) == "run":
        return
    tier = [i for i in items if i.get_closest_marker(marker) is not None]
    if tier:
        config.hook.pytest_deselected(items=tier)
        items[:] = [i for i in items if i.get_closest_marker(marker) is None]
