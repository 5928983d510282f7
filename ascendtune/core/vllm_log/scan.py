"""A big log read fast: blocks of bytes searched for the markers the parser can ever read
(patterns.MARKERS); only the lines holding one are decoded and fed to the parser at their line
numbers, the others are counted. The report is the one feeding every line gives
(`parse_log(split_lines(chunks))`): same lines, cut lines, runs and limits.

Time stamps matter only where the clock goes back by more than RUN_CLOCK_BACK_S (a new run): a
block's stamps are found with one regex per level and judged as bytes (`MM-DD HH:MM:SS` sorts as
its time), and the parser's clock set to where feeding them would have left it; only a block
where a stamp may go back that far (or holds a year-stamped, malformed or hidden stamp) has its
stamped lines fed one by one.

Where the package was built with a C compiler, the loops over every byte of a block (newlines,
the bytes records() removes, the stamps found and judged) run in _scanc.c and hand back only
their answers (no list of a block's stamps); elsewhere the same answers come from the Python
here, which the tests hold to the same report."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import accumulate, compress
from operator import itemgetter, lt
from typing import Any

from ascendtune.core.lazy import optional_module
from ascendtune.core.vllm_log import model
from ascendtune.core.vllm_log.model import MAX_LINE_BYTES
from ascendtune.core.vllm_log.parser import RUN_CLOCK_BACK_S, LogParser
from ascendtune.core.vllm_log.patterns import MARKERS, Junk
from ascendtune.core.vllm_log.records import (
    CUT_MARK,
    DIRTY,
    LEVELS,
    STAMP_MARKS,
    plain_stamps,
    records,
    stamp_seconds,
)

BLOCK = 1 << 20  # bytes searched at a time
SLOW_BLOCKS = 8  # after a block whose stamps were fed one by one, the next ones are too
# around the bytes records() removes or splits at a marker can form that the raw line does not
# hold, so a line holding one is always fed
_DIRTY = DIRTY
_DIRTY_RE = re.compile(b"[" + re.escape(_DIRTY) + b"]")

_FULL, _STAMP = 2, 1  # what a line is fed for: everything, or its time stamps only

# every `LEVEL stamp` in a block, one regex per STAMP_MARKS entry (a literal prefix: C speed): a
# superset of the stamps records() gives a clean line. Group 1: a `MM-DD HH:MM:SS` whose bytes
# sort as its time (hours < 24, minutes and seconds < 60); group 2: any other stamp (a year, a
# field out of range), which the fast path leaves to the line-by-line one.
_VALID = rb"\d\d-\d\d (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
_OTHER = rb"\d\d-\d\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d"


def _level_head(mark: bytes) -> bytes:
    """The regex of a STAMP_MARKS entry's level words and the space after them."""
    word = mark.strip()
    tails = sorted({lv.encode()[len(word) :] for lv in LEVELS if lv.encode().startswith(word)})
    tail = b"(?:" + b"|".join(re.escape(t) for t in reversed(tails)) + b")" if tails[1:] else b""
    return re.escape(word) + tail + b" "


_STAMP_TAIL = b"(?:(" + _VALID + b")|(?:" + _OTHER + b"))"
_STAMP_RES = tuple((mark, re.compile(_level_head(mark) + _STAMP_TAIL)) for mark in STAMP_MARKS)
# the same stamps of every level, each at the start of a window cut where ahocorasick_rs found a
# level's mark, the windows joined after a NUL (a clean line holds none): _WINDOW bytes hold the
# longest (`CRITICAL 2026-09-23T10:11:05`)
_WINDOW = 32
_WINDOWED_RE = re.compile(
    b"\x00(?:" + b"|".join(map(_level_head, STAMP_MARKS)) + b")" + _STAMP_TAIL
)
_KEY = len("09-23 10:11:05")  # the bytes of a stamp that say its time, to the second
_KEY10 = itemgetter(slice(0, len("09-23 10:1")))  # ... to ten minutes
_Clock = tuple[tuple[int | None, int, int] | None, str]  # LogParser.clock_state()


def _automata() -> tuple[Any, Any] | None:
    """ahocorasick_rs's searchers (Rust's aho-corasick, SIMD for a few patterns) for MARKERS and
    STAMP_MARKS, built at the first block: one pass each over a block where bytes.find takes
    one per marker. None where it is not installed: the blocks are then searched marker by
    marker (the same lines found: tests/core/test_vllm_log_scan.py runs both)."""
    if not _AC:
        try:
            import ahocorasick_rs as ac
        except ImportError:
            _AC.append(None)
        else:
            # leftmost-first: the kind its SIMD search serves (a line holding overlapping
            # markers is found by one of them; stamp marks never overlap one another)
            kind = ac.MATCHKIND_LEFTMOST_FIRST
            _AC.append(
                (
                    ac.BytesAhoCorasick(list(MARKERS), matchkind=kind),
                    ac.BytesAhoCorasick(list(STAMP_MARKS), matchkind=kind),
                )
            )
    return _AC[0]


_AC: list[tuple[Any, Any] | None] = []  # the searchers, once built


def native() -> Any | None:
    """The compiled loops (_scanc.c: newlines counted, the bytes records() removes found, a
    block's stamps found and judged), loaded at the first block; None where the package was
    installed without a C compiler: the same answers then come from the Python below
    (tests/core/test_vllm_log_scan.py runs both)."""
    return optional_module("ascendtune.core.vllm_log._scanc", _C)


_C: list[Any] = []  # the compiled module, once loaded (or None)
# every level head _WINDOWED_RE tries at a mark, in its order (`WARNING ` before `WARN `)
_HEADS = tuple(
    mark.strip() + tail + b" "
    for mark in STAMP_MARKS
    for tail in sorted(
        {lv.encode()[len(mark.strip()) :] for lv in LEVELS if lv.encode().startswith(mark.strip())},
        reverse=True,
    )
)


def parse_chunks(
    chunks: Iterable[bytes], parser: LogParser | None = None, max_bytes: int = MAX_LINE_BYTES
) -> LogParser:
    """Feed parser (a new one by default) the lines of a byte stream, as `parse_log` would feed
    every line of `split_lines(chunks, max_bytes)`; stops reading once the parser is truncated."""
    return parse_blocks(((c, False) for c in chunks), parser, max_bytes)


def parse_blocks(
    blocks: Iterable[tuple[bytes, bool]],
    parser: LogParser | None = None,
    max_bytes: int = MAX_LINE_BYTES,
) -> LogParser:
    """parse_chunks of (chunk, plain) pairs: plain when the reader found that the chunk holds
    none of the bytes records() removes (DIRTY), so the scan need not look again."""
    p = LogParser() if parser is None else parser
    _Scan(p, max_bytes).run(blocks)
    return p


class _Scan:
    def __init__(self, p: LogParser, max_bytes: int) -> None:
        self.p = p
        self.max = max_bytes
        self.slow = 0  # blocks left before the fast path is tried again (after one it refused)

    def run(self, chunks: Iterable[tuple[bytes, bool]]) -> None:
        p, cap = self.p, self.max
        buf = b""  # the start of a line the next block ends (at most cap bytes)
        buf_plain = True  # buf holds no DIRTY byte
        dropping = False  # inside the dropped tail of an over-long line
        for chunk, plain in _blocks(chunks):
            if p.truncated:
                return
            if dropping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                dropping, chunk = False, chunk[nl + 1 :]
            data, start = chunk, 0
            if buf:
                nl = chunk.find(b"\n")
                if nl < 0:
                    data, plain = buf + chunk, plain and buf_plain
                else:  # the line the last block began, alone (the block is not copied)
                    head = buf + chunk[: nl + 1]
                    self._lines(head, 0, len(head), plain and buf_plain)
                    if p.truncated:
                        return
                    start = nl + 1
            end = max(data.rfind(b"\n", start) + 1, start)
            if end > start:
                self._lines(data, start, end, plain)
            buf, buf_plain = data[end:], plain
            if len(buf) > cap and not p.truncated:
                p.feed(buf[:cap] + CUT_MARK)
                buf, dropping = b"", True
        if buf and not dropping:
            kind = _kind(buf, 0, len(buf))
            if kind:
                p.feed(buf, stamp_only=kind == _STAMP)
            else:
                p.skip(1)

    def _lines(self, data: bytes, begin: int, end: int, plain: bool) -> None:
        """Feed or count the whole lines of data[begin:end] (data[begin - 1], where begin > 0,
        and data[end - 1] are newlines; plain: data holds no DIRTY byte)."""
        p = self.p
        got, clean = self._wanted(data, begin, end, plain)
        fast = None
        if self.slow:
            self.slow -= 1
        elif clean:
            fast = self._stamps(data, begin, end)
            if fast is None:  # a log whose clock goes back often: try again some blocks on
                self.slow = SLOW_BLOCKS
        saved = p.clock_state()
        if fast is None:  # stamped lines fed one by one
            for needle in STAMP_MARKS:
                at = data.find(needle, begin, end)
                while at >= 0:
                    at = data.find(needle, _mark(data, got, at, _STAMP), end)
        c = native()
        pos = begin
        for start, (stop, kind) in sorted(got.items()):
            p.skip(data.count(b"\n", pos, start) if c is None else c.newlines(data, pos, start))
            if stop - start > self.max:
                p.feed(data[start : start + self.max] + CUT_MARK)
            else:
                p.feed(data[start:stop], stamp_only=kind == _STAMP)
            if p.truncated:
                return
            pos = stop + 1
        p.skip(data.count(b"\n", pos, end) if c is None else c.newlines(data, pos, end))
        if fast is not None:
            p.set_clock(*self._clock_after(data, begin, end, fast, saved))

    def _stamps(self, data: bytes, begin: int, end: int) -> list[bytes] | None:
        """The `MM-DD HH:MM:SS` of every stamp of data[begin:end] in order (a superset of the
        stamps feeding its lines gives the clock), when none of them can take the clock back by
        more than RUN_CLOCK_BACK_S; None when one may (or the block is past the fast path: a
        stamp of another form, a clock read from one, the line limit within reach)."""
        p = self.p
        if p.lines + end - begin > model.MAX_LINES:
            return None
        keys: list[bytes]
        c = native()
        if c is not None:  # judged in C: the latest stamp is all _clock_after needs
            clock, _ = p.clock_state()
            start = None if clock is None else (_clock_key(clock) or b"")
            verdict, top = c.stamps(data, begin, end, _HEADS, start, RUN_CLOCK_BACK_S)
            if verdict <= 0:
                return None if verdict else []
            if _last_stamp(data, begin, end, top) is not None:
                return [top]
            # the latest is named only where records() reads no stamp: every key, below
        ac = _automata()
        if ac is not None:
            hits = ac[1].find_matches_as_indexes(memoryview(data)[begin:end])
            windows = [data[begin + i : begin + i + _WINDOW] for _, i, _ in hits]
            for i in range(len(hits) - 1, -1, -1):  # none past the block's last line
                at = begin + hits[i][1]
                if at + _WINDOW <= end:
                    break
                windows[i] = data[at:end]
            keys = _WINDOWED_RE.findall(b"\x00" + b"\x00".join(windows))
            return self._judged(keys)
        found = [rx for m, rx in _STAMP_RES if data.find(m, begin, end) >= 0]
        if len(found) <= 1:
            keys = found[0].findall(data, begin, end) if found else []
        else:  # several levels: their stamps in the order they stand
            ordered = sorted(
                (m.start(), m.group(1) or b"")
                for rx in found
                for m in rx.finditer(data, begin, end)
            )
            keys = [k for _, k in ordered]
        return self._judged(keys)

    def _judged(self, keys: list[bytes]) -> list[bytes] | None:
        """keys (a block's stamps, b"" for one of another form), or None when one may take the
        clock back by more than RUN_CLOCK_BACK_S."""
        p = self.p
        if not all(keys):
            return None  # a year, or a field no clock has (hour 25): the values decide
        if not keys:
            return keys
        clock, _ = p.clock_state()
        first = keys[0] if clock is None else _clock_key(clock)
        if first is None:
            return None
        runs = list(accumulate(keys, max, initial=first))
        # going back by more than ten minutes drops the ten-minute key: only those are judged
        for j in compress(range(len(keys)), map(lt, keys, runs)):
            if _KEY10(keys[j]) >= _KEY10(runs[j]):
                continue
            t, top = stamp_seconds(keys[j].decode()), stamp_seconds(runs[j].decode())
            assert t is not None and top is not None
            if (top[1], top[2] - RUN_CLOCK_BACK_S) > (t[1], t[2]):
                return None
        return keys

    def _clock_after(
        self, data: bytes, begin: int, end: int, keys: list[bytes], saved: _Clock
    ) -> _Clock:
        """Where feeding every line of data[begin:end] leaves the clock (saved before), none going
        back: at the latest stamp, its text that of the last stamp of that second."""
        clock, text = saved
        floor = _clock_key(clock) if clock is not None else None
        for key in _descending(keys):
            if floor is not None and key < floor:
                break
            last = _last_stamp(data, begin, end, key)
            if last is not None:
                if floor is None or key > floor:
                    clock = stamp_seconds(last)
                return clock, last
        return clock, text

    def _wanted(
        self, data: bytes, begin: int, end: int, plain: bool
    ) -> tuple[dict[int, tuple[int, int]], bool]:
        """The lines of data[begin:end] to feed whole (start -> (end, kind)), and whether every line
        is clean: none holds a byte records() removes or runs past the cap (the fast path's
        stamps are those of clean lines; plain: data holds no such byte)."""
        got: dict[int, tuple[int, int]] = {}
        clean = True
        ac = _automata()
        if ac is not None:
            past = 0
            for _, at, _ in ac[0].find_matches_as_indexes(memoryview(data)[begin:end]):
                if at >= past:  # a line not yet noted
                    past = _mark(data, got, begin + at, _FULL) - begin
        else:
            for needle in MARKERS:
                at = data.find(needle, begin, end)
                while at >= 0:
                    at = data.find(needle, _mark(data, got, at, _FULL), end)
        c = native()
        if plain:
            first = -1
        elif c is not None:
            first = c.first_dirty(data, begin, end)
        else:
            first = begin if len(data.translate(None, _DIRTY)) != len(data) else -1
        if first >= 0:
            m = _DIRTY_RE.search(data, first, end)
            while m is not None:
                clean = False
                m = _DIRTY_RE.search(data, _mark(data, got, m.start(), _FULL), end)
        # a line longer than the cap holds a whole window of half the cap with no newline
        half = max(1, self.max // 2)
        at = begin
        while at + half <= end:
            if data.find(b"\n", at, at + half) >= 0:
                at += half
                continue
            clean = False
            stop = _mark(data, got, at, _FULL)
            at = stop + (begin - stop) % half  # the next window past this line
        return got, clean


def _mark(data: bytes, got: dict[int, tuple[int, int]], at: int, kind: int) -> int:
    """Note the line holding data[at] (its kind the higher of two); the offset past it."""
    start = data.rfind(b"\n", 0, at) + 1
    stop = data.find(b"\n", at)  # found: the block ends with a newline
    seen = got.get(start)
    if seen is None or seen[1] < kind:
        got[start] = (stop, kind)
    return stop + 1


def _descending(keys: list[bytes]) -> Iterator[bytes]:
    """The distinct keys, latest first (the latest is nearly always the one asked for)."""
    if not keys:
        return
    top = max(keys)
    yield top
    yield from sorted({k for k in keys if k < top}, reverse=True)


def _clock_key(clock: tuple[int | None, int, int]) -> bytes | None:
    """The `MM-DD HH:MM:SS` of a clock read from such a stamp (None for a year's clock)."""
    year, month, secs = clock
    day, rest = divmod(secs, 86400)
    if year is not None or month > 99 or day > 99:
        return None
    return b"%02d-%02d %02d:%02d:%02d" % (month, day, rest // 3600, rest // 60 % 60, rest % 60)


def _last_stamp(data: bytes, begin: int, end: int, key: bytes) -> str | None:
    """The last stamp of data[begin:end]'s lines, as feeding them reads it, of the second key
    says."""
    at = end
    while True:
        at = data.rfind(key, begin, at)
        if at < 0:
            return None
        start = data.rfind(b"\n", 0, at) + 1
        stop = data.find(b"\n", at)
        line = data[start:stop]
        stamps = plain_stamps(line)
        if stamps is None:
            try:
                stamps = [r.stamp for r in records(line) if r.stamp is not None]
            except Junk:
                stamps = []
        hits = [s for s in stamps if s.encode()[:_KEY] == key]
        if hits:
            return hits[-1]
        at = start


def _kind(data: bytes, start: int, stop: int) -> int:
    """What the line data[start:stop] is fed for (0: nothing, it is counted only)."""
    line = data[start:stop]
    if any(m in line for m in MARKERS) or len(line.translate(None, _DIRTY)) != len(line):
        return _FULL
    return _STAMP if any(m in line for m in STAMP_MARKS) else 0


def _blocks(chunks: Iterable[tuple[bytes, bool]]) -> Iterator[tuple[bytes, bool]]:
    """The chunks joined into blocks of at least BLOCK bytes (a pipe's reads are small), each
    plain when all its chunks are."""
    parts: list[bytes] = []
    size = 0
    plain = True
    for chunk, chunk_plain in chunks:
        if not chunk:
            continue
        parts.append(chunk)
        size += len(chunk)
        plain = plain and chunk_plain
        if size >= BLOCK:
            yield (parts[0] if len(parts) == 1 else b"".join(parts)), plain
            parts, size, plain = [], 0, True
    if parts:
        yield b"".join(parts), plain
