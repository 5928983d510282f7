"""Linux cpulist algebra: "0-3,8,10-11" <-> sorted tuples, and hex masks."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ascendtune.core.errors import ParseError

CpuSet = frozenset[int]

_ITEM = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+)(?:/(\d+))?)?)?$")
# A guard against "0-999999999" eating all memory: no real host has more CPUs.
MAX_CPU = 1 << 16


def parse_cpulist(text: str, *, source: str = "cpulist") -> CpuSet:
    """Parse a cpulist ("0-3,8", "0-15:2/4" strides, "" for none); raise ParseError otherwise.

    Accepts the forms the kernel prints and `taskset -c` takes; whitespace around items and
    a trailing newline are ignored.
    """
    text = text.strip()
    if not text:
        return frozenset()
    out: set[int] = set()
    for raw in text.split(","):
        item = raw.strip()
        m = _ITEM.match(item)
        if not m:
            raise ParseError(f"{item!r} is not a CPU number or range a-b", source=source)
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
            for start in range(lo, hi + 1, group):
                out.update(c for c in range(start, min(start + used, hi + 1)))
        else:
            out.update(range(lo, hi + 1))
    return frozenset(out)


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
    digits = text.strip().replace(",", "")
    if not digits:
        return frozenset()
    try:
        value = int(digits, 16)
    except ValueError:
        raise ParseError(f"{text.strip()!r} is not a hex CPU mask", source=source) from None
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


def format_cpumask(cpus: Iterable[int]) -> str:
    """Format CPUs as a hex mask as `taskset -p` prints it (no 0x, no commas)."""
    value = 0
    for c in cpus:
        value |= 1 << c
    return format(value, "x")


def parse_int_list(text: str, *, source: str = "list") -> tuple[int, ...]:
    """Parse an ordered id list such as "6,4" or "0-3" keeping the order given (no duplicates)."""
    out: list[int] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not m:
            raise ParseError(f"{item!r} is not a number or range a-b", source=source)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo or hi >= MAX_CPU:
            raise ParseError(f"bad range {item!r}", source=source)
        for v in range(lo, hi + 1):
            if v not in out:
                out.append(v)
    return tuple(out)
