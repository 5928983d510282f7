"""`watch` names the binder that set a thread's mask, on a real worker of this machine: a fake
NPU server's worker (tests/support/workers.py) started with torch_npu's CPU_AFFINITY_CONF in its
environment, under vLLM-Ascend (its binding on by default). The test changes one thread's mask
mid-watch, as each binder would, and steps the watch between changes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ascendtune.app import watch as app_watch
from ascendtune.app.keep_bound import watch_workers
from ascendtune.app.options import HostSource
from ascendtune.app.workers import WorkersOptions
from tests.support import schemas
from tests.support.children import needs_cpus_0_1
from tests.support.cli import Cli
from tests.support.workers import Server, comm, tids, write_plan

pytestmark = needs_cpus_0_1

# mode 1, card 0 on CPU 1: torch_npu leaves CPU 1 on acl_thread / release_thread
CONF = "1,npu0:1"


def _doc(session: app_watch.Session) -> dict[str, Any]:
    from ascendtune.core.jsondoc import SCHEMA_VERSION

    doc = {"schema_version": SCHEMA_VERSION, **app_watch.document(session.step())}
    return schemas.checked("watch", doc)


def _thread(doc: dict[str, Any], tid: int) -> dict[str, Any]:
    (w,) = doc["workers"]
    return next(t for t in w["threads"] if t["tid"] == tid)


def _acl(pid: int) -> int:
    return next(t for t in tids(pid) if comm(pid, t) == "acl_thread")


@pytest.fixture
def arm(monkeypatch: pytest.MonkeyPatch) -> None:
    """This host read as aarch64: vLLM-Ascend's binding acts on ARM hosts only, and an Ascend
    server is one (the processes and their masks stay this machine's)."""
    from ascendtune.host import reader

    real = reader.read_host
    monkeypatch.setattr(reader, "read_host", lambda root: real(root)._replace(arch="aarch64"))


def test_a_mask_is_named_after_the_binder_that_leaves_it(
    server: Server, arm: None, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    monkeypatch.setenv("CPU_AFFINITY_CONF", CONF)  # the worker inherits it
    w = server.start(0, threads=4)
    server.reset_masks()
    acl = _acl(w.pid)
    session = app_watch.start(app_watch.WatchOptions(pids=(w.pid,), interval_s=0.1))
    doc = _doc(session)
    (wd,) = doc["workers"]
    by = {b["id"]: b for b in wd["binders"]}
    assert list(by).index("torch_npu") < list(by).index("vllm-ascend")  # the chain's order
    assert _thread(doc, acl)["set_by"]["how"] == "unbound"  # 0-1: every CPU it may use

    os.sched_setaffinity(acl, {1})  # what torch_npu leaves on acl_thread
    doc = _doc(session)
    t = _thread(doc, acl)
    assert t["mask"] == "1" and t["mask_changes"] == 1
    assert t["set_by"]["binder"] == "torch_npu" and t["set_by"]["how"] == "exact"
    assert "torch_npu CPU_AFFINITY_CONF (device init)" in t["set_by"]["words"]
    (change,) = doc["workers"][0]["mask_changes"]
    assert (change["tid"], change["before"], change["after"]) == (acl, "0-1", "1")
    assert change["set_by"]["binder"] == "torch_npu"

    os.sched_setaffinity(acl, {0})  # no binder of this worker leaves CPU 0 there
    t = _thread(_doc(session), acl)
    assert t["mask"] == "0" and t["set_by"]["how"] == "unknown"
    assert t["set_by"]["binder"] is None
    assert t["set_by"]["words"].startswith("unknown (no binder on this worker's chain")

    # ascendtune's own bind: CPU 1 for every thread, the mask torch_npu also leaves on
    # acl_thread; the record of the bind says who wrote it in this interval
    r = cli("bind", "--pid", str(w.pid), "--cpus", "1", "--json")
    assert r.exit_code == 0, r.output
    doc = _doc(session)
    t = _thread(doc, acl)
    assert t["mask"] == "1" and t["set_by"]["binder"] == "ascendtune"
    assert t["set_by"]["how"] == "exact"
    main = _thread(doc, w.pid)
    assert main["set_by"]["binder"] == "ascendtune" and main["mask"] == "1"
    assert doc["workers"][0]["mask_changes_total"] == 2 + len(tids(w.pid))

    # set back to CPU 1 by something else, later: the record is older than the interval, so
    # the chain alone names it (torch_npu), not ascendtune
    os.sched_setaffinity(acl, {0})
    _doc(session)
    os.sched_setaffinity(acl, {1})
    t = _thread(_doc(session), acl)
    assert t["set_by"]["binder"] == "torch_npu" and t["set_by"]["how"] == "exact"


def test_the_json_of_watch_carries_who_set_each_mask(
    server: Server, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    monkeypatch.setenv("CPU_AFFINITY_CONF", CONF)
    w = server.start(0, threads=4)
    server.reset_masks()
    acl = _acl(w.pid)
    os.sched_setaffinity(acl, {1})  # before the watch: seen at the first sample
    r = cli("watch", "--pid", str(w.pid), "--once", "--json", "--interval", "0.1")
    assert r.exit_code == 0, r.output
    doc = schemas.loads("watch", r.stdout)
    t = _thread(doc, acl)
    assert t["mask"] == "1" and t["mask_changes"] == 0
    assert t["set_by"]["binder"] == "torch_npu"
    r = cli("watch", "--pid", str(w.pid), "--once", "--interval", "0.1")
    assert r.exit_code == 0, r.output
    assert "SET BY" in r.stdout and "torch_npu" in r.stdout


def test_bind_workers_watch_says_which_binder_set_the_mask_it_put_back(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # lazy_bind:0: torch_npu binds the main thread too, to the card's range (CPU 1)
    monkeypatch.setenv("CPU_AFFINITY_CONF", CONF + ",lazy_bind:0")
    w = server.start(0, threads=4)
    now, events = [0.0], []

    def sleep(s: float) -> None:
        if now[0] == 0.0:
            os.sched_setaffinity(w.pid, {1})  # the main thread where torch_npu puts it
        now[0] += s

    watch_workers(
        WorkersOptions(source=HostSource(), plan_file=write_plan(tmp_path)),
        interval_s=1.0,
        duration_s=2.0,
        on_event=events.append,
        clock=lambda: now[0],
        sleep=sleep,
        handle_signals=False,
    )
    (put_back,) = [e for e in events if e.kind == "threads"]
    assert "1 new or moved thread(s) put back on CPUs 0-1" in put_back.message
    assert "the masks they were on: 1 on 1 (torch_npu CPU_AFFINITY_CONF (device init))" in (
        put_back.message
    )
    assert os.sched_getaffinity(w.pid) == {0}  # rank 0's main thread, back on the plan
