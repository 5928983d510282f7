"""Read and change the CPU affinity of every thread of a live process, and launch a command bound.

Linux affinity is per thread and a new thread inherits its creator's mask, so one sweep over
/proc/PID/task (what `taskset -a -p` does) leaves behind any thread born meanwhile from a thread
not yet moved. `bind_process` therefore moves the main thread first, then lists the threads again
and handles what is new until a pass has nothing to write (see bind_process for what is read
again and what a successful write is taken to mean).

Masks go through os.sched_getaffinity/sched_setaffinity where that is cheapest (few CPUs), and
through libc (ctypes) with prebuilt cpu_set_t buffers where a set built per call costs more (a
write of more than 16 CPUs, a read on a host of more than 64); os.sched_* is the fallback when
libc cannot be loaded.
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ascendtune.core.bindplan import (
    BindReport,
    BindTarget,
    ThreadFailure,
    ThreadRow,
)
from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import (
    InvalidInput,
    MissingError,
    ParseError,
    PermissionDenied,
)
from ascendtune.host import runner
from ascendtune.host.cgroup import resolve_cpuset
from ascendtune.host.roots import DirRoot, Root

PROC = "/proc"
SYS_CPU_ONLINE = "/sys/devices/system/cpu/online"
SYS_NODES = "/sys/devices/system/node"
DEFAULT_MAX_PASSES = 16
MIGRATE_TIMEOUT_S = 600.0  # moving a large worker's pages takes a while

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

    def tgid(self, pid: int) -> int | None:
        """The thread group (process) `pid` belongs to; None when there is no such task."""
        try:
            raw = _read_proc(f"{self.proc}/{pid}/status", 1 << 16)
        except OSError:
            return None
        at = raw.find(b"\nTgid:")
        if at < 0:
            return pid
        end = raw.find(b"\n", at + 1)
        return int(raw[at + 6 : end if end >= 0 else None])

    def alive(self, pid: int) -> bool:
        """False once the process has exited (gone, or a zombie waiting to be reaped)."""
        fields = _stat_fields(pid, self.proc)
        return fields is not None and bool(fields) and fields[0] not in ("Z", "X", "x")

    def list_tids(self, pid: int) -> list[int] | None:
        """Thread ids of the process, None when it is gone."""
        names = self.list_names(pid)
        return None if names is None else _tids(names)

    def list_names(self, pid: int) -> list[str] | None:
        """The entries of /proc/PID/task as listed (leader first, then in creation order), None
        when the process is gone. Two equal listings name the same threads: no ints to make."""
        try:
            return os.listdir(f"{self.proc}/{pid}/task")
        except OSError:
            return None

    def name(self, pid: int, tid: int) -> str | None:
        """The thread's name (comm), None when it has exited."""
        try:
            with open(f"{self.proc}/{pid}/task/{tid}/comm", errors="replace") as f:
                return f.read().rstrip("\n")
        except OSError:
            return None

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


def _tids(names: list[str]) -> list[int]:
    try:
        return sorted(map(int, names))  # the folder holds only thread ids
    except ValueError:
        return sorted(int(n) for n in names if (n.isascii() and n.isdigit()))


_STOCK_GET, _STOCK_SET = Tasks.get, Tasks.set  # _pool_pass inlines these two
_STOCK_LIST = Tasks.list_names  # _list_tail reads the same folder
_STOCK_TGID, _STOCK_ALIVE = Tasks.tgid, Tasks.alive  # bind_process reads these more cheaply

_CTYPES_GET: list[bool] = []  # decided on first use: os.cpu_count() reads sysfs each call


def _ctypes_get() -> bool:
    if not _CTYPES_GET:
        _CTYPES_GET.append((os.cpu_count() or 1) > 64 and _libc() is not None)
    return _CTYPES_GET[0]


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


# ---- facts about the live host the checks need ----------------------------------------------


def online_cpus() -> CpuSet:
    try:
        with open(SYS_CPU_ONLINE) as f:
            return parse_cpulist(f.read(), source=SYS_CPU_ONLINE)
    except OSError:
        # no sysfs (a minimal container): every CPU this process may run on is online
        return frozenset(os.sched_getaffinity(0))


def _read_cpus_file(path: str) -> CpuSet | None:
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    try:
        cpus = parse_cpulist(text, source=path)
    except ParseError:
        return None
    return cpus or None


def cpuset_cpus(pid: int, root: Root | None = None) -> CpuSet | None:
    """The CPUs the cgroup cpuset of `pid` allows, None when it cannot be told (no limit known).

    sched_setaffinity silently narrows a mask to these CPUs, and fails with EINVAL when the mask
    holds none of them, so a plan is checked against them before anything changes. The answer
    is the shared resolver's (ascendtune.host.cgroup), on the live root unless one is given.
    """
    found = resolve_cpuset(root if root is not None else DirRoot("/", live=True), pid)
    return found.cpus if found is not None else None


def numa_nodes_of(cpus: CpuSet) -> tuple[int, ...]:
    """The NUMA nodes holding any of `cpus` on this host (node 0 when sysfs has no node view)."""
    try:
        names = os.listdir(SYS_NODES)
    except OSError:
        return (0,)
    out: list[int] = []
    for n in sorted(names):
        if not (n.startswith("node") and (n[4:].isascii() and n[4:].isdigit())):
            continue
        got = _read_cpus_file(f"{SYS_NODES}/{n}/cpulist")
        if got and got & cpus:
            out.append(int(n[4:]))
    return tuple(out) or (0,)


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a PID is, for the report and the error lines (read as psutil reads it)."""

    name: str
    user: str | None
    cmdline: tuple[str, ...]
    status: str

    def to_json(self) -> dict[str, object]:
        from ascendtune.core.redact import redact_args

        return {
            "name": self.name,
            "user": self.user,
            "cmdline": redact_args(self.cmdline),
            "status": self.status,
        }


# /proc/PID/stat's state letter as psutil names it (what the report has always said)
PROC_STATUSES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "x": "dead",
    "K": "wake-kill",
    "W": "waking",
    "I": "idle",
    "P": "parked",
}


def process_identity(pid: int, proc: str = PROC) -> ProcessIdentity | None:
    """Name, owner, command line and state of pid; None when it cannot be seen.

    Read from /proc/PID/{stat,status,cmdline} the way psutil reads them (its name, username,
    cmdline and status, with what each gives when a read fails), without importing psutil
    (about 11 ms of a bind's start-up): a name cut to 15 characters is completed from the
    command line's first word, a uid with no passwd entry is named by its number."""
    enc, errs = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    try:
        # the leader's name and state, which psutil reads from the process-wide stat: the same
        # in the leader's own (see _stat_fields), which does not sum every thread's CPU times
        stat = _read_proc(f"{proc}/{pid}/task/{pid}/stat", 4096)
    except OSError:
        return None
    rpar = stat.rfind(b")")
    name = stat[stat.find(b"(") + 1 : rpar].decode(enc, errs)
    rest = stat[rpar + 2 :].split()
    status = PROC_STATUSES.get(rest[0].decode("ascii", "replace"), "?") if rest else "?"
    cmd: tuple[str, ...] = ()
    try:
        data = _read_proc(f"{proc}/{pid}/cmdline", 1 << 20).decode(enc, errs)
    except OSError:
        data = ""
    if data:
        # NUL-separated, NUL-terminated; a process that rewrote its title may use spaces
        sep = "\x00" if data.endswith("\x00") else " "
        if data.endswith(sep):
            data = data[:-1]
        parts = data.split(sep)
        if sep == "\x00" and len(parts) == 1 and " " in data:
            parts = data.split(" ")
        cmd = tuple(parts)
    if len(name) >= 15 and cmd:
        longer = os.path.basename(cmd[0])
        if longer.startswith(name):
            name = longer
    user: str | None = None
    try:
        raw = _read_proc(f"{proc}/{pid}/status", 1 << 16)
        at = raw.index(b"\nUid:")
        uid = int(raw[at + 5 : raw.index(b"\n", at + 1)].split()[0])
    except (OSError, ValueError, IndexError):
        pass
    else:
        import pwd

        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:  # a uid with no passwd entry (containers)
            user = str(uid)
    return ProcessIdentity(name=name, user=user, cmdline=cmd, status=status)


def require_process(pid: int, tasks: Tasks | None = None) -> None:
    """Raise MissingError (no such process) or InvalidInput (a thread id, not a process id)."""
    tasks = tasks or Tasks()
    tgid = tasks.tgid(pid)
    if tgid is None:
        raise MissingError(f"no process {pid} on this host", "check the PID with `ps -ef`")
    if tgid != pid:
        raise InvalidInput(
            f"{pid} is a thread of process {tgid}, not a process",
            f"bind the whole process with --pid {tgid}",
        )
    _refuse_zombie(pid, tasks.proc)


def _refuse_zombie(pid: int, proc: str) -> None:
    # the state from /proc/PID/task/PID/stat; the identity only to name a zombie
    fields = _stat_fields(pid, proc)
    if fields and fields[0] == "Z":
        ident = process_identity(pid, proc)
        name = ident.name if ident is not None else str(pid)
        raise MissingError(
            f"process {pid} ({name}) has exited and waits to be reaped (zombie): "
            "there is nothing left to bind"
        )


# ---- binding a running process ----------------------------------------------------------------


@dataclass
class _Run:
    """Mutable state of one binding attempt."""

    previous: dict[int, CpuSet]  # tid -> mask before we changed it, in change order
    failures: dict[int, ThreadFailure]
    initial: Sequence[int]  # the first listing (a set only if a rollback needs one)
    fatal: bool = False


def _main_first(pid: int, tids: Sequence[int]) -> Sequence[int]:
    if tids and tids[0] == pid:
        return tids  # sorted, and the main thread has the lowest tid: already in order
    return ([pid] if pid in tids else []) + [t for t in tids if t != pid]


@dataclass
class _Sweep:
    """What the passes know about each thread.

    `known`: tid -> (role, mask) of a thread on its target: read on it, or written where the
    kernel cannot have narrowed the write (the target lies inside the mask read just before, and
    that mask lies inside the thread's cpuset), so a successful write says where it is.
    `check`: tid -> (role, mask) written where the kernel may have narrowed it to the thread's
    cpuset (the target reaches outside the mask read before): read back on the next pass.
    `gone`: threads of the current pass found exited.
    """

    known: dict[int, tuple[str, CpuSet]] = field(default_factory=dict)
    check: dict[int, tuple[str, CpuSet]] = field(default_factory=dict)
    gone: set[int] = field(default_factory=set)


def bind_process(
    pid: int,
    target: BindTarget,
    *,
    use_roles: bool = True,
    keep_partial: bool = False,
    max_passes: int = DEFAULT_MAX_PASSES,
    tasks: Tasks | None = None,
) -> BindReport:
    """Put every thread of `pid` on its target mask, verify, and report.

    Pass 1 reads each listed thread's mask (kept for a rollback) and writes the ones off target.
    Each later pass lists the threads again and handles only what the last one left open: a
    thread not seen before (born meanwhile, possibly on an old mask inherited from a creator not
    yet moved), a write to read back (see _Sweep), a thread renamed into another role. A pass
    that writes nothing ends it: every thread it listed is on target, and any thread born since
    was born of one on target. A write that succeeded is not read again where the kernel cannot
    have changed it, and without roles the second listing is only the end of /proc/PID/task
    (_list_tail): about one mask read and one write per thread, one full listing.

    What is not re-read is a thread that resets its own mask after it was written: the old
    final re-read caught that only when it happened before the re-read reached the thread.

    A thread that exits meanwhile is skipped. On EPERM/EINVAL the attempt stops and every thread
    changed so far goes back to its previous mask, unless keep_partial (then the other threads
    are still bound and each failure is reported).
    """
    tasks = tasks or Tasks()
    kind = type(tasks)
    names: list[str] | None = None
    if kind.tgid is _STOCK_TGID and kind.list_names is _STOCK_LIST:
        # /proc/PID/task lists the thread group's leader first: when that is pid, pid is a
        # process (what require_process reads from status), and the listing is pass 1's
        names = tasks.list_names(pid)
        if names and names[0] == str(pid):
            _refuse_zombie(pid, tasks.proc)
        else:
            require_process(pid, tasks)  # no such process, or a thread: its error
            names = tasks.list_names(pid)
    else:
        require_process(pid, tasks)
        names = tasks.list_names(pid)
    use = use_roles and target.has_roles
    if names is None:
        raise MissingError(f"process {pid} exited before it could be bound")
    first = _tids(names)
    run = _Run(previous={}, failures={}, initial=first)
    sweep = _Sweep()
    listings = [first]  # every distinct listing, for threads_exited
    passes = 0
    converged = False
    tids: Sequence[int] = first
    tail: _Tail | None = None
    while passes < max(1, max_passes) and not run.fatal:
        passes += 1
        tail = None
        if passes == 2 and not use and not run.failures and not sweep.gone:
            # pass 1 saw no thread gone: then no thread listed went away while the folder was
            # read in chunks, the one way a listing skips a thread (see _list_tail)
            tail = _list_tail(pid, names, tasks)
        if tail is not None:
            # the threads not listed again were listed in pass 1; those it left open are read
            tids = tail.tids + [t for t in sweep.check if t not in tail.tids]
            listings.append(tail.tids)
        elif passes > 1:
            again = tasks.list_names(pid)
            if again is None:
                raise MissingError(_exited_text(pid, run))
            if again != names:  # else the same threads as last time: the same tids
                names, tids = again, _tids(again)
                listings.append(tids)
        writes = _pass(pid, tids, target, use, tasks, run, sweep, keep_partial)
        if run.fatal:
            break
        if writes == 0 and not (tail is not None and sweep.gone):
            converged = True
            break
    rolled_back: tuple[int, ...] = ()
    restore_failed: tuple[ThreadFailure, ...] = ()
    if run.fatal and not keep_partial:
        rolled_back, restore_failed = _rollback(pid, target, use, tasks, run)
    off: list[tuple[int, CpuSet]] = []
    if converged and tail is not None and not run.failures:
        # the threads before the tail are pass 1's, on target; the tail's were handled now
        total = bound = max(0, tail.before + len(tail.tids) - len(sweep.gone))
        placed: dict[str, tuple[int, ...]] = {}
        exited = max(0, len(first) + tail.new - total)
    elif converged and tail is None:
        total, bound, placed = _tally(tids, use, sweep, run)
        # the threads listed last and not gone are all present, and every one was listed
        seen = len(first) if len(listings) == 1 else len(set().union(*listings))
        exited = seen - total
    else:
        # stopped by an error or out of passes: every thread re-read as it is now
        final = _survey(pid, target, use, tasks, run)
        total, bound, placed, off = final.total, final.bound, final.placed, final.off
        exited = len(set().union(*listings) - final.present)
    # liveness is judged AFTER the final listing: a process killed before this point is never
    # "verified", even when its last threads still showed their new masks
    if total == 0:
        dying = stopped = True
    elif type(tasks).alive is _STOCK_ALIVE:
        dying, stopped = _dying_stopped(pid, tasks.proc, strict=True)
    elif not tasks.alive(pid):
        dying = stopped = True
    else:
        dying, stopped = _dying_stopped(pid, tasks.proc)
    if dying:
        raise MissingError(
            _exited_text(pid, run),
            "start the worker again, then bind it (or launch it bound: ascendtune bind -- CMD)",
        )
    failures = list(run.failures.values())
    if not run.fatal:
        # no error stopped us, yet threads are off target: the process fights back
        for tid, cur in off:
            if tid not in run.failures:
                failures.append(
                    ThreadFailure(
                        tid,
                        f"still on CPUs {format_cpulist(cur)} after {passes} passes "
                        "(the process keeps changing it)",
                    )
                )
    # threads that ended while the process lives on are ordinary churn (worker pools come and
    # go); a process that is itself exiting was refused above
    verified = not failures and not off and not run.fatal
    return BindReport(
        pid=pid,
        target=target,
        use_roles=use,
        threads_total=total,
        threads_bound=bound,
        threads_failed=tuple(failures),
        passes=passes,
        verified=verified,
        threads_changed=len(run.previous),
        converged=converged,
        roles_placed=placed,
        rolled_back=rolled_back,
        restore_failed=restore_failed,
        threads_exited=exited,
        stopped=stopped,
    )


def _pass(
    pid: int,
    tids: Sequence[int],
    target: BindTarget,
    use: bool,
    tasks: Tasks,
    run: _Run,
    sweep: _Sweep,
    keep_partial: bool,
) -> int:
    """One pass over the listed threads; the number of masks written."""
    known, failed, gone = sweep.known, run.failures, sweep.gone
    pending, sweep.check = sweep.check, {}
    gone.clear()
    writes = 0
    if use:
        for tid in _main_first(pid, tids):
            if tid in failed:
                continue
            name = tasks.name(pid, tid)
            if name is None:
                gone.add(tid)
                continue
            role, want = target.thread_target(name, use_roles=True)
            had = known.get(tid)
            if had is not None:
                if had[1] == want:
                    if had[0] != role:
                        known[tid] = (role, want)
                    continue
                del known[tid]  # renamed into another role: a new target
            writes += _settle(tid, role, want, tasks, run, sweep, pending, keep_partial)
            if run.fatal:
                break
        return writes
    # without roles every thread has one target: the threads already on it are left out before
    # the loop, so a confirming pass costs next to nothing per thread
    role, want = target.thread_target(None, use_roles=False)
    order = _main_first(pid, [t for t in tids if t not in known] if known else tids)
    slow: Sequence[int] = ()
    if pending or failed:
        slow = [t for t in order if t in pending]  # written last pass: read back
        order = [t for t in order if t not in pending and t not in failed]
    if (
        type(tasks).get is _STOCK_GET
        and type(tasks).set is _STOCK_SET
        and not tasks._ctypes_get
        and len(want) <= tasks._os_set_max
    ):
        fresh = not run.previous  # no thread of this pass was written by an earlier one
        at = 0
        while True:
            done, bad = _pool_pass(order, at, role, want, run, sweep, fresh)
            writes += done
            if bad is None:
                break
            # the thread that raised: _settle reads it again and tells exited from refused
            writes += _settle(order[bad], role, want, tasks, run, sweep, pending, keep_partial)
            if run.fatal:
                return writes
            at = bad + 1
        order = ()
    for tid in [*order, *slow]:
        writes += _settle(tid, role, want, tasks, run, sweep, pending, keep_partial)
        if run.fatal:
            break
    return writes


def _pool_pass(
    order: Sequence[int], at: int, role: str, want: CpuSet, run: _Run, sweep: _Sweep, fresh: bool
) -> tuple[int, int | None]:
    """_settle for the threads of `order` from index `at` on, inline with the os calls Tasks
    makes on a host of up to 64 CPUs; the loop only reads and writes, the books are kept
    afterwards in bulk. Stops at the first thread that raises (exited, refused): (writes, its
    index, or None when none did). `fresh`: no thread here was written by an earlier pass."""
    getaff, setaff = os.sched_getaffinity, os.sched_setaffinity
    written: list[int] = []
    wrote = written.append
    runs: list[tuple[int, CpuSet]] = []  # (index into written, the old mask from there on)
    last: set[int] | None = None
    bad: int | None = None
    for tid in itertools.islice(order, at, None) if at else order:
        try:
            cur = getaff(tid)
            if cur == want:
                continue
            setaff(tid, want)
        except OSError:
            bad = tid
            break
        if cur != last:  # a process has a handful of distinct masks: freeze and test each once
            last = cur
            runs.append((len(written), frozenset(cur)))
        wrote(tid)
    stop = len(order) if bad is None else order.index(bad, at)
    entry = (role, want)
    known, check, previous = sweep.known, sweep.check, run.previous
    known.update(dict.fromkeys(order if at == 0 and bad is None else order[at:stop], entry))
    ends = [i for i, _old in runs[1:]] + [len(written)] * bool(runs)
    for (start, old), end in zip(runs, ends, strict=True):
        some = written[start:end]
        if fresh:
            previous.update(dict.fromkeys(some, old))
        else:
            for tid in some:
                previous.setdefault(tid, old)
        if not want <= old:
            for tid in some:  # the kernel may have narrowed these: read back next pass
                del known[tid]
                check[tid] = entry
    return len(written), (None if bad is None else stop)


def _settle(
    tid: int,
    role: str,
    want: CpuSet,
    tasks: Tasks,
    run: _Run,
    sweep: _Sweep,
    pending: dict[int, tuple[str, CpuSet]],
    keep_partial: bool,
) -> int:
    """Read one thread and write it when off target; 1 when written. A write the kernel cannot
    have narrowed (the target inside the mask read just before, itself inside the thread's
    cpuset) goes to `known`, any other to `check`, read back next pass."""
    cur = tasks.get(tid)
    if cur is None:
        sweep.gone.add(tid)
        return 0
    if cur == want:
        sweep.known[tid] = (role, want)
        return 0
    written = pending.get(tid)
    if written is not None and written[1] == want and cur < want:
        # written and read back as a part of its target: the kernel narrowed the mask to the
        # thread's cpuset instead of failing
        run.failures[tid] = ThreadFailure(
            tid,
            f"EINVAL: the kernel narrowed the mask to {format_cpulist(cur)} "
            f"(CPUs {format_cpulist(want - cur)} are outside the thread's cpuset)",
            "EINVAL",
        )
        run.fatal = run.fatal or not keep_partial
        return 0
    try:
        tasks.set(tid, want)
    except OSError as e:
        if e.errno == errno.ESRCH:
            sweep.gone.add(tid)
            return 0
        text, name_ = errno_text(e)
        if e.errno == errno.EINVAL:
            text += f" (no CPU of {format_cpulist(want)} is in the thread's cpuset)"
        run.failures[tid] = ThreadFailure(tid, text, name_)
        # EPERM holds for every thread of the process: stop rather than fail 1000 times
        run.fatal = run.fatal or not keep_partial or e.errno == errno.EPERM
        return 0
    run.previous.setdefault(tid, cur)
    if want <= cur:
        sweep.known[tid] = (role, want)
    else:
        sweep.check[tid] = (role, want)
    return 1


TAIL_MARGIN = 64  # at most this many threads of the last listing are read again


def tail_margin(n: int) -> int:
    """Threads of a last listing of `n` the tail reads again: up to one less may exit between
    pass 1 and the tail (else the whole folder is listed). A pass 1 over more threads lasts
    longer, so more may go meanwhile; over 100 a margin of 64 would be most of the listing."""
    return min(TAIL_MARGIN, max(16, n // 8))


@dataclass
class _Tail:
    """The end of /proc/PID/task from a position: `before` threads precede it."""

    before: int
    tids: list[int]
    new: int  # how many of them the last full listing did not show


def _list_tail(pid: int, names: list[str], tasks: Tasks) -> _Tail | None:
    """The threads from a little before the end of the last full listing `names` on, or None
    when that cannot be told (then list them all).

    The kernel lists /proc/PID/task in its thread-list order, to which a new thread is always
    appended, and a seek to position k walks k threads from the leader. So once the listing
    from k starts with a thread `names` showed, every thread born since is in it: a confirming
    pass reads a few dozen entries instead of every thread's (the listing costs about 0.4 us
    a thread, as much as a read and a write together).

    A listing read in chunks can skip a thread when one listed in an earlier chunk goes away
    before the next (the kernel then resumes by position). A thread leaves the list and the
    pid hash together, so the pass after such a listing finds it gone: the caller takes a tail
    only after a pass 1 that found no thread gone, and ends on one only if it found none."""
    margin = tail_margin(len(names))
    if type(tasks).list_names is not _STOCK_LIST or len(names) <= margin:
        return None
    k = len(names) - margin
    try:
        fd = os.open(f"{tasks.proc}/{pid}/task", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        os.lseek(fd, k + 2, os.SEEK_SET)  # positions 0 and 1 are "." and ".."
        got = os.listdir(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not got:
        return None
    last = set(names[k:])  # deaths shift the tail's first entry later, never earlier
    if got[0] not in last:
        return None  # `margin` or more exited: no thread to anchor on
    return _Tail(k, _tids(got), sum(1 for n in got if n not in last))


def _tally(
    tids: Sequence[int], use: bool, sweep: _Sweep, run: _Run
) -> tuple[int, int, dict[str, tuple[int, ...]]]:
    """(total, bound, roles placed) after a pass that wrote nothing: each thread it listed is
    then on target, gone, or failed (kept with --keep-partial)."""
    gone, failed = sweep.gone, run.failures
    total = len(tids) - len(gone)
    bound = total - (len(failed.keys() & set(tids)) if failed else 0)
    placed: dict[str, list[int]] = {}
    if use:
        known = sweep.known
        for tid in tids:
            got = known.get(tid)
            on = got is not None and tid not in gone and tid not in failed
            if on and got is not None and got[0] in ("acl", "release"):
                placed.setdefault(got[0], []).append(tid)
    return total, bound, {r: tuple(t) for r, t in placed.items()}


def _exited_text(pid: int, run: _Run) -> str:
    done = len(run.previous)
    return (
        f"process {pid} exited while it was being bound: nothing left to verify "
        f"({done} thread{'s' if done != 1 else ''} had been moved before it went)"
    )


def _read_proc(path: str, size: int) -> bytes:
    """The start of a /proc file in one read (a seq_file hands out what fits in one go)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def _stat_fields(pid: int, proc: str) -> list[str] | None:
    """The fields of the main thread's stat after the command name (state first); None when
    gone, [] when it cannot be read (then nothing can be told from it).

    /proc/PID/task/PID/stat, not /proc/PID/stat: the state and flags are the main thread's in
    both, but the process-wide file sums the CPU times of every thread (630 us at 4,000
    threads, 3 us for the thread's own)."""
    try:
        raw = _read_proc(f"{proc}/{pid}/task/{pid}/stat", 4096)
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    except OSError:
        return []
    return raw.rsplit(b")", 1)[-1].decode("ascii", "replace").split()


PF_EXITING = 0x4  # task->flags bit set once a thread has started to exit
SIGKILL_BIT = 1 << 8  # SIGKILL (9) in the SigPnd/ShdPnd masks


def process_dying(pid: int, proc: str = PROC) -> bool:
    """True when the process is gone, a zombie, already exiting, or has a SIGKILL pending.

    kill(SIGKILL) returns once the signal is queued on every thread; /proc/PID/stat still says
    "R" or "S" until the threads get to run, so the state alone lets a killed process pass as
    alive. The kernel queues SIGKILL on each thread (SigPnd) and sets PF_EXITING once one takes
    it: either shows the process is on its way out.
    """
    return _dying_stopped(pid, proc)[0]


def process_stopped(pid: int, proc: str = PROC) -> bool:
    """True when the process is stopped (SIGSTOP, or under a tracer)."""
    fields = _stat_fields(pid, proc)
    return fields is not None and bool(fields) and fields[0] in ("T", "t")


def _dying_stopped(pid: int, proc: str, *, strict: bool = False) -> tuple[bool, bool]:
    """(process_dying, process_stopped) from one read of stat and, if needed, one of status.
    `strict`: an unreadable stat counts as dying, as Tasks.alive has it (bind_process's final
    check then needs no read of its own)."""
    fields = _stat_fields(pid, proc)
    if fields is None or (fields and fields[0] in ("Z", "X", "x")):
        return True, False
    if strict and not fields:
        return True, True
    stopped = bool(fields) and fields[0] in ("T", "t")
    try:
        if int(fields[6]) & PF_EXITING:
            return True, stopped
    except (IndexError, ValueError):
        pass
    try:
        status = _read_proc(f"{proc}/{pid}/status", 1 << 16)
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return True, stopped
    except OSError:
        return False, stopped  # unreadable (hidepid, a policy): the other checks have spoken
    for key in (b"\nSigPnd:", b"\nShdPnd:"):
        at = status.find(key)
        if at < 0:
            continue
        end = status.find(b"\n", at + 1)
        try:
            if int(status[at + len(key) : end if end >= 0 else None].strip(), 16) & SIGKILL_BIT:
                return True, stopped
        except ValueError:
            pass
    return False, stopped


@dataclass
class _Survey:
    """Every thread re-read: how many, how many on target, role threads placed, the ones off
    target (tid, mask), and the tids read."""

    total: int
    bound: int
    placed: dict[str, tuple[int, ...]]
    off: list[tuple[int, CpuSet]]
    present: set[int]


def _survey(pid: int, target: BindTarget, use: bool, tasks: Tasks, run: _Run) -> _Survey:
    """Re-read every thread listed now."""
    tids = tasks.list_tids(pid) or []
    total = bound = 0
    placed: dict[str, list[int]] = {}
    off: list[tuple[int, CpuSet]] = []
    present: set[int] = set()
    for tid in _main_first(pid, tids):
        name = tasks.name(pid, tid) if use else None
        if use and name is None:
            continue
        role, want = target.thread_target(name, use_roles=use)
        cur = tasks.get(tid)
        if cur is None:
            continue
        present.add(tid)
        total += 1
        if cur == want:
            bound += 1
            if role in ("acl", "release"):
                placed.setdefault(role, []).append(tid)
        else:
            off.append((tid, cur))
    return _Survey(total, bound, {r: tuple(t) for r, t in placed.items()}, off, present)


def _rollback(
    pid: int, target: BindTarget, use: bool, tasks: Tasks, run: _Run
) -> tuple[tuple[int, ...], tuple[ThreadFailure, ...]]:
    """Put every changed thread back; threads born meanwhile on a new mask get the main
    thread's old mask (what they would have inherited). Returns (restored, failures)."""
    restored: list[int] = []
    failed: list[ThreadFailure] = []
    for tid, prev in reversed(list(run.previous.items())):
        try:
            tasks.set(tid, prev)
            restored.append(tid)
        except OSError as e:
            if e.errno != errno.ESRCH:
                text, name = errno_text(e)
                failed.append(ThreadFailure(tid, text, name))
    base = run.previous.get(pid)
    if base is not None:
        new_masks = target.masks(use_roles=use)
        initial = set(run.initial)
        for tid in tasks.list_tids(pid) or []:
            if tid in initial or tid in run.previous:
                continue
            cur = tasks.get(tid)
            if cur is not None and cur in new_masks and cur != base:
                try:
                    tasks.set(tid, base)
                    restored.append(tid)
                except OSError as e:
                    if e.errno != errno.ESRCH:
                        text, name = errno_text(e)
                        failed.append(ThreadFailure(tid, text, name))
    return tuple(restored), tuple(failed)


def survey_process(
    pid: int, target: BindTarget, *, use_roles: bool = True, tasks: Tasks | None = None
) -> BindReport:
    """The dry run: every thread with its current mask and the one it would get; no change."""
    tasks = tasks or Tasks()
    require_process(pid, tasks)
    use = use_roles and target.has_roles
    rows: list[ThreadRow] = []
    placed: dict[str, list[int]] = {}
    for tid in _main_first(pid, tasks.list_tids(pid) or []):
        name = tasks.name(pid, tid)
        cur = tasks.get(tid)
        if name is None or cur is None:
            continue
        role, want = target.thread_target(name, use_roles=use)
        rows.append(ThreadRow(tid, name, role, cur, want))
        if role in ("acl", "release"):
            placed.setdefault(role, []).append(tid)
    bound = sum(1 for r in rows if not r.changes)
    return BindReport(
        pid=pid,
        target=target,
        use_roles=use,
        threads_total=len(rows),
        threads_bound=bound,
        threads_failed=(),
        passes=0,
        verified=bound == len(rows),
        roles_placed={r: tuple(t) for r, t in placed.items()},
        dry_run=True,
        rows=tuple(rows),
    )


def thread_masks(pid: int, tasks: Tasks | None = None) -> dict[int, CpuSet]:
    """tid -> mask of every thread of pid present now (threads that exit meanwhile are left out)."""
    tasks = tasks or Tasks()
    out: dict[int, CpuSet] = {}
    for tid in tasks.list_tids(pid) or []:
        cur = tasks.get(tid)
        if cur is not None:
            out[tid] = cur
    return out


def thread_names_and_masks(pid: int, tasks: Tasks | None = None) -> list[tuple[int, str, CpuSet]]:
    """(tid, name, mask) of every thread of pid present now, main thread first (`bind --show`)."""
    tasks = tasks or Tasks()
    out: list[tuple[int, str, CpuSet]] = []
    for tid in _main_first(pid, tasks.list_tids(pid) or []):
        name, cur = tasks.name(pid, tid), tasks.get(tid)
        if name is not None and cur is not None:
            out.append((tid, name, cur))
    return out


# ---- memory ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigrateResult:
    argv: tuple[str, ...]
    ok: bool
    error: str | None = None


def migratepages_path() -> str | None:
    return runner.which("migratepages")


def numactl_path() -> str | None:
    return runner.which("numactl")


def nodes_text(nodes: Sequence[int]) -> str:
    return format_cpulist(nodes)


def migrate_memory(pid: int, nodes: Sequence[int], exe: str) -> MigrateResult:
    """Move every page of `pid` to `nodes` with `migratepages PID all NODES`."""
    argv = [exe, str(pid), "all", nodes_text(nodes)]
    try:
        done = runner.run(argv, timeout=MIGRATE_TIMEOUT_S)
    except (runner.CommandTimeout, OSError) as e:
        return MigrateResult(tuple(argv), False, str(e))
    if done.returncode != 0:
        msg = done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        return MigrateResult(tuple(argv), False, msg.splitlines()[0])
    return MigrateResult(tuple(argv), True)


# ---- launching a command bound ----------------------------------------------------------------


def resolve_command(name: str) -> str | None:
    """The program execvp would run for `name`, None when there is none."""
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name)


def set_own_affinity(cpus: CpuSet) -> None:
    """Bind the calling thread (the one that will exec) to `cpus`."""
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        text, _ = errno_text(e)
        if e.errno == errno.EINVAL:
            raise InvalidInput(
                f"cannot bind to CPUs {format_cpulist(cpus)}: {text}",
                f"this process may use CPUs {format_cpulist(os.sched_getaffinity(0))}",
            ) from None
        if e.errno == errno.EPERM:
            raise PermissionDenied(f"cannot bind this process: {text}", EPERM_HINT) from None
        raise


def exec_command(argv: Sequence[str]) -> NoReturn:
    """Replace this process with argv (no shell; PATH lookup as execvp does)."""
    try:
        os.execvp(argv[0], list(argv))
    except FileNotFoundError:
        raise MissingError(f"command not found: {argv[0]}") from None
    except PermissionError as e:
        raise PermissionDenied(f"cannot run {argv[0]}: {errno_text(e)[0]}") from None
    except OSError as e:
        raise InvalidInput(f"cannot run {argv[0]}: {errno_text(e)[0]}") from None
