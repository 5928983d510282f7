"""The capture's CPU folders, and any large batch of files (a worker's task files), read partly by
a forked child (issue 28): the same capture as one process reading them all, whatever the child
does (fails, exits early, sends garbage, hangs), the sysroot's refusals hold in the child too,
and no child is ever left behind."""

from __future__ import annotations

import marshal
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from ascendtune.core.errors import InvalidInput
from ascendtune.host import forked
from ascendtune.host import snapshot as snap
from ascendtune.host.roots import DirRoot, MemRoot, Root
from ascendtune.synth import standard
from tests.support.builder import SysrootBuilder
from tests.support.hosts import a2_with_worker

CPU = "sys/devices/system/cpu"
# Python 3.12 warns of a fork beside threads: here, the test runner's (see `children`)
pytestmark = pytest.mark.filterwarnings("ignore:This process:DeprecationWarning")


@pytest.fixture
def host(sysroot: SysrootBuilder) -> Path:
    """The A2 host (192 CPUs) with L1 and L3 caches and governors, a file missing and a file
    that is a link in the child's half, and one missing in the parent's."""
    spec = standard.atlas_800i_a2()
    llc = (frozenset(range(96)), frozenset(range(96, 192)))
    cpus = replace(spec.cpus, llc=llc, l1=True, governor="performance")
    sysroot.spec(replace(spec, cpus=cpus))
    root = sysroot.root
    listed = sorted(f"cpu{c}" for c in range(192))  # the child's half: the last 96 listed
    assert {"cpu50", "cpu60", "cpu70", "cpu80"} <= set(listed[96:]) and "cpu120" in listed[:96]
    (root / f"{CPU}/cpu120/topology/core_id").unlink()
    (root / f"{CPU}/cpu50/cache/index3/level").unlink()
    (root / f"{CPU}/cpu70/cpufreq/scaling_governor").unlink()
    (root / f"{CPU}/cpu60/topology/core_id").unlink()
    sysroot.link(f"{CPU}/cpu60/topology/core_id", f"/{CPU}/cpu3/topology/core_id")
    return root


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The PIDs of the children the capture forks (forking from 8 CPUs); after the test, each
    has been reaped (waitpid finds no such child of this process) and is gone."""
    monkeypatch.setattr(snap, "FORK_FROM_CPUS", 8)
    # the test runner's own threads (xdist's execnet I/O thread) do not count: the child takes
    # none of their locks; a thread a test starts does
    runner = set(threading.enumerate())
    monkeypatch.setattr(forked, "can_fork", lambda: not set(threading.enumerate()) - runner)
    pids: list[int] = []
    init = forked.Child.__init__

    def spy(self: forked.Child, job: object) -> None:
        init(self, job)  # type: ignore[arg-type]
        if self.pid:
            pids.append(self.pid)

    monkeypatch.setattr(forked.Child, "__init__", spy)
    yield pids
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        assert parent_of(pid) != os.getpid()


def parent_of(pid: int) -> int | None:
    """The parent PID of pid from /proc (None: no such process, not even a zombie)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(status.split("PPid:")[1].split()[0])


def plain(root: Path) -> snap.Capture:
    """The capture as one process reads it (no child)."""
    old = snap.FORK_FROM_CPUS, snap.FORK_FROM_FILES
    snap.FORK_FROM_CPUS = snap.FORK_FROM_FILES = 1 << 30
    try:
        return snap.capture(DirRoot(root))
    finally:
        snap.FORK_FROM_CPUS, snap.FORK_FROM_FILES = old


def assert_same(got: snap.Capture, want: snap.Capture) -> None:
    assert list(got.files.items()) == list(want.files.items())
    assert got.links == want.links
    assert got.missing == want.missing
    assert got.asked == want.asked


def child_results(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each child handed back (None: nothing usable), as the capture saw it."""
    seen: list[object] = []
    result = forked.Child.result

    def spy(self: forked.Child) -> object | None:
        got = result(self)
        seen.append(got)
        return got

    monkeypatch.setattr(forked.Child, "result", spy)
    return seen


def test_the_forked_read_gives_the_capture_one_process_gives(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = child_results(monkeypatch)
    cap = snap.capture(DirRoot(host))
    assert len(children) == 1
    assert len(seen) == 1 and seen[0] is not None  # the child's half was taken from it
    assert_same(cap, plain(host))
    # the child's half holds what the fixture put there: a missing file, one read through a link
    assert f"{CPU}/cpu50/cache/index3/level" in cap.missing
    assert f"{CPU}/cpu120/topology/core_id" in cap.missing
    assert cap.files[f"{CPU}/cpu60/topology/core_id"] == cap.files[f"{CPU}/cpu3/topology/core_id"]
    assert f"{CPU}/cpu191/cache/index1/shared_cpu_list" in cap.files
    # and doctor's per-CPU files, which the child read for its half
    assert f"{CPU}/cpu191/cpufreq/scaling_governor" in cap.files
    assert f"{CPU}/cpu70/cpufreq/scaling_governor" not in cap.files


def test_no_child_below_the_threshold_or_beside_another_thread(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snap, "FORK_FROM_CPUS", 193)
    assert_same(snap.capture(DirRoot(host)), plain(host))
    assert children == []
    monkeypatch.setattr(snap, "FORK_FROM_CPUS", 8)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        cap = snap.capture(DirRoot(host))
    finally:
        stop.set()
        other.join()
    assert children == []
    assert_same(cap, plain(host))


def failing(root: Root, share: list[str]) -> object:
    raise OSError("the child's read failed")


def exiting(root: Root, share: list[str]) -> object:
    os._exit(0)  # early, nothing written


def wrong_shape(root: Root, share: list[str]) -> object:
    return ([["index0"]], [1, 2, 3])


def wrong_count(root: Root, share: list[str]) -> object:
    lists, texts = snap._child_read(root, share)
    return lists, texts[:-1]


@pytest.mark.parametrize("job", [failing, exiting, wrong_shape, wrong_count])
def test_a_child_that_fails_or_sends_garbage_is_read_by_the_parent(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch, job: object
) -> None:
    monkeypatch.setattr(snap, "_child_read", job)
    assert_same(snap.capture(DirRoot(host)), plain(host))
    assert len(children) == 1


@pytest.mark.parametrize(
    "dumps",
    [
        lambda obj: b"\xff not marshal",
        lambda obj: marshal.dumps(obj)[: len(marshal.dumps(obj)) // 2],
    ],
    ids=["garbage", "cut short"],
)
def test_bytes_that_do_not_unmarshal_are_read_by_the_parent(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch, dumps: object
) -> None:
    seen = child_results(monkeypatch)
    fake = SimpleNamespace(dumps=dumps, loads=marshal.loads)
    monkeypatch.setattr(forked, "marshal", fake)
    assert_same(snap.capture(DirRoot(host)), plain(host))
    assert len(children) == 1 and seen[0] is None


def test_a_child_that_hangs_is_killed_and_its_half_read_by_the_parent(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forked, "WAIT_FLOOR_S", 0.2)
    monkeypatch.setattr(forked, "WAIT_FACTOR", 0.0)
    monkeypatch.setattr(snap, "_child_read", lambda root, share: time.sleep(600))
    assert_same(snap.capture(DirRoot(host)), plain(host))
    assert len(children) == 1  # and the fixture finds it reaped


def test_ctrl_c_in_the_parent_kills_the_child(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snap, "_child_read", lambda root, share: time.sleep(600))
    me = os.getpid()
    paths = snap._cpu_paths

    def interrupted(root: Root, entries: list[str]) -> list[str]:
        if os.getpid() == me and children:  # the parent's own half, once the child runs
            raise KeyboardInterrupt
        return paths(root, entries)

    monkeypatch.setattr(snap, "_cpu_paths", interrupted)
    with pytest.raises(KeyboardInterrupt):
        snap.capture(DirRoot(host))
    assert len(children) == 1  # and the fixture finds it reaped


def assert_same_refusal(root: Path, rel: str) -> None:
    """With a FIFO at rel, the capture forked refuses it as one process does."""
    fifo = root / rel
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match="FIFO") as plain_refusal:
        plain(root)
    with pytest.raises(InvalidInput, match="FIFO") as forked_refusal:
        snap.capture(DirRoot(root))
    assert str(forked_refusal.value) == str(plain_refusal.value)


def test_a_refusal_in_the_childs_half_is_the_parents_refusal(
    host: Path, children: list[int]
) -> None:
    assert_same_refusal(host, f"{CPU}/cpu80/topology/core_id")
    assert len(children) == 1


def test_a_live_root_reads_its_cpus_through_a_child_too(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a live DirRoot over the folder: the same read_files / listdir, the live way
    seen = child_results(monkeypatch)
    got = snap._Recorder(DirRoot(host, live=True))
    paths = snap._read_cpus(got)
    assert len(children) == 1 and seen[0] is not None
    want = snap._Recorder(DirRoot(host, live=True))
    monkeypatch.setattr(snap, "FORK_FROM_CPUS", 1 << 30)
    assert paths == snap._read_cpus(want)
    assert got.lists == want.lists
    assert {rel: got.texts[rel] for rel in want.texts} == want.texts
    # and doctor's per-CPU files, each half's read beside it, as the root reads them
    extra = sorted(got.texts.keys() - want.texts.keys())
    assert extra == sorted(snap._declared_paths(snap._cpus(DirRoot(host))))
    assert [got.texts[rel] for rel in extra] == DirRoot(host, live=True).read_files(extra)


# -- a large batch of files (_Recorder._read_new): a worker's task files -------------------------

PID = 4242
CAN_FORK = forked.can_fork  # as it is, before the children fixture sets its own


@pytest.fixture
def worker(sysroot: SysrootBuilder) -> Path:
    """The A2 host with one worker of 300 threads on NPU 0: 600 task files in one batch; in the
    child's half a thread whose comm is gone and one whose status is a link inside the root."""
    root = a2_with_worker(sysroot, PID, 300).root
    (root / f"proc/{PID}/task/{PID + 290}/comm").unlink()
    (root / f"proc/{PID}/task/{PID + 291}/status").unlink()
    sysroot.link(f"proc/{PID}/task/{PID + 291}/status", f"/proc/{PID}/task/{PID + 1}/status")
    return root


@pytest.fixture
def file_children(children: list[int], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """children, forked for a batch of 500 files or more (no CPU share: the host has 192)."""
    monkeypatch.setattr(snap, "FORK_FROM_CPUS", 1 << 30)
    monkeypatch.setattr(snap, "FORK_FROM_FILES", 500)
    return children


def test_a_large_batch_read_partly_by_a_child_is_the_capture_one_process_gives(
    worker: Path, file_children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = child_results(monkeypatch)
    cap = snap.capture(DirRoot(worker))
    # two batches: the CPU folders' files (192 CPUs, no CPU share) and the task files
    taken = [x for x in seen if x is not None]  # None: the CPU share's (no child)
    assert len(file_children) == 2 and len(taken) == 2
    assert all(isinstance(x, list) for x in taken)
    assert_same(cap, plain(worker))
    task = f"proc/{PID}/task"
    assert f"{task}/{PID + 299}/status" in cap.files and f"{task}/{PID + 290}/comm" not in cap.files
    assert cap.files[f"{task}/{PID + 291}/status"] == cap.files[f"{task}/{PID + 1}/status"]


def _files_failing(root: Root, rels: list[str]) -> object:
    raise OSError("the child's read failed")


def _files_short(root: Root, rels: list[str]) -> object:
    return snap._child_files(root, rels)[:-1]


def _files_wrong_type(root: Root, rels: list[str]) -> object:
    return [b"bytes"] * len(rels)


@pytest.mark.parametrize("job", [_files_failing, exiting, _files_short, _files_wrong_type])
def test_a_batch_child_that_fails_or_sends_garbage_is_read_by_the_parent(
    worker: Path, file_children: list[int], monkeypatch: pytest.MonkeyPatch, job: object
) -> None:
    monkeypatch.setattr(snap, "_child_files", job)
    assert_same(snap.capture(DirRoot(worker)), plain(worker))
    assert len(file_children) == 2


def test_a_refusal_in_the_batch_childs_half_is_the_parents_refusal(
    worker: Path, file_children: list[int]
) -> None:
    assert_same_refusal(worker, f"proc/{PID}/task/{PID + 280}/comm")
    assert len(file_children) == 2


def test_no_batch_child_where_no_fork_is_allowed_or_nothing_is_read_from_files(
    worker: Path, file_children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    want = plain(worker)
    # a thread beside: no fork allowed, this process reads the whole batch
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        cap = snap.capture(DirRoot(worker))
    finally:
        stop.set()
        other.join()
    assert file_children == []
    assert_same(cap, want)
    # no fork() at all (a platform without it), as forked.can_fork finds it: the same
    monkeypatch.setattr(forked, "can_fork", CAN_FORK)
    monkeypatch.delattr(os, "fork")
    assert_same(snap.capture(DirRoot(worker)), want)
    assert file_children == []
    # an archive's host is in memory already: never a child
    memory = MemRoot(dict(want.files), dict(want.links))
    rels = sorted(want.files)
    assert snap._Recorder(memory).read_files(rels) == [want.files[r] for r in rels]
    assert file_children == []


def test_no_batch_child_while_a_cpu_share_child_runs(
    host: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the parent's own share of the CPU folders is one large batch: read by itself, one child
    # at a time on two cores; the rest of the capture may fork again (batches read after)
    monkeypatch.setattr(snap, "FORK_FROM_FILES", 100)
    got = snap._Recorder(DirRoot(host))
    paths = snap._read_cpus(got)
    assert len(children) == 1
    assert len(paths) > 1000
    assert got.fork_files


def test_a_batchs_paths_of_this_process_are_read_here_never_by_the_child(
    worker: Path, file_children: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child's proc/self is the child: a proc/self or proc/thread-self path in the child's
    half is read by this process, and the answers keep the batch's order."""
    here: list[list[str]] = []  # what this process reads itself (the child's reads stay there)
    real = DirRoot.read_files

    def spy(self: DirRoot, rels: list[str]) -> list[str | None]:
        here.append(list(rels))
        return real(self, rels)

    rels = [f"proc/{PID}/task/{PID + i}/status" for i in range(300)]
    rels += [f"proc/{PID}/task/{PID + i}/comm" for i in range(300)]
    own = ["proc/self/status", "proc/thread-self/comm", "proc/self/cgroup"]
    for at, rel in zip((350, 420, 599), own, strict=True):
        rels.insert(at, rel)
    want = DirRoot(worker).read_files(rels)
    monkeypatch.setattr(DirRoot, "read_files", spy)
    got = snap._Recorder(DirRoot(worker)).read_files(rels)
    assert len(file_children) == 1 and len(here) == 1
    assert set(own) <= set(here[0]) and len(here[0]) == len(rels) // 2 + len(own)
    assert got == want
