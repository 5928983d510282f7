"""Table cells that never cut a value: lists break only after their separators, and tables
are sized from each column's narrowest whole rendering before Rich lays them out."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement


def pieces(text: str, seps: str) -> list[str]:
    """text split after every separator character (the separators stay on their piece)."""
    out: list[str] = []
    cur = ""
    for ch in text:
        cur += ch
        if ch in seps:
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out or [""]


def pack(parts: Iterable[str], width: int) -> list[str]:
    """Greedy lines of at most width cells; a space that ends a line is dropped."""
    lines: list[str] = []
    cur = ""
    for p in parts:
        if cur and len((cur + p).rstrip()) > width:
            lines.append(cur.rstrip())
            cur = p
        else:
            cur += p
    lines.append(cur.rstrip())
    return lines


class Wrapped:
    """A value (CPU list, id list, name) that wraps only after its separators."""

    def __init__(self, text: str, seps: str = ", ", style: str = "") -> None:
        self.text = text
        self.seps = seps
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        parts = pieces(self.text, self.seps)
        return Measurement(max(len(p.rstrip()) for p in parts), len(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        lines = pack(pieces(self.text, self.seps), options.max_width)
        # fold, never an ellipsis, if a column is still too narrow for one piece
        yield Text("\n".join(lines), style=self.style, overflow="fold")


def cpus(text: str, style: str = "") -> Wrapped:
    """A CPU list cell: breaks after commas only, so every range stays whole."""
    return Wrapped(text, ",", style)


class FittedTable(Table):
    """A table and the width it needs to show every value whole."""

    needed_width = 0


def fitted_table(
    console: Console,
    title: str | None,
    headers: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    *,
    right: Iterable[int] = (),
    center: Iterable[int] = (),
    **table_kw: Any,
) -> FittedTable:
    """A Rich table whose column widths are chosen here: widest columns give way first, and
    none goes below the width of its longest unbreakable piece (Rich's own collapse ignores
    that and cuts values with an ellipsis)."""
    from rich.box import SIMPLE_HEAD
    from rich.measure import Measurement
    right, center = set(right), set(center)
    opts = console.options
    n = len(headers)
    mins = [1] * n
    maxs = [1] * n

    def parsed(cell: Any) -> Any:
        # markup parsed once here, not again at every measure and render of the cell
        return console.render_str(cell) if isinstance(cell, str) else cell

    headers = [parsed(h) for h in headers]
    rows = [[parsed(c) for c in row] for row in rows]
    all_rows: list[Sequence[Any]] = [headers, *rows]
    for row in all_rows:
        for i, cell in enumerate(row):
            m = Measurement.get(console, opts, cell)
            mins[i] = max(mins[i], m.minimum)
            maxs[i] = max(maxs[i], m.maximum)
    # the usual boxed table; when its narrowest form is still too wide, a compact one: no
    # vertical lines, one space of padding instead of two
    boxed, compact = 3 * n + 1, 2 * n - 2
    compact_kw: dict[str, Any] = {
        "box": SIMPLE_HEAD, "show_edge": False, "padding": (0, 1, 0, 0), "pad_edge": False
    }
    overhead, kw = boxed, {}
    if sum(mins) > console.width - boxed:
        overhead, kw = compact, compact_kw
    widths = list(maxs)
    budget = console.width - overhead
    while sum(widths) > budget:
        slack = [i for i in range(n) if widths[i] > mins[i]]
        if not slack:
            break  # cannot fit whole: rows grow longer than the terminal instead of cutting
        widths[max(slack, key=lambda i: (widths[i], -i))] -= 1
    t = FittedTable(title=title, title_justify="left", **{**kw, **table_kw})
    t.needed_width = sum(widths) + overhead
    for i, h in enumerate(headers):
        justify = "right" if i in right else "center" if i in center else "left"
        t.add_column(h, justify=justify, width=widths[i], overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        t.add_row(*row)
    return t


def show(console: Console, table: FittedTable) -> None:
    """Print a fitted table; one that cannot fit whole is printed wider than the terminal."""
    console.print(table, width=max(console.width, table.needed_width))
