from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support import samples
from tests.support.builder import SysrootBuilder
from tests.support.children import CHILD, Spawn, assert_ready, popen_child
from tests.support.cli import CLI, Cli

# a loaded 2-core CI machine must not turn slow examples into failures
settings.register_profile("ascendtune", deadline=None)
settings.load_profile("ascendtune")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): one worker per CPU this process may run on. xdist's own
    count is the machine's cores, which over-counts in a container or under taskset pinned to
    fewer; PYTEST_XDIST_AUTO_NUM_WORKERS still overrides (None: xdist's hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0))


@pytest.fixture
def sysroot(tmp_path: Path) -> SysrootBuilder:
    return SysrootBuilder(tmp_path / "root")


@pytest.fixture(scope="session")  # stateless: property tests may take it too
def cli() -> Cli:
    """Run a command in process: `cli("plan", "--demo", "atlas-800i-a2")` is its Result, at a
    pinned width and environment (tests/support/cli.py)."""
    return CLI


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[2]).removeprefix("Skipped: ") if isinstance(longrepr, tuple) else ""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly what did not run, and why (a skip is easy to miss in `-q`): the Ray tier, and
    every test that needs ../shared/samples when that folder is absent (one line)."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = {_skip_reason(r) for r in skipped if "ray" in getattr(r, "keywords", {})}
    for why in sorted(reasons):
        terminalreporter.write_line(f"Ray tier skipped: {why}")
    need_samples = sum(_skip_reason(r).startswith(samples.SKIP_REASON) for r in skipped)
    if need_samples:
        terminalreporter.write_line(samples.skipped_line(need_samples), yellow=True, bold=True)


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start a child (tests/support/children.py CHILD) from its spec's keywords; every child is killed at
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
