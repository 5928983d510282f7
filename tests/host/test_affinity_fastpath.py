"""The libc (ctypes) mask calls agree with os.sched_*, and binding works without them."""

from __future__ import annotations

import os
import threading

import pytest

from ascendtune.core.bindplan import BindTarget
from ascendtune.host import affinity
from ascendtune.host.affinity import masks


def test_masks_round_trip() -> None:
    for cpus in (frozenset({0}), frozenset({1, 5, 63, 64, 1023}), frozenset(range(200))):
        buf = masks._encode_mask(cpus, 128)
        assert masks._decode_mask(buf.raw) == cpus


def _own_tids() -> list[int]:
    return sorted(int(n) for n in os.listdir("/proc/self/task"))


def test_ctypes_get_and_set_agree_with_os() -> None:
    if masks._libc() is None:
        pytest.skip("no libc through ctypes here")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        tasks = affinity.Tasks()
        tasks._ctypes_get = True  # the path hosts with many CPUs take
        tasks._os_set_max = 0  # and the libc write targets of more than 16 CPUs take
        mine = frozenset(os.sched_getaffinity(0))
        for tid in _own_tids():
            assert tasks.get(tid) == frozenset(os.sched_getaffinity(tid))
        tid = t.native_id
        assert tid is not None
        one = frozenset({min(mine)})
        tasks.set(tid, one)
        assert frozenset(os.sched_getaffinity(tid)) == one == tasks.get(tid)
        tasks.set(tid, mine)
        assert tasks.get(tid) == mine
        assert tasks.get(2**22 + 12345) is None  # no such thread
        with pytest.raises(OSError):
            tasks.set(tid, frozenset({len(tasks._getbuf.raw) * 8 - 1}))  # an absent CPU: EINVAL
    finally:
        stop.set()
        t.join()


def test_bind_without_libc_falls_back_to_os(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(masks, "_LIBC", [None])
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    mine = frozenset(os.sched_getaffinity(0))
    try:
        one = frozenset({min(mine)})
        report = affinity.bind_process(os.getpid(), BindTarget(cpus=one))
        assert report.verified and report.threads_total == len(_own_tids())
        assert all(frozenset(os.sched_getaffinity(x)) == one for x in _own_tids())
    finally:
        for x in _own_tids():
            os.sched_setaffinity(x, mine)
        stop.set()
        t.join()


def test_small_targets_are_written_with_os_and_large_ones_through_libc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if masks._libc() is None:
        pytest.skip("no libc through ctypes here")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    mine = frozenset(os.sched_getaffinity(0))
    calls: list[int] = []
    real = os.sched_setaffinity

    def counted(tid: int, cpus: frozenset[int]) -> None:
        calls.append(tid)
        real(tid, cpus)

    monkeypatch.setattr(os, "sched_setaffinity", counted)
    try:
        tasks = affinity.Tasks()
        tid = t.native_id
        assert tid is not None
        tasks.set(tid, frozenset({min(mine)}))
        assert calls == [tid]
        # a 17-CPU target with CPUs this host lacks: the kernel keeps the ones it has
        tasks.set(tid, mine | frozenset(range(100, 100 + 17 - len(mine))))
        assert calls == [tid]  # libc, not os
        assert frozenset(os.sched_getaffinity(tid)) == mine
    finally:
        monkeypatch.undo()
        stop.set()
        t.join()
