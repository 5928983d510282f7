"""The reference tier runs only when asked (`-m reference`, or ASCENDTUNE_REFERENCE_TIER=run):
it downloads vLLM-Ascend source distributions. Asked for, a failed download fails it."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = "reference" in (config.getoption("-m") or "") or (
        os.environ.get("ASCENDTUNE_REFERENCE_TIER") == "run"
    )
    if wanted:
        return
    keep = [i for i in items if "reference" not in i.keywords]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if "reference" in i.keywords])
        items[:] = keep
