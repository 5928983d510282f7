"""Every demo host renders exactly as the committed golden files, at 80 and 200 columns, and
no value is cut at 80 (no ellipsis anywhere)."""

from __future__ import annotations

import re

import pytest

from scripts.gen_golden import OUT, cases, render

STALE = "run `python -m scripts.regen` and review the diff"


@pytest.mark.parametrize(("name", "args", "width"), cases(), ids=[c[0] for c in cases()])
def test_render_matches_golden(name: str, args: tuple[str, ...], width: int) -> None:
    got = render(args, width)
    assert "…" not in got, f"a value is cut in `ascendtune {' '.join(args)}` at {width} columns"
    path = OUT / name
    assert path.exists(), f"{name} missing: {STALE}"
    assert got == path.read_text(), f"{name} is stale: {STALE}"


def test_no_golden_file_is_left_over() -> None:
    assert sorted(p.name for p in OUT.glob("*.txt")) == sorted(c[0] for c in cases())


@pytest.mark.parametrize("name", [c[0] for c in cases() if c[2] == 80])
def test_lines_fit_80_columns_where_they_can(name: str) -> None:
    # tables are sized to the terminal; a line of words or a command is one line however long
    # (the terminal folds it on screen, and a copy of it is whole: cells.prose, cells.paste)
    for line in (OUT / name).read_text().splitlines():
        table_row = any(c in line for c in "│┃┏┗┡└") or re.search(r"\S {3,}\S", line.strip())
        assert len(line) <= 80 or not table_row or " " not in line.strip(), (name, line)
