"""doctor turns what the reader could not read into skip rows, and a malformed meta.json is
bad input (exit 5), whatever its depth."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2


def _unreadable_numa(tmp_path: Path) -> Path:
    root = tmp_path / "h"
    b = atlas_a2(SysrootBuilder(root))
    # the node folder replaced by a file: listed beside its siblings, but not readable as a view
    import shutil

    shutil.rmtree(root / "sys/devices/system/node")
    b.file("sys/devices/system/node", "")
    return root


def test_unreadable_numa_view_is_a_skip_row(tmp_path: Path, cli: Cli) -> None:
    root = _unreadable_numa(tmp_path)
    r = cli("doctor", "--section", "host", "--sysroot", str(root))
    assert r.exit_code in (0, 1), r.output
    rows = [
        line for line in r.stdout.splitlines() if line.startswith("│ skip") and "numa_view" in line
    ]
    assert rows, r.stdout
    assert "sys/devices/system/node cannot be read" in r.stdout
    assert "note: sys/devices/system/node cannot be read" not in r.stdout  # a row, not twice
    j = cli("doctor", "--section", "host", "--json", "--sysroot", str(root))
    doc = schemas.loads("doctor", j.stdout)
    view = next(c for c in doc["checks"] if c["id"] == "numa_view")
    assert view["status"] == "skip" and "cannot be read" in view["detail"]


def test_readable_host_has_no_view_row(tmp_path: Path, cli: Cli) -> None:
    root = tmp_path / "ok"
    atlas_a2(SysrootBuilder(root))
    r = cli("doctor", "--json", "--sysroot", str(root))
    assert not [c for c in json.loads(r.stdout)["checks"] if c["id"].endswith("_view")]


def test_deeply_nested_meta_json_is_bad_input(tmp_path: Path, cli: Cli) -> None:
    root = tmp_path / "deep"
    atlas_a2(SysrootBuilder(root))
    (root / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    for cmd in (["topo"], ["plan"]):
        r = cli(*cmd, "--sysroot", str(root))
        assert r.exit_code == 5, (cmd, r.output)
        assert "internal error" not in r.stderr
        assert "meta.json nests deeper than" in r.stderr
    r = cli("check-config", "{}", "--sysroot", str(root))
    assert "internal error" not in r.output  # meta.json only gives it the arch
    # doctor reports a host it cannot read as a check, and still runs the others
    r = cli("doctor", "--sysroot", str(root))
    assert "internal error" not in r.output
    assert "meta.json nests deeper than" in r.stdout
