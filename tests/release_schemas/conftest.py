"""The release tier runs only when asked (`-m releases`, or ASCENDTUNE_RELEASE_TIER=run): it
downloads vLLM-Ascend source distributions. Asked for, a failed download fails it."""

from __future__ import annotations

import pytest

from tests.support.tiers import deselect_unless_asked


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unless_asked(config, items, "releases", "ASCENDTUNE_RELEASE_TIER")
