"""A defect of ascendtune itself: one capped line on stderr that says to report it, exit 70
(SPEC.md section 4), never a traceback; --debug shows the traceback."""

from __future__ import annotations

import pytest

from tests.support.cli import Cli


def test_a_defect_exits_70_with_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from ascendtune.app import topo

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(topo, "run", broken)
    r = cli("topo", "--demo", "atlas-800i-a2")
    assert r.exit_code == 70
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error: RuntimeError: a bug of ours" in lines[0]
    assert "report it" in lines[0] and "Traceback" not in r.output
