"""Linux cpulist algebra: "0-3,8,10-11" <-> sorted tuples, and hex masks."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ascendtune.core.errors import ParseError

CpuSet = frozenset[int]

_ITEM = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+)(?:/(\d+))?)?)?$")
# A guard against "0-999999999" eating all memory: no real host has more CPUs.
MAX_CPU = 1 << 16


# A real cpulist is short (65536 CPUs listed one by one take under 400 KiB); past this the text
# is not a cpulist. Every parser below is linear in its input within these bounds.
MAX_CPULIST_CHARS = 1 << 19
_MAX_RUNS = 1 << 20  # intervals one cpulist may expand to (strides make many)


def _check_size(text: str, source: str) -> None:
    if len(text) > MAX_CPULIST_CHARS:
        raise ParseError(
            f"{len(text)} characters is not a CPU list (the limit is {MAX_CPULIST_CHARS})",
            source=source,
        )


def parse_cpulist(text: str, *, source: str = "cpulist") -> CpuSet:
    """Parse a cpulist ("0-3,8", "0-15:2/4" strides, "" for none); raise ParseError otherwise.

    Accepts the forms the kernel prints and `taskset -c` takes; whitespace around items and
    a trailing newline are ignored.
    """
    _check_size(text, source)
    text = text.strip()
    if not text:
        return frozenset()
    # one CPU, or one range: what nearly every sysfs list holds (a core's siblings, a cache's
    # CPUs, a node's); the general parse below gives the same set, only slower
    if text.isascii():
        if text.isdigit():
            if len(text) <= 6 and int(text) < MAX_CPU:
                return frozenset((int(text),))
        else:
            start, dash, end = text.partition("-")
            if dash and start.isdigit() and end.isdigit() and len(start) <= 6 and len(end) <= 6:
                a, b = int(start), int(end)
                if a <= b < MAX_CPU:
                    return frozenset(range(a, b + 1))
    # intervals first, merged once at the end: overlapping items ("0-65535,0-65535,...") cost
    # their count, not their width
    runs: list[tuple[int, int]] = []
    for raw in text.split(","):
        item = raw.strip()
        m = _ITEM.match(item)
        if not m:
            raise ParseError(f"{item[:40]!r} is not a CPU number or range a-b", source=source)
        if any(len(g) > 6 for g in m.groups() if g is not None):
            raise ParseError(f"{item[:40]!r}: a number beyond any real host", source=source)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ParseError(f"range {item!r} runs backwards", source=source)
        if hi >= MAX_CPU:
            raise ParseError(f"CPU {hi} is beyond any real host (max {MAX_CPU - 1})", source=source)
        if m.group(3) is not None:
            used = int(m.group(3))
            group = int(m.group(4)) if m.group(4) is not None else used
            if used == 0 or group == 0 or used > group:
                raise ParseError(f"bad stride in {item!r}", source=source)
            if len(runs) + (hi - lo) // group + 1 > _MAX_RUNS:
                raise ParseError("too many CPU ranges for one list", source=source)
            runs.extend((start, min(start + used - 1, hi)) for start in range(lo, hi + 1, group))
        else:
            runs.append((lo, hi))
    runs.sort()
    out: list[range] = []
    cur_lo, cur_hi = runs[0]
    for lo, hi in runs[1:]:
        if lo <= cur_hi + 1:
            cur_hi = max(cur_hi, hi)
        else:
            out.append(range(cur_lo, cur_hi + 1))
            cur_lo, cur_hi = lo, hi
    out.append(range(cur_lo, cur_hi + 1))
    return frozenset(c for r in out for c in r)


def format_cpulist(cpus: Iterable[int]) -> str:
    """Format CPUs as a canonical cpulist: ascending, runs as a-b, no spaces ("" for none)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_cpumask(text: str, *, source: str = "cpumask") -> CpuSet:
    """Parse a kernel hex mask ("ff,00000000" as in /proc/PID/status Cpus_allowed)."""
    _check_size(text, source)
    digits = text.strip().replace(",", "")
    if not digits:
        return frozenset()
    try:
        value = int(digits, 16)
    except ValueError:
        raise ParseError(f"{text.strip()[:40]!r} is not a hex CPU mask", source=source) from None
    if value.bit_length() > MAX_CPU:
        raise ParseError(f"mask beyond any real host (max CPU {MAX_CPU - 1})", source=source)
    bits = bin(value)[:1:-1]  # least significant first; linear, unlike shifting per bit
    return frozenset(i for i, b in enumerate(bits) if b == "1")


def format_cpumask(cpus: Iterable[int]) -> str:
    """Format CPUs as a hex mask as `taskset -p` prints it (no 0x, no commas)."""
    value = 0
    for c in cpus:
        value |= 1 << c
    return format(value, "x")


def parse_int_list(text: str, *, source: str = "list") -> tuple[int, ...]:
    """Parse an ordered id list such as "6,4" or "0-3" keeping the order given (no duplicates)."""
    _check_size(text, source)
    out: dict[int, None] = {}  # ordered, and membership in O(1)
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        m = re.fullmatch(r"(\d{1,6})(?:-(\d{1,6}))?", item)
        if not m:
            raise ParseError(f"{item[:40]!r} is not a number or range a-b", source=source)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo or hi >= MAX_CPU:
            raise ParseError(f"bad range {item!r}", source=source)
        if len(out) < MAX_CPU:
            out.update(dict.fromkeys(range(lo, hi + 1)))
    return tuple(out)
