"""Lines into log records: a byte stream cut into capped lines, each line into the records it
holds (vLLM's process prefix, level, time stamp and source stripped off the message)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from ascendtune.core.vllm_log.model import MAX_LINE_BYTES
from ascendtune.core.vllm_log.patterns import MAX_DIGITS, num

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# vLLM's process prefix: `(Worker_TP3 pid=123)`, `(VllmWorker rank=1 pid=9)`, Ray's `pid=9, ip=`
_PREFIX = (
    r"\((?P<proc>[A-Za-z_][\w.\-]*(?: rank=(?P<prank>\d+))?) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)\s*"
)
# the levels a record's head names (`INFO 09-23 10:11:00 [file.py:1]`); every time stamp the
# parser reads follows one and a space
LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL")
_LEVEL = rf"(?P<level>{'|'.join(LEVELS)})"
_STAMP = r"(?:\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"
_TIME = re.compile(r"(?:(\d{4})-)?(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
# `[file.py:123]` (vLLM ≥ 0.8), `file.py:123]` (older), `[file.py:123 pid]` seen too
_WHERE = r"(?:\[[^\]\s]+:\d+\]|[^\s\[\]]+:\d+\])"
_HEAD = re.compile(rf"(?:{_PREFIX})?{_LEVEL} (?P<stamp>{_STAMP}) {_WHERE} ?")
_LEVEL_STAMP = re.compile(rf"{_LEVEL} {_STAMP} ")
_PREFIX_TAIL = re.compile(_PREFIX + r"$")
CUT_MARK = b"\x00cut"
# the bytes records() removes or splits at (control bytes, ANSI colour's ESC, CR)
DIRTY = bytes([*range(0, 9), *range(11, 32), 0x7F])
_ONLY_PREFIX = re.compile(_PREFIX)
# vLLM-Ascend's own formatter (logger.py): `[vllm-ascend] - msg`, `[vllm-ascend] [module] - msg`
_ASCEND_TAG = re.compile(r"^\[vllm-ascend\](?: \[[\w.\-]+\])? - ")


@dataclass(frozen=True)
class Record:
    message: str
    pid: int | None = None
    process: str | None = None
    level: str | None = None
    cut: bool = False
    stamp: str | None = None  # the record's time as printed (`09-23 10:11:00`, no year in vLLM's)


def stamp_seconds(stamp: str) -> tuple[int | None, int, int] | None:
    """(year or None, month, seconds since the month's start) of a record's time stamp."""
    m = _TIME.match(stamp)
    if not m:
        return None
    # fixed-width fields: int() of at most 4 digits, never a Junk number
    year, month, day, hh, mm, ss = m.groups()
    return (
        int(year) if year else None,
        int(month),
        ((int(day) * 24 + int(hh)) * 60 + int(mm)) * 60 + int(ss),
    )


# the strings every head's level and the space after it hold: `INFO `, ...; `WARN` for WARNING too
STAMP_MARKS: tuple[bytes, ...] = tuple(
    (level if any(o != level and o.startswith(level) for o in LEVELS) else f"{level} ").encode()
    for level in LEVELS
    if not any(o != level and level.startswith(o) for o in LEVELS)
)
# the heads in bytes, for plain lines (ASCII, none of the bytes records() removes)
_HEAD_BYTES = re.compile(rb"\s*" + _HEAD.pattern.encode())


def plain_stamps(line: bytes) -> list[str] | None:
    """The time stamps of a plain line's records, as records() gives them, without decoding it:
    for a line of one record under a whole head; None for any other (ask records()). The line
    must hold none of the bytes records() removes or splits at (control bytes, ESC, CR)."""
    if not line.isascii():
        return None
    m = _HEAD_BYTES.match(line)
    if m is None:
        return None
    pid = m.group("pid")
    if pid is not None and len(pid) > MAX_DIGITS:
        return None  # records() calls it Junk
    if sum(map(line.count, STAMP_MARKS)) != 1:
        return None  # another level word: maybe glued records
    return [m.group("stamp").decode()]


def split_lines(chunks: Iterable[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """Cut a byte stream into lines of at most max_bytes (+ the newline); the rest of a longer
    line is dropped, and the kept part ends with b"\\x00cut" so the parser can say so."""
    buf = b""
    dropping = False  # inside the dropped tail of an over-long line
    for chunk in chunks:
        buf = buf + chunk if buf else chunk
        pos = 0
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            if dropping:
                dropping = False
            elif nl - pos > max_bytes:
                yield buf[pos : pos + max_bytes] + CUT_MARK
            else:
                yield buf[pos:nl]
            pos = nl + 1
        buf = buf[pos:]
        if len(buf) > max_bytes:
            if not dropping:
                yield buf[:max_bytes] + CUT_MARK
                dropping = True
            buf = b""
    if buf and not dropping:
        yield buf[:max_bytes]


def records(line: bytes) -> list[Record]:
    """The log records one physical line holds: ANSI colour, carriage returns (progress bars)
    and two records glued together are split apart; bad UTF-8 becomes U+FFFD."""
    cut = line.endswith(CUT_MARK)
    if cut:
        line = line[: -len(CUT_MARK)]
    text = line.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    out: list[Record] = []
    for seg in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not seg.isprintable():
            seg = _CTRL.sub("", seg)
        seg = seg.strip()
        if not seg:
            continue
        starts = [0]
        stamps = list(_LEVEL_STAMP.finditer(seg))
        if len(stamps) > 1:  # rare: records glued together; each starts at its prefix, if any
            for m in stamps[1:]:
                p = m.start()
                before = _PREFIX_TAIL.search(seg, max(0, p - 200), p)
                starts.append(before.start() if before else p)
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(seg)
            out.append(_record(seg[s:end].strip()))
    if cut and out:
        out[-1] = replace(out[-1], cut=True)
    return out


def _record(text: str) -> Record:
    m = _HEAD.match(text)
    if m:
        msg = text[m.end() :]
        pid = num(m.group("pid")) if m.group("pid") else None
        proc = m.group("proc")
        level = m.group("level")
        stamp = m.group("stamp")
    else:
        p = _ONLY_PREFIX.match(text)
        msg = text[p.end() :] if p else text
        pid = num(p.group("pid")) if p else None
        proc = p.group("proc") if p else None
        level = None
        stamp = None
    msg = _ASCEND_TAG.sub("", msg.strip())
    return Record(msg, pid, proc, level, stamp=stamp)
