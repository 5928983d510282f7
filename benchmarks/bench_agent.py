"""The agent's own CPU cost per sample, against a fake NPU server of this machine.

    python benchmarks/bench_agent.py [--workers 8] [--threads 50] [--reps 20] [--seconds 20]

A fake npu-smi names `--workers` worker processes of `--threads` threads each (tests/support/
workers.py). Two figures:

- in process, per phase, the median CPU time (time.process_time) of one keeping pass (find the
  workers, bind them: what `bind --workers --watch` does each interval), of the agent's own
  sample (thread masks, /proc sample, export rows), and of one doctor run (every
  doctor_interval, 60 s by default);
- the whole agent as a service (`ascendtune agent --interval 1`), scraped twice `--seconds`
  apart: the CPU the kernel charged it (/proc/PID/stat, HTTP serving included) per sample.

Needs Linux and CPUs 0 and 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support import prometheus as prom  # noqa: E402
from tests.support.workers import start_server, write_plan  # noqa: E402


def cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def value(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(name)


def median_ms(f, reps: int) -> float:
    out = []
    for _ in range(reps):
        t0 = time.process_time()
        f()
        out.append((time.process_time() - t0) * 1000)
    return round(statistics.median(out), 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--threads", type=int, default=50)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    mp = pytest.MonkeyPatch()
    with TemporaryDirectory() as name, ExitStack() as stack:
        tmp = Path(name)
        gen = start_server(tmp, mp)
        server = next(gen)
        try:
            for d in range(a.workers):
                server.start(d, threads=a.threads)
            plan = write_plan(tmp)
            from ascendtune.app.agent.config import AgentConfig
            from ascendtune.app.agent.service import Agent, Log
            from ascendtune.app.options import HostSource
            from ascendtune.app.workers import bind_worker, discover

            cfg = AgentConfig(plan_file=str(plan), listen="", textfile=str(tmp / "a.prom"))
            quiet = stack.enter_context(open(os.devnull, "w"))
            agent = Agent(lambda: cfg, HostSource(), log=Log(stream=quiet))
            from ascendtune.app.agent import export

            agent.registry = export.registry(agent.state)
            agent.plan()
            from ascendtune.app.workers import resolve_targets

            host, _ = discover(agent.root)
            targets = resolve_targets(agent.workers_options(), agent.root, host)

            def keep_pass() -> None:
                _, workers = discover(agent.root)
                for w in workers:
                    o = bind_worker(w, targets, root=agent.root, dry_run=False)
                    agent.state.saw(o.pid, o.device, failed=not o.ok)

            keep_pass()
            agent.next_doctor = float("inf")
            agent.after_pass()
            if os.environ.get("BENCH_PROFILE"):  # where the agent's sample goes
                import cProfile
                import pstats

                prof = cProfile.Profile()
                prof.runcall(agent.after_pass)
                pstats.Stats(prof).sort_stats("tottime").print_stats(18)
            phases = {
                "keeping pass (discover + bind every worker)": median_ms(keep_pass, a.reps),
                "agent sample (masks, /proc, textfile)": median_ms(agent.after_pass, a.reps),
                "doctor host checks": median_ms(agent.run_doctor, max(3, a.reps // 4)),
            }
            port = prom.free_port()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ascendtune",
                    "agent",
                    "--plan",
                    str(plan),
                    "--interval",
                    "1",
                    "--listen",
                    f"127.0.0.1:{port}",
                ],
                stderr=subprocess.DEVNULL,
            )
            try:
                time.sleep(5)  # start-up and the first passes
                first = prom.get(f"http://127.0.0.1:{port}/metrics")
                c0 = cpu_of(proc.pid)
                time.sleep(a.seconds)
                last = prom.get(f"http://127.0.0.1:{port}/metrics")
                c1 = cpu_of(proc.pid)
            finally:
                proc.terminate()
                proc.wait(timeout=20)
            n = value(last, "ascendtune_agent_samples_total") - value(
                first, "ascendtune_agent_samples_total"
            )
            own = value(last, "ascendtune_agent_sample_cpu_seconds_total") - value(
                first, "ascendtune_agent_sample_cpu_seconds_total"
            )
            print(
                json.dumps(
                    {
                        "workers": a.workers,
                        "threads_each": a.threads,
                        "phase_cpu_ms_median": phases,
                        "service_samples": int(n),
                        "service_cpu_ms_per_sample_kernel": round((c1 - c0) / n * 1000, 1),
                        "service_cpu_ms_per_sample_own_metric": round(own / n * 1000, 1),
                        "service_cpu_share_at_1s_interval": round((c1 - c0) / a.seconds, 4),
                    },
                    indent=2,
                )
            )
        finally:
            for _ in gen:
                pass
            mp.undo()


if __name__ == "__main__":
    main()
