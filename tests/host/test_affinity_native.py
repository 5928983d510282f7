"""bind's compiled per-thread loops (host/affinity/_affinityc.c) against the Python they stand for,
on real threads on CPUs 0-1: the same threads written, the same old masks, the same thread where a
call fails, the same survey, the same bind report."""

from __future__ import annotations

import os

import pytest

from ascendtune.core.bindplan import BindTarget
from ascendtune.host.affinity import bind as bind_engine
from ascendtune.host.affinity import bind_process
from ascendtune.host.affinity import masks as mask_io
from tests.support.children import (
    BOTH,
    Spawn,
    masks,
    needs_cpus_0_1,
)
from tests.support.compiler import skip_without_cc

pytestmark = needs_cpus_0_1

needs_c = pytest.mark.skipif(
    mask_io.affinity_native() is None, reason="installed without a C compiler"
)
ONE, ZERO = frozenset({1}), frozenset({0})
MIXED = [[0], [1], [0, 1], [0, 1]]  # thread i of the child starts on MIXED[i % 4]


def test_the_compiled_loops_are_built_where_a_compiler_is() -> None:
    skip_without_cc()
    assert mask_io.affinity_native() is not None, "pip install -e . builds _affinityc.c"


def _gone_tid() -> int:
    """A thread id no task has now."""
    tid = 4_000_000
    while os.path.exists(f"/proc/{tid}"):
        tid += 1
    return tid


def _tids(pid: int) -> list[int]:
    return sorted(masks(pid))


def _put_back(pid: int, before: dict[int, frozenset[int]]) -> None:
    for tid, mask in before.items():
        os.sched_setaffinity(tid, mask)
    assert masks(pid) == before


@pytest.fixture(autouse=True)
def _compiled_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """These children have a handful of threads: the compiled loops run from the first."""
    monkeypatch.setattr(bind_engine, "NATIVE_FROM", 0)


def _both(monkeypatch: pytest.MonkeyPatch, run: object) -> tuple[object, object]:
    """run() with the compiled loops (checked to have been asked for), then with the Python ones."""
    assert callable(run)
    asked: list[object] = []

    def loaded() -> object:
        asked.append(mask_io.affinity_native())
        return asked[-1]

    with monkeypatch.context() as m:
        m.setattr(bind_engine, "affinity_native", loaded)
        native = run()
    assert asked and all(a is not None for a in asked), "the compiled loops did not run"
    with monkeypatch.context() as m:
        m.setattr(mask_io, "_NATIVE", [None])
        python = run()
    return native, python


def test_few_threads_do_not_load_the_compiled_loops(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below NATIVE_FROM threads a bind never asks for the module (loading it costs more)."""
    monkeypatch.setattr(bind_engine, "NATIVE_FROM", 256)

    def refuse() -> object:
        raise AssertionError("loaded for a handful of threads")

    monkeypatch.setattr(bind_engine, "affinity_native", refuse)
    pid = spawn(threads=3)
    report = bind_process(pid, BindTarget(cpus=ONE))
    assert report.verified


@needs_c
@pytest.mark.parametrize("want", [ONE, ZERO, BOTH])
@pytest.mark.parametrize("at", [0, 1, 5])
def test_a_pool_pass_writes_what_python_writes(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch, want: frozenset[int], at: int
) -> None:
    pid = spawn(threads=11, masks=MIXED)
    before = masks(pid)
    order = _tids(pid)

    def run() -> tuple[object, dict[int, frozenset[int]]]:
        got = bind_engine._pool_loop(order, at, want)
        after = masks(pid)
        _put_back(pid, before)
        return got, after

    native, python = _both(monkeypatch, run)
    assert native == python
    written, runs, bad = native[0]  # type: ignore[index]
    assert bad is None
    assert written == [t for t in order[at:] if before[t] != want]
    assert all(isinstance(old, frozenset) for _i, old in runs)


@needs_c
def test_a_pool_pass_stops_at_the_same_thread(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = spawn(threads=5, masks=MIXED)
    before = masks(pid)
    order = _tids(pid)
    order.insert(3, _gone_tid())

    def run() -> object:
        got = bind_engine._pool_loop(order, 0, ONE)
        _put_back(pid, before)
        return got

    native, python = _both(monkeypatch, run)
    assert native == python
    assert native[2] == 3  # type: ignore[index]
    # a CPU past any kernel mask: os's own error, at the first thread off it
    far = frozenset({1 << 20})
    native, python = _both(monkeypatch, lambda: bind_engine._pool_loop(order, 0, far))
    assert native == python == ([], [], 0)
    assert masks(pid) == before


@needs_c
@pytest.mark.parametrize("want", [ONE, BOTH])
def test_a_survey_reads_what_python_reads(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch, want: frozenset[int]
) -> None:
    pid = spawn(threads=9, masks=MIXED)
    order = _tids(pid)
    order.insert(2, _gone_tid())  # exited: counted as gone on both paths
    target = BindTarget(cpus=want)
    native, python = _both(monkeypatch, lambda: bind_engine._survey_pool(pid, target, order))
    assert native == python
    assert native.total == len(order) - 1  # type: ignore[attr-defined]


@needs_c
def test_a_bind_reports_the_same_either_way(spawn: Spawn, monkeypatch: pytest.MonkeyPatch) -> None:
    pid = spawn(threads=20, masks=MIXED)
    before = masks(pid)

    def run() -> object:
        report = bind_process(pid, BindTarget(cpus=ONE))
        assert set(masks(pid).values()) == {ONE}
        _put_back(pid, before)
        return report.to_json()

    native, python = _both(monkeypatch, run)
    assert native == python


@needs_c
@pytest.mark.parametrize("books", ["empty", "kept"])
def test_a_pool_pass_keeps_the_books_of_every_run_of_old_masks(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch, books: str
) -> None:
    """Pass 1 (empty books) and a later pass (books already kept) record, compiled or not, every
    thread written with its old mask in write order across the runs of equal old masks, and each
    write the kernel may have narrowed to be read back."""
    pid = spawn(threads=11, masks=MIXED)
    before = masks(pid)
    order = _tids(pid)
    earlier = {0: ("pool", BOTH)}  # a thread no listing has: the books of an earlier pass

    def run() -> tuple[list[object], list[object], dict[int, object]]:
        run_ = bind_engine._Run(previous={}, failures={}, initial=order)
        sweep = bind_engine._Sweep()
        if books == "kept":
            run_.previous[0] = BOTH
            sweep.known.update(earlier)
        writes, bad = bind_engine._pool_pass(order, 0, "pool", BOTH, run_, sweep, fresh=True)
        assert bad is None
        assert writes == sum(1 for t in order if before[t] != BOTH)
        _put_back(pid, before)
        return list(run_.previous.items()), list(sweep.known.items()), sweep.check

    native, python = _both(monkeypatch, run)
    assert native == python
    previous, known, check = native
    kept = [(0, BOTH)] if books == "kept" else []
    # BOTH reaches outside the one-CPU masks it replaced: those writes are read back next pass
    assert previous == kept + [(t, before[t]) for t in order if before[t] != BOTH]
    assert check == {t: ("pool", BOTH) for t in order if before[t] != BOTH}
    assert known == [*earlier.items()][: len(kept)] + [
        (t, ("pool", BOTH)) for t in order if before[t] == BOTH
    ]
