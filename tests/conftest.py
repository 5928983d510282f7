from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.builder import SysrootBuilder
from tests.support.children import CHILD, Spawn, assert_ready, popen_child

# a loaded 2-core CI machine must not turn slow examples into failures
settings.register_profile("ascendtune", deadline=None)
settings.load_profile("ascendtune")

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"


def sample(name: str) -> str:
    """Text of a file in ../shared/samples (other projects' data, read in place)."""
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"../shared/samples/{name} is not here")
    return path.read_text()


@pytest.fixture
def sysroot(tmp_path: Path) -> SysrootBuilder:
    return SysrootBuilder(tmp_path / "root")


def pytest_terminal_summary(terminalreporter: object) -> None:
    """Say when the Ray tier did not run, and why (a skip is easy to miss in `-q`)."""
    reporter: object = terminalreporter
    skipped = getattr(reporter, "stats", {}).get("skipped", [])
    reasons = {
        str(r.longrepr[2]).removeprefix("Skipped: ")
        for r in skipped
        if "ray" in getattr(r, "keywords", {}) and isinstance(r.longrepr, tuple)
    }
    for why in sorted(reasons):
        reporter.write_line(f"Ray tier skipped: {why}")  # type: ignore[attr-defined]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start a child (tests/children.py CHILD) from its spec's keywords; every child is killed at
    teardown."""
    children: list[subprocess.Popen[str]] = []

    def start(**spec: object) -> int:
        p = popen_child(CHILD, json.dumps(spec))
        children.append(p)
        assert_ready(p)
        return p.pid

    yield start
    for p in children:
        p.kill()
        p.wait(timeout=10)
