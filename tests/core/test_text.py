"""Text from a host or a file made inert (no escape or control sequence survives), capped lines,
and JSON read with bounds."""

from __future__ import annotations

import pytest

from ascendtune.core.errors import InvalidInput
from ascendtune.core.text import cap_line, inert, inert_line, loads_bounded, strip_ansi

INERT = [
    ("x\x1b[2J", "x"),
    ("\x1b[4mGPU0\x1b[0m", "GPU0"),
    ("a\x1b]0;owned\x07b", "ab"),
    ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
    ("a\rb\x08c\x7fd\x9be", "abcd"),  # CSI e: a sequence
    ("tab\tnew\nline", "tab\tnew\nline"),
    ("lone \ud800 surrogate", "lone \ufffd surrogate"),
    ("\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel"),
    ("\x9b31mred", "red"),
    ("ok", "ok"),
]


@pytest.mark.parametrize(("raw", "want"), INERT)
def test_inert(raw: str, want: str) -> None:
    assert inert(raw) == want
    assert "\n" not in inert_line(raw)


def test_text_helpers() -> None:
    assert strip_ansi("\x1b[4mGPU0\x1b[0m\tGPU1") == "GPU0\tGPU1"
    assert cap_line("abc", 10) == "abc" and len(cap_line("a" * 50, 10, " (more)")) == 10
    for bad, match in (
        ("[" * 100_000, "nests deeper"),
        ('{"a": ' + "1" * 5000 + "}", "not usable JSON"),
        ('{"\\udc80": 1}', "surrogate"),
        ("{", "not valid JSON"),
    ):
        with pytest.raises(InvalidInput, match=match):
            loads_bounded(bad, source="x")
    assert loads_bounded('{"a": [1, {"b": "\\u00e9"}]}', source="x") == {"a": [1, {"b": "é"}]}
