"""Who set a thread's mask (core/binders/attribution): the binders of a worker's chain that leave
exactly that mask on the thread's class, ascendtune's own bind record, and nothing beyond; and
the mask changes core/watch hands over to be attributed."""

from __future__ import annotations

from ascendtune.core import binders
from ascendtune.core import vllm_ascend as va
from ascendtune.core.binders import Pool, Worker
from ascendtune.core.binders.attribution import Attributor, Own
from ascendtune.core.bindplan import BindTarget
from ascendtune.core.watch import HostSample, ProcessSample, ThreadSample, Watch, WatchTarget

ONLINE = frozenset(range(48))
PID = 100
MAIN_POOL = frozenset(range(2, 22))
ACL = frozenset({22, 23})


def pool(mask: frozenset[int] | None) -> Pool | str:
    """A vLLM-Ascend stand-in on NPU affinity 0-23: main 2-21, acl 22, release 23."""
    got = sorted(frozenset(range(24)) & (mask if mask is not None else ONLINE))
    if len(got) < 5:
        return "The number of CPUs is insufficient"
    return Pool(frozenset(got[2:-2]), frozenset(got[-2:-1]), frozenset(got[-1:]))


def attributor(**env: str) -> Attributor:
    w = Worker(
        argv=("vllm", "serve", "/m"),
        env=env,
        env_known=True,
        arch="aarch64",
        cpus_online=ONLINE,
        npus_visible=2,
        card=0,
        vllm_ascend=va.NEWEST,
        pool_for=pool,
        pid=PID,
    )
    return Attributor(binders.run(w), PID)


def test_one_binder_leaving_the_mask_is_named_exactly() -> None:
    a = attributor()
    got = a.attribute(PID, "VLLM::Worker_TP", MAIN_POOL)
    assert (got.how, got.binder, got.candidates) == ("exact", "vllm-ascend", ("vllm-ascend",))
    assert got.words == "vLLM-Ascend enable_cpu_binding (after warm-up)"
    # the same mask on another class is not what vLLM-Ascend leaves there
    assert a.attribute(PID + 1, "acl_thread", MAIN_POOL).how == "unknown"


def test_several_binders_leaving_it_name_the_latest_and_the_others() -> None:
    a = attributor(CPU_AFFINITY_CONF="1,npu0:22-23")
    got = a.attribute(PID + 1, "acl_thread", ACL)
    assert got.how == "candidates"
    assert got.candidates == ("torch_npu", "vllm-ascend")  # the chain's order
    assert got.binder == "vllm-ascend"  # the latest
    assert got.words.endswith("or torch_npu") and got.short == "vllm-ascend/torch_npu?"


def test_no_binder_leaving_it_is_unknown_and_every_cpu_is_unbound() -> None:
    a = attributor(CPU_AFFINITY_CONF="1,npu0:22-23")
    got = a.attribute(PID + 1, "acl_thread", frozenset({5}))
    assert (got.how, got.binder, got.candidates) == ("unknown", None, ())
    assert got.words == "unknown (no binder on this worker's chain leaves this mask)"
    assert got.short == "?"
    free = a.attribute(PID + 1, "acl_thread", ONLINE)
    assert (free.how, free.binder, free.short) == ("unbound", None, "-")


def test_a_mask_set_on_the_main_thread_is_inherited_by_threads_born_later() -> None:
    # OMP_PROC_BIND pins the main thread at `import torch`: acl_thread, born later, inherits
    a = attributor(OMP_PROC_BIND="TRUE")
    got = a.attribute(PID + 1, "acl_thread", frozenset({0}))
    assert (got.how, got.binder) == ("exact", "openmp")


def test_ascendtunes_record_names_it_only_when_written_in_the_interval() -> None:
    a = attributor(CPU_AFFINITY_CONF="1,npu0:22-23")
    own = Own(BindTarget(ONLINE, {"main": MAIN_POOL, "acl": ACL, "release": ACL}), True, at=50.0)
    # written after the thread was last seen on another mask: ascendtune alone
    got = a.attribute(PID + 1, "acl_thread", ACL, own, since=40.0)
    assert (got.how, got.binder, got.stage) == ("exact", "ascendtune", "after start")
    # written before: it cannot have made this change; the chain answers
    got = a.attribute(PID + 1, "acl_thread", ACL, own, since=60.0)
    assert got.candidates == ("torch_npu", "vllm-ascend")
    # at first sight the record is one more candidate, the latest
    got = a.attribute(PID + 1, "acl_thread", ACL, own)
    assert got.candidates == ("torch_npu", "vllm-ascend", "ascendtune")
    assert got.binder == "ascendtune"
    # a mask the record did not write to that thread is not ascendtune's
    got = a.attribute(PID + 1, "acl_thread", MAIN_POOL, own, since=40.0)
    assert got.how == "unknown"
    # without roles every thread got the whole target
    pooled = own._replace(use_roles=False)
    assert a.attribute(PID + 1, "acl_thread", ONLINE, pooled, since=40.0).binder == "ascendtune"


def test_without_a_chain_only_the_record_can_name_a_binder() -> None:
    a = Attributor(None, PID, "no process with PID 100")
    got = a.attribute(PID, "x", frozenset({1}))
    assert got.how == "unknown" and "could not be read: no process with PID 100" in got.words
    own = Own(BindTarget(frozenset({1})), False, at=5.0)
    assert a.attribute(PID, "x", frozenset({1}), own, since=1.0).binder == "ascendtune"


def _sample(at: float, masks: dict[int, frozenset[int] | None]) -> HostSample:
    threads = tuple(
        ThreadSample(tid, "acl_thread" if tid != PID else "main", 0, 0, mask=m)
        for tid, m in masks.items()
    )
    return HostSample(at, {PID: ProcessSample(PID, "w", threads, started=7)})


def test_watch_hands_over_first_sights_and_changes_with_the_time_last_seen() -> None:
    w = Watch([WatchTarget(PID)])
    a, b = frozenset({0, 1}), frozenset({1})
    w.update(_sample(10.0, {PID: a, PID + 1: a, PID + 2: None}))
    first = w.take_mask_changes()
    assert [(c.tid, c.before, c.after, c.since, c.sample) for c in first] == [
        (PID, None, a, None, 1),
        (PID + 1, None, a, None, 1),
    ]  # a thread whose mask was not read is not handed over
    assert w.take_mask_changes() == []  # taken once
    w.update(_sample(10.5, {PID: a, PID + 1: a, PID + 3: a}))
    w.update(_sample(10.7, {PID: a, PID + 1: a}))
    assert w.take_mask_changes() == []  # the last update's only: PID + 3 was the one before's
    w.update(_sample(11.0, {PID: a, PID + 1: b}))
    (change,) = w.take_mask_changes()
    assert (change.tid, change.before, change.after, change.since, change.sample) == (
        PID + 1,
        a,
        b,
        10.7,
        4,
    )
    change.set_by = attributor().attribute(change.tid, change.name, change.after)
    w.attributed(change)
    w.set_binders(PID, (("torch_npu", "torch_npu CPU_AFFINITY_CONF", "device init", "binds"),))
    (rep,) = w.report().workers
    th = {t.tid: t for t in rep.threads}
    assert th[PID + 1].mask == b and th[PID + 1].mask_changes == 1
    assert th[PID + 1].set_by is change.set_by and th[PID].set_by is None
    assert rep.mask_changes == (change,) and rep.mask_changes_total == 1
    assert rep.attributed and rep.binders is not None
