"""Parsers for the per-thread files of /proc that `watch` samples: stat, sched, status, numa_maps.

Text in, typed values out; the host layer reads the files (a live /proc or a crafted tree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ascendtune.core.errors import ParseError

# fields of /proc/PID/stat counted from 1 (proc(5)); comm is field 2, state field 3
_STAT_UTIME = 14
_STAT_STIME = 15
_STAT_PROCESSOR = 39


@dataclass(frozen=True)
class Stat:
    """What `watch` takes from /proc/PID/task/TID/stat."""

    comm: str
    state: str
    cpu_ticks: int  # utime + stime, in clock ticks
    processor: int | None  # the CPU it last ran on; None on kernels too old to say


def parse_stat(text: str, *, source: str = "stat") -> Stat:
    """Parse a stat line. comm may hold spaces and parentheses: it runs to the LAST ')'."""
    open_at = text.find("(")
    close_at = text.rfind(")")
    if open_at < 0 or close_at < open_at:
        raise ParseError("no (comm) in stat", source=source)
    comm = text[open_at + 1 : close_at]
    rest = text[close_at + 1 :].split()
    # rest[0] is field 3 (state), so field n sits at rest[n - 3]
    try:
        state = rest[0]
        ticks = int(rest[_STAT_UTIME - 3]) + int(rest[_STAT_STIME - 3])
    except (IndexError, ValueError):
        raise ParseError("too few numeric fields after (comm)", source=source) from None
    processor: int | None = None
    if len(rest) > _STAT_PROCESSOR - 3:
        try:
            processor = int(rest[_STAT_PROCESSOR - 3])
        except ValueError:
            raise ParseError("field 39 (processor) is not a number", source=source) from None
    return Stat(comm=comm, state=state, cpu_ticks=ticks, processor=processor)


_SCHED_MIGRATIONS = re.compile(r"^se\.nr_migrations\s*:\s*(\d+)\s*$", re.MULTILINE)


def parse_sched_migrations(text: str) -> int | None:
    """`se.nr_migrations` of a sched file; None when the kernel does not print it."""
    m = _SCHED_MIGRATIONS.search(text)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class StatusFields:
    """Context switches and the affinity mask from /proc/PID/task/TID/status."""

    ctx_voluntary: int | None
    ctx_involuntary: int | None
    cpus_allowed_list: str | None


def parse_status(text: str) -> StatusFields:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()

    def num(key: str) -> int | None:
        raw = fields.get(key)
        return int(raw) if raw is not None and (raw.isascii() and raw.isdigit()) else None

    return StatusFields(
        ctx_voluntary=num("voluntary_ctxt_switches"),
        ctx_involuntary=num("nonvoluntary_ctxt_switches"),
        cpus_allowed_list=fields.get("Cpus_allowed_list"),
    )


_NODE_PAGES = re.compile(r"^N(\d+)=(\d+)$")
_PAGE_KB = re.compile(r"^kernelpagesize_kB=(\d+)$")


def parse_numa_maps(text: str, *, page_size_bytes: int = 4096) -> dict[int, int]:
    """Bytes of memory per NUMA node: N<node>=<pages> times the mapping's page size.

    Each line may name its own page size (`kernelpagesize_kB=`, 2048 for huge pages); lines
    without it use page_size_bytes. Lines that do not parse are skipped: the file changes as
    it is read.
    """
    out: dict[int, int] = {}
    for line in text.splitlines():
        words = line.split()
        page = page_size_bytes
        pages: list[tuple[int, int]] = []
        for w in words[2:]:
            m = _NODE_PAGES.match(w)
            if m:
                pages.append((int(m.group(1)), int(m.group(2))))
                continue
            k = _PAGE_KB.match(w)
            if k:
                page = int(k.group(1)) * 1024
        for node, n in pages:
            out[node] = out.get(node, 0) + n * page
    return dict(sorted(out.items()))
