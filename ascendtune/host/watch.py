"""Sample /proc for `watch`: every thread of the watched processes (stat, sched, status) and their
numa_maps, and, for noisy neighbours, the stat of every other thread on the host.

Reads go through a proc root and a sys root (live `/proc` and `/sys`, or crafted trees in
tests). A thread or process that exits mid-read is skipped and counted, never an error.
"""

from __future__ import annotations

import locale
import os
import time
import weakref
from collections.abc import Callable, Iterable

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import MissingError, ParseError
from ascendtune.core.parsers.procfs import (
    parse_status,
)
from ascendtune.core.watch import HostSample, ProcessSample, ThreadSample, built
from ascendtune.host.affinity.masks import Tasks, open_files_room

PROC = "/proc"
SYS = "/sys"


_GONE = (b"Z", b"X", b"x")  # a thread that exited, waiting to be reaped: it runs nowhere


def _read(path: str) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except (OSError, ValueError):  # gone (ENOENT, ESRCH), or not ours to read (EACCES)
        return None


_CHUNK = 8192  # more than a stat, sched or status file holds


def _read_bytes(path: str, *, records: bool = False) -> bytes | None:
    """The whole file; None when it is gone or not ours to read. The kernel prints a stat,
    sched or status file whole in one read, so there a short read is the end; a file of
    records (numa_maps: one line per mapping) comes a page at a time and is read to EOF."""
    got = _open_read(path, records=records)
    if got is None:
        return None
    os.close(got[0])
    return got[1]


def _open_read(path: str, *, records: bool = False) -> tuple[int, bytes] | None:
    """(fd, the whole file as _read_bytes reads it), the file left open for the caller; None
    when it is gone or not ours to read (nothing left open)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (OSError, ValueError):  # gone (ENOENT, ESRCH), or not ours to read (EACCES)
        return None
    try:
        data = os.read(fd, _CHUNK)
        if records or len(data) == _CHUNK:
            data = _rest(fd, data)
    except OSError:  # ESRCH: the thread exited between open and read
        os.close(fd)
        return None
    return fd, data


# open /proc files held between samples: at most half the soft RLIMIT_NOFILE, and never more
# than this (the kernel keeps a page for each open seq_file it has printed: 4,096 files are
# 16 MiB of its memory)
HELD_MAX = 4096


def held_cap() -> int:
    """How many /proc files a live sampler keeps open: well below the soft limit on open
    files, so the rest of the process (and a watch beside a bind) keeps room."""
    return min(HELD_MAX, open_files_room())


class HeldFiles:
    """Live threads' /proc files kept open from one sample to the next, each re-read with one
    pread at offset 0 (proc prints the file afresh for a read from its start): one system call
    per file where opening, reading and closing it takes three, and proc's path walk is the
    dearer part (stat 29 against 13.5 ms, sched 39 against 23 ms for 1,600 threads).

    A held file stays bound to the task it was opened for: once that task has exited, a read
    fails (ESRCH), the file is closed and its path opened afresh, so a thread id reused by a
    new thread is read from the new thread. A file not read in a sample (its thread gone) is
    closed when the sample ends (`end_sample`); at most `cap` files are open at once, beyond
    that a file is opened, read and closed as before."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._now: dict[str, int] = {}  # path -> fd: read in this sample
        self._last: dict[str, int] = {}  # held from the last sample, not read again yet

    def __len__(self) -> int:
        return len(self._now) + len(self._last)

    def read(self, path: str) -> bytes | None:
        """The whole file (as _read_bytes reads it); None when it is gone or unreadable."""
        fd = self._last.pop(path, None)
        if fd is None:
            fd = self._now.pop(path, None)  # read twice in one sample
        if fd is not None:
            try:
                data = os.pread(fd, _CHUNK, 0)
                if len(data) == _CHUNK:
                    data = _rest(fd, data)
            except OSError:  # the task it was opened for has exited: open the path afresh
                os.close(fd)
            else:
                self._now[path] = fd
                return data
        got = _open_read(path)
        if got is None:
            return None
        fd, data = got
        if len(self._now) + len(self._last) < self.cap:
            self._now[path] = fd
        else:
            os.close(fd)
        return data

    def end_sample(self) -> None:
        """Close the files this sample did not read (their threads are gone)."""
        for fd in self._last.values():
            os.close(fd)
        self._last, self._now = self._now, {}

    def close(self) -> None:
        for held in (self._now, self._last):
            for fd in held.values():
                os.close(fd)
            held.clear()


def _rest(fd: int, head: bytes) -> bytes:
    """head and the rest of the file after it, to its end (positioned reads)."""
    parts = [head]
    at = len(head)
    while part := os.pread(fd, _CHUNK, at):
        parts.append(part)
        at += len(part)
    return b"".join(parts)


NAMES_KEPT = 4096  # decoded thread names remembered by a sampler (a host has few distinct ones)


def _stat(
    raw: bytes, encoding: str, names: dict[bytes, str] | None = None
) -> tuple[str, bytes, int, int | None] | None:
    """(name, state, utime + stime, processor) of a stat line, as core.parsers.procfs.parse_stat
    reads it (comm runs to the LAST ')'), without its object; None where parse_stat fails.
    names: comm bytes -> the name decoded from them, filled as names are decoded."""
    open_at = raw.find(b"(")
    close_at = raw.rfind(b")")
    if open_at < 0 or close_at < open_at:
        return None
    # fields 3 to 39 and the rest unsplit (13 fewer objects for a kernel's 52-field line), the
    # name decoded at its first sight only: 1.44 -> 1.22 us a line (min of 25 runs, timeit)
    rest = raw[close_at + 1 :].split(None, 37)
    try:
        state = rest[0]
        ticks = int(rest[11]) + int(rest[12])  # fields 14 and 15
        processor = int(rest[36]) if len(rest) > 36 else None  # field 39
    except (IndexError, ValueError):
        return None
    comm = raw[open_at + 1 : close_at]
    name = None if names is None else names.get(comm)
    if name is None:
        name = comm.decode(encoding, "replace")
        if "\r" in name:  # what reading it as text made of it (universal newlines)
            name = name.replace("\r\n", "\n").replace("\r", "\n")
        if names is not None:
            if len(names) >= NAMES_KEPT:
                names.clear()
            names[comm] = name
    return name, state, ticks, processor


def _sched_number(raw: bytes, key: bytes) -> int | None:
    """The number of the first `key : N` line of a sched file (None when no line says it), as
    core.parsers.procfs.parse_sched_migrations reads se.nr_migrations."""
    start = 0
    while (at := raw.find(key, start)) >= 0:
        end = raw.find(b"\n", at)
        end = len(raw) if end < 0 else end
        if at == 0 or raw[at - 1] == 0x0A:  # at the start of a line
            head, sep, value = raw[at + len(key) : end].partition(b":")
            value = value.strip()
            if sep and not head.strip() and value.isdigit():
                return int(value)
        start = end
    return None


def _numa_bytes(raw: bytes, page_size: int) -> dict[int, int]:
    """Bytes per NUMA node of a numa_maps file, as core.parsers.procfs.parse_numa_maps reads
    it (N<node>=<pages> times the line's kernelpagesize_kB, else page_size), in bytes."""
    return NumaMaps(page_size).parse(raw)


class NumaMaps:
    """One process's numa_maps, parsed sample after sample: a worker's runs to hundreds of
    lines, most of them the same from one sample to the next, so a line seen in the last
    sample is not parsed again (0.36 against 0.08 ms for a 268-line file), and a file that did
    not change at all is not split either. Holds the last sample's lines only."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self._raw = b""
        self._lines: dict[bytes, tuple[tuple[int, int], ...]] = {}
        self._result: dict[int, int] = {}

    def parse(self, raw: bytes) -> dict[int, int]:
        if raw == self._raw and self._lines:
            return dict(self._result)
        last, lines = self._lines, {}
        out: dict[int, int] = {}
        for line in raw.split(b"\n"):
            got = last.get(line)
            if got is None:
                got = _numa_line(line, self.page_size)
            lines[line] = got
            for node, n in got:
                out[node] = out.get(node, 0) + n
        self._raw, self._lines = raw, lines
        self._result = dict(sorted(out.items()))
        return dict(self._result)


def _numa_line(line: bytes, page_size: int) -> tuple[tuple[int, int], ...]:
    """(node, bytes) of each N<node>=<pages> word of one numa_maps line."""
    page = page_size
    pages: list[tuple[int, int]] = []
    for w in line.split()[2:]:
        if w[:1] == b"N":
            digits, sep, count = w[1:].partition(b"=")
            if sep and digits.isdigit() and count.isdigit():
                pages.append((int(digits), int(count)))
        elif w[:18] == b"kernelpagesize_kB=" and w[18:].isdigit():
            page = int(w[18:]) * 1024
    return tuple((node, n * page) for node, n in pages)


class ProcSampler:
    """The procfs and sysfs reads `watch` makes. Tests point it at a tree in tmp_path."""

    def __init__(
        self,
        proc: str = PROC,
        sys: str = SYS,
        *,
        clock: Callable[[], float] = time.monotonic,
        clock_ticks: int | None = None,
        page_size: int | None = None,
        live: bool | None = None,
    ) -> None:
        self.proc = proc
        self.sys = sys
        self.clock = clock
        self.clock_ticks = clock_ticks or _sysconf("SC_CLK_TCK", 100)
        self.page_size = page_size or _sysconf("SC_PAGE_SIZE", 4096)
        self._encoding = locale.getpreferredencoding(False)  # what open() decodes text with
        self._names: dict[bytes, str] = {}  # comm -> name: a name is decoded at its first sight
        # each watched thread's mask (who set it is what `watch` attributes): read through the
        # kernel on this machine's /proc, from task/TID/status in a crafted tree (live: whether
        # proc is this machine's; tests read the machine's threads both ways)
        if live is None:
            live = os.path.realpath(proc) == PROC
        self._tasks: Tasks | None = Tasks(proc) if live else None
        self._numa: dict[int, NumaMaps] = {}  # each watched process's, from the last sample
        # threads' stat and sched held open between samples on this machine's /proc (a crafted
        # tree's files are read afresh: a test may replace one between samples)
        self._held: HeldFiles | None = None
        self._read_thread_file: Callable[[str], bytes | None] = _read_bytes
        if live:
            held = self._held = HeldFiles(held_cap())
            self._read_thread_file = held.read
            weakref.finalize(self, held.close)

    def close(self) -> None:
        """Close the files held open between samples (a sampler dropped closes them too)."""
        if self._held is not None:
            self._held.close()

    # ---- the host ------------------------------------------------------------------------

    def online_cpus(self) -> CpuSet:
        path = f"{self.sys}/devices/system/cpu/online"
        text = _read(path)
        if text is None:
            raise MissingError(f"{path} is missing", "watch needs the list of online CPUs")
        return parse_cpulist(text, source=path)

    def node_map(self) -> dict[int, CpuSet]:
        """NUMA node -> its CPUs; empty when sysfs shows no node."""
        base = f"{self.sys}/devices/system/node"
        try:
            names = os.listdir(base)
        except OSError:
            return {}
        out: dict[int, CpuSet] = {}
        for n in names:
            if n.startswith("node") and (n[4:].isascii() and n[4:].isdigit()):
                text = _read(f"{base}/{n}/cpulist")
                if text is None:
                    continue
                try:
                    out[int(n[4:])] = parse_cpulist(text, source=f"{base}/{n}/cpulist")
                except ParseError:
                    continue
        return dict(sorted(out.items()))

    def pids(self) -> list[int]:
        try:
            return sorted(int(n) for n in os.listdir(self.proc) if (n.isascii() and n.isdigit()))
        except OSError:
            return []

    def tgid(self, pid: int) -> int | None:
        """The process `pid` belongs to; None when there is no such task (or it is a zombie)."""
        status = _read(f"{self.proc}/{pid}/status")
        if status is None:
            return None
        tgid = pid
        for line in status.splitlines():
            if line.startswith("State:") and line.split()[1:2] in (["Z"], ["X"]):
                return None
            if line.startswith("Tgid:"):
                value = line.split(":", 1)[1].strip()
                tgid = int(value) if (value.isascii() and value.isdigit()) else pid
        return tgid

    # ---- one process ---------------------------------------------------------------------

    def tids(self, pid: int) -> list[int] | None:
        try:
            return sorted(
                int(n)
                for n in os.listdir(f"{self.proc}/{pid}/task")
                if (n.isascii() and n.isdigit())
            )
        except OSError:
            return None

    def thread(self, pid: int, tid: int, *, detail: bool = True) -> ThreadSample | None:
        # One thread costs one read of stat and, with detail, one of sched: the kernel's sched
        # prints the context switches status prints (both are p->nvcsw and p->nivcsw), so
        # status is read only where sched does not say them (a kernel without SCHED_DEBUG).
        # Bytes and os.read: no text layer, no per-file buffer; only the name is decoded.
        base = f"{self.proc}/{pid}/task/{tid}/"
        raw = self._read_thread_file(base + "stat")
        if raw is None:
            return None
        st = _stat(raw, self._encoding, self._names)
        if st is None or st[1] in _GONE:
            return None  # cut short as the thread exited, or exited and waiting to be reaped
        name, _, ticks, processor = st
        migrations = vol = invol = None
        mask: CpuSet | None = None
        if detail:
            migrations, vol, invol, mask = self._detail(base, tid)
        return built(
            ThreadSample,
            {
                "tid": tid,
                "name": name,
                "processor": processor,
                "cpu_ticks": ticks,
                "nr_migrations": migrations,
                "ctx_voluntary": vol,
                "ctx_involuntary": invol,
                "mask": mask,
            },
        )

    def _detail(
        self, base: str, tid: int
    ) -> tuple[int | None, int | None, int | None, CpuSet | None]:
        """A thread's migrations, context switches and mask (None where unreadable)."""
        sched = self._read_thread_file(base + "sched")
        migrations = vol = invol = None
        if sched is not None:
            migrations = _sched_number(sched, b"se.nr_migrations")
            vol = _sched_number(sched, b"nr_voluntary_switches")
            invol = _sched_number(sched, b"nr_involuntary_switches")
        mask: CpuSet | None = None
        status: str | None = None
        if self._tasks is not None:
            # the mask through the kernel's call (no file): masks of one process repeat, so
            # the same set comes back for most threads (Tasks decodes each distinct one once)
            try:
                mask = self._tasks.get(tid)
            except OSError:
                mask = None
        else:  # a crafted tree: its status file, when it says one
            status = _read(base + "status")
            mask = _allowed(status)
        if vol is None or invol is None:
            if status is None:
                status = _read(base + "status")
            if status is not None:
                fields = parse_status(status)
                vol, invol = fields.ctx_voluntary, fields.ctx_involuntary
            else:
                vol = invol = None
        return migrations, vol, invol, mask

    def process(self, pid: int, *, detail: bool = True) -> ProcessSample | None:
        """Every thread of pid, its memory per node and mask; None once the process is gone."""
        tids = self.tids(pid)
        if tids is None:
            return None
        threads: list[ThreadSample] = []
        vanished = 0
        for tid in tids:
            t = self.thread(pid, tid, detail=detail)
            if t is None:
                vanished += 1
            else:
                threads.append(t)
        if not threads and self.tgid(pid) is None:
            return None
        if self._tasks is not None and threads and threads[0].tid == pid:
            # the kernel prints the leader's comm in its stat as in /proc/PID/comm (neither
            # escaped): no file more per process and sample
            name = threads[0].name.rstrip("\n")
        else:
            comm = _read(f"{self.proc}/{pid}/comm")
            name = comm.rstrip("\n") if comm is not None else (threads[0].name if threads else "?")
        if not detail:  # a neighbour: its start time tells nothing (only a worker's PID is kept)
            return ProcessSample(pid=pid, name=name, threads=tuple(threads), vanished=vanished)
        started = _start_time(_read(f"{self.proc}/{pid}/stat"))
        memory: dict[int, int] | None = None
        maps = _read_bytes(f"{self.proc}/{pid}/numa_maps", records=True)
        if maps is not None:
            numa = self._numa.get(pid)
            if numa is None:
                numa = self._numa[pid] = NumaMaps(self.page_size)
            memory = numa.parse(maps)
        allowed = _allowed(_read(f"{self.proc}/{pid}/status"))
        return ProcessSample(
            pid=pid,
            name=name,
            threads=tuple(threads),
            memory_by_node=memory,
            cpus_allowed=allowed,
            vanished=vanished,
            started=started,
        )

    # ---- one pass ------------------------------------------------------------------------

    def sample(
        self, workers: Iterable[int], *, neighbours: bool = True, ignore: Iterable[int] = ()
    ) -> HostSample:
        """The workers in full; with neighbours, the stat of every other thread too."""
        want = list(workers)
        for gone in self._numa.keys() - set(want):
            del self._numa[gone]
        try:
            return self._sample(want, neighbours, ignore)
        finally:
            if self._held is not None:
                self._held.end_sample()

    def _sample(self, want: list[int], neighbours: bool, ignore: Iterable[int]) -> HostSample:
        at = self.clock()
        got: dict[int, ProcessSample] = {}
        for pid in want:
            ps = self.process(pid)
            if ps is not None:
                got[pid] = ps
        others: list[ProcessSample] = []
        if neighbours:
            skip = set(want) | set(ignore)
            for pid in self.pids():
                if pid in skip:
                    continue
                ps = self.process(pid, detail=False)
                if ps is not None:
                    others.append(ps)
        return HostSample(at_s=at, workers=got, others=tuple(others))


def _allowed(status: str | None) -> CpuSet | None:
    """Cpus_allowed_list of a status file; None when it says none."""
    if status is None:
        return None
    raw = parse_status(status).cpus_allowed_list
    if raw is None:
        return None
    try:
        return parse_cpulist(raw)
    except ParseError:
        return None


def _start_time(stat: str | None) -> int | None:
    """Field 22 of /proc/PID/stat (start time after boot, clock ticks): a PID reused by a new
    process has a later one."""
    fields = (stat or "").rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _sysconf(name: str, default: int) -> int:
    try:
        value = os.sysconf(name)
    except (ValueError, OSError):
        return default
    return value if value > 0 else default
