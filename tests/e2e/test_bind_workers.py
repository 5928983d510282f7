"""`bind --workers` on real processes of this machine (CPUs 0 and 1), found the live way.

A fake `npu-smi` on PATH (in tmp_path) prints `npu-smi info` with a process table naming the
test's own child PIDs, plus `-m` and `-t topo`, so discovery runs end to end through the live
Root (npu-smi's table, /proc/PID) and binding through the real sched_setaffinity. Every test
reads the masks back from the kernel rather than trusting the report.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ascendtune.app.keep_bound import WatchEvent, watch_workers
from ascendtune.app.options import HostSource
from ascendtune.app.workers import WorkersOptions
from tests.support import schemas
from tests.support.children import kernel_thread
from tests.support.cli import CLI, Cli
from tests.support.modules import modules_after
from tests.support.workers import BOTH, DEVICES, Server, plan_doc, tids, write_plan

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or not hasattr(os, "sched_setaffinity")
    or not os.sched_getaffinity(0) >= BOTH,
    reason="needs Linux with CPUs 0 and 1 usable",
)


def bind(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    res = CLI("bind", *args)
    doc = None
    if res.stdout.strip().startswith("{"):
        doc = schemas.loads(schemas.bind_kind(args), res.stdout)
    return res.exit_code, doc, res.stderr


MEASURED: dict[str, Any] = {}


def test_eight_workers_of_fifty_threads_every_thread_on_target_ten_of_ten(
    server: Server, tmp_path: Path
) -> None:
    for d in range(DEVICES):
        server.start(d, threads=50, spawners=1 if d % 2 == 0 else 0)  # half of them churn
    plan = write_plan(tmp_path)
    per_worker_ms: list[float] = []
    missed: list[int] = []
    for run in range(10):
        server.reset_masks()
        code, doc, err = bind("--workers", "--plan", str(plan), "--json")
        off = server.off_target()
        assert code == 0, err
        assert doc is not None
        ws = doc["workers"]
        assert sorted(w["device"] for w in ws) == list(range(DEVICES))
        assert {w["pid"] for w in ws} == {w.pid for w in server.workers.values()}
        for w in ws:
            assert w["verified"] is True and w["threads_failed"] == [] and w["error"] is None
            assert w["rank"] == w["device"] and w["changed"] is True
            assert w["threads_total"] >= 50
            assert w["cpus_before"] == "0-1" and w["cpus_after"] == "0-1"
            per_worker_ms.append(w["bind_ms"])
        missed.append(sum(off.values()))
        assert sum(off.values()) == 0, f"run {run}: threads off target: {off}"
    MEASURED.update(
        runs=len(missed),
        threads_missed=sum(missed),
        bind_ms_mean=round(sum(per_worker_ms) / len(per_worker_ms), 2),
        bind_ms_max=round(max(per_worker_ms), 2),
    )
    print(f"\n8x50 workers, 10 runs: {MEASURED}")


def test_a_second_bind_changes_nothing_and_says_so(server: Server, tmp_path: Path) -> None:
    server.start(0, threads=10)
    plan = write_plan(tmp_path)
    code, doc, err = bind("--workers", "--plan", str(plan), "--json")
    assert code == 0, err
    code, doc, err = bind("--workers", "--plan", str(plan), "--json")
    assert code == 0 and doc is not None
    [w] = doc["workers"]
    assert w["changed"] is False and w["threads_changed"] == 0 and w["verified"] is True


def test_the_settle_window_is_waited_once_for_every_worker(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every worker's threads are written before any is re-read: the window before the final
    re-reads is waited at most once (what is left of it when the first worker whose window is
    still open comes, for every worker left), not once per worker."""
    from ascendtune.host.affinity import bind as engine

    for d in range(4):
        server.start(d, threads=6)
    slept: list[float] = []
    real = engine.time.sleep

    def sleep(s: float) -> None:
        # time.sleep is one function for the whole process: only the engine's waits count (a
        # subprocess's wait for the fake npu-smi polls with it too)
        if sys._getframe(1).f_globals.get("__name__") == engine.__name__:
            slept.append(s)
        real(s)

    # a fight round (a thread found off at the final re-read, written again) waits its own
    # window, rightly: on a loaded machine a worker's late thread can cause one. Those waits are
    # the re-reads after the first; the first re-read of every worker must not wait at all.
    reads: dict[int, int] = {}
    in_rounds: list[float] = []
    real_final = engine._final_read

    def final_read(pid: int, *args: object) -> object:
        reads[pid] = reads.get(pid, 0) + 1
        before = len(slept)
        got = real_final(pid, *args)  # type: ignore[arg-type]
        if reads[pid] > 1:
            in_rounds.extend(slept[before:])
        return got

    monkeypatch.setattr(engine.time, "sleep", sleep)
    monkeypatch.setattr(engine, "_final_read", final_read)
    server.reset_masks()
    code, doc, err = bind("--workers", "--plan", str(write_plan(tmp_path)), "--json")
    assert code == 0, err
    assert doc is not None and len(doc["workers"]) == 4
    assert all(w["verified"] and w["threads_changed"] > 0 for w in doc["workers"])
    assert sum(server.off_target().values()) == 0
    assert len(reads) == 4
    once = len(slept) - len(in_rounds)  # the settle window and every worker's first re-read
    assert once <= 1 and sum(slept) - sum(in_rounds) <= engine.VERIFY_SETTLE_S


def test_a_worker_without_a_rank_is_reported_and_the_others_still_bound(
    server: Server, tmp_path: Path
) -> None:
    server.start(0, threads=5)
    server.start(3, threads=5)
    doc = plan_doc()
    doc["ranks"] = [r for r in doc["ranks"] if r["device"] != 3]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(doc))
    code, out, err = bind("--workers", "--plan", str(path), "--json")
    assert code == 1 and "1 of 2 workers not bound" in err
    assert out is not None
    by_dev = {w["device"]: w for w in out["workers"]}
    assert by_dev[3]["error"] == "the plan has no rank on NPU 3" and by_dev[3]["verified"] is False
    assert by_dev[0]["verified"] is True
    assert server.off_target()[server.workers[0].pid] == 0


def test_a_plan_of_another_host_is_refused_unless_forced(server: Server, tmp_path: Path) -> None:
    w = server.start(0, threads=3)
    before = {t: os.sched_getaffinity(t) for t in tids(w.pid)}
    other = {"source": "demo", "root": "demo:atlas-800i-a2", "hostname": "atlas"}
    plan = write_plan(tmp_path, other)
    for args in (("--workers",), ("--rank", "0", "--pid", str(w.pid))):
        code, _doc, err = bind(*args, "--plan", str(plan))
        assert code == 2 and "was not made for this host" in err and "--force" in err
        assert {t: os.sched_getaffinity(t) for t in tids(w.pid)} == before
    code, _doc, err = bind("--workers", "--plan", str(plan), "--force")
    assert code == 0, err
    assert server.off_target()[w.pid] == 0


def logged_tool(server: Server) -> Path:
    """Put a wrapper in front of the fake npu-smi that writes each call's arguments to the
    file returned."""
    exe = server.tmp / "bin" / "npu-smi"
    exe.rename(exe.with_name("npu-smi.real"))
    log = server.tmp / "npu" / "calls"
    exe.write_text(f'#!/bin/sh\necho "$*" >>"{log}"\nexec "$(dirname "$0")/npu-smi.real" "$@"\n')
    exe.chmod(0o755)
    return log


def test_a_plan_file_reads_the_process_table_and_device_map_only(
    server: Server, tmp_path: Path
) -> None:
    """With --plan, the host is read for its workers only: npu-smi's topology is not run (no
    check uses it), a plan of another live host is still refused the same way, and --force
    binds it."""
    w = server.start(0, threads=3)
    log = logged_tool(server)
    before = {t: os.sched_getaffinity(t) for t in tids(w.pid)}
    other = {"source": "live", "hostname": "elsewhere", "machine_id_sha256": "0" * 16}
    plan = write_plan(tmp_path, other)
    code, _doc, err = bind("--workers", "--plan", str(plan))
    assert code == 2 and "was not made for this host: its machine-id differs" in err
    assert "--force" in err
    assert {t: os.sched_getaffinity(t) for t in tids(w.pid)} == before
    code, doc, err = bind("--workers", "--plan", str(plan), "--force", "--json")
    assert code == 0, err
    assert doc is not None and [x["device"] for x in doc["workers"]] == [0]
    assert server.off_target()[w.pid] == 0
    calls = log.read_text().splitlines()
    assert "info -t topo" not in calls and {"info", "info -m"} <= set(calls)
    log.unlink()
    # a plan computed here reads the whole host (on 2 CPUs it finds too few: exit 5)
    bind("--workers", "--dry-run")
    assert "info -t topo" in log.read_text().splitlines()


def test_a_plan_file_bind_loads_no_doctor_rules_pyudev_nor_socket(
    server: Server, tmp_path: Path
) -> None:
    """bind --workers --plan imports what it runs: no doctor rules (the worker records are in
    core.workerfacts), no planner, no pyudev (the PCI bus from sysfs), no socket (the hostname
    from uname)."""
    w = server.start(0, threads=3)
    mods = modules_after(["bind", "--workers", "--plan", str(write_plan(tmp_path)), "--json"])
    assert server.off_target()[w.pid] == 0  # it did bind
    assert "ascendtune.core.workerfacts" in mods
    for heavy in ("ascendtune.core.doctor", "ascendtune.core.planner", "pyudev", "socket"):
        assert heavy not in mods


def test_watch_binds_new_threads_and_a_restarted_worker(server: Server, tmp_path: Path) -> None:
    first = server.start(0, threads=20, spawners=1)
    server.start(1, threads=20)
    old_pid = server.workers[1].pid
    plan = write_plan(tmp_path)
    now = [0.0]
    ticks = [0]
    events: list[WatchEvent] = []

    def sleep(s: float) -> None:
        # what happens on the server between two passes of the watch
        ticks[0] += 1
        if ticks[0] == 1:
            first.spawn(7)  # threads born after the watch started, off the plan
            assert server.off_target()[first.pid] >= 7
        elif ticks[0] == 2:
            server.stop(1)
            server.start(1, threads=20)  # the worker restarts under a new PID
        now[0] += s

    summary = watch_workers(
        WorkersOptions(source=HostSource(), plan_file=plan),
        interval_s=1.0,
        duration_s=3.0,
        on_event=events.append,
        clock=lambda: now[0],
        sleep=sleep,
        handle_signals=False,
    )
    off = server.off_target()
    assert off == {first.pid: 0, server.workers[1].pid: 0}
    kinds = [e.kind for e in events]
    assert kinds.count("bound") == 2 and kinds[-1] == "stopped"
    threads = [e for e in events if e.kind == "threads"]
    assert threads and threads[0].pid == first.pid
    [restart] = [e for e in events if e.kind == "restarted"]
    assert restart.device == 1 and restart.pid == server.workers[1].pid != old_pid
    assert f"PID {old_pid} -> {server.workers[1].pid}" in restart.message
    assert summary.restarts == 1 and summary.failures == 0 and summary.ticks == 3
    assert summary.threads_bound >= 7
    assert summary.workers == {0: first.pid, 1: server.workers[1].pid}


def test_watch_from_the_cli_stops_at_its_deadline(server: Server, tmp_path: Path, cli: Cli) -> None:
    w = server.start(0, threads=4)
    plan = write_plan(tmp_path)
    code, _doc, err = bind(
        "--workers", "--watch", "--plan", str(plan), "--interval", "0.05", "--for", "0.2s"
    )
    res = cli("bind", "--workers", "--watch", "--plan", str(plan), "--for", "0.1", "--json")
    assert code == 0, err
    assert res.exit_code == 0, res.stderr
    docs = [json.loads(line) for line in res.stdout.splitlines()]
    assert docs[0]["kind"] == "bound" and docs[0]["pid"] == w.pid
    assert docs[-1]["watch"]["workers"] == {"0": w.pid}
    assert server.off_target()[w.pid] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--watch"], "give --workers --watch"),
        (["--workers", "--pid", "1"], "--pid do not go with it"),
        (["--workers", "--watch", "--dry-run"], "does not go with --dry-run"),
        (["--workers", "--for", "1s"], "--for bounds --watch"),
        (["--workers", "--watch", "--for", "soon"], "expected a duration"),
    ],
)
def test_usage_errors(server: Server, tmp_path: Path, args: list[str], message: str) -> None:
    server.start(0, threads=2)
    code, _doc, err = bind(*args, "--plan", str(write_plan(tmp_path)))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_no_worker_is_exit_3(server: Server, tmp_path: Path) -> None:
    code, _doc, err = bind("--workers", "--plan", str(write_plan(tmp_path)))
    assert code == 3 and "no accelerator worker found" in err


# ---- a captured host: only the dry run ------------------------------------------------------


def test_demo_dry_run_lists_both_workers() -> None:
    code, doc, err = bind("--workers", "--dry-run", "--demo", "container-a2-half", "--json")
    assert code == 0, err
    assert doc is not None and doc["dry_run"] is True
    by_dev = {w["device"]: w for w in doc["workers"]}
    assert sorted(by_dev) == [0, 1]
    bound, unbound = by_dev[0], by_dev[1]
    assert bound["changed"] is False and bound["cpus_before"] == bound["cpus_after"] == "2-11"
    assert bound["threads_bound"] == bound["threads_total"] == 7
    assert unbound["changed"] is True and unbound["rank"] == 1
    assert unbound["cpus_before"] == "0-23" and unbound["target_cpus"] == "12-23"
    assert unbound["cpus_after"] == "14-23" and unbound["threads_bound"] == 0
    assert unbound["roles"] == {"irq": "12-13", "main": "14-21", "acl": "22", "release": "23"}


def test_the_schema_says_what_a_dry_runs_cpus_after_carries() -> None:
    described = json.dumps(schemas.validator("bind-workers").schema)
    code, doc, err = bind("--workers", "--dry-run", "--demo", "container-a2-half", "--json")
    assert code == 0 and doc is not None, err
    unbound = next(w for w in doc["workers"] if w["changed"])
    assert unbound["cpus_after"] != unbound["cpus_before"]  # the masks it would get
    assert "a dry run: unchanged" not in described and "would get" in described


def test_demo_without_dry_run_is_refused(cli: Cli) -> None:
    res = cli("bind", "--workers", "--demo", "container-a2-half")
    assert res.exit_code == 2 and res.stdout == ""
    assert "only --dry-run is allowed" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_leftover_sysroot_variable_is_refused_too(cli: Cli) -> None:
    leftover = {"ASCENDTUNE_SYSROOT": "/nonexistent-but-captured"}
    res = cli("bind", "--cpus", "0", "--pid", str(os.getpid()), env=leftover)
    assert res.exit_code == 2 and "only --dry-run is allowed" in res.stderr


# ---- --show --------------------------------------------------------------------------------


def test_show_groups_the_masks_and_compares_with_a_plan(
    server: Server, tmp_path: Path, cli: Cli
) -> None:
    w = server.start(0, threads=6)
    code, doc, err = bind("--pid", str(w.pid), "--show", "--json")
    assert code == 0, err
    assert doc is not None and doc["threads_total"] == 6 and doc["target"] is None
    [group] = doc["masks"]
    assert group["cpus"] == "0-1" and group["threads"] == 6
    assert any(r.startswith("acl_thread ") for r in group["role_threads"])
    plan = write_plan(tmp_path)
    code, doc, err = bind(
        "--pid", str(w.pid), "--show", "--plan", str(plan), "--rank", "0", "--json"
    )
    assert code == 0, err
    assert doc is not None and doc["off_target"] == 6
    assert {(g["expected"], g["matches"]) for g in doc["masks"]} == {("0", False), ("1", False)}
    assert {frozenset(os.sched_getaffinity(t)) for t in tids(w.pid)} == {BOTH}, "a read only"
    res = cli("bind", "--pid", str(w.pid), "--show", "--cpus", "0-1")
    assert res.exit_code == 0 and "0 off --cpus" in res.stdout


def test_watch_stops_on_sigterm_with_every_worker_whole(server: Server, tmp_path: Path) -> None:
    w = server.start(0, threads=6)
    plan = write_plan(tmp_path)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ascendtune",
            "bind",
            "--workers",
            "--watch",
            "--plan",
            str(plan),
            "--interval",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the first pass is done once it prints
        assert f"PID {w.pid} (device 0, rank 0)" in first
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.splitlines()[-1].split(" ", 1)[1].startswith("watch stopped after")
    assert server.off_target()[w.pid] == 0


# ---- a long watch: the tool budget per pass, a failing tool, restarts --------------------------


def watch(
    server: Server, tmp_path: Path, between: Any, ticks: int, **kw: Any
) -> tuple[Any, list[WatchEvent]]:
    """watch_workers on a fake clock, `between(n)` run between pass n and pass n+1."""
    now, count, events = [0.0], [0], []

    def sleep(s: float) -> None:
        count[0] += 1
        between(count[0])
        now[0] += s

    summary = watch_workers(
        WorkersOptions(source=HostSource(), plan_file=write_plan(tmp_path)),
        interval_s=1.0,
        duration_s=float(ticks),
        on_event=events.append,
        clock=lambda: now[0],
        sleep=sleep,
        handle_signals=False,
        **kw,
    )
    return summary, events


def test_a_watch_outlives_the_tool_budget_and_a_failing_tool(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascendtune.host.roots.walker import DirRoot

    monkeypatch.setattr(DirRoot, "tool_budget_s", 0.5)  # a hang costs half a second
    w = server.start(0, threads=4)

    def between(n: int) -> None:
        if n == 1:
            server.tool("hang")  # pass 2 waits out its whole budget
        elif n == 2:
            server.tool("garbage")  # pass 3: a line that does not parse
        elif n == 3:
            server.tool(None)
            server.reset_masks()  # drifted while the tool was down
        elif n == 4:
            w.spawn(3)  # new threads off the plan: the watch still sees and binds them

    summary, events = watch(server, tmp_path, between, ticks=5)
    tool = [e for e in events if e.kind == "tool"]
    assert len(tool) == 2, [e.message for e in events]  # said once, then its recovery
    assert "npu-smi" in tool[0].message and "retrying" in tool[0].message
    assert "answers again" in tool[1].message
    assert not [e for e in events if e.kind in ("gone", "failed")]  # never reported gone
    assert summary.tool_failures == 2 and summary.tool_failing is False
    assert summary.workers == {0: w.pid} and summary.failures == 0
    assert server.off_target()[w.pid] == 0  # rebound after the budget of pass 1 was long spent


def test_a_tool_that_never_recovers_is_exit_1(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascendtune.host.roots.walker import DirRoot

    monkeypatch.setattr(DirRoot, "tool_budget_s", 0.5)
    server.start(0, threads=4)
    summary, events = watch(server, tmp_path, lambda n: server.tool("garbage"), ticks=3)
    assert summary.tool_failing and summary.tool_failures == 2
    assert [e.kind for e in events].count("tool") == 1
    assert summary.to_json()["tool_failing"] is True


def test_from_the_cli_a_failing_tool_is_said_once_and_exit_1_if_it_stays(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    from ascendtune.host.roots.walker import DirRoot

    monkeypatch.setattr(DirRoot, "tool_budget_s", 0.5)
    server.start(0, threads=4)
    server.tool("garbage-later")  # the first pass binds; every later one gets garbage
    res = cli(
        "bind", "--workers", "--watch", "--plan", str(write_plan(tmp_path)),
        "--interval", "0.2", "--for", "1.5",
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    said = [line for line in res.stderr.splitlines() if "retrying" in line]
    assert len(said) == 1 and "npu-smi" in said[0]
    assert "had not recovered" in res.stderr.splitlines()[-1]


def test_a_worker_back_after_a_pass_without_it_is_a_restart(server: Server, tmp_path: Path) -> None:
    server.start(1, threads=6)
    old = server.workers[1].pid

    def between(n: int) -> None:
        if n == 1:
            server.stop(1)  # pass 2 finds device 1 without a worker
        elif n == 2:
            server.start(1, threads=6)  # pass 3: back under a new PID, off the plan

    summary, events = watch(server, tmp_path, between, ticks=3)
    new = server.workers[1].pid
    kinds = [e.kind for e in events]
    assert kinds.count("bound") == 1 and kinds.count("gone") == 1
    [restart] = [e for e in events if e.kind == "restarted"]
    assert f"PID {old} -> {new}" in restart.message and restart.pid == new
    assert summary.restarts == 1 and summary.to_json()["restarts"] == 1
    assert server.off_target()[new] == 0  # and rebound


def test_a_reused_pid_is_a_restart(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascendtune.app import keep_bound

    w = server.start(0, threads=4)
    started = ["100"]
    monkeypatch.setattr(keep_bound, "_start_time", lambda root, pid: started[0])

    def between(n: int) -> None:
        if n == 1:
            started[0] = "200"  # the same PID, a process started later

    summary, events = watch(server, tmp_path, between, ticks=2)
    [restart] = [e for e in events if e.kind == "restarted"]
    assert f"PID {w.pid} reused by a new process" in restart.message
    assert summary.restarts == 1


def test_a_second_watch_on_the_host_is_refused_and_names_the_first(
    server: Server, tmp_path: Path
) -> None:
    from ascendtune.host.affinity.lock import workers_lock

    server.start(0, threads=4)
    with workers_lock() as path:
        code, _doc, err = bind("--workers", "--watch", "--plan", str(write_plan(tmp_path)))
        assert code == 1 and f"PID {os.getpid()}" in err and path in err
        code, _doc, err = bind("--workers", "--plan", str(write_plan(tmp_path)))
        assert code == 1 and "another ascendtune" in err
    code, _doc, err = bind("--workers", "--plan", str(write_plan(tmp_path)))
    assert code == 0, err


def test_a_bind_of_a_watched_worker_is_refused_and_the_watch_keeps_it(
    server: Server, tmp_path: Path
) -> None:
    w = server.start(0, threads=4)
    tried: list[tuple[int, str]] = []

    def between(n: int) -> None:
        if n == 1:  # while the watch runs: another binder on one of its workers
            code, _doc, err = bind("--pid", str(w.pid), "--cpus", "0-1")
            tried.append((code, err))

    summary, events = watch(server, tmp_path, between, ticks=2)
    [(code, err)] = tried
    assert code == 1 and "another ascendtune" in err and f"PID {os.getpid()}" in err
    assert server.off_target()[w.pid] == 0  # the watch's plan stands, never undone
    assert summary.failures == 0 and [e.kind for e in events].count("threads") == 0


# ---- only workers are bound ------------------------------------------------------------------


def test_pids_that_are_not_workers_are_refused_with_a_word(server: Server, tmp_path: Path) -> None:
    w = server.start(0, threads=4)
    plain = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        kthread = kernel_thread()  # None in a container that shows none
        server.strangers = [(2, plain.pid), (3, 1)] + ([(4, kthread)] if kthread else [])
        server.write_table()
        before = {t: os.sched_getaffinity(t) for t in tids(plain.pid)}
        for dry in (("--dry-run",), ()):
            code, doc, _err = bind("--workers", "--plan", str(write_plan(tmp_path)), "--json", *dry)
            assert doc is not None
            by_pid = {x["pid"]: x for x in doc["workers"]}
            assert "not a worker's" in by_pid[plain.pid]["error"]
            assert "PID 1 is this namespace's init" in by_pid[1]["error"]
            assert kthread is None or "kernel thread" in by_pid[kthread]["error"]
            assert by_pid[w.pid]["error"] is None
            assert code == 1  # workers left unbound (a dry run: would be)
        assert {t: os.sched_getaffinity(t) for t in tids(plain.pid)} == before
    finally:
        plain.kill()
        plain.wait()


def test_a_gpu_plan_never_binds_an_npu_holder(server: Server, tmp_path: Path) -> None:
    w = server.start(0, threads=4)
    doc = plan_doc()
    doc["vendor"] = "nvidia"
    path = tmp_path / "gpu-plan.json"
    path.write_text(json.dumps(doc))
    before = {t: os.sched_getaffinity(t) for t in tids(w.pid)}
    code, out, _err = bind("--workers", "--plan", str(path), "--json")
    assert code == 1 and out is not None
    [row] = out["workers"]
    assert "the plan is for GPUs" in row["error"]
    assert {t: os.sched_getaffinity(t) for t in tids(w.pid)} == before


def test_the_fixture_sees_only_the_processes_it_started(server: Server) -> None:
    from ascendtune.host import workers as host_workers
    from ascendtune.host.roots import open_root

    w = server.start(0, threads=2)
    seen = host_workers.pids_of(open_root(None))
    assert seen == [w.pid]  # not this test's own process, nor any other of the machine
