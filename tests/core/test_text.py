"""Text from a host or a file made inert (no escape or control sequence survives), capped lines,
and JSON read with bounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.errors import InvalidInput
from ascendtune.core.text import (
    cap_line,
    inert,
    inert_line,
    loads_bounded,
    strip_ansi,
    table_as_rich,
    wrap_as_rich,
)

# what a terminal would act on, or not show as itself, is shown escaped: nothing is dropped
INERT = [
    ("x\x1b[2J", "x\\x1b[2J"),
    ("\x1b[4mGPU0\x1b[0m", "\\x1b[4mGPU0\\x1b[0m"),
    ("a\x1b]0;owned\x07b", "a\\x1b]0;owned\\x07b"),
    ("a\rb\x08c\x7fd\x9be", "a\\x0db\\x08c\\x7fd\\x9be"),
    ("tab\tnew\nline", "tab\tnew\nline"),
    ("dos\r\nline", "dos\nline"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ("\x1bPq#0;2;0;0;0\x1b\\sixel", "\\x1bPq#0;2;0;0;0\\x1b\\sixel"),
    ("\x9b31mred", "\\x9b31mred"),
    # right-to-left and directional overrides: `txt.exe` must not read as `exe.txt`
    ("abc\u202etxt.exe", "abc\\u202etxt.exe"),
    ("\u2066x\u2069 \u200f", "\\u2066x\\u2069 \\u200f"),
    # zero-width characters and the BOM: a key must not read as another
    ("enable_cpu\u200b_binding", "enable_cpu\\u200b_binding"),
    ("a\u200cb\u200dc\u2060d\ufeffe", "a\\u200cb\\u200dc\\u2060d\\ufeffe"),
    ("soft\xadhyphen\u00a0nbsp", "soft\\xadhyphen\\xa0nbsp"),
    ("tag\U000e0041", "tag\\U000e0041"),
    # what a terminal shows as itself stays as it is
    ("ok", "ok"),
    ("中文 é ✓ │ printf '#!/bin/sh\\n'", "中文 é ✓ │ printf '#!/bin/sh\\n'"),
]


@pytest.mark.parametrize(("raw", "want"), INERT)
def test_inert(raw: str, want: str) -> None:
    assert inert(raw) == want
    line = inert_line(raw)
    assert "\n" not in line and "\t" not in line
    assert line.isprintable()


@given(st.text())
def test_inert_output_is_printable_and_keeps_every_printable_character(s: str) -> None:
    out = inert(s)
    assert all(c.isprintable() or c in "\t\n" for c in out)
    assert inert(out) == out
    # nothing is dropped: every printable character of s is still there, in order
    kept = iter(out)
    assert all(any(c == k for k in kept) for c in s if c.isprintable())


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


@given(
    st.text(alphabet=st.sampled_from("ab-./:(), 0123456789"), max_size=300),
    st.integers(min_value=1, max_value=130),
)
def test_wrap_as_rich_wraps_as_rich_does(text: str, width: int) -> None:
    # the lines Rich prints (its Console, no colour, no markup in the text), cut where it cuts
    import io

    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, no_color=True, highlight=False, emoji=False).print(text)
    assert "\n".join(wrap_as_rich(text, width)) + "\n" == out.getvalue()


def test_wrap_as_rich_cases() -> None:
    # a line ends after the space of its last word (Rich prints it), within the width
    line = "snapshot: 3195 files, 0 links, 16 accelerators, 1024 CPUs -> /tmp/t/o.tar.gz (2 absent)"
    assert wrap_as_rich(line, 80) == [line.removesuffix("absent)"), "absent)"]
    assert wrap_as_rich(line, 70) == [line.partition("/")[0], "/" + line.partition("/")[2]]
    assert wrap_as_rich(line, 200) == [line]
    assert wrap_as_rich("abcdefgh ij", 3) == ["abc", "def", "gh ", "ij"]  # a long word cut
    assert wrap_as_rich("", 10) == [""]


_CELL = st.text(alphabet=st.sampled_from("ab-./:(), 0123456789[é"), max_size=24)


@given(
    st.integers(min_value=1, max_value=5).flatmap(
        lambda n: st.tuples(
            st.lists(_CELL.filter(bool), min_size=n, max_size=n),
            st.lists(st.lists(_CELL, min_size=n, max_size=n), max_size=6),
        )
    ),
    st.integers(min_value=10, max_value=200),
)
def test_table_as_rich_prints_as_rich_does(
    table: tuple[list[str], list[list[str]]], width: int
) -> None:
    # the lines Rich prints for the same Table (no colour), where table_as_rich tells them
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    headers, rows = table
    lines = table_as_rich(headers, rows, width)
    plain = all(
        (c.isascii() and c.isprintable() and "[" not in c)
        for c in [*headers, *(c for r in rows for c in r)]
    )
    natural = sum(max(len(c) for c in col) for col in zip(headers, *rows, strict=True))
    assert (lines is None) == (not plain or natural + 2 * (len(headers) - 1) > width)
    if lines is None:
        return
    out = io.StringIO()
    t = Table(box=None, pad_edge=False, show_edge=False)
    for h in headers:
        t.add_column(h)
    for r in rows:  # as bind --workers adds them: some cells strings (markup), some Text
        t.add_row(*(c if i % 2 else Text(c) for i, c in enumerate(r)))
    Console(
        file=out, width=width, no_color=True, highlight=False, emoji=False, soft_wrap=True
    ).print(t)
    assert "\n".join(lines) + "\n" == out.getvalue()
