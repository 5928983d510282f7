"""Sample /proc for `watch`: every thread of the watched processes (stat, sched, status) and their
numa_maps, and, for noisy neighbours, the stat of every other thread on the host.

Reads go through a proc root and a sys root (live `/proc` and `/sys`, or crafted trees in
tests). A thread or process that exits mid-read is skipped and counted, never an error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import MissingError, ParseError
from ascendtune.core.parsers.procfs import (
    parse_numa_maps,
    parse_sched_migrations,
    parse_stat,
    parse_status,
)
from ascendtune.core.watch import HostSample, ProcessSample, ThreadSample

PROC = "/proc"
SYS = "/sys"


def _read(path: str) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except (OSError, ValueError):  # gone (ENOENT, ESRCH), or not ours to read (EACCES)
        return None


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
    ) -> None:
        self.proc = proc
        self.sys = sys
        self.clock = clock
        self.clock_ticks = clock_ticks or _sysconf("SC_CLK_TCK", 100)
        self.page_size = page_size or _sysconf("SC_PAGE_SIZE", 4096)

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
        base = f"{self.proc}/{pid}/task/{tid}"
        text = _read(f"{base}/stat")
        if text is None:
            return None
        try:
            st = parse_stat(text, source=f"{base}/stat")
        except ParseError:
            return None  # cut short as the thread exited
        if st.state in ("Z", "X", "x"):
            return None  # exited, waiting to be reaped: it runs nowhere
        if not detail:
            return ThreadSample(
                tid=tid, name=st.comm, processor=st.processor, cpu_ticks=st.cpu_ticks
            )
        sched = _read(f"{base}/sched")
        status = _read(f"{base}/status")
        fields = parse_status(status) if status is not None else None
        return ThreadSample(
            tid=tid,
            name=st.comm,
            processor=st.processor,
            cpu_ticks=st.cpu_ticks,
            nr_migrations=parse_sched_migrations(sched) if sched is not None else None,
            ctx_voluntary=fields.ctx_voluntary if fields else None,
            ctx_involuntary=fields.ctx_involuntary if fields else None,
        )

    def process(self, pid: int, *, detail: bool = True) -> ProcessSample | None:
        """Every thread of pid, its memory per node and mask; None once the process is gone."""
        tids = self.tids(pid)
        if tids is None:
            return None
        comm = _read(f"{self.proc}/{pid}/comm")
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
        name = comm.rstrip("\n") if comm is not None else (threads[0].name if threads else "?")
        started = _start_time(_read(f"{self.proc}/{pid}/stat"))
        if not detail:
            return ProcessSample(
                pid=pid, name=name, threads=tuple(threads), vanished=vanished, started=started
            )
        memory: dict[int, int] | None = None
        maps = _read(f"{self.proc}/{pid}/numa_maps")
        if maps is not None:
            memory = parse_numa_maps(maps, page_size_bytes=self.page_size)
        allowed: CpuSet | None = None
        status = _read(f"{self.proc}/{pid}/status")
        if status is not None:
            raw = parse_status(status).cpus_allowed_list
            if raw is not None:
                try:
                    allowed = parse_cpulist(raw)
                except ParseError:
                    allowed = None
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
