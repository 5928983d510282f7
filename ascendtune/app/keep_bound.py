"""`bind --workers --watch`: keep one plan applied to every worker of a running server (threads
born since, workers restarted under a new PID on the same device) until a duration has passed or
SIGINT/SIGTERM; counters only, so a watch running for days holds no history."""

from __future__ import annotations

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
)
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.errors import UsageError

if TYPE_CHECKING:
    from ascendtune.host.affinity import Tasks
    from ascendtune.host.roots import Root


@dataclass(frozen=True)
class WatchEvent:
    at: float  # wall-clock time (time.time())
    kind: str  # "bound", "threads", "restarted", "gone", "failed", "stopped"
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
    restarts: int = 0
    failures: int = 0
    workers: dict[int, int] = field(default_factory=dict)  # device -> current pid

    def to_json(self) -> dict[str, Any]:
        return {
            "ticks": self.ticks,
            "threads_bound": self.threads_bound,
            "restarts": self.restarts,
            "failures": self.failures,
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
    under a new PID on the same device; until duration_s has passed, should_stop() or a signal.
    The plan is computed once, at the start, for the devices as they are then."""
    from ascendtune.app.hosts import open_root

    if opts.dry_run:
        raise UsageError("--watch keeps binding: it does not go with --dry-run")
    if interval_s <= 0:
        raise UsageError(f"--interval {interval_s}: expected more than 0 seconds")
    if root is None:
        root = open_root(opts.source)
    require_live(root, False)
    host, _ = discover(root)
    targets = resolve_targets(opts, root, host)
    deadline = None if duration_s is None else clock() + duration_s
    summary = WatchSummary()
    flag = [False]

    def stopping() -> bool:
        return flag[0] or should_stop() or (deadline is not None and clock() >= deadline)

    def emit(kind: str, w: WorkerOutcome | None, message: str) -> None:
        on_event(WatchEvent(wall(), kind, w.pid if w else None, w.device if w else None, message))

    guard = _stop_on_signals(flag) if handle_signals else _nothing()
    with guard:
        while True:
            summary.ticks += 1
            _, workers = discover(root)
            seen: dict[int, int] = {}
            for wf in workers:
                if flag[0] or should_stop():
                    break  # between workers: none is left half-bound
                o = bind_worker(
                    wf,
                    targets,
                    root=root,
                    dry_run=False,
                    use_roles=opts.use_roles,
                    max_passes=opts.max_passes,
                    tasks=tasks,
                )
                dev = o.device
                word = f"device {dev}" if dev is not None else f"PID {o.pid}"
                if dev is not None:
                    seen[dev] = o.pid
                old = summary.workers.get(dev) if dev is not None else None
                if not o.ok:
                    summary.failures += 1
                    emit("failed", o, f"PID {o.pid} ({word}): not bound: {o.error}")
                elif dev is not None and old is not None and old != o.pid:
                    summary.restarts += 1
                    emit(
                        "restarted",
                        o,
                        f"{word}: worker restarted, PID {old} -> {o.pid}, "
                        f"{o.threads_bound} threads bound to CPUs {_cpus(o)}",
                    )
                elif old is None:
                    emit(
                        "bound",
                        o,
                        f"PID {o.pid} ({word}, rank {o.rank}): {o.threads_bound}/"
                        f"{o.threads_total} threads on CPUs {_cpus(o)}, {o.threads_changed} "
                        "moved",
                    )
                elif o.changed:
                    summary.threads_bound += o.threads_changed
                    emit(
                        "threads",
                        o,
                        f"PID {o.pid} ({word}): {o.threads_changed} new or "
                        f"moved thread(s) put back on CPUs {_cpus(o)}",
                    )
            for dev, pid in summary.workers.items():
                if dev not in seen and not flag[0]:
                    on_event(
                        WatchEvent(
                            wall(),
                            "gone",
                            pid,
                            dev,
                            f"device {dev}: PID {pid} is gone; waiting for its restart",
                        )
                    )
            summary.workers = seen if not flag[0] else {**summary.workers, **seen}
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
            "restart(s)",
        )
    )
    return summary


def _cpus(o: WorkerOutcome) -> str:
    return format_cpulist(o.target.cpus) if o.target is not None else "?"


@contextmanager
def _nothing() -> Iterator[None]:
    yield
