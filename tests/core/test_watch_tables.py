"""Watch's cheaper bookkeeping says what the plain one said: the capped neighbour table evicts
the neighbour min() over the table would (fewest ticks, first put in among equals), and reports
built without a frozen dataclass's __init__ equal those built with it."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core.watch import (
    HostSample,
    ProcessSample,
    ThreadReport,
    ThreadSample,
    Watch,
    WatchTarget,
    built,
)

CAP = 3


def _model(steps: list[list[tuple[int, int, int]]]) -> tuple[dict[int, int], int]:
    """The table as the plain rule keeps it: a full table drops the newcomer when its smallest
    entry (the first of the fewest ticks, by min() over the dict) has more ticks than the
    newcomer gained, else evicts that entry; each decision counts one drop."""
    table: dict[int, int] = {}
    dropped = 0
    last: dict[int, int] = {}
    for i, step in enumerate(steps):
        seen: dict[int, int] = {}
        for tid, cpu, ticks in step:
            seen[tid] = ticks
            prev = last.get(tid)
            if i == 0 or prev is None or ticks - prev <= 0 or cpu != 0:
                continue
            gained = ticks - prev
            if tid not in table:
                if len(table) >= CAP:
                    smallest = min(table, key=lambda k: table[k])
                    dropped += 1
                    if table[smallest] > gained:
                        continue
                    del table[smallest]
                table[tid] = 0
            table[tid] += gained
        last = seen
    return table, dropped


# each step: the other threads of the host (tid, cpu, total ticks so far)
STEPS = st.lists(
    st.lists(
        st.tuples(st.integers(10, 19), st.integers(0, 1), st.integers(0, 6)),
        max_size=8,
        unique_by=lambda t: t[0],
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300)
@given(steps=STEPS)
def test_the_neighbour_table_keeps_and_drops_what_min_over_it_would(
    steps: list[list[tuple[int, int, int]]],
) -> None:
    # ticks only grow for a thread in real samples, but the table must hold whatever comes
    w = Watch([WatchTarget(pid=1, plan_cpus=frozenset({0}))], neighbour_cap=CAP, neighbour_top=CAP)
    worker = ProcessSample(pid=1, name="w", threads=(ThreadSample(1, "w", 0, 0),))
    for i, step in enumerate(steps):
        others = tuple(
            ProcessSample(pid=tid, name=f"p{tid}", threads=(ThreadSample(tid, f"t{tid}", cpu, t),))
            for tid, cpu, t in step
        )
        w.update(HostSample(at_s=float(i), workers={1: worker}, others=others))
    table, dropped = _model(steps)
    [rep] = w.report().workers
    assert rep.neighbours_dropped == dropped
    want = sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))
    assert [(n.tid, round(n.cpu_time_s * 100)) for n in rep.neighbours] == want


def test_a_long_run_keeps_the_eviction_heap_bounded() -> None:
    w = Watch([WatchTarget(pid=1, plan_cpus=frozenset({0}))], neighbour_cap=CAP)
    worker = ProcessSample(pid=1, name="w", threads=(ThreadSample(1, "w", 0, 0),))
    for i in range(400):
        others = tuple(
            ProcessSample(pid=tid, name="p", threads=(ThreadSample(tid, "t", 0, i * (tid % 7)),))
            for tid in range(10, 30)
        )
        w.update(HostSample(at_s=float(i), workers={1: worker}, others=others))
    [state] = w._workers.values()
    assert len(state.neighbours) == CAP
    assert state.smallest is None or len(state.smallest) <= 4 * CAP + 1


def test_built_reports_equal_constructed_ones() -> None:
    w = Watch([WatchTarget(pid=1, plan_cpus=frozenset({0}), node_cpus=frozenset({0, 1}))])
    for i, (cpu, ticks) in enumerate([(0, 5), (1, 9), (1, 9)]):
        t = ThreadSample(7, "acl_thread", cpu, ticks, i, 2 * i, i, frozenset({0, 1}))
        w.update(HostSample(float(i), {1: ProcessSample(1, "w", (t,), started=3)}))
    [rep] = w.report().workers
    [th] = rep.threads
    assert isinstance(th, ThreadReport)
    # every field set, none more: the constructor takes exactly what built() set
    assert th == ThreadReport(**vars(th))
    assert set(vars(th)) == {f.name for f in dataclasses.fields(ThreadReport)}
    assert (th.cpus_ran, th.migrations, th.ctx_voluntary) == (frozenset({0, 1}), 2, 4)
    fields = {
        "tid": 1,
        "name": "n",
        "processor": 0,
        "cpu_ticks": 3,
        "nr_migrations": None,
        "ctx_voluntary": None,
        "ctx_involuntary": None,
        "mask": None,
    }
    sample = built(ThreadSample, fields)
    assert sample == ThreadSample(1, "n", 0, 3)
    assert set(vars(sample)) == {f.name for f in dataclasses.fields(ThreadSample)}
    assert hash(sample) == hash(ThreadSample(1, "n", 0, 3)) and sample.tid == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.tid = 2  # type: ignore[misc]  # still frozen


def test_all_exited_says_what_the_report_says() -> None:
    w = Watch([WatchTarget(pid=1), WatchTarget(pid=2)])
    both = {p: ProcessSample(p, "w", (ThreadSample(p, "w", 0, 0),)) for p in (1, 2)}
    for workers, want in (
        (both, False),
        ({2: both[2]}, False),
        ({2: both[2]}, False),
        ({}, True),
        ({1: both[1]}, True),  # an exited worker stays exited
    ):
        w.update(HostSample(0.0, workers))
        assert w.all_exited is want
        assert w.all_exited == all(not r.alive for r in w.report().workers)
