from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.workers import Server, start_server


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A fake NPU server: npu-smi on PATH naming the worker processes it starts
    (tests/support/workers.py)."""
    yield from start_server(tmp_path, monkeypatch)
