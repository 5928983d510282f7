"""`bind --workers --watch`: keep one plan applied to every worker of a running server (threads
born since, workers restarted under a new PID on the same device) until a duration has passed or
SIGINT/SIGTERM; counters only, so a watch running for days holds no history."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ascendtune.app.workers import (
    WorkerOutcome,
    WorkersOptions,
    bind_worker,
    discover,
    require_live,
    resolve_targets,
    unbound,
)
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.core.binders.attribution import Attributor
    from ascendtune.core.workerfacts import WorkerFacts
    from ascendtune.host.affinity import Tasks
    from ascendtune.host.roots import Root


@dataclass(frozen=True)
class WatchEvent:
    at: float  # wall-clock time (time.time())
    kind: str  # "bound", "threads", "restarted", "gone", "failed", "tool", "stopped"
    pid: int | None
    device: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.at))
            + f".{int(self.at * 1000) % 1000:03d}",
            "kind": self.kind,
            "pid": self.pid,
            "device": self.device,
            "message": self.message,
        }

    def line(self) -> str:
        return f"{self.to_json()['time']} {self.message}"


@dataclass
class WatchSummary:
    """Counters only, so a watch running for days holds no history."""

    ticks: int = 0
    threads_bound: int = 0  # threads moved onto the plan after the first tick
    restarts: int = 0  # a worker back on its device under a new PID, or a reused PID
    failures: int = 0
    workers: dict[int, int] = field(default_factory=dict)  # device -> current pid
    tool_failures: int = 0  # passes whose vendor tool failed (hung, unparsable)
    tool_failing: bool = False  # the last pass's tool failed: it has not recovered

    def to_json(self) -> dict[str, Any]:
        return {
            "ticks": self.ticks,
            "threads_bound": self.threads_bound,
            "restarts": self.restarts,
            "failures": self.failures,
            "tool_failures": self.tool_failures,
            "tool_failing": self.tool_failing,
            "workers": {str(d): p for d, p in sorted(self.workers.items())},
        }


MAX_DURATION_S = 366 * 86400.0


def parse_duration(text: str) -> float:
    """`--for 90`, `30s`, `10m`, `2h`, `1d` -> seconds."""
    t = text.strip().lower()
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    scale = 1.0
    if t and t[-1] in units:
        scale, t = units[t[-1]], t[:-1]
    try:
        value = float(t)
    except ValueError:
        raise UsageError(f"--for {text}: expected a duration such as 90, 30s, 10m, 2h") from None
    if value <= 0:
        raise UsageError(f"--for {text}: a duration is more than 0")
    if not value * scale <= MAX_DURATION_S:  # nan, inf, 1e308: time.sleep would refuse them
        raise UsageError(
            f"--for {text}: expected a duration such as 90, 30s, 10m, 2h, up to a year"
        )
    return value * scale


@contextmanager
def _stop_on_signals(flag: list[bool]) -> Iterator[None]:
    """SIGINT/SIGTERM set the flag; the loop stops between workers, never inside one."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_sig: int, _frame: object) -> None:
        flag[0] = True

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def watch_workers(
    opts: WorkersOptions,
    *,
    interval_s: float = 2.0,
    duration_s: float | None = None,
    on_event: Callable[[WatchEvent], None] = lambda e: None,
    root: Root | None = None,
    tasks: Tasks | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    should_stop: Callable[[], bool] = lambda: False,
    handle_signals: bool = True,
) -> WatchSummary:
    """Every interval: find the workers, bind threads that appeared, rebind a worker restarted
    under a new PID on the same device (or a new process under a reused PID); until duration_s
    has passed, should_stop() or a signal. The plan is computed once, at the start, for the
    devices as they are then.

    Each pass has its own budget for the vendor tool; a pass whose tool fails (hangs, prints a
    line that does not parse) is said once (a "tool" event) and retried the next pass, the
    workers it can no longer see kept as they were (not reported gone). The watch holds this
    host's workers lock (one `bind --workers` at a time) for its whole life."""
    from ascendtune.app.hosts import open_root
    from ascendtune.app.workers import workers_lock

    if opts.dry_run:
        raise UsageError("--watch keeps binding: it does not go with --dry-run")
    if interval_s <= 0:
        raise UsageError(f"--interval {interval_s}: expected more than 0 seconds")
    if root is None:
        root = open_root(opts.source)
    require_live(root, False)
    with workers_lock():
        return _watch(
            opts, root, interval_s, duration_s, on_event, tasks, clock, wall, sleep,
            should_stop, handle_signals,
        )  # fmt: skip


def _watch(
    opts: WorkersOptions,
    root: Root,
    interval_s: float,
    duration_s: float | None,
    on_event: Callable[[WatchEvent], None],
    tasks: Tasks | None,
    clock: Callable[[], float],
    wall: Callable[[], float],
    sleep: Callable[[float], None],
    should_stop: Callable[[], bool],
    handle_signals: bool,
) -> WatchSummary:
    host, _ = discover(root)
    targets = resolve_targets(opts, root, host)
    deadline = None if duration_s is None else clock() + duration_s
    summary = WatchSummary()
    flag = [False]
    # device -> (pid, start time) of the last worker seen on it, kept while it is gone, so a
    # worker that comes back under a new PID (or a new process under the old PID) is a restart
    last: dict[int, tuple[int, str]] = {}

    def stopping() -> bool:
        return flag[0] or should_stop() or (deadline is not None and clock() >= deadline)

    def emit(kind: str, w: WorkerOutcome | None, message: str) -> None:
        on_event(WatchEvent(wall(), kind, w.pid if w else None, w.device if w else None, message))

    guard = _stop_on_signals(flag) if handle_signals else _nothing()
    locks = _WorkerLocks()  # every watched worker's binder lock, held while it is watched
    who = _Who(root)  # who set the masks of threads put back: each worker's chain, read once
    with guard, locks:
        while True:
            summary.ticks += 1
            root.renew_tool_budget()  # a budget per pass: a watch runs for hours
            workers, trouble = _discover(root)
            if trouble is not None:
                summary.tool_failures += 1
                if not summary.tool_failing:
                    emit("tool", None, f"{trouble}; retrying every pass, workers kept as they were")
                summary.tool_failing = True
            elif summary.tool_failing:
                summary.tool_failing = False
                emit("tool", None, "the vendor tool answers again")
            seen: dict[int, int] = {}
            for wf in workers:
                if flag[0] or should_stop():
                    break  # between workers: none is left half-bound
                taken = locks.take(wf.pid, _start_time(root, wf.pid))
                if taken is not None:  # another ascendtune binds it: left to that one
                    o = unbound(wf, taken, dry_run=False)
                else:
                    o = bind_worker(
                        wf,
                        targets,
                        root=root,
                        dry_run=False,
                        use_roles=opts.use_roles,
                        max_passes=opts.max_passes,
                        tasks=tasks,
                        lock=False,
                    )
                dev = o.device
                word = f"device {dev}" if dev is not None else f"PID {o.pid}"
                before = last.get(dev) if dev is not None else None
                started = _start_time(root, o.pid)
                if dev is not None:
                    seen[dev] = o.pid
                    last[dev] = (o.pid, started)
                if not o.ok:
                    summary.failures += 1
                    emit("failed", o, f"PID {o.pid} ({word}): not bound: {o.error}")
                elif before is not None and before != (o.pid, started):
                    summary.restarts += 1
                    if before[0] == o.pid:
                        how = f"PID {o.pid} reused by a new process"
                    else:
                        how = f"PID {before[0]} -> {o.pid}"
                    emit(
                        "restarted",
                        o,
                        f"{word}: worker restarted, {how}, "
                        f"{o.threads_bound} threads bound to CPUs {_cpus(o)}",
                    )
                elif before is None:
                    emit(
                        "bound",
                        o,
                        f"PID {o.pid} ({word}, rank {o.rank}): {o.threads_bound}/"
                        f"{o.threads_total} threads on CPUs {_cpus(o)}, {o.threads_changed} "
                        "moved",
                    )
                elif o.changed:
                    summary.threads_bound += o.threads_changed
                    found = who.masks_found(o, started)
                    emit(
                        "threads",
                        o,
                        f"PID {o.pid} ({word}): {o.threads_changed} new or "
                        f"moved thread(s) put back on CPUs {_cpus(o)}"
                        + (f"; the masks they were on: {found}" if found else ""),
                    )
            for dev, pid in summary.workers.items():
                if dev not in seen and not flag[0] and trouble is None:
                    on_event(
                        WatchEvent(
                            wall(),
                            "gone",
                            pid,
                            dev,
                            f"device {dev}: PID {pid} is gone; waiting for its restart",
                        )
                    )
            if flag[0] or trouble is not None:
                summary.workers = {**summary.workers, **seen}
            else:
                summary.workers = seen
                locks.keep(set(seen.values()))
                who.keep(set(seen.values()))
            if stopping():
                break
            left = interval_s if deadline is None else min(interval_s, deadline - clock())
            if left > 0 and sleep is time.sleep:
                # in slices: a signal handler that returns does not cut time.sleep short
                end = clock() + left
                while not flag[0] and not should_stop() and clock() < end:
                    time.sleep(min(0.2, max(0.0, end - clock())))
            elif left > 0:
                sleep(left)
            if stopping():
                break
    on_event(
        WatchEvent(
            wall(),
            "stopped",
            None,
            None,
            f"watch stopped after {summary.ticks} "
            f"pass(es): {summary.threads_bound} threads rebound, {summary.restarts} "
            "restart(s)"
            + (
                f", the vendor tool failed in {summary.tool_failures}"
                if summary.tool_failures
                else ""
            ),
        )
    )
    return summary


class _Who:
    """Who set the masks of the threads a pass puts back, where the worker's binder chain can
    tell (core.binders.attribution): the chain is read once per process (again when a worker
    restarts), never per pass, and only for a pass that moved threads."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.chains: dict[int, tuple[str, Attributor]] = {}  # pid -> (start time, its chain)

    def masks_found(self, o: WorkerOutcome, started: str) -> str:
        from ascendtune.core.binders.attribution import Attributor

        if not o.moved:
            return ""
        had = self.chains.get(o.pid)
        if had is None or had[0] != started:
            from ascendtune.app.binders import chains_of

            got = chains_of(self.root, [o.pid]).get(o.pid, "not read")
            att = Attributor(None, o.pid, got) if isinstance(got, str) else Attributor(got, o.pid)
            self.chains[o.pid] = (started, att)
        else:
            att = had[1]
        counts: dict[str, int] = {}
        for tid, mask in o.moved:  # a few threads: their names only are read
            name = (self.root.read_text(f"proc/{o.pid}/task/{tid}/comm") or "").strip()
            words = f"{format_cpulist(mask)} ({att.attribute(tid, name, mask).words})"
            counts[words] = counts.get(words, 0) + 1
        return ", ".join(f"{n} on {w}" for w, n in counts.items())

    def keep(self, pids: set[int]) -> None:
        for pid in [p for p in self.chains if p not in pids]:
            del self.chains[pid]


class _WorkerLocks:
    """The binder locks of the workers a watch keeps bound: taken at a worker's first pass,
    released once it is gone, so `bind --pid` on a watched worker is refused, naming the watch,
    instead of being undone at the next pass."""

    def __init__(self) -> None:
        self.held: dict[int, tuple[str, contextlib.ExitStack]] = {}

    def __enter__(self) -> _WorkerLocks:
        return self

    def __exit__(self, *_exc: object) -> None:
        for _started, stack in self.held.values():
            stack.close()
        self.held.clear()

    def take(self, pid: int, started: str) -> str | None:
        """Hold pid's lock (already held: nothing to do); the error when another holds it."""
        from ascendtune.core.errors import AscendtuneError
        from ascendtune.host.affinity.lock import process_lock

        had = self.held.get(pid)
        if had is not None and had[0] == started:
            return None
        if had is not None:  # a reused PID: the old process's lock goes
            had[1].close()
            del self.held[pid]
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(process_lock(pid))
        except AscendtuneError as e:
            stack.close()
            return e.message
        self.held[pid] = (started, stack)
        return None

    def keep(self, pids: set[int]) -> None:
        """Release the locks of workers no longer seen."""
        for pid in [p for p in self.held if p not in pids]:
            self.held.pop(pid)[1].close()


def _discover(root: Root) -> tuple[list[WorkerFacts], str | None]:
    """This pass's workers, and what went wrong with the vendor tool (None: nothing). A tool
    that fails leaves the workers found by their open device files."""
    from ascendtune.core.errors import AscendtuneError

    try:
        host, workers = discover(root)
    except AscendtuneError as e:
        return [], f"worker discovery failed this pass: {e.message}"
    if host.tool_errors:
        return workers, f"{host.tool_errors[0]}"
    return workers, None


def _start_time(root: Root, pid: int) -> str:
    """/proc/PID/stat field 22 (start time since boot): tells a reused PID from its first
    process; "" when unreadable."""
    fields = (root.read_text(f"proc/{pid}/stat") or "").rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


def _cpus(o: WorkerOutcome) -> str:
    return format_cpulist(o.target.cpus) if o.target is not None else "?"


@contextmanager
def _nothing() -> Iterator[None]:
    yield
