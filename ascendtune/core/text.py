"""Text from untrusted sources made safe: inert for terminals, JSON parsed within bounds.

Strings read from a host or a file (hostnames, process names, tool output, log lines, config
keys, .err lines) may carry escape sequences, control characters, right-to-left overrides or
zero-width characters; `inert` shows each of them escaped, visibly (`\\x1b[2J`, `\\u202e`,
`\\u200b`), so nothing moves the cursor, reorders a line or hides a character, and a key is shown
as it was typed (`enable_cpu\\u200b_binding` never reads as the good key). JSON output keeps the
data, escaped as JSON does. `loads_bounded` is json.loads that fails as InvalidInput, never as
RecursionError or ValueError, and refuses what cannot be printed or written back (lone surrogates).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ascendtune.core.errors import InvalidInput

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-byte ESC sequences: what
# strip_ansi removes from a tool's coloured output before it is parsed
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_LAYOUT = re.compile(r"(\r?\n|\t)")

MAX_JSON_DEPTH = 64
MAX_JSON_CHARS = 4 << 20


def _escape(c: str) -> str:
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def inert(s: str) -> str:
    """s with every character a terminal would not show as itself escaped visibly: C0 and C1
    controls (ESC, CR, BEL, CSI...), format characters (right-to-left overrides, zero-width
    spaces and joiners, BOM), lone surrogates, separators other than the space, private-use and
    unassigned code points (Python's str.isprintable). Tab and newline are kept: they lay text
    out and cannot move a cursor back (nor can CR before a newline). A backslash already in s is left alone (a pasteable
    command keeps its printf escapes)."""
    if s.isprintable():
        # the common case, once per segment a console prints
        return s
    out = []
    for part in _LAYOUT.split(s):
        if part.isprintable() or part in ("\t", "\n"):
            out.append(part)
        elif part == "\r\n":  # a line end written the DOS way; a lone CR is escaped
            out.append("\n")
        else:
            out.append("".join(c if c.isprintable() else _escape(c) for c in part))
    return "".join(out)


def inert_line(s: str) -> str:
    """inert(s) on one line: newlines and tabs become spaces."""
    return inert(s).replace("\n", " ").replace("\t", " ")


def strip_ansi(s: str) -> str:
    """s without terminal escape sequences (control characters other than ESC are kept): for a
    tool's coloured output about to be parsed, not for display (that is `inert`)."""
    return _ESCAPES.sub("", s)


def cap_line(s: str, limit: int, tail: str = "") -> str:
    """s cut to at most `limit` characters, ending in '...' + tail when it was cut."""
    if len(s) <= limit:
        return s
    return s[: max(0, limit - 3 - len(tail))] + "..." + tail


def loads_bounded(
    text: str, *, source: str, hint: str | None = None, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """json.loads(text) whose every failure is one InvalidInput line naming source.

    Refuses text over MAX_JSON_CHARS, nesting deeper than max_depth, integers over Python's
    digit limit, and strings or keys holding lone surrogates (\\ud800 escapes).
    """
    if len(text) > MAX_JSON_CHARS:
        raise InvalidInput(f"{source} is larger than the {MAX_JSON_CHARS >> 20} MiB limit", hint)
    # depth first, linearly, before json recurses: brackets outside strings
    depth = _max_depth(text, max_depth)
    if depth > max_depth:
        raise InvalidInput(f"{source} nests deeper than {max_depth} levels", hint)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(
            f"{source} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", hint
        ) from None
    except RecursionError:
        raise InvalidInput(f"{source} nests too deep", hint) from None
    except ValueError as e:  # an integer over the digit limit
        raise InvalidInput(
            f"{source} is not usable JSON: {str(e).splitlines()[0][:120]}", hint
        ) from None
    _no_surrogates(doc, source, hint)
    return doc


def _max_depth(text: str, stop: int) -> int:
    depth = top = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > top:
                top = depth
                if top > stop:
                    return top
        elif ch in "]}":
            depth -= 1
    return top


def _no_surrogates(doc: Any, source: str, hint: str | None) -> None:
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATES.search(v):
                raise InvalidInput(
                    f"{source} holds a lone surrogate (\\ud800-\\udfff), not text", hint
                )
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def has_surrogates(s: str) -> bool:
    return _SURROGATES.search(s) is not None


_WORD = re.compile(r"\s*\S+\s*")


def wrap_as_rich(text: str, width: int) -> list[str]:
    """The lines Rich's Console prints a line of printable ASCII text in, at `width` columns
    (no markup, default justify, overflow fold: words moved to the next line whole, a word
    longer than a line cut into pieces, whitespace past the width dropped). A command that
    prints one such line need not import Rich for it (about 55 ms of start-up); a test checks
    this against Rich itself."""
    breaks: list[int] = []
    offset = 0
    for m in _WORD.finditer(text):
        start, word = m.start(), m.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            pieces = [word[i : i + width] for i in range(0, len(word), width)]
            for i, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if i == len(pieces) - 1:
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    lines = []
    for a, b in zip([0, *breaks], [*breaks, len(text)], strict=True):
        line = text[a:b]
        if len(line) > width:
            trailing = len(line) - len(line.rstrip())
            line = line[: len(line) - min(trailing, len(line) - width)][:width]
        lines.append(line)
    return lines


def table_as_rich(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[str] | None:
    """The lines Rich prints a Table(box=None, pad_edge=False, show_edge=False) of these cells
    in at `width` columns with no colour, or None where that is not told here: a cell that is
    not printable ASCII or holds `[` (markup, in a cell given as a string), or a table wider
    than `width` (Rich then shrinks and wraps columns). Each column is as wide as its widest
    cell, cells left-justified, two spaces between columns, the last padded to its width.
    `bind --workers` prints its table so without importing Rich (about 40 ms of CPU time); a
    test checks this against Rich itself."""
    cells = [list(headers), *(list(r) for r in rows)]
    if any(len(r) != len(headers) for r in cells) or not headers:
        return None
    for row in cells:
        for c in row:
            if not (c.isascii() and c.isprintable()) or "[" in c:
                return None
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
