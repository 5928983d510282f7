"""`fleet bind --workers` without Ray: what the driver makes of each node's answer (a good
one, a failed bind, a hang, garbage, a dry run answering --apply), and the node's task on a
node that replays a captured host."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ascendtune.app import fleet_bind as fb
from ascendtune.host import ray_fleet
from tests.support import schemas


def worker(
    pid: int, *, bound: int = 10, total: int = 10, verified: bool = True, **kw: Any
) -> dict[str, Any]:
    return {
        "pid": pid,
        "name": "VLLM::Worker_TP",
        "device": pid % 8,
        "devices": [pid % 8],
        "rank": pid % 8,
        "target_cpus": "0-1",
        "roles": {},
        "cpus_before": "0-1",
        "cpus_after": "0-1",
        "threads_total": total,
        "threads_bound": bound,
        "threads_failed": [],
        "threads_changed": bound,
        "verified": verified,
        "changed": True,
        "dry_run": False,
        "error": None,
        "rolled_back": 0,
        "bind_ms": 1.5,
        "self_binding": None,
        **kw,
    }


def answer(*workers: dict[str, Any], dry_run: bool = False, **kw: Any) -> dict[str, Any]:
    """What bind_here returns from a node that bound (or planned) these workers."""
    return {
        "status": "ok",
        "reason": None,
        "hostname": "node",
        "live": True,
        "apply": not dry_run,
        "bind": {
            "root": "/",
            "source": "plan.json",
            "dry_run": dry_run,
            "workers": list(workers),
            "handoff": [],
            "summary": {"workers": len(workers), "bound": 0, "failed": 0, "would_change": 0},
        },
        "python": "3.11.7",
        "ascendtune": "/x/ascendtune",
        **kw,
    }


def node(
    name: str, got: object = None, *, status: str = "ok", reason: str | None = None
) -> ray_fleet.NodeAnswer:
    ans = ray_fleet.NodeAnswer(name.ljust(56, "0"), name, "10.0.0.1", seconds=0.5)
    if status != "ok":
        ans.status, ans.reason = status, reason
    else:
        fb.accept(ans, got)
    return ans


def report(
    apply: bool, *answers: ray_fleet.NodeAnswer
) -> tuple[fb.FleetBindReport, dict[str, Any]]:
    got = ray_fleet.Gathered("10.0.0.1:6379", "2.x", list(answers), 1.0, True)
    rep = fb.report_of(got, apply)
    doc = schemas.checked("fleet-bind", {"schema_version": 1, **fb.document(rep)})
    return rep, {n["node"]: n for n in doc["nodes"]}


def test_every_kind_of_answer_is_its_own_row_and_only_verified_ones_count() -> None:
    unverified = answer(
        worker(11), worker(12, bound=7, verified=False, error="3 thread(s) not bound: EPERM")
    )
    rep, rows = report(
        True,
        node("ok", answer(worker(1), worker(2))),
        node("half", unverified),
        node("hung", status="no answer", reason="no answer in 60 s"),
        node("garbage", "a string"),
        node("none", None),
        node("empty", {"status": "nothing to bind", "reason": "no accelerator worker found"}),
        node("crash", status="failed", reason="bind failed: RuntimeError: boom"),
    )
    assert {n: r["status"] for n, r in rows.items()} == {
        "ok": "verified",
        "half": "failed",
        "hung": "no answer",
        "garbage": "failed",
        "none": "failed",
        "empty": "nothing to bind",
        "crash": "failed",
    }
    assert rows["ok"]["verified"] is True and rows["ok"]["workers"] == 2
    assert (rows["ok"]["threads_bound"], rows["ok"]["threads_total"]) == (20, 20)
    assert (
        rows["half"]["verified"] is False
        and "PID 12: 3 thread(s) not bound" in rows["half"]["reason"]
    )
    assert rows["half"]["bind"]["workers"][1]["pid"] == 12, "the node's own document is kept"
    assert "malformed answer: str" in rows["garbage"]["reason"]
    assert "malformed answer: NoneType" in rows["none"]["reason"]
    assert rows["hung"]["reason"] == "no answer in 60 s" and rows["hung"]["verified"] is None
    assert rep.exit_code == 1
    s = rep.summary()
    assert (s["verified"], s["failed"], s["no answer"], s["nothing to bind"]) == (1, 4, 1, 1)
    # without the failing nodes: verified and nothing to bind is success
    ok, _ = report(
        True, node("ok", answer(worker(1))), node("empty", {"status": "nothing to bind"})
    )
    assert ok.exit_code == 0


@pytest.mark.parametrize(
    "spoil",
    [
        lambda a: a["bind"].update(dry_run=True),  # a dry run's answer to --apply
        lambda a: a["bind"].update(workers=[]),
        lambda a: a["bind"].update(workers="all of them"),
        lambda a: a.update(bind=None),
        lambda a: a["bind"]["workers"][0].update(threads_bound=11),  # more than its threads
        lambda a: a["bind"]["workers"][0].update(threads_total=True),
        lambda a: a["bind"]["workers"][0].update(verified="yes"),
        lambda a: a["bind"]["workers"][0].update(error=["x"]),
        lambda a: a.update(status="fine"),
    ],
)
def test_an_answer_that_only_looks_verified_never_turns_into_success(spoil: Any) -> None:
    got = answer(worker(1))
    spoil(got)
    rep, rows = report(True, node("n", got))
    assert rows["n"]["status"] == "failed" and rows["n"]["verified"] is not True, rows["n"]
    assert rep.exit_code == 1


def test_a_dry_run_plans_and_a_worker_without_a_rank_fails_it() -> None:
    planned = answer(worker(1, bound=3, verified=False, dry_run=True), dry_run=True)
    norank = answer(worker(2, dry_run=True, error="the plan has no rank on NPU 2"), dry_run=True)
    rep, rows = report(False, node("a", planned), node("b", norank))
    assert rows["a"]["status"] == "planned" and rows["a"]["verified"] is None
    assert rows["a"]["reason"] == "1 of 1 workers would change"
    assert rows["b"]["status"] == "failed" and "no rank on NPU 2" in rows["b"]["reason"]
    assert rep.exit_code == 1
    bound = answer(worker(1))
    _, rows = report(False, node("c", bound))
    assert rows["c"]["status"] == "failed" and "a bind's answer to a dry run" in rows["c"]["reason"]


def test_a_replayed_node_plans_but_refuses_to_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ray_fleet.SOURCE_ENV, "demo:container-a2-half")
    monkeypatch.delenv(fb.PIDS_ENV, raising=False)
    request = fb.request_of(fb.FleetBindOptions(apply=True))
    got = fb.bind_here(request)
    assert got["status"] == "refused" and "captured host" in got["reason"]
    assert got["bind"] is None and got["live"] is False
    dry = fb.bind_here(fb.request_of(fb.FleetBindOptions()))
    assert dry["status"] == "ok", dry
    assert dry["bind"]["dry_run"] is True and dry["bind"]["root"] == "demo:container-a2-half"
    assert len(dry["bind"]["workers"]) == 2
    _, rows = report(False, node("d", dry))  # the node's real document, judged and kept
    assert rows["d"]["status"] == "planned" and rows["d"]["reason"] == "1 of 2 workers would change"
    assert rows["d"]["bind"] == dry["bind"]
    _, rows = report(True, node("r", got))
    assert rows["r"]["status"] == "refused" and rows["r"]["verified"] is False
    assert rows["r"]["replayed"] == "demo:container-a2-half"


def test_the_pid_list_of_a_node(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fb.node_pids(None) is None and fb.node_pids(" ") is None
    assert fb.node_pids("12, 13,") == frozenset({12, 13})
    monkeypatch.setenv(ray_fleet.SOURCE_ENV, "demo:container-a2-half")
    monkeypatch.setenv(fb.PIDS_ENV, "12,x")
    got = fb.bind_here(fb.request_of(fb.FleetBindOptions()))
    assert got["status"] == "failed" and fb.PIDS_ENV in got["reason"]
    monkeypatch.setenv(fb.PIDS_ENV, "1")  # a PID no worker of the demo has: nothing there
    got = fb.bind_here(fb.request_of(fb.FleetBindOptions()))
    assert got["status"] == "nothing to bind" and got["pids"] == [1], got
    copy.deepcopy(got)  # plain data: it travels back through Ray's pickling
