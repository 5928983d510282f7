"""`ascendtune watch`: parsers, exact numbers from a crafted proc root, and real busy processes
of this machine (CPUs 0 and 1). No assertion depends on how long anything took."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ascendtune.app.watch import document, targets_for, watch_once
from ascendtune.core.errors import InvalidInput, ParseError, UsageError
from ascendtune.core.jsondoc import versioned
from ascendtune.core.parsers.procfs import (
    parse_numa_maps,
    parse_sched_migrations,
    parse_stat,
    parse_status,
)
from ascendtune.core.watch import HostSample, ProcessSample, ThreadSample, Watch, WatchTarget
from ascendtune.host.watch import ProcSampler
from tests.support import schemas
from tests.support.children import popen_child
from tests.support.cli import CLI, Cli

BOTH = frozenset({0, 1})
live_only = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or not hasattr(os, "sched_setaffinity")
    or not os.sched_getaffinity(0) >= BOTH,
    reason="needs Linux with CPUs 0 and 1 usable",
)


def stat_line(
    tid: int, comm: str, ticks: tuple[int, int], cpu: int | None, state: str = "S"
) -> str:
    """A /proc/PID/task/TID/stat line: 52 fields, utime/stime at 14/15, processor at 39."""
    fields = [str(tid), f"({comm})", state] + ["0"] * 49
    fields[13], fields[14] = str(ticks[0]), str(ticks[1])
    fields[19] = "1"  # num_threads, so the line looks real
    if cpu is None:
        fields = fields[:38]  # a kernel that stops before field 39
    else:
        fields[38] = str(cpu)
    return " ".join(fields) + "\n"


# ---- parsers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comm",
    ["python3", "a b c", "my (odd) name)", ")", "((", "x) S 1 2 3 (y"],
)
def test_stat_comm_with_spaces_and_parentheses(comm: str) -> None:
    st = parse_stat(stat_line(42, comm, (7, 5), 3, state="R"))
    assert (st.comm, st.state, st.cpu_ticks, st.processor) == (comm, "R", 12, 3)


def test_stat_without_processor_and_malformed() -> None:
    assert parse_stat(stat_line(1, "old", (1, 1), None)).processor is None
    with pytest.raises(ParseError):
        parse_stat("12 no-parens S 0")
    with pytest.raises(ParseError):
        parse_stat("12 (cut) S 1 2")  # cut short as the thread exited


def test_sched_status_numa_maps() -> None:
    sched = "x (1, #threads: 1)\n---\nse.sum_exec_runtime   :  1.5\nse.nr_migrations   :   17\n"
    assert parse_sched_migrations(sched) == 17
    assert parse_sched_migrations("se.vruntime : 3\n") is None
    st = parse_status(
        "Name:\tx\nCpus_allowed_list:\t0-3\nvoluntary_ctxt_switches:\t9\n"
        "nonvoluntary_ctxt_switches:\t4\n"
    )
    assert (st.ctx_voluntary, st.ctx_involuntary, st.cpus_allowed_list) == (9, 4, "0-3")
    maps = (
        "7f00 default anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4\n"
        "7f10 default file=/dev/hugepages/x huge N1=2 kernelpagesize_kB=2048\n"
        "7f20 interleave:0-1 file=/lib/a.so mapped=5 N0=5\n"  # no page size: the default
        "garbage\n"
    )
    assert parse_numa_maps(maps, page_size_bytes=4096) == {0: 7 * 4096, 1: 4096 + 2 * (2 << 20)}


# ---- a crafted proc root: exact numbers --------------------------------------------------------

PLAN = {
    "schema_version": 1,
    "policy": "hand-made",
    "ranks": [
        {
            "rank": 0,
            "device": 0,
            "logical_id": 0,
            "cpus": "2-5",
            "numa_nodes": [0, 1],
            "device_numa_node": 0,
            "roles": {"irq": "2", "main": "3", "acl": "4", "release": "5"},
        }
    ],
}


class ProcTree:
    """A proc root and a sys root under tmp_path, rewritten between samples."""

    def __init__(self, base: Path) -> None:
        self.proc = base / "proc"
        self.sys = base / "sys"
        (self.sys / "devices/system/cpu").mkdir(parents=True)
        (self.sys / "devices/system/cpu/online").write_text("0-7\n")
        for node, cpus in ((0, "0-3"), (1, "4-7")):
            d = self.sys / f"devices/system/node/node{node}"
            d.mkdir(parents=True)
            (d / "cpulist").write_text(cpus + "\n")

    def thread(
        self,
        pid: int,
        tid: int,
        comm: str,
        ticks: int,
        cpu: int,
        *,
        migrations: int | None = None,
        ctx: tuple[int, int] | None = None,
    ) -> None:
        d = self.proc / str(pid) / "task" / str(tid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "stat").write_text(stat_line(tid, comm, (ticks, 0), cpu))
        if migrations is not None:
            (d / "sched").write_text(
                f"{comm} ({tid}, #threads: 4)\n-----\nse.exec_start : 1.0\n"
                f"se.nr_migrations : {migrations}\nnr_switches : 3\n"
            )
        if ctx is not None:
            (d / "status").write_text(
                f"Name:\t{comm}\nTgid:\t{pid}\nvoluntary_ctxt_switches:\t{ctx[0]}\n"
                f"nonvoluntary_ctxt_switches:\t{ctx[1]}\n"
            )

    def process(
        self, pid: int, comm: str, *, numa_maps: str | None = None, started: int | None = None
    ) -> None:
        d = self.proc / str(pid)
        (d / "task").mkdir(parents=True, exist_ok=True)
        if started is not None:  # the process's own stat: its start time is field 22
            line = stat_line(pid, comm, (0, 0), 0).split(" ")
            line[21] = str(started)
            (d / "stat").write_text(" ".join(line))
        (d / "comm").write_text(comm + "\n")
        (d / "status").write_text(
            f"Name:\t{comm}\nState:\tS (sleeping)\nTgid:\t{pid}\nCpus_allowed_list:\t0-7\n"
        )
        if numa_maps is not None:
            (d / "numa_maps").write_text(numa_maps)

    def drop(self, pid: int, tid: int) -> None:
        d = self.proc / str(pid) / "task" / str(tid)
        for f in d.iterdir():
            f.unlink()
        d.rmdir()

    def sampler(self) -> ProcSampler:
        times = iter([100.0, 101.0, 102.0])
        return ProcSampler(
            str(self.proc),
            str(self.sys),
            clock=lambda: next(times),
            clock_ticks=100,
            page_size=4096,
        )


MAPS = (
    "7f00 default anon=3 N0=2 N1=1 kernelpagesize_kB=4\n"
    "7f10 default file=/dev/hugepages/w huge N1=2 kernelpagesize_kB=2048\n"
)


def first_sample(t: ProcTree) -> None:
    t.process(100, "vllm (worker) x", numa_maps=MAPS)
    t.thread(100, 100, "main (odd) name)", 100, 3, migrations=10, ctx=(5, 1))
    t.thread(100, 101, "acl_thread", 0, 4, ctx=(0, 0))  # no sched file: moves counted
    t.thread(100, 102, "release_thread", 10, 5, migrations=0)
    t.thread(100, 103, "leaver", 7, 2, migrations=0)
    t.process(200, "noisy (1)")
    t.thread(200, 200, "noisy (1)", 500, 4)
    t.thread(200, 201, "quiet", 5, 4)
    t.process(300, "elsewhere")
    t.thread(300, 300, "elsewhere", 0, 0)


def second_sample(t: ProcTree) -> None:
    t.thread(100, 100, "main (odd) name)", 150, 3, migrations=13, ctx=(9, 2))
    t.thread(100, 101, "acl_thread", 40, 6, ctx=(4, 3))
    t.thread(100, 102, "release_thread", 10, 5, migrations=0)
    t.drop(100, 103)  # exited between the samples
    (t.proc / "100/task/104").mkdir()  # listed, gone before its stat was read
    t.thread(100, 105, "born", 20, 2, migrations=1, ctx=(2, 0))  # born while watched
    t.thread(200, 200, "noisy (1)", 530, 4)
    t.thread(300, 300, "elsewhere", 10, 0)


@pytest.fixture
def tree(tmp_path: Path) -> ProcTree:
    t = ProcTree(tmp_path)
    first_sample(t)
    return t


def once(tree: ProcTree, **kw: object) -> dict[str, object]:
    sampler = tree.sampler()
    targets = targets_for(
        [100],
        online=sampler.online_cpus(),
        node_map=sampler.node_map(),
        **kw,  # type: ignore[arg-type]
    )
    report = watch_once(targets, sampler, interval_s=1.0, sleep=lambda _s: second_sample(tree))
    return schemas.checked("watch", versioned(document(report)))


def test_proc_root_exact_numbers_against_a_plan(tree: ProcTree) -> None:
    doc = once(tree, cpus=None, plan_doc=PLAN, plan_source="plan.json", ranks=[0])
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1
    assert (doc["samples"], doc["elapsed_s"], doc["clock_ticks"]) == (2, 1.0, 100)
    (w,) = doc["workers"]  # type: ignore[misc]
    assert (w["pid"], w["name"], w["rank"], w["device"]) == (100, "vllm (worker) x", 0, 0)
    assert (w["plan_cpus"], w["numa_nodes"], w["node_cpus"]) == ("2-5", [0], "0-3")
    # ticks gained: main 50 on CPU 3, acl 40 on CPU 6, born 20 on CPU 2
    assert w["cpu_time_s"] == 1.1
    assert w["off_plan_share"] == round(40 / 110, 4)
    assert w["off_node_share"] == round(40 / 110, 4)
    assert (w["threads_total"], w["threads_exited"], w["threads_seen"]) == (4, 2, 5)
    by = {t["tid"]: t for t in w["threads"]}
    assert sorted(by) == [100, 101, 102, 105]
    main = by[100]
    assert main["name"] == "main (odd) name)"
    assert (main["cpus_ran"], main["migrations"], main["migrations_source"]) == ("3", 3, "sched")
    assert (main["ctx_voluntary"], main["ctx_involuntary"], main["cpu_time_s"]) == (4, 1, 0.5)
    assert (main["off_plan_share"], main["off_node_share"], main["share_basis"]) == (
        0.0,
        0.0,
        "cpu_time",
    )
    assert "role" not in main
    acl = by[101]
    assert (acl["cpus_ran"], acl["migrations"], acl["migrations_source"]) == ("4,6", 1, "samples")
    assert (acl["ctx_voluntary"], acl["ctx_involuntary"], acl["cpu_time_s"]) == (4, 3, 0.4)
    assert (acl["off_plan_share"], acl["off_node_share"]) == (1.0, 1.0)
    assert (acl["role"], acl["role_cpus"], acl["role_stayed"]) == ("acl", "4", False)
    rel = by[102]  # idle: where it sat at each sample is the basis
    assert (rel["cpu_time_s"], rel["share_basis"]) == (0.0, "samples")
    assert (rel["off_plan_share"], rel["off_node_share"]) == (0.0, 1.0)
    assert (rel["role"], rel["role_cpus"], rel["role_stayed"]) == ("release", "5", True)
    assert rel["ctx_voluntary"] is None  # no status file
    born = by[105]
    assert (born["cpu_time_s"], born["migrations"], born["ctx_voluntary"]) == (0.2, 1, 2)
    assert [r["tid"] for r in w["role_threads"]] == [101, 102]
    assert w["memory_by_node"] == [
        {"node": 0, "bytes": 8192, "mib": 0.0},
        {"node": 1, "bytes": 4096 + (4 << 20), "mib": 4.0},
    ]
    # 200 ran 0.3 s on plan CPU 4; 201 gained nothing; 300 ran on CPU 0, outside the plan
    assert w["neighbours_cpus"] == "2-5"
    assert w["neighbours"] == [
        {
            "pid": 200,
            "tid": 200,
            "process": "noisy (1)",
            "name": "noisy (1)",
            "cpu_time_s": 0.3,
            "cpus": "4",
        }
    ]


def test_a_pid_reused_by_a_new_process_is_said_and_not_watched_on(tree: ProcTree) -> None:
    tree.process(100, "vllm (worker) x", numa_maps=MAPS, started=1000)
    sampler = tree.sampler()
    targets = targets_for(
        [100], cpus="2-5", plan_doc=None, plan_source="", ranks=[],
        online=sampler.online_cpus(), node_map={},
    )  # fmt: skip

    def meanwhile(_s: float) -> None:
        second_sample(tree)
        tree.process(100, "bash", started=9000)  # PID 100 exited; a later process has it

    report = watch_once(targets, sampler, interval_s=1.0, sleep=meanwhile)
    doc = schemas.checked("watch", versioned(document(report)))
    (w,) = doc["workers"]  # type: ignore[misc]
    assert (w["alive"], w["pid_reused"]) == (False, True)
    assert w["threads"] == [] and w["cpu_time_s"] == 0.0  # the new process is not counted
    from ascendtune.cli.watch import _worker_lines

    assert "its PID now runs a new process" in _worker_lines(report.workers[0])[0]


def test_a_role_thread_that_left_its_cpu_is_said_off_its_role_cpu(tree: ProcTree) -> None:
    from ascendtune.cli.watch import _worker_lines

    sampler = tree.sampler()
    targets = targets_for(
        [100], cpus=None, plan_doc=PLAN, plan_source="plan.json", ranks=[0],
        online=sampler.online_cpus(), node_map=sampler.node_map(),
    )  # fmt: skip
    report = watch_once(targets, sampler, interval_s=1.0, sleep=lambda _s: second_sample(tree))
    _head, rows, _notes = _worker_lines(report.workers[0])
    roles = {row[0]: row for row in rows}
    assert "acl off its role CPU" in roles["101"] and "release ok" in roles["102"]
    assert not any("moved" in cell for row in rows for cell in row)


def test_proc_root_against_cpus_and_without_a_plan(tree: ProcTree) -> None:
    doc = once(tree, cpus="3", plan_doc=None, plan_source="", ranks=[])
    (w,) = doc["workers"]  # type: ignore[misc]
    assert (w["plan_cpus"], w["node_cpus"]) == ("3", "0-3")
    assert w["off_plan_share"] == round(60 / 110, 4)
    assert {t["tid"]: t["off_plan_share"] for t in w["threads"]} == {
        100: 0.0,
        101: 1.0,
        102: 1.0,
        105: 1.0,
    }
    assert [n["pid"] for n in w["neighbours"]] == []  # nobody else ran on CPU 3

    tree2 = ProcTree(tree.proc.parent.parent / "again")
    first_sample(tree2)
    doc = once(tree2, cpus=None, plan_doc=None, plan_source="", ranks=[])
    (w,) = doc["workers"]  # type: ignore[misc]
    assert "off_plan_share" not in w and all("off_plan_share" not in t for t in w["threads"])
    # no plan: neighbours are counted on the CPUs the process may use
    assert w["neighbours_cpus"] == "0-7"
    assert [(n["pid"], n["cpu_time_s"]) for n in w["neighbours"]] == [(200, 0.3), (300, 0.1)]


def test_targets_refuse_bad_options(tree: ProcTree) -> None:
    s = tree.sampler()
    on, nodes = s.online_cpus(), s.node_map()
    with pytest.raises(InvalidInput, match="CPUs 8-9 are not online"):
        targets_for(
            [100], cpus="2,8-9", plan_doc=None, plan_source="", ranks=[], online=on, node_map=nodes
        )
    with pytest.raises(UsageError):
        targets_for(
            [100], cpus=None, plan_doc=PLAN, plan_source="p", ranks=[], online=on, node_map=nodes
        )
    with pytest.raises(UsageError):
        targets_for(
            [100], cpus="1", plan_doc=PLAN, plan_source="p", ranks=[0], online=on, node_map=nodes
        )
    with pytest.raises(UsageError):
        targets_for(
            [100, 200, 300],
            cpus=None,
            plan_doc=PLAN,
            plan_source="p",
            ranks=[0, 0],
            online=on,
            node_map=nodes,
        )
    with pytest.raises(InvalidInput, match="no rank 3"):
        targets_for(
            [100], cpus=None, plan_doc=PLAN, plan_source="p", ranks=[3], online=on, node_map=nodes
        )


def test_neighbour_tracking_is_capped_and_exited_threads_dropped() -> None:
    target = WatchTarget(pid=1, plan_cpus=frozenset({0}))
    w = Watch([target], clock_ticks=100, neighbour_cap=2)

    def host(at: float, gained: int, worker_tids: tuple[int, ...]) -> HostSample:
        others = tuple(
            ProcessSample(
                pid=10 + i,
                name=f"p{i}",
                threads=(
                    ThreadSample(tid=10 + i, name=f"t{i}", processor=0, cpu_ticks=(i + 1) * gained),
                ),
            )
            for i in range(5)
        )
        worker = ProcessSample(
            pid=1,
            name="w",
            threads=tuple(
                ThreadSample(tid=t, name="w", processor=0, cpu_ticks=0) for t in worker_tids
            ),
        )
        return HostSample(at_s=at, workers={1: worker}, others=others)

    w.update(host(0.0, 0, (1, 2, 3)))
    w.update(host(1.0, 1, (1,)))
    r = w.report().workers[0]
    assert [n.pid for n in r.neighbours] == [14, 13]  # the two busiest kept
    assert r.neighbours_dropped == 3
    assert (len(r.threads), r.threads_exited) == (1, 2)
    w.update(HostSample(at_s=2.0, workers={}, others=()))  # the process is gone
    r = w.report().workers[0]
    assert (r.alive, len(r.threads), r.threads_exited) == (False, 0, 3)


# ---- real processes ----------------------------------------------------------------------------

# busy threads that spin until killed; with "leaver", one more thread that returns when a line
# arrives on stdin. It prints its thread ids once every thread runs.
CHILD = r"""
import json, os, sys, threading
spec = json.loads(sys.argv[1])
if spec.get("cpus") is not None:
    os.sched_setaffinity(0, spec["cpus"])  # before any thread starts: every thread inherits it
started = threading.Barrier(spec["busy"] + 1 + (1 if spec.get("leaver") else 0))
tids = {}
def spin():
    tids.setdefault("busy", []).append(threading.get_native_id())
    started.wait()
    x = 0
    while True:
        x += 1
def leave():
    tids["leaver"] = threading.get_native_id()
    started.wait()
    sys.stdin.readline()
for _ in range(spec["busy"]):
    threading.Thread(target=spin, daemon=True).start()
if spec.get("leaver"):
    threading.Thread(target=leave, daemon=True).start()
started.wait()
print(json.dumps(tids), flush=True)
threading.Event().wait()
"""

Spawn = Callable[..., tuple[subprocess.Popen[str], dict[str, object]]]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    children: list[subprocess.Popen[str]] = []

    def start(**spec: object) -> tuple[subprocess.Popen[str], dict[str, object]]:
        p = popen_child(CHILD, json.dumps(spec))
        children.append(p)
        assert p.stdout is not None
        return p, json.loads(p.stdout.readline())

    yield start
    for p in children:
        p.kill()
        p.wait(timeout=10)


def watch(*args: str) -> tuple[int, dict[str, object] | None, str, str]:
    result = CLI("watch", *args)
    doc = (
        schemas.loads("watch", result.stdout)
        if "--once" in args and "--json" in args and result.exit_code == 0
        else None
    )
    return result.exit_code, doc, result.stdout, result.stderr


@live_only
def test_busy_unbound_process_reports_cpus_ran(spawn: Spawn) -> None:
    p, tids = spawn(busy=4)
    code, doc, _, err = watch("--once", "--json", "--interval", "1", "--pid", str(p.pid))
    assert code == 0, err
    assert doc is not None
    (w,) = doc["workers"]  # type: ignore[misc]
    assert w["pid"] == p.pid and "off_plan_share" not in w
    by = {t["tid"]: t for t in w["threads"]}
    assert set(tids["busy"]) <= set(by)  # type: ignore[arg-type]
    for t in by.values():
        assert t["cpus_ran"] and set(t["cpus_ran"].replace("-", ",").split(",")) <= {"0", "1"}
        for key in ("migrations", "ctx_voluntary", "ctx_involuntary", "cpu_time_s", "name"):
            assert key in t
    assert sum(by[t]["cpu_time_s"] for t in tids["busy"]) > 0  # type: ignore[union-attr]


@live_only
def test_bound_to_cpu_1_is_on_plan_for_cpus_1_and_off_for_cpus_0(spawn: Spawn) -> None:
    p, _ = spawn(busy=4, cpus=[1])
    code, doc, _, err = watch(
        "--once", "--json", "--interval", "1", "--pid", str(p.pid), "--cpus", "1"
    )
    assert code == 0, err
    (w,) = doc["workers"]  # type: ignore[index]
    assert len(w["threads"]) == 5
    assert all(t["off_plan_share"] == 0 for t in w["threads"])
    assert all(t["cpus_ran"] == "1" for t in w["threads"])
    assert w["off_plan_share"] == 0

    code, doc, _, err = watch(
        "--once", "--json", "--interval", "1", "--pid", str(p.pid), "--cpus", "0"
    )
    assert code == 0, err
    (w,) = doc["workers"]  # type: ignore[index]
    assert all(t["off_plan_share"] >= 0.9 for t in w["threads"])
    assert w["off_plan_share"] >= 0.9


@live_only
def test_a_thread_exiting_mid_sample_is_counted(spawn: Spawn) -> None:
    p, tids = spawn(busy=1, leaver=True)
    leaver = tids["leaver"]
    sampler = ProcSampler()

    def let_it_go(_s: float) -> None:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
        # wait until the kernel has reaped it; the bound is generous, nothing is timed
        for _ in range(6000):
            if not os.path.exists(f"/proc/{p.pid}/task/{leaver}"):
                return
            time.sleep(0.01)
        pytest.fail("the leaving thread did not exit within a minute")

    report = watch_once([WatchTarget(pid=p.pid)], sampler, interval_s=0.2, sleep=let_it_go)
    (w,) = report.workers
    assert w.threads_exited == 1
    assert leaver not in {t.tid for t in w.threads}
    assert len(w.threads) == 2


@live_only
def test_live_view_runs_headless_for_a_count(spawn: Spawn) -> None:
    p, _ = spawn(busy=2, cpus=[1])
    code, _, out, err = watch(
        "--pid", str(p.pid), "--cpus", "1", "--interval", "0.1", "--count", "2"
    )
    assert code == 0, err
    assert f"PID {p.pid}" in out and "OFF PLAN" in out and "RAN ON" in out
    code, _, out, err = watch("--pid", str(p.pid), "--json", "--interval", "0.1", "--count", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert all(schemas.loads("watch", line)["workers"][0]["pid"] == p.pid for line in lines)
    code, _, out, err = watch("--pid", str(p.pid), "--once", "--interval", "0.1")
    assert code == 0, err
    assert f"PID {p.pid}" in out and "Ctrl-C" not in out


@live_only
def test_plan_file_and_errors(spawn: Spawn, tmp_path: Path) -> None:
    p, _ = spawn(busy=1, cpus=[1])
    plan = dict(PLAN)
    plan["ranks"] = [
        {"rank": 0, "device": 3, "cpus": "1", "numa_nodes": [0], "roles": {"main": "1"}},
        {"rank": 1, "device": 4, "cpus": "0", "numa_nodes": [0]},
    ]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    code, doc, _, err = watch(
        "--once",
        "--json",
        "--interval",
        "0.2",
        "--pid",
        str(p.pid),
        "--plan",
        str(path),
        "--rank",
        "1",
    )
    assert code == 0, err
    (w,) = doc["workers"]  # type: ignore[index]
    assert (w["rank"], w["device"], w["plan_cpus"]) == (1, 4, "0")
    assert w["off_plan_share"] >= 0.9

    code, _, out, err = watch("--once", "--json", "--pid", "999999999")
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "no process 999999999" in err
    code, _, _, err = watch("--once", "--pid", str(p.pid), "--cpus", "0-4095")
    assert code == 5 and err.count("\n") == 1 and "not online" in err
    code, _, _, err = watch("--once", "--pid", str(p.pid), "--plan", str(path))
    assert code == 2 and "--rank" in err
    code, _, _, err = watch("--once")
    assert code == 2 and "--pid" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    code, _, _, err = watch("--once", "--pid", str(p.pid), "--plan", str(bad), "--rank", "0")
    assert code == 5 and "not JSON" in err


def test_zombie_threads_run_nowhere_and_a_zombie_process_has_exited(tmp_path: Path) -> None:
    t = ProcTree(tmp_path)
    t.process(100, "w")
    t.thread(100, 100, "w", 5, 1)
    t.thread(100, 101, "worker", 5, 1)
    sampler = t.sampler()

    def die(_s: float) -> None:
        (t.proc / "100/task/100/stat").write_text(stat_line(100, "w", (5, 0), 1, state="Z"))
        t.drop(100, 101)
        status = t.proc / "100/status"
        status.write_text(status.read_text().replace("S (sleeping)", "Z (zombie)"))

    report = watch_once([WatchTarget(pid=100)], sampler, interval_s=1.0, sleep=die)
    (w,) = report.workers
    assert (w.alive, len(w.threads), w.threads_exited) == (False, 0, 2)
    assert schemas.checked("watch", versioned(document(report)))["workers"][0]["alive"] is False


def test_watch_against_a_policy_is_one_plan_source(cli: Cli) -> None:
    """--policy P plans this host: it is one of the three plan sources, and checked."""

    r = cli("watch", "--pid", str(os.getpid()), "--policy", "numa-local", "--cpus", "0")
    assert r.exit_code == 2 and "one of --plan FILE, --policy P or --cpus LIST" in r.output
    r = cli("watch", "--pid", str(os.getpid()), "--policy", "fastest")
    assert r.exit_code == 2
