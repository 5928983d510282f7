"""Binding every thread of a running process to its target, verified.

Linux affinity is per thread and a new thread inherits its creator's mask, so one sweep over
/proc/PID/task (what `taskset -a -p` does) leaves behind any thread born meanwhile from a thread
not yet moved. `bind_process` therefore moves the main thread first, then lists the threads again
and handles what is new until a pass has nothing to write (see bind_process for what is read
again and what a successful write is taken to mean).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ascendtune.core.bindplan import ROLE_THREADS, BindReport, BindTarget, ThreadFailure
from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.errors import MissingError
from ascendtune.host.affinity.masks import (
    STOCK_ALIVE,
    STOCK_GET,
    STOCK_LIST,
    STOCK_NAME,
    STOCK_SET,
    STOCK_TGID,
    Tasks,
    ThreadNames,
    affinity_native,
    errno_text,
    main_first,
    thread_names,
    tids_of,
)
from ascendtune.host.affinity.process import dying_stopped, refuse_zombie, require_process

DEFAULT_MAX_PASSES = 16
# the window a written thread is watched for before the final re-read: long enough for a thread
# (or a tool) that resets masks in a loop to show itself, short next to a bind's start-up. It
# runs from the last write, and the passes and re-reads since count (see _final_read).
VERIFY_SETTLE_S = 0.01
# the compiled loops (_affinityc.c) from this many threads on: loading them costs 0.2-0.3 ms once
# per process, what they save (about 1 us a thread) at 200-300 threads
NATIVE_FROM = 256
FIGHT_ROUNDS = 2  # a thread found off by the final re-read is written this many times more
RESET_TEXT = "something keeps resetting this mask"
LATE_TEXT = "born after the last pass"


# ---- binding a running process ----------------------------------------------------------------


@dataclass
class _Run:
    """Mutable state of one binding attempt."""

    previous: dict[int, CpuSet]  # tid -> mask before we changed it, in change order
    failures: dict[int, ThreadFailure]
    initial: Sequence[int]  # the first listing (a set only if a rollback needs one)
    fatal: bool = False
    last_write: float = 0.0  # time.monotonic() at the end of the last pass or round that wrote
    # the threads' names, read through the stock Tasks.name's files (binding by roles), kept
    # open from pass 1 to the final re-read (ThreadNames); closed by finish_bind
    names: ThreadNames | None = None
    # /proc/PID/task opened by the first tail listing, kept for the final re-read's (one open
    # fewer after the window); closed by finish_bind
    task_dir: int | None = None

    def close(self) -> None:
        if self.names is not None:
            self.names.close()
        if self.task_dir is not None:
            fd, self.task_dir = self.task_dir, None
            os.close(fd)


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
    meanwhile: Callable[[], object] | None = None,
) -> BindReport:
    """Put every thread of `pid` on its target mask, verify, and report.

    Pass 1 reads each listed thread's mask (kept for a rollback) and writes the ones off target.
    Each later pass lists the threads again and handles only what the last one left open: a
    thread not seen before (born meanwhile, possibly on an old mask inherited from a creator not
    yet moved), a write to read back (see _Sweep); a thread on target is not read again, its
    name neither. A pass that writes nothing ends it: every thread it listed is on target, and
    any thread born since was born of one on target. A write that succeeded is not read again
    where the kernel cannot have changed it, and the second listing is only the end of
    /proc/PID/task (_list_tail): about one mask read and one write per thread (by roles, one
    name read more), one full listing.

    Then every thread is read again (after VERIFY_SETTLE_S when masks were written): `verified`
    means that final re-read matched (SPEC section 3). A thread found off after a pass that wrote
    nothing (renamed into another role since it was written, or reset) is written again,
    FIGHT_ROUNDS times at most; still off, something keeps resetting its mask (the process
    itself, a taskset loop): reported as such. Out of passes, the threads born since the last
    one are reported as not bound. Either way the bind did not finish, and what it moved goes
    back unless keep_partial.

    A thread that exits meanwhile is skipped. On EPERM/EINVAL the attempt stops and every thread
    changed so far goes back to its previous mask, unless keep_partial (then the other threads
    are still bound and each failure is reported).

    `meanwhile`: work the caller has to do anyway (imports for its output), run inside the
    window before the final re-read instead of after it (see _final_read).
    """
    return finish_bind(
        begin_bind(
            pid,
            target,
            use_roles=use_roles,
            keep_partial=keep_partial,
            max_passes=max_passes,
            tasks=tasks,
        ),
        meanwhile,
    )


def begin_bind(
    pid: int,
    target: BindTarget,
    *,
    use_roles: bool = True,
    keep_partial: bool = False,
    max_passes: int = DEFAULT_MAX_PASSES,
    tasks: Tasks | None = None,
) -> PendingBind:
    """bind_process up to its final re-read: every pass, nothing verified yet (finish_bind
    does the rest)."""
    tasks = tasks or Tasks()
    kind = type(tasks)
    names: list[str] | None = None
    if kind.tgid is STOCK_TGID and kind.list_names is STOCK_LIST:
        # /proc/PID/task lists the thread group's leader first: when that is pid, pid is a
        # process (what require_process reads from status), and the listing is pass 1's
        names = tasks.list_names(pid)
        if names and names[0] == str(pid):
            refuse_zombie(pid, tasks.proc)
        else:
            require_process(pid, tasks)  # no such process, or a thread: its error
            names = tasks.list_names(pid)
    else:
        require_process(pid, tasks)
        names = tasks.list_names(pid)
    use = use_roles and target.has_roles
    if names is None:
        raise MissingError(f"process {pid} exited before it could be bound")
    first = tids_of(names)
    run = _Run(previous={}, failures={}, initial=first)
    if use and type(tasks).name is STOCK_NAME:
        run.names = thread_names(tasks.proc, pid)
    try:
        return _passes(pid, target, use, keep_partial, max_passes, tasks, names, first, run)
    except BaseException:
        run.close()
        raise


def _passes(
    pid: int,
    target: BindTarget,
    use: bool,
    keep_partial: bool,
    max_passes: int,
    tasks: Tasks,
    names: list[str],
    first: list[int],
    run: _Run,
) -> PendingBind:
    """begin_bind's passes, from pass 1's listing `names` (`first`, its tids)."""
    sweep = _Sweep()
    listings = [first]  # every distinct listing, for threads_exited
    passes = 0
    converged = False
    tids: Sequence[int] = first
    tail: _Tail | None = None
    anchor: list[str] | None = None  # pass 1's listing, when the final re-read may take a tail
    while passes < max(1, max_passes) and not run.fatal:
        passes += 1
        tail = None
        if passes == 2 and not run.failures and not sweep.gone:
            # pass 1 saw no thread gone: then no thread listed went away while the folder was
            # read in chunks, the one way a listing skips a thread (see _list_tail). By roles
            # too: a thread on target is not read again either way, its name neither (16
            # workers x 500 threads: 16 full listings fewer, about 5 ms)
            tail = _list_tail(pid, names, tasks, run)
        if tail is not None:
            # the threads not listed again were listed in pass 1; those it left open are read
            tids = tail.tids + [t for t in sweep.check if t not in tail.tids]
            listings.append(tail.tids)
        elif passes > 1:
            again = tasks.list_names(pid)
            if again is None:
                raise MissingError(_exited_text(pid, run))
            if again != names:  # else the same threads as last time: the same tids
                names, tids = again, tids_of(again)
                listings.append(tids)
                anchor = None  # pass 1's listing is no longer the last full one
        writes = _pass(pid, tids, target, use, tasks, run, sweep, keep_partial)
        if writes:
            run.last_write = time.monotonic()
        if passes == 1 and not sweep.gone and not run.failures:
            anchor = names  # pass 1 read every thread it listed and found none gone
        if run.fatal:
            break
        if writes == 0 and not (tail is not None and sweep.gone):
            converged = True
            break
    return PendingBind(
        pid,
        target,
        use,
        keep_partial,
        tasks,
        run,
        sweep,
        listings,
        tids,
        tail,
        passes,
        converged,
        anchor=anchor,
    )


@dataclass
class PendingBind:
    """A bind whose passes are done and whose final re-read is still to come (begin_bind).

    finish_bind re-reads every thread once VERIFY_SETTLE_S has passed since this bind's last
    write: binding many processes (`bind --workers`) runs every process's passes first, waits
    once (settle) and then finishes each, so every thread written has had at least the window
    by its re-read."""

    pid: int
    target: BindTarget
    use: bool
    keep_partial: bool
    tasks: Tasks
    run: _Run
    sweep: _Sweep
    listings: list[list[int]]
    tids: Sequence[int]
    tail: _Tail | None
    passes: int
    converged: bool
    # the last full listing of the threads, when pass 1 read every thread of it and found none
    # gone (so it skipped none: see _list_tail): the final re-read then lists only the tail
    anchor: list[str] | None = None

    after: CpuSet | None = None  # every mask the final re-read found, merged (finish_bind)

    def close(self) -> None:
        """Close what the passes hold open for the final re-read (finish_bind does; a bind
        begun and never finished must)."""
        self.run.close()

    @property
    def fatal(self) -> bool:
        """A write was refused (EPERM/EINVAL): finish it at once, so what it moved goes back."""
        return self.run.fatal

    def before(self) -> CpuSet:
        """Every mask the passes found, merged: each written thread's previous mask, the target
        of each found on it (no thread is read again for it)."""
        previous = self.run.previous
        seen = set(previous.values())
        seen.update(w for t, (_r, w) in self.sweep.known.items() if t not in previous)
        return frozenset().union(*seen)


def settle(pending: Sequence[PendingBind], meanwhile: Callable[[], object] | None = None) -> None:
    """Wait once until VERIFY_SETTLE_S has passed since the last write of every bind begun:
    their finish_bind then re-reads at once (each one's own window has passed too).
    `meanwhile` runs first, inside the window (see _final_read)."""
    last = max((p.run.last_write for p in pending if p.run.previous), default=None)
    if last is not None and VERIFY_SETTLE_S > 0:
        _run_meanwhile(meanwhile)
        left = VERIFY_SETTLE_S - (time.monotonic() - last)
        if left > 0:
            time.sleep(left)


def finish_bind(p: PendingBind, meanwhile: Callable[[], object] | None = None) -> BindReport:
    """The final re-read of a bind begun by begin_bind, its fight rounds, rollback and report
    (see bind_process; `meanwhile` runs inside the window before the first re-read)."""
    try:
        return _finish(p, meanwhile)
    finally:
        p.close()


def _finish(p: PendingBind, meanwhile: Callable[[], object] | None) -> BindReport:
    pid, target, use, keep_partial, tasks = p.pid, p.target, p.use, p.keep_partial, p.tasks
    run, sweep, tids, tail = p.run, p.sweep, p.tids, p.tail
    passes, converged, listings = p.passes, p.converged, p.listings
    rolled_back: tuple[int, ...] = ()
    restore_failed: tuple[ThreadFailure, ...] = ()
    rounds = 0
    if run.fatal:
        if not keep_partial:
            rolled_back, restore_failed = _rollback(pid, target, use, tasks, run)
        final = _survey(pid, target, use, tasks, run)
    elif converged and not run.previous and tail is None:
        # pass 1 read every thread, found each on target and wrote nothing: it is the re-read
        total, bound, placed = _tally(tids, use, sweep, run)
        present = set(tids) - sweep.gone
        on = {got[1] for t in present if (got := sweep.known.get(t)) is not None}
        final = _Survey(total, bound, placed, [], present, on)
    else:
        # `verified` is the final re-read of every thread (SPEC section 3), a moment after the
        # last write so that a process (or another tool) that resets masks shows itself
        final = _final_read(pid, target, use, tasks, run, p.anchor, meanwhile)
        while converged and final.total and rounds < FIGHT_ROUNDS:
            # off again after a pass that wrote nothing: written once more, and re-read
            retry = [o for o in final.off if o[0] not in run.failures]
            if not retry:
                break
            rounds += 1
            for tid, _cur, role, want in retry:
                _settle(tid, role, want, tasks, run, sweep, {}, keep_partial)
                if run.fatal:
                    break
            run.last_write = time.monotonic()
            if run.fatal:
                break
            final = _final_read(pid, target, use, tasks, run, p.anchor)
    off = final.off
    failures = list(run.failures.values())
    if not run.fatal:
        for tid, cur, _role, _want in off:
            if tid in run.failures:
                continue
            if tid in run.previous:
                why = (
                    f"{RESET_TEXT}: back on CPUs {format_cpulist(cur)} "
                    f"after it was bound ({rounds + 1} write(s))"
                )
            else:
                why = (
                    f"{LATE_TEXT}, on CPUs {format_cpulist(cur)} (not bound "
                    f"within {passes} pass(es))"
                )
            failures.append(ThreadFailure(tid, why))
        if off and not keep_partial and run.previous:
            # it cannot finish: what it moved goes back (--keep-partial keeps it)
            rolled_back, restore_failed = _rollback(pid, target, use, tasks, run)
            final = _survey(pid, target, use, tasks, run)
    p.after = frozenset().union(*final.masks)
    total, bound, placed = final.total, final.bound, final.placed
    exited = len(set().union(*listings) - final.present)
    # liveness is judged AFTER the final listing: a process killed before this point is never
    # "verified", even when its last threads still showed their new masks
    if total == 0:
        dying = stopped = True
    elif type(tasks).alive is STOCK_ALIVE:
        dying, stopped = dying_stopped(pid, tasks.proc, strict=True)
    elif not tasks.alive(pid):
        dying = stopped = True
    else:
        dying, stopped = dying_stopped(pid, tasks.proc)
    if dying:
        raise MissingError(
            _exited_text(pid, run),
            "start the worker again, then bind it (or launch it bound: ascendtune bind -- CMD)",
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
        # a thread already on its target is not read again, its name no more than its mask
        # (about 8,000 name reads saved at 16 workers x 500 threads): one renamed into another
        # role since is found off by the final re-read, which reads every name, and written
        # again there (bind_process)
        role_of = _role_targets(target, tasks, pid, run)
        order = main_first(pid, [t for t in tids if t not in known] if known else tids)
        if not pending and _stock_io(tasks, target.masks(use_roles=True)):
            return _roles_pass(order, role_of, tasks, run, sweep, keep_partial)
        for tid in order:
            if tid in failed:
                continue
            got = role_of(tid)
            if got is None:
                gone.add(tid)
                continue
            writes += _settle(tid, got[0], got[1], tasks, run, sweep, pending, keep_partial)
            if run.fatal:
                break
        return writes
    # without roles every thread has one target: the threads already on it are left out before
    # the loop, so a confirming pass costs next to nothing per thread
    role, want = target.thread_target(None, use_roles=False)
    order = main_first(pid, [t for t in tids if t not in known] if known else tids)
    slow: Sequence[int] = ()
    if pending or failed:
        slow = [t for t in order if t in pending]  # written last pass: read back
        order = [t for t in order if t not in pending and t not in failed]
    if _stock_io(tasks, (want,)):
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


def _stock_io(tasks: Tasks, wants: Iterable[CpuSet]) -> bool:
    """Whether the stock Tasks.get and Tasks.set would make plain os calls for these targets
    (a host of up to 64 CPUs, targets of up to 16): the inline loops make them instead."""
    kind = type(tasks)
    return (
        kind.get is STOCK_GET
        and kind.set is STOCK_SET
        and not tasks._ctypes_get
        and all(len(w) <= tasks._os_set_max for w in wants)
    )


def _roles_pass(
    order: Sequence[int],
    role_of: Callable[[int], tuple[str, CpuSet] | None],
    tasks: Tasks,
    run: _Run,
    sweep: _Sweep,
    keep_partial: bool,
) -> int:
    """_pass by roles with no write to read back: _settle for each thread of `order`, inline
    with the os calls the stock Tasks makes (_stock_io). A thread whose call raises goes
    through _settle, which reads it again and tells exited from refused."""
    getaff, setaff = os.sched_getaffinity, os.sched_setaffinity
    known, check, previous = sweep.known, sweep.check, run.previous
    failed, gone = run.failures, sweep.gone
    writes = 0
    last: set[int] | None = None
    old: CpuSet = frozenset()
    for tid in order:
        if failed and tid in failed:
            continue
        got = role_of(tid)
        if got is None:
            gone.add(tid)
            continue
        want = got[1]
        try:
            cur = getaff(tid)
            if cur == want:
                known[tid] = got
                continue
            setaff(tid, want)
        except OSError:
            writes += _settle(tid, got[0], want, tasks, run, sweep, {}, keep_partial)
            if run.fatal:
                break
            continue
        if cur != last:  # a process has a handful of distinct masks: freeze each once
            last, old = cur, frozenset(cur)
        if tid not in previous:
            previous[tid] = old
        if want <= old:
            known[tid] = got
        else:
            check[tid] = got  # the kernel may have narrowed it: read back next pass
        writes += 1
    return writes


def _role_targets(
    target: BindTarget, tasks: Tasks, pid: int, run: _Run
) -> Callable[[int], tuple[str, CpuSet] | None]:
    """tid -> (role, mask) by the thread's name, None when it has exited: Tasks.name and
    target.thread_target, with the stock Tasks's read made by the run's ThreadNames and each
    name's target looked up once."""
    if type(tasks).name is not STOCK_NAME or run.names is None:

        def slow(tid: int) -> tuple[str, CpuSet] | None:
            name = tasks.name(pid, tid)
            return None if name is None else target.thread_target(name, use_roles=True)

        return slow
    default = target.thread_target(None, use_roles=True)
    by_name = {n: target.thread_target(n, use_roles=True) for n in ROLE_THREADS}
    encoding = tasks._encoding

    def of(raw: bytes) -> tuple[str, CpuSet]:
        # thread_target strips the name: what Tasks.name makes of a \r changes no match
        return by_name.get(raw.decode(encoding, "replace").strip(), default)

    return run.names.reader(of)


def _pool_pass(
    order: Sequence[int], at: int, role: str, want: CpuSet, run: _Run, sweep: _Sweep, fresh: bool
) -> tuple[int, int | None]:
    """_settle for the threads of `order` from index `at` on, inline with the os calls Tasks
    makes on a host of up to 64 CPUs; the loop only reads and writes (_pool_loop), the books are
    kept afterwards in bulk. Stops at the first thread that raises (exited, refused): (writes,
    its index, or None when none did). `fresh`: no thread here was written by an earlier pass."""
    written, runs, bad = _pool_loop(order, at, want)
    stop = len(order) if bad is None else bad
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
    return len(written), bad


def _compiled(order: Sequence[int], count: int) -> Any | None:
    """The compiled loops for `count` threads of `order`, or None where the Python loop runs
    them: below NATIVE_FROM threads, for an order that is no list (what they take), or in an
    install without a C compiler."""
    if count < NATIVE_FROM or type(order) is not list:
        return None
    return affinity_native()


def _pool_loop(
    order: Sequence[int], at: int, want: CpuSet
) -> tuple[list[int], list[tuple[int, CpuSet]], int | None]:
    """Each thread of `order` from index `at` on read, and written with `want` when off it,
    until a call raises: (the threads written, runs of (index into them, the old mask from there
    on), the index of the thread whose call raised or None)."""
    native = _compiled(order, len(order) - at)
    if native is not None:
        # the same loop in C (_affinityc.c): no set built per read, 4.2 against 6.9 us a thread
        # read and written at 4,000 threads (tests/host/test_affinity_native.py)
        with contextlib.suppress(ValueError):  # a CPU past the kernel's mask: os's own errors
            written, runs, bad = native.pool_pass(order, at, want)
            return written, runs, None if bad < 0 else bad
    getaff, setaff = os.sched_getaffinity, os.sched_setaffinity
    written = []
    wrote = written.append
    runs = []
    last: set[int] | None = None
    for tid in itertools.islice(order, at, None) if at else order:
        try:
            cur = getaff(tid)
            if cur == want:
                continue
            setaff(tid, want)
        except OSError:
            return written, runs, order.index(tid, at)
        if cur != last:  # a process has a handful of distinct masks: freeze and test each once
            last = cur
            runs.append((len(written), frozenset(cur)))
        wrote(tid)
    return written, runs, None


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


def _list_tail(pid: int, names: list[str], tasks: Tasks, run: _Run | None = None) -> _Tail | None:
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
    only after a pass 1 that found no thread gone, and ends on one only if it found none.

    `run`: the folder is opened once and kept there (a seek resets it as an open would)."""
    margin = tail_margin(len(names))
    if type(tasks).list_names is not STOCK_LIST or len(names) <= margin:
        return None
    k = len(names) - margin
    fd = run.task_dir if run is not None else None
    if fd is None:
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
        if run is None:
            os.close(fd)
        else:
            run.task_dir = fd
    if not got:
        return None
    last = set(names[k:])  # deaths shift the tail's first entry later, never earlier
    if got[0] not in last:
        return None  # `margin` or more exited: no thread to anchor on
    return _Tail(k, tids_of(got), sum(1 for n in got if n not in last))


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


@dataclass
class _Survey:
    """Every thread re-read: how many, how many on target, role threads placed, the ones off
    target (tid, mask), and the tids read."""

    total: int
    bound: int
    placed: dict[str, tuple[int, ...]]
    off: list[tuple[int, CpuSet, str, CpuSet]]  # (tid, mask read, role, target mask)
    present: set[int]
    masks: set[CpuSet]  # every distinct mask read


def _final_read(
    pid: int,
    target: BindTarget,
    use: bool,
    tasks: Tasks,
    run: _Run,
    anchor: list[str] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> _Survey:
    """Every thread re-read, once VERIFY_SETTLE_S has passed since the last write (`anchor`:
    see _survey).

    A thread that resets its own mask (or a tool in a loop) shows itself only once it has run
    again: no read can tell it sooner, so the window stays. But it is a window, not a pause
    added to every bind: it runs from the last write, and what the bind did since (a pass that
    wrote nothing, the listings) is time the thread had, so only the rest is slept. A write
    only goes back to pass 1's time when later passes wrote nothing (then the last write is the
    last thread written, and every other thread had longer).

    The window is a wait, not work: `meanwhile` (work the caller must do anyway, such as the
    imports its output needs) runs in it, and only what is left of the window is slept. Work
    longer than the window makes the window longer, never shorter."""
    if run.previous and VERIFY_SETTLE_S > 0:
        _run_meanwhile(meanwhile)
        left = VERIFY_SETTLE_S - (time.monotonic() - run.last_write)
        if left > 0:
            time.sleep(left)
    return _survey(pid, target, use, tasks, run, anchor)


def _run_meanwhile(meanwhile: Callable[[], object] | None) -> None:
    """The caller's work in the window. It is only done early: its failure is left for the
    caller to meet when it does the work again, never raised between the passes and the re-read
    (which would skip the rollback)."""
    if meanwhile is not None:
        with contextlib.suppress(Exception):
            meanwhile()


def _survey(
    pid: int,
    target: BindTarget,
    use: bool,
    tasks: Tasks,
    run: _Run,
    anchor: list[str] | None = None,
) -> _Survey:
    """Re-read every thread listed now.

    `anchor`: pass 1's full listing, which skipped no thread (begin_bind). Every thread alive
    now is in it or was born since, and a thread born since is in the end of /proc/PID/task
    from a thread it showed on (_list_tail): the threads of both are read, those gone are
    skipped as in a full listing. A whole listing walks the thread list once per chunk and
    costs as much as binding (12 ms of 30 at 4,000 threads); a tail is a few dozen entries."""
    tids: Sequence[int] | None = None
    if anchor is not None:
        tail = _list_tail(pid, anchor, tasks, run)
        if tail is not None:
            # the tail's threads not in the anchor's end were born since (the order is kept)
            last = set(tids_of(anchor[tail.before :]))
            tids = run.initial
            if tail.new:
                tids = sorted([*tids, *(t for t in tail.tids if t not in last)])
    if tids is None:
        tids = tasks.list_tids(pid) or []
    if type(tasks).get is STOCK_GET and not tasks._ctypes_get:
        if not use:
            return _survey_pool(pid, target, tids)
        if type(tasks).name is STOCK_NAME and run.names is not None:
            return _survey_roles(pid, target, tids, tasks, run)

    # by roles: Tasks.name and thread_target, the names read again through the files pass 1
    # kept open where Tasks.name is the stock one (a host of over 64 CPUs reads masks here)
    role_of = _role_targets(target, tasks, pid, run) if use else None
    pool = target.thread_target(None, use_roles=False)

    def reads() -> Iterator[tuple[int, str, CpuSet, AbstractSet[int]]]:
        for tid in main_first(pid, tids):
            if role_of is None:
                role, want = pool
            else:
                got = role_of(tid)
                if got is None:  # exited
                    continue
                role, want = got
            cur = tasks.get(tid)
            if cur is not None:
                yield tid, role, want, cur

    return _survey_of(reads())


def _survey_of(reads: Iterable[tuple[int, str, CpuSet, AbstractSet[int]]]) -> _Survey:
    """The survey of (tid, role, target, mask read) per thread alive."""
    total = bound = 0
    placed: dict[str, list[int]] = {}
    off: list[tuple[int, CpuSet, str, CpuSet]] = []
    present: set[int] = set()
    on: set[CpuSet] = set()  # the targets the threads found on them have
    for tid, role, want, cur in reads:
        present.add(tid)
        total += 1
        if cur == want:
            bound += 1
            on.add(want)
            if role in ("acl", "release"):
                placed.setdefault(role, []).append(tid)
        else:
            off.append((tid, frozenset(cur), role, want))
    masks = on.union(o[1] for o in off)
    return _Survey(total, bound, {r: tuple(t) for r, t in placed.items()}, off, present, masks)


def _survey_roles(
    pid: int, target: BindTarget, tids: Sequence[int], tasks: Tasks, run: _Run
) -> _Survey:
    """_survey by roles through the os calls the stock Tasks.name and Tasks.get make, with
    each role name's target looked up once (a name and a mask read per thread: the name one
    pread of the file pass 1 opened, ThreadNames)."""
    role_of = _role_targets(target, tasks, pid, run)
    getaff = os.sched_getaffinity
    present: list[int] = []
    keep = present.append
    off: list[tuple[int, CpuSet, str, CpuSet]] = []
    on: set[CpuSet] = set()  # the targets the threads found on them have
    placed: dict[str, list[int]] = {}
    for tid in main_first(pid, tids):
        got = role_of(tid)
        if got is None:  # exited
            continue
        try:
            cur = getaff(tid)
        except ProcessLookupError:  # Tasks.get: None
            continue
        keep(tid)
        role, want = got
        if cur != want:
            off.append((tid, frozenset(cur), role, want))
            continue
        on.add(want)
        if role == "acl" or role == "release":
            placed.setdefault(role, []).append(tid)
    masks = on.union(o[1] for o in off)
    total = len(present)
    return _Survey(
        total, total - len(off), {r: tuple(t) for r, t in placed.items()}, off, set(present), masks
    )


def _survey_pool(pid: int, target: BindTarget, tids: Sequence[int]) -> _Survey:
    """_survey without roles through the os call the stock Tasks.get makes (every thread has
    one target): a read and a compare per thread."""
    role, want = target.thread_target(None, use_roles=False)
    order = main_first(pid, tids)
    native = _compiled(order, len(order))
    found: tuple[list[int], list[tuple[int, CpuSet]]] | None = None
    if native is not None:
        # the same loop in C (_affinityc.c): 0.66 against 1.06 us a thread at 4,000 threads
        with contextlib.suppress(ValueError):  # a CPU past the kernel's mask: os's own errors
            found = native.survey(order, want)
    if found is not None:
        gone, read_off = found
        present = set(order)
        present.difference_update(gone)
        off = [(tid, cur, role, want) for tid, cur in read_off]
    else:
        getaff = os.sched_getaffinity
        off = []
        kept: list[int] = []
        keep = kept.append
        for tid in order:
            try:
                cur = getaff(tid)
            except ProcessLookupError:  # exited: Tasks.get's None
                continue
            keep(tid)
            if cur != want:
                off.append((tid, frozenset(cur), role, want))
        present = set(kept)
    total = len(present)
    masks = {o[1] for o in off}
    if total > len(off):
        masks.add(want)
    return _Survey(total, total - len(off), {}, off, present, masks)


def _rollback(
    pid: int, target: BindTarget, use: bool, tasks: Tasks, run: _Run
) -> tuple[tuple[int, ...], tuple[ThreadFailure, ...]]:
    """Put every changed thread back; threads born meanwhile on a new mask get the main
    thread's old mask (what they would have inherited). Returns (restored, failures)."""
    restored: list[int] = []
    failed: list[ThreadFailure] = []

    def restore(tid: int, mask: CpuSet) -> None:
        try:
            tasks.set(tid, mask)
            restored.append(tid)
        except OSError as e:
            if e.errno != errno.ESRCH:  # a thread gone needs no rollback
                text, name = errno_text(e)
                failed.append(ThreadFailure(tid, text, name))

    for tid, prev in reversed(list(run.previous.items())):
        restore(tid, prev)
    base = run.previous.get(pid)
    if base is not None:
        new_masks = target.masks(use_roles=use)
        initial = set(run.initial)
        for tid in tasks.list_tids(pid) or []:
            if tid in initial or tid in run.previous:
                continue
            cur = tasks.get(tid)
            if cur is not None and cur in new_masks and cur != base:
                restore(tid, base)
    return tuple(restored), tuple(failed)
