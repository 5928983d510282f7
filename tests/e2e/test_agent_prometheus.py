"""`ascendtune agent` scraped by a real Prometheus: the agent runs against children of this test
(found through a fake npu-smi, bound on CPUs 0-1), Prometheus scrapes it on loopback, and every
series read back through Prometheus's query API is compared with what the kernel says of the same
processes (/proc/PID/task, sched_getaffinity, numa_maps, stat)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import prometheus as prom
from tests.support.workers import BOTH, Server, Worker, plan_doc, tids

pytestmark = [
    *prom.tier,
    pytest.mark.skipif(
        not sys.platform.startswith("linux")
        or not hasattr(os, "sched_setaffinity")
        or not os.sched_getaffinity(0) >= BOTH,
        reason="needs Linux with CPUs 0 and 1 usable",
    ),
]

MIB = 1 << 20
# a worker whose memory the test places: MEMORY_MIB touched, then a little CPU every 100 ms
MEMORY_CHILD = r"""
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, b"VLLM::Worker_TP", 0, 0, 0)  # named as a worker, as vLLM names it
mem = bytearray(int(sys.argv[1]) * (1 << 20))
for i in range(0, len(mem), 4096):
    mem[i] = 1
print("ready", flush=True)
while True:
    end = time.monotonic() + 0.01
    while time.monotonic() < end:
        pass
    time.sleep(0.1)
"""
MEMORY_MIB = 96


def numa_bytes(pid: int) -> dict[int, int]:
    """What the kernel says of pid's memory per node (numa_maps N<node>=<pages> x page size)."""
    out: dict[int, int] = {}
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            size = re.search(r"kernelpagesize_kB=(\d+)", line)
            kib = int(size.group(1)) if size else 4
            for node, pages in re.findall(r"\bN(\d+)=(\d+)", line):
                out[int(node)] = out.get(int(node), 0) + int(pages) * kib * 1024
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def val(result: list[tuple[dict[str, str], float]]) -> float | None:
    """The value of a one-series result, None otherwise (for wait's predicates)."""
    return result[0][1] if len(result) == 1 else None


def one(result: list[tuple[dict[str, str], float]]) -> float:
    assert len(result) == 1, result
    return result[0][1]


@pytest.fixture
def agent_run(server: Server, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, Path]]:
    """The agent against the fake server, on a free loopback port; stopped by its PID."""
    doc = plan_doc()
    doc["ranks"] = [r for r in doc["ranks"] if r["device"] != 3]  # device 3: no rank, unbound
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    config = tmp_path / "agent.toml"
    config.write_text('[agent]\nservice = "svc-a"\ninterval = 0.5\ndoctor_interval = 5\n')
    port = prom.free_port()
    log = tmp_path / "agent.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ascendtune",
                "agent",
                "--config",
                str(config),
                "--plan",
                str(plan),
                "--listen",
                f"127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
    yield proc, port, config
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def test_prometheus_scrapes_the_agent_and_every_series_matches_the_kernel(
    server: Server, agent_run: tuple[subprocess.Popen[str], int, Path], tmp_path: Path
) -> None:
    bound = server.start(0, threads=6)
    restarting = server.start(1, threads=6)
    unbound = server.start(3, threads=4)
    mem = subprocess.Popen(
        [sys.executable, "-c", MEMORY_CHILD, str(MEMORY_MIB)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert mem.stdout is not None and mem.stdout.readline().strip() == "ready"
    server.workers[2] = Worker(mem, 2)
    server.write_table()
    agent, port, config = agent_run
    p = prom.start(tmp_path / "prom", f"127.0.0.1:{port}", rule_files=(prom.RULES,))
    try:
        p.wait('up{job="ascendtune"}', lambda r: val(r) == 1)
        pids = {d: w.pid for d, w in server.workers.items()}
        p.wait(
            "ascendtune_worker_threads_bound",
            lambda r: {x["pid"] for x, _ in r} == {str(v) for v in pids.values()},
        )
        early = (
            one(p.query("ascendtune_agent_samples_total")),
            one(p.query("ascendtune_agent_sample_cpu_seconds_total")),
        )
        # the exposition itself passes promtool's lint
        text = prom.get(f"http://127.0.0.1:{port}/metrics")
        lint = prom.promtool("check", "metrics", stdin=text)
        assert lint.returncode == 0, lint.stdout + lint.stderr

        # threads and bound threads, as the kernel has them now
        for dev in (0, 1, 3):
            w = server.workers[dev]
            total = len(tids(w.pid))
            on_plan = total - server.off_target()[w.pid]
            sel = f'{{pid="{w.pid}",device="{dev}",service="svc-a"}}'
            assert one(p.query(f"ascendtune_worker_threads{sel}")) == total
            got = one(p.query(f"ascendtune_worker_threads_bound{sel}"))
            assert got == (on_plan if dev != 3 else 0)
        assert server.off_target()[bound.pid] == 0  # the agent bound it
        assert all(os.sched_getaffinity(t) == BOTH for t in tids(unbound.pid))
        assert one(p.query(f'ascendtune_worker_threads_bound{{pid="{unbound.pid}"}}')) == 0
        assert one(p.query(f'ascendtune_worker_threads{{pid="{unbound.pid}"}}')) == 4
        fails = p.wait(
            'ascendtune_worker_bind_failures_total{device="3"}', lambda r: (val(r) or 0) >= 1
        )
        assert "rank" not in fails[0][0]  # an empty label: the plan has no rank for it

        # memory per node from numa_maps, and the CPU time of the busy one
        kernel = numa_bytes(mem.pid)
        got_mem = {
            int(m["node"]): v
            for m, v in p.query(f'ascendtune_worker_memory_bytes{{pid="{mem.pid}"}}')
        }
        assert set(got_mem) == set(kernel)
        for node, b in kernel.items():
            assert abs(got_mem[node] - b) <= 0.05 * b + 4 * MIB, (node, got_mem[node], b)
        assert sum(got_mem.values()) >= MEMORY_MIB * MIB
        local = one(p.query(f'ascendtune_worker_memory_local_ratio{{pid="{mem.pid}"}}'))
        assert local == pytest.approx(kernel.get(0, 0) / sum(kernel.values()), abs=0.05)
        sel = f'ascendtune_worker_cpu_seconds_total{{pid="{mem.pid}"}}'
        cpu = p.wait(f"sum({sel})", lambda r: (val(r) or 0) > 0.05)
        assert one(cpu) <= cpu_seconds(mem.pid) + 0.05  # counted since the agent first saw it
        assert one(p.query(f'{sel[:-1]},placement="off_plan"}}')) == 0  # plan 0-1 = its mask
        migr = one(p.query(f'ascendtune_worker_migrations_total{{pid="{mem.pid}"}}'))
        assert migr >= 0

        # a restart: the device's counter moves, the new PID is bound, the old PID's series go
        old = restarting.pid
        server.stop(1)
        new = server.start(1, threads=6).pid
        p.wait('ascendtune_worker_restarts_total{device="1"}', lambda r: val(r) == 1)
        p.wait(
            f'ascendtune_worker_threads_bound{{pid="{new}"}} == ascendtune_worker_threads',
            lambda r: len(r) == 1,
        )
        assert server.off_target()[new] == 0
        p.wait(f'ascendtune_worker_threads{{pid="{old}"}}', lambda r: r == [])
        assert one(p.query('ascendtune_worker_restarts_total{device="0"}')) == 0

        # host checks: one status each; the agent's own cost per sample
        checks = p.query("ascendtune_doctor_check == 1")
        ids = [m["check"] for m, _ in checks]
        assert "numa_balancing" in ids and len(ids) == len(set(ids))
        samples = one(p.query("ascendtune_agent_samples_total"))
        spent = one(p.query("ascendtune_agent_sample_cpu_seconds_total"))
        whole = cpu_seconds(agent.pid)
        assert 0 < spent <= whole + 0.05
        steady = (spent - early[1]) / max(1.0, samples - early[0])
        print(
            f"\nagent: {samples:.0f} samples, {steady * 1000:.1f} ms CPU per sample once running "
            f"(a pass, masks, /proc, export; {whole:.2f} s CPU in all, start-up included), "
            f"{len(server.workers)} workers"
        )
        # the dashboard's queries parse and run against these series
        dash = json.loads((prom.DEPLOY / "grafana" / "ascendtune-dashboard.json").read_text())
        for panel in dash["panels"]:
            for t in panel["targets"]:
                p.api("query", query=t["expr"].replace("$host", ".*").replace("$service", ".*"))
        # the rules loaded, and the unbound worker is pending or firing already
        groups = p.api("rules")["groups"]
        assert {r["name"] for g in groups for r in g["rules"]} >= {"AscendtuneWorkerUnbound"}
        alerts = p.wait('ALERTS{alertname="AscendtuneWorkerUnbound"}', lambda r: len(r) >= 1)
        assert {m["device"] for m, _ in alerts} == {"3"}

        # SIGHUP: the config is read again; SIGTERM: a clean exit
        config.write_text('[agent]\nservice = "svc-b"\ninterval = 0.5\ndoctor_interval = 5\n')
        agent.send_signal(signal.SIGHUP)
        p.wait(
            f'ascendtune_worker_threads{{service="svc-b",pid="{bound.pid}"}}', lambda r: len(r) == 1
        )
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=20) == 0
    finally:
        p.stop()
    log = (tmp_path / "agent.log").read_text()
    assert 'msg="config reloaded"' in log and 'msg="agent stopped"' in log
    for line in log.splitlines():
        assert re.match(r"ts=\S+ level=(info|warning|error) msg=", line), line


def test_promtool_accepts_the_rules_and_each_alert_fires_in_its_rule_test(tmp_path: Path) -> None:
    res = prom.promtool("check", "rules", str(prom.RULES))
    assert res.returncode == 0, res.stdout + res.stderr
    res = prom.promtool("test", "rules", str(prom.RULE_TESTS))
    assert res.returncode == 0, res.stdout + res.stderr
    # each alert has a test in which it fires
    tests = prom.RULE_TESTS.read_text()
    alerts = re.findall(r"- alert: (\w+)", prom.RULES.read_text())
    assert len(alerts) == 6
    for name in alerts:
        assert re.search(rf"alertname: {name}\n\s+exp_alerts:\n\s+- exp_labels", tests), name
    # and the tests can fail: a rule that never fires fails them
    broken = tmp_path / "ascendtune-rules.yml"
    broken.write_text(
        prom.RULES.read_text().replace(
            "ascendtune_npu_irq_on_plan == 0", "ascendtune_npu_irq_on_plan == 2"
        )
    )
    (tmp_path / "t.yml").write_text(tests)
    res = prom.promtool("test", "rules", str(tmp_path / "t.yml"))
    assert res.returncode != 0 and "AscendtuneNpuIrqMisplaced" in res.stdout + res.stderr
