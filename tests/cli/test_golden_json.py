"""Every demo host's JSON (topo, plan, plan --policy compare, doctor) is byte for byte the
committed golden JSON: speed work must not change a single output byte."""

from __future__ import annotations

import json

import pytest

from scripts.gen_golden_json import OUT, cases, render

STALE = "run `python -m scripts.regen` and review the diff"


@pytest.mark.parametrize(("name", "args"), cases(), ids=[c[0] for c in cases()])
def test_json_matches_golden(name: str, args: tuple[str, ...]) -> None:
    got = render(args)
    path = OUT / name
    assert path.exists(), f"{name} missing: {STALE}"
    assert got == path.read_text(), f"{name} is stale: {STALE}"
    json.loads(got)


def test_no_golden_json_is_left_over() -> None:
    assert sorted(p.name for p in OUT.glob("*.json")) == sorted(c[0] for c in cases())
