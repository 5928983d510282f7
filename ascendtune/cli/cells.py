"""Table cells that never cut a value: lists break only after their separators, and tables
are sized from each column's narrowest whole rendering before Rich lays them out."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
    from rich.measure import Measurement
    from rich.segment import Segment
    from rich.style import Style
    from rich.table import Table


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
        lines = pack(pieces(self.text, self.seps), options.max_width)
        # fold, never an ellipsis, if a column is still too narrow for one piece
        yield Text("\n".join(lines), style=self.style, overflow="fold")


def cpus(text: str, style: str = "") -> Wrapped:
    """A CPU list cell: breaks after commas only, so every range stays whole."""
    return Wrapped(text, ",", style)


def overhead(n: int, compact: bool) -> int:
    """The columns a table of n columns spends on borders and padding: boxed, two edges, n - 1
    dividers and a space each side of every cell; compact, one space between cells."""
    return 2 * n - 2 if compact else 3 * n + 1


class FittedTable:
    """A table whose column widths fitted_table chose, and the width it needs to show every
    value whole.

    Drawn as Rich's Table draws its boxed and compact forms, segment for segment (tests compare
    the two on random tables, plain and coloured), but without Rich's general layout: Rich spends
    about 45 us a cell measuring, padding and cropping through its renderable protocol, which
    was a third of a `topo` and most of a 64-rank `plan`. A cell that is not text (str, Text,
    Wrapped), or a console narrower than the table, is drawn by Rich's own Table instead.
    """

    def __init__(
        self,
        title: str | None,
        headers: Sequence[Any],
        rows: Sequence[Sequence[Any]],
        widths: Sequence[int],
        justify: Sequence[JustifyMethod],
        compact: bool,
    ) -> None:
        self.title = title
        self.headers = list(headers)
        self.rows = [list(r) for r in rows]
        self.widths = list(widths)
        self.justify = list(justify)
        self.compact = compact
        n = len(self.widths)
        # Rich's padding: (0, 1) boxed; (0, 1, 0, 0) compact, without the edges' padding
        self.pads = [(0, 0 if i == n - 1 else 1) if compact else (1, 1) for i in range(n)]
        self.needed_width = sum(self.widths) + overhead(n, compact)

    def rich_table(self) -> Table:
        """The same table as a Rich Table (the fallback, and what tests compare with)."""
        from rich.box import SIMPLE_HEAD
        from rich.table import Table

        kw: dict[str, Any] = (
            {"box": SIMPLE_HEAD, "show_edge": False, "padding": (0, 1, 0, 0), "pad_edge": False}
            if self.compact
            else {}
        )
        t = Table(title=self.title, title_justify="left", **kw)
        for h, w, j in zip(self.headers, self.widths, self.justify, strict=True):
            t.add_column(h, justify=j, width=w, overflow="fold")
        for row in self.rows:
            t.add_row(*row)
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width < self.needed_width or not all(
            isinstance(c, (str, Text, Wrapped)) for row in (self.headers, *self.rows) for c in row
        ):
            yield self.rich_table()
            return
        yield from _draw(self, console, options)


def _cell_lines(
    console: Console,
    cell: Any,
    width: int,
    pad: tuple[int, int],
    justify: JustifyMethod,
    style: Style,
) -> list[list[Segment]]:
    """One cell as Rich's Table renders it: Padding around the text, the cell style applied,
    every line cropped or padded to the column's width."""
    from rich.segment import Segment

    left, right = pad
    inner = width - left - right
    if isinstance(cell, Wrapped):
        text = Text(
            "\n".join(pack(pieces(cell.text, cell.seps), inner)), style=cell.style, overflow="fold"
        )
    elif isinstance(cell, str):
        text = console.render_str(cell, highlight=False)
    else:
        text = cell
    lines = text.wrap(
        console,
        inner,
        justify=text.justify or justify,
        overflow=text.overflow or "fold",
        tab_size=(console.tab_size if text.tab_size is None else text.tab_size) or 8,
        no_wrap=bool(text.no_wrap),
    )
    segs = Text("\n").join(lines).render(console, end=text.end)
    pad_style = console.get_style("none")
    lpad = Segment(" " * left, pad_style) if left else None
    rpad = Segment(" " * right, pad_style) if right else None
    newline = Segment.line()
    padded: list[Segment] = []
    for line in Segment.split_and_crop_lines(segs, inner, pad=True, include_new_lines=False):
        if lpad:
            padded.append(lpad)
        padded.extend(line)
        if rpad:
            padded.append(rpad)
        padded.append(newline)
    styled = Segment.apply_style(padded, style) if style else padded
    return list(Segment.split_and_crop_lines(styled, width, pad=True, include_new_lines=False))


def _draw(table: FittedTable, console: Console, options: ConsoleOptions) -> RenderResult:
    from rich.box import HEAVY_HEAD, SIMPLE_HEAD
    from rich.segment import Segment
    from rich.style import Style

    get_style = console.get_style
    widths = [w + left + right for w, (left, right) in zip(table.widths, table.pads, strict=True)]
    render_options = options.update(width=table.needed_width, highlight=False, height=None)
    if table.title:
        title = console.render_str(table.title, style="table.title", highlight=False)
        yield from console.render(title, options=render_options.update(justify="left"))
    box = (SIMPLE_HEAD if table.compact else HEAVY_HEAD).substitute(
        render_options, safe=console.safe_box
    )
    edge = not table.compact
    border = get_style("none") + get_style("")
    new_line = Segment.line()
    if edge:
        yield Segment(box.get_top(widths), border)
        yield new_line
    head_style = get_style("table.header") + get_style("")
    body_style = get_style("") + Style.null()
    all_rows = [table.headers, *table.rows]
    last_index = len(all_rows) - 1
    sides = [
        (box.head_left, box.head_right, box.head_vertical),
        (box.mid_left, box.mid_right, box.mid_vertical),
        (box.foot_left, box.foot_right, box.foot_vertical),
    ]
    for index, row in enumerate(all_rows):
        header = index == 0
        style = head_style if header else body_style
        cells = [
            _cell_lines(console, cell, w, pad, j, style)
            for cell, w, pad, j in zip(row, widths, table.pads, table.justify, strict=True)
        ]
        height = max(len(c) for c in cells)
        shaped = []
        for c, w in zip(cells, widths, strict=True):
            aligned = (Segment.align_bottom if header else Segment.align_top)(c, w, height, style)
            shaped.append(Segment.set_shape(aligned, w, height))
        left_text, right_text, div_text = sides[0 if header else (2 if index == last_index else 1)]
        left = Segment(left_text, border)
        right = Segment(right_text, border)
        divider = Segment(div_text, border)
        if not div_text.strip():
            divider = Segment(div_text, Style.null().background_style + border)
        for line_no in range(height):
            if edge:
                yield left
            for i, c in enumerate(shaped):
                yield from c[line_no]
                if i < len(shaped) - 1:
                    yield divider
            if edge:
                yield right
            yield new_line
        if header:
            yield Segment(box.get_row(widths, "head", edge=edge), border)
            yield new_line
    if edge:
        yield Segment(box.get_bottom(widths), border)
        yield new_line


def fitted_table(
    console: Console,
    title: str | None,
    headers: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    *,
    right: Iterable[int] = (),
    center: Iterable[int] = (),
) -> FittedTable:
    """A table whose column widths are chosen here: widest columns give way first, and
    none goes below the width of its longest unbreakable piece (Rich's own collapse ignores
    that and cuts values with an ellipsis)."""
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
    is_compact = sum(mins) > console.width - overhead(n, False)
    widths = list(maxs)
    budget = console.width - overhead(n, is_compact)
    while sum(widths) > budget:
        slack = [i for i in range(n) if widths[i] > mins[i]]
        if not slack:
            break  # cannot fit whole: rows grow longer than the terminal instead of cutting
        widths[max(slack, key=lambda i: (widths[i], -i))] -= 1
    justify: list[JustifyMethod] = [
        "right" if i in right else "center" if i in center else "left" for i in range(n)
    ]
    return FittedTable(title, headers, rows, widths, justify, is_compact)


# What a line the user copies to run looks like: `    LABEL: COMMAND` (doctor's fixes; emits
# are whole outputs of commands), printed without Rich's wrapping or cropping at any width.
PASTE_INDENT = "    "


def paste(console: Console, label: str, command: str, style: str = "") -> None:
    """`    LABEL: COMMAND` on one line, never wrapped or cut: a terminal narrower than the line
    folds it on screen only, so what is copied is the command as given (a newline that Rich
    put in would run half a command). command: inert text (no markup is read)."""
    line = Text(f"{PASTE_INDENT}{label}: ", style=style)
    line.append(command)
    console.print(line, soft_wrap=True, crop=False, overflow="ignore", no_wrap=True)


def prose(console: Console, text: Text | str) -> None:
    """A line of words that may quote a command (`ascendtune bind ...`): one line, never
    wrapped, so a quoted command is never split either (the terminal folds it on screen)."""
    console.print(text, soft_wrap=True, crop=False, overflow="ignore", no_wrap=True)


def show(console: Console, table: FittedTable) -> None:
    """Print a fitted table; one that cannot fit whole is printed wider than the terminal."""
    console.print(table, width=max(console.width, table.needed_width))
