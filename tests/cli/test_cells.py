"""The fitted table's own drawing against Rich's Table: the same segments (text and styles),
so the same bytes on a plain pipe and on a colour terminal, for random tables at random widths
(wrapping cells, wide characters, styled cells, the compact form, titles)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ascendtune.cli.cells import FittedTable, Wrapped, cpus, fitted_table, show

WORDS = st.text(alphabet="abcXYZ019 -,:/.[]\\中é", max_size=14)


@st.composite
def cells(draw: st.DrawFn) -> object:
    kind = draw(st.sampled_from(["str", "styled", "wrapped", "cpus", "text"]))
    word = draw(WORDS)
    if kind == "str":
        return escape(word)
    if kind == "styled":
        tag = draw(st.sampled_from(["red", "bold", "yellow", "dim italic"]))
        return f"[{tag}]{escape(word)}[/{tag}] x"
    if kind == "wrapped":
        return Wrapped(word, ", ", draw(st.sampled_from(["", "red"])))
    if kind == "text":
        return Text(word, style=draw(st.sampled_from(["", "green", "bold red"])))
    nums = draw(st.lists(st.integers(0, 400), max_size=12))
    return cpus(",".join(map(str, nums)), draw(st.sampled_from(["", "red"])))


@st.composite
def tables(
    draw: st.DrawFn,
) -> tuple[str | None, list[object], list[list[object]], set[int], set[int]]:
    n = draw(st.integers(1, 7))
    headers: list[object] = [escape(draw(WORDS)) or "h" for _ in range(n)]
    rows = draw(st.lists(st.lists(cells(), min_size=n, max_size=n), max_size=6))
    title = draw(st.one_of(st.none(), WORDS.map(escape)))
    right = set(draw(st.lists(st.integers(0, n - 1), max_size=2)))
    center = set(draw(st.lists(st.integers(0, n - 1), max_size=2))) - right
    return title, headers, rows, right, center


def console(width: int, colour: str | None) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        force_terminal=colour is not None,
        color_system=colour,  # type: ignore[arg-type]
        highlight=False,
        emoji=False,
        legacy_windows=False,
    )


def printed(con: Console, what: object, width: int) -> str:
    con.print(what, width=width)
    out = con.file.getvalue()  # type: ignore[attr-defined]
    con.file = io.StringIO()
    return out


@settings(max_examples=150, deadline=None)
@given(
    tables(),
    st.integers(8, 220),
    st.sampled_from([None, "standard", "truecolor"]),
)
def test_draws_as_richs_table_draws(table: tuple, width: int, colour: str | None) -> None:
    title, headers, rows, right, center = table
    con = console(width, colour)
    ft = fitted_table(con, title, headers, rows, right=right, center=center)
    opts = con.options.update(width=max(con.width, ft.needed_width))
    rich = list(con.render(ft.rich_table(), opts))
    ft.rich_table = None  # type: ignore[assignment,method-assign]  # ours must not fall back
    ours = list(con.render(ft, opts))
    del ft.rich_table
    assert ours == rich
    shown = max(con.width, ft.needed_width)
    assert printed(con, ft, shown) == printed(con, ft.rich_table(), shown)


def test_a_console_narrower_than_the_table_is_drawn_by_rich() -> None:
    con = console(30, None)
    ft = fitted_table(con, "t", ["aaaaaaaa", "bbbbbbbbbb", "cccccccc"], [["1", "2", "3"]])
    narrow = con.options.update(width=ft.needed_width - 1)
    assert list(con.render(ft, narrow)) == list(con.render(ft.rich_table(), narrow))


def test_a_cell_that_is_no_text_is_drawn_by_rich() -> None:
    from rich.panel import Panel

    con = console(80, "truecolor")
    ft = fitted_table(con, None, ["a", "b"], [["x", Panel("p")]])
    assert printed(con, ft, 80) == printed(con, ft.rich_table(), 80)
    assert "p" in printed(con, ft, 80)


def test_show_prints_the_rows_whole() -> None:
    con = console(60, None)
    ft = fitted_table(
        con, "NUMA nodes", ["node", "CPUs"], [["0", cpus("0-23,96-119")], ["1", cpus("24-47")]]
    )
    assert isinstance(ft, FittedTable)
    show(con, ft)
    out = con.file.getvalue()  # type: ignore[attr-defined]
    assert out.splitlines()[0].rstrip() == "NUMA nodes"
    assert "0-23,96-119" in out and "24-47" in out
