"""The live sampler keeps its threads' stat and sched open between samples and re-reads them at
offset 0: each read is that moment's text, a file of an exited task is closed and its path
opened afresh, files of threads gone are closed at the end of the sample, and no more than the
cap are ever open."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from ascendtune.core.parsers.procfs import parse_sched_migrations
from ascendtune.host.watch import HeldFiles, ProcSampler, _sched_number, held_cap
from tests.support.children import Spawn

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _switches(raw: bytes | None) -> int:
    assert raw is not None
    got = _sched_number(raw, b"nr_voluntary_switches")
    assert got is not None
    return got


def test_a_held_file_reads_what_the_thread_does_now() -> None:
    # a thread that sleeps 40 times between two reads of its held sched: 40 more voluntary
    # switches (a held file printing its first text again would say none)
    go, done, end, tid = threading.Event(), threading.Event(), threading.Event(), []

    def sleeper() -> None:
        tid.append(threading.get_native_id())
        go.wait()
        for _ in range(40):
            time.sleep(0.0005)
        done.set()
        end.wait()

    t = threading.Thread(target=sleeper, daemon=True)
    t.start()
    while not tid:
        time.sleep(0.001)
    path = f"/proc/{os.getpid()}/task/{tid[0]}/sched"
    held = HeldFiles(8)
    try:
        before = held.read(path)
        assert len(held) == 1
        held.end_sample()
        go.set()
        done.wait(10)
        after = held.read(path)
        assert len(held) == 1  # the same file, read again
        assert _switches(after) >= _switches(before) + 40
        with open(path, "rb") as f:  # and it reads as the file opened afresh does
            assert parse_sched_migrations(f.read().decode()) == _sched_number(
                after or b"", b"se.nr_migrations"
            )
    finally:
        held.close()
        end.set()
        t.join(10)


def _held_of_an_exited_thread() -> tuple[int, str]:
    """An open stat file of a thread that has exited (reads fail), and that thread's path."""
    hold = threading.Event()
    w = threading.Thread(target=hold.wait)
    w.start()
    path = f"/proc/{os.getpid()}/task/{w.native_id}/stat"
    fd = os.open(path, os.O_RDONLY)
    hold.set()
    w.join()
    for _ in range(1000):  # join returns a moment before the kernel is done with the thread
        try:
            os.pread(fd, 4096, 0)
        except ProcessLookupError:
            return fd, path
        time.sleep(0.005)
    raise AssertionError("the thread did not exit")


def test_a_file_of_an_exited_thread_is_closed_and_its_path_opened_afresh() -> None:
    # a held file bound to a thread that has exited, under the path of a live thread (as a
    # thread id reused by a new thread would be): the read is the live thread's
    me = threading.get_native_id()
    live = f"/proc/{os.getpid()}/task/{me}/stat"
    base = _fds()
    held = HeldFiles(8)
    try:
        gone, dead = _held_of_an_exited_thread()
        held._last[live] = gone  # held from the last sample, bound to the exited thread
        got = held.read(live)
        assert got is not None and got.startswith(f"{me} (".encode())
        assert len(held) == 1 and _fds() == base + 1  # the old file closed, the new one held
        # the exited thread's own path: nothing to read, nothing held
        gone, dead = _held_of_an_exited_thread()
        held._last[dead] = gone
        assert held.read(dead) is None
        assert len(held) == 1 and _fds() == base + 1
    finally:
        held.close()
    assert len(held) == 0 and _fds() == base


def test_at_most_cap_files_are_held_and_the_rest_read_as_before(tmp_path: Path) -> None:
    paths = []
    for i in range(10):
        p = tmp_path / f"f{i}"
        p.write_bytes(b"x" * i)
        paths.append(str(p))
    held = HeldFiles(3)
    base = _fds()
    for _ in range(3):
        assert [held.read(p) for p in paths] == [b"x" * i for i in range(10)]
        assert len(held) == 3 and _fds() == base + 3
        held.end_sample()
    assert held.read(str(tmp_path / "missing")) is None
    held.end_sample()
    held.end_sample()  # a sample that read none of them: all closed
    assert len(held) == 0 and _fds() == base
    assert HeldFiles(0).read(paths[4]) == b"xxxx"
    assert _fds() == base


def test_a_long_file_is_read_whole_at_each_read(tmp_path: Path) -> None:
    p = tmp_path / "long"
    p.write_bytes(bytes(range(256)) * 100)  # 25,600 bytes: more than one read's chunk
    held = HeldFiles(2)
    try:
        assert held.read(str(p)) == p.read_bytes()
        assert held.read(str(p)) == p.read_bytes()
        assert len(held) == 1
    finally:
        held.close()


def test_the_cap_stays_well_below_the_soft_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    for soft, want in ((1024, 512), (20000, 4096), (10, 5), (resource.RLIM_INFINITY, 4096)):
        monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, soft))  # noqa: B023
        assert held_cap() == want


def test_no_file_leaks_as_threads_come_and_go(spawn: Spawn) -> None:
    """A worker whose threads keep being born and exiting, sampled 30 times: the files held
    after each sample are those of threads it read (two per thread at most), and closing the
    sampler gives every one back."""
    pid = spawn(threads=4, spawners=3, leaf_s=0.001)
    base = _fds()
    s = ProcSampler()
    assert s._held is not None
    most = 0
    for _ in range(30):
        got = s.sample([pid], neighbours=False)
        ps = got.workers[pid]
        assert len(s._held) <= 2 * len(ps.threads) + ps.vanished
        most = max(most, len(s._held))
        assert _fds() == base + len(s._held)
        time.sleep(0.005)
    assert most >= 10  # the still threads' and some of the churning ones'
    s.close()
    assert _fds() == base
    s2 = ProcSampler()
    s2.sample([pid], neighbours=False)
    assert _fds() > base
    del s2  # a sampler dropped closes its files
    assert _fds() == base


def test_a_crafted_tree_is_read_afresh_each_sample(tmp_path: Path) -> None:
    d = tmp_path / "7/task/7"
    d.mkdir(parents=True)
    stat = d / "stat"
    stat.write_text("7 (w) S" + " 0" * 10 + " 5 2" + " 0" * 23 + " 3\n")
    s = ProcSampler(str(tmp_path), str(tmp_path))
    assert s._held is None
    first = s.thread(7, 7)
    tmp = d / "stat.new"  # replaced as a test's tree is: a new file under the same name
    tmp.write_text("7 (w) S" + " 0" * 10 + " 9 2" + " 0" * 23 + " 1\n")
    tmp.replace(stat)
    second = s.thread(7, 7)
    assert first is not None and second is not None
    assert (first.cpu_ticks, second.cpu_ticks, second.processor) == (7, 11, 1)
