"""The release tier runs only when asked (`-m releases`, or ASCENDTUNE_RELEASE_TIER=run): it
downloads vLLM-Ascend source distributions. Asked for, a failed download fails it."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = "releases" in (config.getoption("-m") or "") or (
        os.environ.get("ASCENDTUNE_RELEASE_TIER") == "run"
    )
    if wanted:
        return
    tier = [i for i in items if i.get_closest_marker("releases") is not None]
    if tier:
        config.hook.pytest_deselected(items=tier)
        items[:] = [i for i in items if i.get_closest_marker("releases") is None]
