"""The agent's state between samples: restarts counted per device even when the worker was gone
for a pass, counters that never go back when a thread exits, binder conflicts told apart from new
threads, the rows each metric gets."""

from __future__ import annotations

from ascendtune.app.agent.metrics import BY_NAME
from ascendtune.app.agent.state import AgentState
from ascendtune.core.bindplan import BindTarget
from ascendtune.core.watch import HostSample, ProcessSample, ThreadSample

PLAN = BindTarget(frozenset({0, 1}), numa_nodes=(0,), rank=0, source="test")
INFO = {"version": "0.1.0", "policy": "auto", "plan": "p", "mode": "keep"}


def state() -> AgentState:
    s = AgentState(host="h", service="svc", info=INFO)
    s.set_plan({0: PLAN}, "v0.30.0rc2")
    return s


def rows(s: AgentState, name: str) -> dict[tuple[str, ...], float]:
    return {labels: v for n, labels, v in s.rows() if n == name}


def sample(at: float, pid: int, threads: dict[int, tuple[int, int]], memory=None) -> HostSample:
    """threads: tid -> (cpu_ticks, cpu it is on)."""
    ts = tuple(
        ThreadSample(tid, "python", cpu, ticks, nr_migrations=ticks // 10, ctx_voluntary=ticks)
        for tid, (ticks, cpu) in threads.items()
    )
    return HostSample(at, {pid: ProcessSample(pid, "python", ts, memory_by_node=memory)})


def test_a_restart_is_counted_per_device_even_after_a_pass_without_the_worker() -> None:
    s = state()
    assert s.saw(100, 0) is False
    s.gone(100)  # a pass found no worker on device 0
    assert s.saw(101, 0) is True  # then it came back under a new PID
    assert s.saw(101, 0) is False
    assert rows(s, "ascendtune_worker_restarts_total") == {("h", "svc", "0", "0", "v0.30.0rc2"): 1}
    assert [lab[2] for lab in rows(s, "ascendtune_worker_threads")] == ["101"]


def test_counters_keep_what_an_exited_thread_ran() -> None:
    s = state()
    s.saw(100, 0)
    s.sample(sample(0.0, 100, {1: (100, 0), 2: (50, 1)}), {0: frozenset({0, 1})}, 100)
    s.sample(sample(1.0, 100, {1: (150, 0), 2: (80, 5)}), {0: frozenset({0, 1})}, 100)
    cpu = rows(s, "ascendtune_worker_cpu_seconds_total")
    lab = ("h", "svc", "100", "0", "0", "v0.30.0rc2")
    assert cpu == {(*lab, "on_plan"): 0.5, (*lab, "off_plan"): 0.3}  # thread 2 ran on CPU 5
    s.sample(sample(2.0, 100, {1: (160, 0)}), {0: frozenset({0, 1})}, 100)  # thread 2 exited
    cpu = rows(s, "ascendtune_worker_cpu_seconds_total")
    assert cpu == {(*lab, "on_plan"): 0.6, (*lab, "off_plan"): 0.3}
    assert rows(s, "ascendtune_worker_migrations_total") == {lab: 5 + 3 + 1}
    ctx = rows(s, "ascendtune_worker_context_switches_total")
    assert ctx[(*lab, "voluntary")] == 50 + 30 + 10
    s.sample(HostSample(3.0, {}), {}, 100)  # the process is gone: so are its series
    assert rows(s, "ascendtune_worker_cpu_seconds_total") == {}


def test_memory_per_node_and_the_local_share() -> None:
    s = state()
    s.saw(100, 0)
    s.sample(sample(0.0, 100, {1: (1, 0)}, memory={0: 3 << 20, 1: 1 << 20}), {}, 100)
    lab = ("h", "svc", "100", "0", "0", "v0.30.0rc2")
    assert rows(s, "ascendtune_worker_memory_bytes") == {(*lab, "0"): 3 << 20, (*lab, "1"): 1 << 20}
    assert rows(s, "ascendtune_worker_memory_local_ratio") == {lab: 0.75}


def test_a_thread_moved_off_the_plan_after_the_pass_is_a_conflict_a_new_one_is_not() -> None:
    s = state()
    s.saw(100, 0)
    s.read_masks(lambda pid: [(1, "python", frozenset({0, 1})), (2, "python", frozenset({0, 1}))])
    s.before_pass(
        lambda pid: [
            (1, "python", frozenset({0, 1})),
            (2, "python", frozenset({3})),  # another binder moved it
            (3, "python", frozenset({0, 1, 2, 3})),  # born since, off the plan
        ]
    )
    lab = ("h", "svc", "100", "0", "0", "v0.30.0rc2")
    assert rows(s, "ascendtune_worker_binder_conflicts_total") == {lab: 1}
    assert rows(s, "ascendtune_worker_threads_rebound_total") == {lab: 2}
    assert rows(s, "ascendtune_worker_threads_bound") == {lab: 2}


def test_a_worker_without_a_rank_has_no_plan_and_an_empty_rank() -> None:
    s = state()
    s.saw(300, 3, failed=True)
    s.read_masks(lambda pid: [(7, "python", frozenset({0, 1}))])
    s.sample(sample(0.0, 300, {7: (10, 0)}), {}, 100)
    s.sample(sample(1.0, 300, {7: (30, 1)}), {}, 100)
    lab = ("h", "svc", "300", "", "3", "v0.30.0rc2")
    assert rows(s, "ascendtune_worker_threads_bound") == {lab: 0}
    assert rows(s, "ascendtune_worker_cpu_seconds_total") == {(*lab, "no_plan"): 0.2}
    assert rows(s, "ascendtune_worker_bind_failures_total") == {
        ("h", "svc", "", "3", "v0.30.0rc2"): 1
    }
    assert rows(s, "ascendtune_worker_binder_conflicts_total") == {}


def test_doctor_rows_and_npu_interrupts() -> None:
    s = state()
    s.set_checks(
        [("swappiness", "warn"), ("npu_irq:3", "ok"), ("npu_irq:4", "fail"), ("npu_irq:5", "skip")]
    )
    assert rows(s, "ascendtune_npu_irq_on_plan") == {("h", "3"): 1, ("h", "4"): 0}
    checks = rows(s, "ascendtune_doctor_check")
    assert checks[("h", "swappiness", "warn")] == 1 and checks[("h", "swappiness", "ok")] == 0
    assert sum(v for (_, c, _), v in checks.items() if c == "npu_irq:5") == 1


def test_every_row_is_a_described_metric_with_its_labels() -> None:
    s = state()
    s.saw(100, 0)
    s.read_masks(lambda pid: [(1, "python", frozenset({0, 1}))])
    s.sample(sample(0.0, 100, {1: (1, 0)}, memory={0: 4096}), {}, 100)
    s.set_checks([("npu_irq:0", "ok")])
    seen = set()
    for name, labels, value in s.rows():
        assert len(labels) == len(BY_NAME[name].labels), name
        assert value >= 0
        seen.add(name)
    assert seen == set(BY_NAME)
