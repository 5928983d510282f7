"""How bind_process spends its kernel calls, on real threads on CPUs 0-1: one mask read and at
most one write per thread, two listings; and what the confirming pass still catches (a thread born
on an old mask, a write the kernel narrowed, a thread renamed into another role, a thread gone).

Each case runs twice where it can: through the inline loop bind_process takes with the stock
Tasks, and through the per-thread path an overriding Tasks takes. The inline cases count or fail
os calls, so they run the inline loop in Python (python_loops); the compiled one makes the same
calls from C (tests/host/test_affinity_native.py holds it to the same answers).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import Counter

import pytest

from ascendtune.core.bindplan import BindTarget
from ascendtune.host.affinity import Tasks, bind_process
from ascendtune.host.affinity import bind as bind_engine
from ascendtune.host.affinity import masks as mask_io
from tests.support.children import (  # noqa: F401 (spawn: a fixture)
    BOTH,
    CHILD,
    Spawn,
    assert_ready,
    masks,
    needs_cpus_0_1,
    popen_child,
)

pytestmark = needs_cpus_0_1


class Counting(Tasks):
    """Counts the calls (and so takes the per-thread path)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def list_names(self, pid: int) -> list[str] | None:
        self.calls["list"] += 1
        return super().list_names(pid)

    def get(self, tid: int) -> frozenset[int] | None:
        self.calls["get"] += 1
        return super().get(tid)

    def set(self, tid: int, cpus: frozenset[int]) -> None:
        self.calls["set"] += 1
        super().set(tid, cpus)


def python_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inline loops in Python, through os (where a test counts or fails os calls), not in
    _affinityc.c."""
    monkeypatch.setattr(mask_io, "_NATIVE", [None])


def counting_os(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the os calls the inline loop makes (the stock Tasks keeps its fast path)."""
    python_loops(monkeypatch)
    calls: Counter[str] = Counter()
    get, set_, listdir = os.sched_getaffinity, os.sched_setaffinity, os.listdir

    def counted_get(tid: int) -> set[int]:
        calls["get"] += 1
        return get(tid)

    def counted_set(tid: int, cpus: frozenset[int]) -> None:
        calls["set"] += 1
        set_(tid, cpus)

    def counted_listdir(path: str | int) -> list[str]:
        # an fd is the tail of /proc/PID/task (_list_tail), a listing too
        if isinstance(path, int) or str(path).endswith("/task"):
            calls["list"] += 1
        return listdir(path)

    monkeypatch.setattr(os, "sched_getaffinity", counted_get)
    monkeypatch.setattr(os, "sched_setaffinity", counted_set)
    monkeypatch.setattr(os, "listdir", counted_listdir)
    return calls


@pytest.mark.parametrize("path", ["inline", "per-thread"])
def test_one_read_and_one_write_per_thread_and_two_listings(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    pid = spawn(threads=40)
    n = len(masks(pid))
    tasks = Counting() if path == "per-thread" else None
    calls = tasks.calls if tasks is not None else counting_os(monkeypatch)
    report = bind_process(pid, BindTarget(cpus=frozenset({1})), tasks=tasks)
    assert report.verified and report.converged and report.passes == 2
    assert report.threads_total == report.threads_bound == report.threads_changed == n
    # {1} lies inside every thread's old mask {0,1}: the kernel cannot have narrowed a write,
    # so the passes read no thread twice; then the final re-read (SPEC: `verified`) reads each
    # once more, from a listing of its own
    assert (calls["get"], calls["set"], calls["list"]) == (2 * n, n, 3)
    monkeypatch.undo()
    assert set(masks(pid).values()) == {frozenset({1})}

    # already there: one listing, one read each, no write
    calls.clear()
    if path == "inline":
        calls = counting_os(monkeypatch)
    report = bind_process(pid, BindTarget(cpus=frozenset({1})), tasks=tasks)
    assert report.verified and report.passes == 1 and report.threads_changed == 0
    assert (calls["get"], calls["set"], calls["list"]) == (n, 0, 1)


@pytest.mark.parametrize("extra", [0, 150])
@pytest.mark.parametrize("path", ["inline", "per-thread"])
def test_a_thread_born_meanwhile_on_the_old_mask_is_caught(
    monkeypatch: pytest.MonkeyPatch, path: str, extra: int
) -> None:
    """Bind this test process: right after the main thread is moved, a thread not yet moved
    creates one. The newborn inherits the old mask and is in no listing before the writes.
    With 150 idle threads more the confirming pass lists only the end of /proc/PID/task."""
    idle = threading.Event()
    idlers = [threading.Thread(target=idle.wait) for _ in range(extra)]
    for t in idlers:
        t.start()
    try:
        _born_meanwhile(monkeypatch, path)
    finally:
        idle.set()
        for t in idlers:
            t.join()


def _born_meanwhile(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    mine = frozenset(os.sched_getaffinity(0))
    one = frozenset({max(mine)})
    stop, go, born = threading.Event(), threading.Event(), []
    newborn_ready = threading.Event()
    newborn_tid: list[int] = []

    def newborn() -> None:
        newborn_tid.append(threading.get_native_id())
        newborn_ready.set()
        stop.wait()

    def creator() -> None:
        go.wait()
        t = threading.Thread(target=newborn)
        t.start()
        born.append(t)

    c = threading.Thread(target=creator)
    c.start()
    real_set = os.sched_setaffinity
    pid = os.getpid()

    def on_write(tid: int) -> None:
        if tid == pid and not go.is_set():
            go.set()
            assert newborn_ready.wait(10)

    tasks: Tasks | None = None
    if path == "per-thread":

        class Hooked(Tasks):
            def set(self, tid: int, cpus: frozenset[int]) -> None:
                super().set(tid, cpus)
                on_write(tid)

        tasks = Hooked()
    else:

        def hooked(tid: int, cpus: frozenset[int]) -> None:
            real_set(tid, cpus)
            on_write(tid)

        python_loops(monkeypatch)
        monkeypatch.setattr(os, "sched_setaffinity", hooked)
    try:
        report = bind_process(pid, BindTarget(cpus=one), tasks=tasks)
        monkeypatch.undo()
        assert newborn_tid, "the creator did not run"
        assert newborn_tid[0] not in report.rolled_back
        assert frozenset(os.sched_getaffinity(newborn_tid[0])) == one
        assert report.verified and report.passes >= 2
        for t in os.listdir("/proc/self/task"):
            assert frozenset(os.sched_getaffinity(int(t))) == one
    finally:
        monkeypatch.undo()
        _put_back(mine)
        go.set()
        c.join()
        stop.set()
        for t in born:
            t.join()


def _put_back(mine: frozenset[int]) -> None:
    """Every thread of this test process back on mine, after a test that bound it."""
    for t in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(t), mine)


class _Newborn:
    """A thread born on demand: start() returns once it has named itself (when given a name)
    and put itself on `mask`; it then waits for `stop`."""

    def __init__(self, mask: frozenset[int], stop: threading.Event, name: bytes = b"") -> None:
        self.mask, self.stop, self.name = mask, stop, name
        self.tid: int | None = None
        self.thread: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        assert self._ready.wait(10)

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def _run(self) -> None:
        if self.name:
            import ctypes

            ctypes.CDLL(None).prctl(15, self.name, 0, 0, 0)  # PR_SET_NAME
        os.sched_setaffinity(0, self.mask)
        self.tid = threading.get_native_id()
        self._ready.set()
        self.stop.wait()


class Narrowing(Tasks):
    """A write to `victim` lands narrowed to CPU 0, as the kernel does with a cpuset of CPU 0."""

    def __init__(self, victim: int) -> None:
        super().__init__()
        self.victim = victim
        self.reads: Counter[int] = Counter()

    def get(self, tid: int) -> frozenset[int] | None:
        self.reads[tid] += 1
        return super().get(tid)

    def set(self, tid: int, cpus: frozenset[int]) -> None:
        super().set(tid, cpus & {0} if tid == self.victim else cpus)


@pytest.mark.parametrize("extra", [0, 150])
def test_a_thread_born_before_the_final_re_read_is_read_by_it(
    monkeypatch: pytest.MonkeyPatch, extra: int
) -> None:
    """Bind this test process; just before the final re-read a thread is born and puts itself
    on the old mask. The re-read must see it (off, so it is written again): with 150 idle
    threads more it lists only the end of /proc/PID/task after pass 1's listing."""
    idle, stop = threading.Event(), threading.Event()
    idlers = [threading.Thread(target=idle.wait) for _ in range(extra)]
    mine = frozenset(os.sched_getaffinity(0))
    one = frozenset({max(mine)})
    newborn = _Newborn(mine, stop)

    real_survey, real_tail = bind_engine._survey, bind_engine._list_tail
    tails: list[object] = []

    def survey(*args: object) -> object:
        if newborn.thread is None:
            newborn.start()
        return real_survey(*args)  # type: ignore[arg-type]

    def list_tail(*args: object) -> object:
        got = real_tail(*args)  # type: ignore[arg-type]
        tails.append(got)
        return got

    for t in idlers:
        t.start()
    try:
        monkeypatch.setattr(bind_engine, "_survey", survey)
        monkeypatch.setattr(bind_engine, "_list_tail", list_tail)
        report = bind_process(os.getpid(), BindTarget(cpus=one))
        monkeypatch.undo()
        assert newborn.tid is not None, "the newborn did not run"
        assert frozenset(os.sched_getaffinity(newborn.tid)) == one
        assert report.verified
        assert report.threads_total == len(os.listdir("/proc/self/task"))
        # with 150 idle threads the pass after pass 1, the final re-read and the one after
        # the newborn was written again take tails
        assert sum(t is not None for t in tails) == (3 if extra else 0)
    finally:
        monkeypatch.undo()
        _put_back(mine)
        idle.set()
        stop.set()
        for t in idlers:
            t.join()
        newborn.join()


def test_by_roles_a_thread_born_after_pass_1_is_found_by_the_tail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bind this test process (150 idle threads more) by roles; just before pass 2 lists the
    threads again a thread is born, names itself acl_thread and puts itself on the old mask.
    Pass 2 lists only the end of /proc/PID/task (_list_tail), and that shows it: it is read,
    and written to the acl target."""
    idle, stop = threading.Event(), threading.Event()
    idlers = [threading.Thread(target=idle.wait) for _ in range(150)]
    mine = frozenset(os.sched_getaffinity(0))
    target = BindTarget(cpus=BOTH, roles={"main": frozenset({0}), "acl": frozenset({1})})
    newborn = _Newborn(mine, stop, b"acl_thread")

    real_tail, real_survey = bind_engine._list_tail, bind_engine._survey
    tails: list[object] = []  # the passes' tails, not the final re-read's

    def list_tail(*args: object) -> object:
        if newborn.thread is None:  # pass 2's
            newborn.start()
        tails.append(real_tail(*args))  # type: ignore[arg-type]
        return tails[-1]

    def survey(*args: object) -> object:
        monkeypatch.setattr(bind_engine, "_list_tail", real_tail)
        return real_survey(*args)  # type: ignore[arg-type]

    for t in idlers:
        t.start()
    try:
        monkeypatch.setattr(bind_engine, "_list_tail", list_tail)
        monkeypatch.setattr(bind_engine, "_survey", survey)
        report = bind_process(os.getpid(), target)
        monkeypatch.undo()
        assert newborn.tid is not None, "no pass listed the tail"
        first = tails[0]
        assert isinstance(first, bind_engine._Tail) and newborn.tid in first.tids
        assert frozenset(os.sched_getaffinity(newborn.tid)) == frozenset({1})
        assert report.verified and report.passes >= 2
        assert newborn.tid in report.roles_placed["acl"]
    finally:
        monkeypatch.undo()
        _put_back(mine)
        idle.set()
        stop.set()
        for t in idlers:
            t.join()
        newborn.join()


def test_a_write_the_kernel_may_narrow_is_read_back(spawn: Spawn) -> None:
    pid = spawn(threads=5, initial=[0])
    before = masks(pid)
    victim = max(before)
    tasks = Narrowing(victim)
    report = bind_process(pid, BindTarget(cpus=BOTH), tasks=tasks)
    assert not report.verified and report.rolled_back
    assert [(f.tid, f.errno_name) for f in report.threads_failed] == [(victim, "EINVAL")]
    assert "narrowed" in report.threads_failed[0].error
    assert masks(pid) == before

    tasks = Narrowing(victim)
    report = bind_process(pid, BindTarget(cpus=BOTH), keep_partial=True, tasks=tasks)
    after = masks(pid)
    assert not report.verified and not report.rolled_back
    assert after[victim] == frozenset({0})
    assert all(m == BOTH for t, m in after.items() if t != victim)
    assert report.threads_total == len(before) and report.threads_bound == len(before) - 1
    # {0,1} reaches outside the old mask {0}: every written thread was read back, once, then
    # once more by the final re-read
    assert all(tasks.reads[t] == 3 for t in before)


def test_a_thread_renamed_after_its_write_gets_its_new_role(spawn: Spawn) -> None:
    """The confirming pass reads no thread already on target, its name neither: a thread
    renamed into another role since is found off by the final re-read and written there."""
    pid = spawn(threads=4)
    tids = sorted(masks(pid))
    victim = tids[-1]

    class Renaming(Tasks):
        def __init__(self) -> None:
            super().__init__()
            self.reads: Counter[int] = Counter()

        def name(self, pid: int, tid: int) -> str | None:
            self.reads[tid] += 1
            if tid == victim:
                return "python3" if self.reads[tid] == 1 else "acl_thread"
            return super().name(pid, tid)

    target = BindTarget(
        cpus=BOTH, roles={"main": frozenset({0}), "acl": frozenset({1})}, source="test"
    )
    tasks = Renaming()
    report = bind_process(pid, target, tasks=tasks)
    got = masks(pid)
    assert report.verified and report.passes == 2
    assert got[victim] == frozenset({1})
    assert all(m == frozenset({0}) for t, m in got.items() if t != victim)
    # every name read by pass 1, the final re-read and the re-read after the victim's second
    # write: none by the confirming pass
    assert all(tasks.reads[t] == 3 for t in tids)
    assert report.roles_placed == {"acl": (victim,)}


@pytest.mark.parametrize("path", ["inline", "per-thread"])
def test_a_thread_that_exits_midway_is_skipped(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    pid = spawn(threads=6)
    before = masks(pid)
    victim = max(before)
    gone = ProcessLookupError(3, "No such process")
    tasks: Tasks | None = None
    if path == "per-thread":

        class Gone(Tasks):
            def get(self, tid: int) -> frozenset[int] | None:
                return None if tid == victim else super().get(tid)

        tasks = Gone()
    else:
        real = os.sched_getaffinity

        def get(tid: int) -> set[int]:
            if tid == victim:
                raise gone
            return real(tid)

        python_loops(monkeypatch)
        monkeypatch.setattr(os, "sched_getaffinity", get)
    report = bind_process(pid, BindTarget(cpus=frozenset({1})), tasks=tasks)
    monkeypatch.undo()
    assert report.verified and not report.threads_failed
    assert report.threads_total == report.threads_bound == len(before) - 1
    assert report.threads_exited == 1
    got = masks(pid)
    assert got[victim] == before[victim]  # never written
    assert all(m == frozenset({1}) for t, m in got.items() if t != victim)


def test_a_refused_write_on_the_inline_path_rolls_back(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = spawn(threads=6, masks=[[0], [1], [0, 1]])
    before = masks(pid)
    victim = max(before)
    real = os.sched_setaffinity

    def refusing(tid: int, cpus: frozenset[int]) -> None:
        if tid == victim and cpus == frozenset({1}):
            raise OSError(22, os.strerror(22))
        real(tid, cpus)

    python_loops(monkeypatch)
    monkeypatch.setattr(os, "sched_setaffinity", refusing)
    report = bind_process(pid, BindTarget(cpus=frozenset({1})))
    monkeypatch.undo()
    assert masks(pid) == before
    assert not report.verified and report.rolled_back
    assert [(f.tid, f.errno_name) for f in report.threads_failed] == [(victim, "EINVAL")]


def test_the_inline_path_is_kept_for_overriding_tasks_only_when_nothing_is_overridden() -> None:
    class Plain(Tasks):
        pass

    class Overrides(Tasks):
        def get(self, tid: int) -> frozenset[int] | None:
            return super().get(tid)

    assert type(Plain()).get is mask_io.STOCK_GET and type(Plain()).set is mask_io.STOCK_SET
    assert type(Overrides()).get is not mask_io.STOCK_GET


def test_the_tail_of_the_listing_anchors_on_a_thread_listed_before(spawn: Spawn) -> None:
    pid = spawn(threads=200)
    names = os.listdir(f"/proc/{pid}/task")
    tail = bind_engine._list_tail(pid, names, Tasks())
    assert tail is not None
    margin = bind_engine.tail_margin(len(names))
    assert tail.before == len(names) - margin and tail.new == 0
    assert tail.tids == sorted(int(n) for n in names[-margin:])
    # a last listing none of whose last `margin` threads is there any more: no anchor, list
    # them all
    gone = [str(2**22 + i) for i in range(len(names))]
    assert bind_engine._list_tail(pid, gone, Tasks()) is None
    assert bind_engine._list_tail(pid, names[:10], Tasks()) is None  # too few to bother


def test_the_callers_work_runs_in_the_window_and_only_the_rest_is_slept(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = spawn(threads=8)
    monkeypatch.setattr(bind_engine, "VERIFY_SETTLE_S", 0.2)
    slept: list[float] = []
    real_sleep, real_survey = bind_engine.time.sleep, bind_engine._survey
    done: list[float] = []
    reads: list[float] = []

    def sleep(s: float) -> None:
        if sys._getframe(1).f_globals.get("__name__") == bind_engine.__name__:
            slept.append(s)
        real_sleep(s)

    def work() -> None:
        real_sleep(0.15)  # the caller's imports, say
        done.append(time.monotonic())

    def survey(*args: object) -> object:
        reads.append(time.monotonic())
        return real_survey(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(bind_engine.time, "sleep", sleep)
    monkeypatch.setattr(bind_engine, "_survey", survey)
    t0 = time.monotonic()
    report = bind_process(pid, BindTarget(cpus=frozenset({1})), meanwhile=work)
    assert report.verified and report.threads_changed
    assert len(done) == 1 and done[0] <= reads[0]  # done before the re-read
    assert len(slept) == 1 and slept[0] <= 0.2 - 0.15 + 0.01  # only the rest of the window
    assert reads[0] - t0 >= 0.2  # and the window is whole

    # work that fails is left to the caller; nothing written: no window, the work is not done
    def broken() -> None:
        raise RuntimeError("no such module")

    calls: list[int] = []
    report = bind_process(pid, BindTarget(cpus=frozenset({0})), meanwhile=broken)
    assert report.verified
    report = bind_process(pid, BindTarget(cpus=frozenset({0})), meanwhile=lambda: calls.append(1))
    assert report.verified and not report.threads_changed and not calls


@pytest.mark.parametrize("masks_by", ["os", "libc"])
def test_a_real_thread_renamed_before_the_final_re_read_gets_its_new_role(masks_by: str) -> None:
    """The stock path keeps each thread's comm file open from pass 1 and reads it again from
    the start at the final re-read (masks.ThreadNames): the kernel prints the name anew, so a
    thread that renames itself into another role in the window is found off and written.
    "libc": masks read as on a host of over 64 CPUs (per-thread loops, not the inline ones)."""
    mine = frozenset(os.sched_getaffinity(0))
    stop = threading.Event()
    tids: list[int] = []
    started = threading.Barrier(4)

    def idle() -> None:
        tids.append(threading.get_native_id())
        started.wait()
        stop.wait()

    idlers = [threading.Thread(target=idle) for _ in range(3)]
    for t in idlers:
        t.start()
    started.wait()
    victim = tids[0]

    def rename() -> None:  # in the window between the passes and the re-read
        with open(f"/proc/self/task/{victim}/comm", "w") as f:
            f.write("acl_thread")

    target = BindTarget(
        cpus=BOTH, roles={"main": frozenset({0}), "acl": frozenset({1})}, source="test"
    )
    try:
        tasks = Tasks()
        if masks_by == "libc":
            if mask_io._libc() is None:
                pytest.skip("libc's affinity calls cannot be loaded here")
            tasks._ctypes_get = True
        report = bind_process(os.getpid(), target, tasks=tasks, meanwhile=rename)
        got = {
            int(t): frozenset(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")
        }
        assert report.verified
        assert got[victim] == frozenset({1})
        assert all(m == frozenset({0}) for t, m in got.items() if t != victim)
        assert report.roles_placed == {"acl": (victim,)}
    finally:
        _put_back(mine)
        stop.set()
        for t in idlers:
            t.join()


def test_thread_names_kept_open_follow_their_thread_and_are_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stop, ready = threading.Event(), threading.Barrier(3)
    tids: dict[bytes, int] = {}

    def idle(name: bytes) -> None:
        tids[name] = threading.get_native_id()
        with open(f"/proc/self/task/{tids[name]}/comm", "wb") as f:
            f.write(name)
        ready.wait()
        stop.wait()

    threads = [threading.Thread(target=idle, args=(n,)) for n in (b"first", b"second")]
    for t in threads:
        t.start()
    ready.wait()
    first, second = tids[b"first"], tids[b"second"]
    names = mask_io.thread_names("/proc", os.getpid())
    read = names.reader(bytes)
    try:
        assert (read(first), read(second)) == (b"first\n", b"second\n")
        held = [*names._kept.values(), names._dir]
        assert len(names._kept) == 2 and None not in held
        with open(f"/proc/self/task/{first}/comm", "w") as f:
            f.write("renamed")
        assert read(first) == b"renamed\n"  # read anew through the file kept open
        stop.set()
        for t in threads:
            t.join()
        # join() returns once Python's thread state is done: the kernel may still be tearing
        # the thread down for a moment, so wait (bounded) until /proc no longer lists either
        deadline = time.monotonic() + 10
        while any(os.path.exists(f"/proc/self/task/{t}") for t in (first, second)):
            assert time.monotonic() < deadline, "threads joined but still listed after 10 s"
            time.sleep(0.001)
        assert read(first) is None and read(second) is None  # exited
        assert read(2**22 + 7) is None  # never there
    finally:
        stop.set()
        names.close()
    for fd in held:
        with pytest.raises(OSError):
            os.fstat(fd)  # type: ignore[arg-type]

    # no room left under the file limit: each file is closed after its read
    monkeypatch.setattr(mask_io, "_KEEP", [0])
    names = mask_io.thread_names("/proc", os.getpid())
    try:
        assert names.reader(bytes)(os.getpid()) is not None
        assert not names._kept
    finally:
        names.close()
