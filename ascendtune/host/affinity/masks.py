"""Thread masks of a live process: the kernel interfaces binding uses (Tasks, which tests subclass
to fail on cue) and libc's affinity calls.

Masks go through os.sched_getaffinity/sched_setaffinity where that is cheapest (few CPUs), and
through libc (ctypes) with prebuilt cpu_set_t buffers where a set built per call costs more (a
write of more than 16 CPUs, a read on a host of more than 64); os.sched_* is the fallback when
libc cannot be loaded. bind's per-thread loops over a whole process run compiled where the
package was built with a C compiler (affinity_native, _affinityc.c), with the same answers.
"""

from __future__ import annotations

import errno
import locale
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.lazy import optional_module

PROC = "/proc"

EPERM_HINT = (
    "run as the process owner, or give this tool CAP_SYS_NICE (`--cap-add SYS_NICE` in a container)"
)


def errno_text(e: OSError) -> tuple[str, str | None]:
    """("EPERM: Operation not permitted", "EPERM") for an OSError."""
    code = e.errno
    if code is None:
        return str(e), None
    name = errno.errorcode.get(code, str(code))
    return f"{name}: {os.strerror(code)}", name


class Tasks:
    """The kernel interfaces binding uses. Tests subclass it to fail on cue."""

    def __init__(self, proc: str = PROC) -> None:
        self.proc = proc
        self._getbuf: Any = None
        self._decoded: dict[bytes, CpuSet] = {}
        self._encoded: dict[CpuSet, Any] = {}
        # os.sched_getaffinity builds a set of every CPU of the mask per call; with few CPUs
        # that beats the ctypes call (0.29 against 0.5 us on 2 CPUs), with many it does not
        self._ctypes_get = _ctypes_get()
        # os.sched_setaffinity walks the set per call: 0.55 against 0.8 us for a 2-CPU target,
        # even at 16 CPUs, slower from 32 on (0.78 against 0.7 us, 2.2 against 0.7 at 256)
        self._os_set_max = 16
        self._encoding = locale.getpreferredencoding(False)  # what open() decodes names with

    def tgid(self, pid: int) -> int | None:
        """The thread group (process) `pid` belongs to; None when there is no such task."""
        try:
            raw = read_proc(f"{self.proc}/{pid}/status", 1 << 16)
        except OSError:
            return None
        at = raw.find(b"\nTgid:")
        if at < 0:
            return pid
        end = raw.find(b"\n", at + 1)
        return int(raw[at + 6 : end if end >= 0 else None])

    def alive(self, pid: int) -> bool:
        """False once the process has exited (gone, or a zombie waiting to be reaped)."""
        fields = stat_fields(pid, self.proc)
        return fields is not None and bool(fields) and fields[0] not in ("Z", "X", "x")

    def list_tids(self, pid: int) -> list[int] | None:
        """Thread ids of the process, None when it is gone."""
        names = self.list_names(pid)
        return None if names is None else tids_of(names)

    def list_names(self, pid: int) -> list[str] | None:
        """The entries of /proc/PID/task as listed (leader first, then in creation order), None
        when the process is gone. Two equal listings name the same threads: no ints to make."""
        try:
            return os.listdir(f"{self.proc}/{pid}/task")
        except OSError:
            return None

    def name(self, pid: int, tid: int) -> str | None:
        """The thread's name (comm), None when it has exited."""
        # one os.read, no text layer: a bind by roles reads every thread's name each pass
        try:
            raw = read_proc(f"{self.proc}/{pid}/task/{tid}/comm", 4096)
        except OSError:
            return None
        name = raw.decode(self._encoding, "replace")
        if "\r" in name:  # what reading it as text made of it (universal newlines)
            name = name.replace("\r\n", "\n").replace("\r", "\n")
        return name.rstrip("\n")

    def get(self, tid: int) -> CpuSet | None:
        """The thread's mask, None when it has exited."""
        if not self._ctypes_get:
            try:
                return frozenset(os.sched_getaffinity(tid))
            except OSError as e:
                if e.errno == errno.ESRCH:
                    return None
                raise
        libc = _libc()
        assert libc is not None
        buf = self._getbuf
        if buf is None:
            buf = self._getbuf = ctypes_buffer(libc.size)
        if libc.get(tid, libc.csize, buf) != 0:
            code = libc.errno()
            if code == errno.ESRCH:
                return None
            raise OSError(code, os.strerror(code))
        raw = buf.raw
        found = self._decoded.get(raw)
        if found is None:
            # masks repeat (a process has a handful of distinct ones): decode each once
            found = self._decoded[raw] = _decode_mask(raw)
        return found

    def set(self, tid: int, cpus: CpuSet) -> None:
        if len(cpus) <= self._os_set_max:
            os.sched_setaffinity(tid, cpus)
            return
        libc = _libc()
        buf = self._encoded.get(cpus)
        if buf is None:
            if libc is None or not cpus or min(cpus) < 0 or max(cpus) >= libc.size * 8:
                # what os.sched_setaffinity makes of it (its own errors included)
                os.sched_setaffinity(tid, cpus)
                return
            buf = self._encoded[cpus] = _encode_mask(cpus, libc.size)
        assert libc is not None
        if libc.set(tid, libc.csize, buf) != 0:
            code = libc.errno()
            raise OSError(code, os.strerror(code))


T = TypeVar("T")


class ThreadNames:
    """The raw names (comm) of one process's threads, as the stock Tasks.name reads them.

    A bind by roles reads every thread's name twice: in pass 1, to know its target, and in the
    final re-read, to catch a thread renamed into another role since. Opening a thread's comm
    file is most of a read's cost (about 6 of 8.5 us, where the read is 2 and the mask's 0.5),
    so each file is opened relative to the held /proc/PID/task folder and kept open after its
    first read: a read again is one pread from the start, which makes the kernel print the
    name anew. A kept file follows its thread, never a thread that takes its id later; where
    its read fails, the name is read by its path as a first read would.

    At most half the process's file limit is kept open (shared by every bind under way); past
    it a file is closed after its read. close() closes them all."""

    def __init__(self, proc: str, pid: int) -> None:
        self._base = f"{proc}/{pid}/task/"
        try:
            self._dir: int | None = os.open(self._base, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            self._dir = None  # each read by its path then (and fails as it would)
        self._kept: dict[int, int] = {}

    def reader(self, of: Callable[[bytes], T]) -> Callable[[int], T | None]:
        """tid -> of(the comm file's bytes), None when the thread has exited (a function for
        the per-thread loops; of is called once per distinct name)."""
        kept, dir_fd, room = self._kept, self._dir, _KEEP
        prefix = "" if dir_fd is not None else self._base
        open_, read, pread, close, rdonly = os.open, os.read, os.pread, os.close, os.O_RDONLY
        seen: dict[bytes, T] = {}  # a process's threads share a few names

        def name(tid: int) -> T | None:
            fd = kept.get(tid)
            raw = None
            if fd is not None:
                try:
                    raw = pread(fd, 4096, 0)
                except OSError:  # the thread it followed is gone: its id may name another
                    raw = None
            if raw is None:
                try:
                    fd = open_(f"{prefix}{tid}/comm", rdonly, dir_fd=dir_fd)
                except OSError:
                    return None
                try:
                    raw = read(fd, 4096)
                except OSError:
                    close(fd)
                    return None
                if room[0] > 0 and tid not in kept:
                    kept[tid] = fd
                    room[0] -= 1
                else:
                    close(fd)
            got = seen.get(raw)
            if got is None:
                got = seen[raw] = of(raw)
            return got

        return name

    def close(self) -> None:
        kept, self._kept = self._kept, {}
        _KEEP[0] += len(kept)
        fds = list(kept.values())
        if self._dir is not None:
            fds.append(self._dir)
            self._dir = None
        close = os.close
        for fd in fds:  # thousands: no context manager each (contextlib.suppress)
            try:  # noqa: SIM105
                close(fd)
            except OSError:
                pass


def open_files_room() -> int:
    """How many files a cache of open /proc files may hold: half the soft limit on open files
    (the rest is the process's own), a large number where there is none, 0 where it can't be
    told."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 0
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft // 2


_KEEP: list[int] = []  # how many more comm files every ThreadNames together may keep open


def thread_names(proc: str, pid: int) -> ThreadNames:
    if not _KEEP:
        _KEEP.append(open_files_room())
    return ThreadNames(proc, pid)


def tids_of(names: list[str]) -> list[int]:
    try:
        return sorted(map(int, names))  # the folder holds only thread ids
    except ValueError:
        return sorted(int(n) for n in names if (n.isascii() and n.isdigit()))


STOCK_GET, STOCK_SET = Tasks.get, Tasks.set  # _pool_loop inlines these two
STOCK_LIST = Tasks.list_names  # _list_tail reads the same folder
STOCK_NAME = Tasks.name  # _survey_roles inlines it
STOCK_TGID, STOCK_ALIVE = Tasks.tgid, Tasks.alive  # bind_process reads these more cheaply

_CTYPES_GET: list[bool] = []  # decided on first use: os.cpu_count() reads sysfs each call


def _ctypes_get() -> bool:
    if not _CTYPES_GET:
        _CTYPES_GET.append((os.cpu_count() or 1) > 64 and _libc() is not None)
    return _CTYPES_GET[0]


_NATIVE: list[Any] = []  # the compiled loops, once loaded (or None)


def affinity_native() -> Any | None:
    """bind's per-thread loops compiled (_affinityc.c: each thread's mask read, compared, and
    written where off), loaded at first use; None where the package was installed without a C
    compiler: the same answers then come from the os calls in Python (bind._pool_loop and
    _survey_pool; tests/host/test_affinity_native.py runs both)."""
    return optional_module("ascendtune.host.affinity._affinityc", _NATIVE)


# ---- libc affinity calls --------------------------------------------------------------------


class _Libc:
    """libc's affinity calls and the cpu_set_t size this kernel accepts."""

    def __init__(self, get: Any, set_: Any, errno_: Any, size: int, csize: Any) -> None:
        self.get, self.set, self.errno, self.size = get, set_, errno_, size
        self.csize = csize  # size as a prebuilt size_t: no conversion per call


_LIBC: list[_Libc | None] = []  # filled on first use: [] not tried yet, [None] unavailable


def _libc() -> _Libc | None:
    if _LIBC:
        return _LIBC[0]
    _LIBC.append(_load_libc())
    return _LIBC[0]


def _load_libc() -> _Libc | None:
    try:
        import ctypes
        import ctypes.util

        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        get, set_ = lib.sched_getaffinity, lib.sched_setaffinity
    except (ImportError, OSError, AttributeError):
        return None
    # no argtypes: ctypes converts a Python int to int and passes a buffer as a pointer, and the
    # size goes as a prebuilt c_size_t; declared argtypes cost 0.3 us a call more
    # the kernel refuses a buffer smaller than its CPU count (EINVAL): grow until one fits
    size = 128
    while size <= 1 << 16:
        buf = ctypes.create_string_buffer(size)
        csize = ctypes.c_size_t(size)
        if get(0, csize, buf) == 0:
            return _Libc(get, set_, ctypes.get_errno, size, csize)
        if ctypes.get_errno() != errno.EINVAL:
            return None
        size *= 2
    return None


def ctypes_buffer(size: int) -> Any:
    import ctypes

    return ctypes.create_string_buffer(size)


def _encode_mask(cpus: CpuSet, size: int) -> Any:
    bits = 0
    for cpu in cpus:
        bits |= 1 << cpu
    buf = ctypes_buffer(size)
    buf.raw = bits.to_bytes(size, "little")
    return buf


def _decode_mask(raw: bytes) -> CpuSet:
    bits = int.from_bytes(raw, "little")
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return frozenset(out)


def read_proc(path: str, size: int) -> bytes:
    """The start of a /proc file in one read (a seq_file hands out what fits in one go)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def stat_fields(pid: int, proc: str) -> list[str] | None:
    """The fields of the main thread's stat after the command name (state first); None when
    gone, [] when it cannot be read (then nothing can be told from it).

    /proc/PID/task/PID/stat, not /proc/PID/stat: the state and flags are the main thread's in
    both, but the process-wide file sums the CPU times of every thread (630 us at 4,000
    threads, 3 us for the thread's own)."""
    try:
        raw = read_proc(f"{proc}/{pid}/task/{pid}/stat", 4096)
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    except OSError:
        return []
    return raw.rsplit(b")", 1)[-1].decode("ascii", "replace").split()


def main_first(pid: int, tids: Sequence[int]) -> Sequence[int]:
    if tids and tids[0] == pid:
        return tids  # sorted, and the main thread has the lowest tid: already in order
    return ([pid] if pid in tids else []) + [t for t in tids if t != pid]
