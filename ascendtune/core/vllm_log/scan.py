"""A big log read fast: blocks of bytes searched for the markers the parser can ever read
(patterns.MARKERS) and for time stamps; only the lines holding one are decoded and fed to the
parser at their line numbers, the others are counted. The report is the one feeding every line
gives (`parse_log(split_lines(chunks))`): same lines, cut lines, runs and limits."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ascendtune.core.vllm_log.model import MAX_LINE_BYTES
from ascendtune.core.vllm_log.parser import LogParser
from ascendtune.core.vllm_log.patterns import MARKERS
from ascendtune.core.vllm_log.records import CUT_MARK, STAMP_MARKS

BLOCK = 1 << 20  # bytes searched at a time
# bytes records() removes or splits at (control bytes, ANSI colour, CR): around them a marker can
# form that the raw line does not hold, so a line holding one is always fed
_DIRTY = bytes([*range(0, 9), *range(11, 32), 0x7F])
_DIRTY_RE = re.compile(b"[" + re.escape(_DIRTY) + b"]")

_FULL, _STAMP = 2, 1  # what a line is fed for: everything, or its time stamps only


def parse_chunks(
    chunks: Iterable[bytes], parser: LogParser | None = None, max_bytes: int = MAX_LINE_BYTES
) -> LogParser:
    """Feed parser (a new one by default) the lines of a byte stream, as `parse_log` would feed
    every line of `split_lines(chunks, max_bytes)`; stops reading once the parser is truncated."""
    p = LogParser() if parser is None else parser
    _Scan(p, max_bytes).run(chunks)
    return p


class _Scan:
    def __init__(self, p: LogParser, max_bytes: int) -> None:
        self.p = p
        self.max = max_bytes

    def run(self, chunks: Iterable[bytes]) -> None:
        p, cap = self.p, self.max
        buf = b""  # the start of a line the next block ends (at most cap bytes)
        dropping = False  # inside the dropped tail of an over-long line
        for chunk in _blocks(chunks):
            if p.truncated:
                return
            if dropping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                dropping, chunk = False, chunk[nl + 1 :]
            data = buf + chunk if buf else chunk
            end = data.rfind(b"\n") + 1
            if end:
                self._lines(data, end)
            buf = data[end:]
            if len(buf) > cap and not p.truncated:
                p.feed(buf[:cap] + CUT_MARK)
                buf, dropping = b"", True
        if buf and not dropping:
            kind = _kind(buf, 0, len(buf))
            if kind:
                p.feed(buf, stamp_only=kind == _STAMP)
            else:
                p.skip(1)

    def _lines(self, data: bytes, end: int) -> None:
        """Feed or count the whole lines of data[:end] (data[end - 1] is a newline)."""
        p = self.p
        pos = 0
        for start, stop, kind in self._wanted(data, end):
            p.skip(data.count(b"\n", pos, start))
            if stop - start > self.max:
                p.feed(data[start : start + self.max] + CUT_MARK)
            else:
                p.feed(data[start:stop], stamp_only=kind == _STAMP)
            if p.truncated:
                return
            pos = stop + 1
        p.skip(data.count(b"\n", pos, end))

    def _wanted(self, data: bytes, end: int) -> list[tuple[int, int, int]]:
        """(start, end, kind) of the lines of data[:end] to feed, in order."""
        got: dict[int, tuple[int, int]] = {}

        def mark(at: int, kind: int) -> int:
            start = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at)  # found: data[end - 1] is a newline
            seen = got.get(start)
            if seen is None or seen[1] < kind:
                got[start] = (stop, kind)
            return stop + 1

        for kind, needles in ((_FULL, MARKERS), (_STAMP, STAMP_MARKS)):
            for needle in needles:
                at = data.find(needle, 0, end)
                while at >= 0:
                    at = data.find(needle, mark(at, kind), end)
        if len(data.translate(None, _DIRTY)) != len(data):
            m = _DIRTY_RE.search(data, 0, end)
            while m is not None:
                m = _DIRTY_RE.search(data, mark(m.start(), _FULL), end)
        # a line longer than the cap holds a whole window of half the cap with no newline
        half = max(1, self.max // 2)
        at = 0
        while at + half <= end:
            if data.find(b"\n", at, at + half) >= 0:
                at += half
                continue
            stop = mark(at, _FULL)
            at = stop + (-stop) % half  # the next window past this line
        return sorted((start, stop, kind) for start, (stop, kind) in got.items())


def _kind(data: bytes, start: int, stop: int) -> int:
    """What the line data[start:stop] is fed for (0: nothing, it is counted only)."""
    line = data[start:stop]
    if any(m in line for m in MARKERS) or len(line.translate(None, _DIRTY)) != len(line):
        return _FULL
    return _STAMP if any(m in line for m in STAMP_MARKS) else 0


def _blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks joined into blocks of at least BLOCK bytes (a pipe's reads are small)."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        if not chunk:
            continue
        parts.append(chunk)
        size += len(chunk)
        if size >= BLOCK:
            yield parts[0] if len(parts) == 1 else b"".join(parts)
            parts, size = [], 0
    if parts:
        yield b"".join(parts)
