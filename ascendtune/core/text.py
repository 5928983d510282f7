"""Text from untrusted sources made safe: inert for terminals, JSON parsed within bounds.

Strings read from a host or a file (hostnames, tool output, config keys, .err lines) may carry
terminal escape sequences; `inert` removes them before they are printed (JSON output keeps the
data, escaped as JSON does). `loads_bounded` is json.loads that fails as InvalidInput, never as
RecursionError or ValueError, and refuses what cannot be printed or written back (lone surrogates).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ascendtune.core.errors import InvalidInput

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-byte ESC sequences, then any C0/C1
# control character left (tab and newline are kept: they lay text out and cannot move a cursor).
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")

MAX_JSON_DEPTH = 64
MAX_JSON_CHARS = 4 << 20


def inert(s: str) -> str:
    """s without escape sequences or control characters (tab and newline kept); lone surrogates
    become U+FFFD, so the result can always be written to a UTF-8 terminal."""
    if s.isprintable():
        # no Cc (ESC, C0, C1) and no Cs (surrogates) in s: nothing below could match; the
        # common case, once per segment a console prints
        return s
    s = _CONTROLS.sub("", _ESCAPES.sub("", s))
    return _SURROGATES.sub("\ufffd", s)


def inert_line(s: str) -> str:
    """inert(s) on one line: newlines and tabs become spaces."""
    return inert(s).replace("\n", " ").replace("\t", " ").replace("\r", " ")


def strip_ansi(s: str) -> str:
    """s without terminal escape sequences (control characters other than ESC are kept)."""
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
