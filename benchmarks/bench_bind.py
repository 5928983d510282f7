"""Bind a process of N sleeping threads: ascendtune against taskset and against the syscall floor.

    python benchmarks/bench_bind.py [--reps 15] [--threads 100,4000] [--no-cli]

Two figures per thread count, medians over repetitions (tools alternate order; before every
run the child's threads are put back on CPUs 0-1 and checked):

- whole process: `python3 -m ascendtune bind --cpus 1 --pid P -q` started as a subprocess,
  against `taskset -a -p -c 1 P` started the same way (what a user waits for);
- in process: `bind_process` called here (verification passes included), against the C floor:
  a small C program (built with `cc` into a temp folder) that lists /proc/P/task once and calls
  sched_setaffinity on each thread; the program times itself (listing + loop) with
  CLOCK_MONOTONIC, and its CPU time over the same span with CLOCK_PROCESS_CPUTIME_ID, so its
  own start-up is left out; bind_process's CPU time is time.process_time around the call. The
  settle window before the final re-read is a sleep: it counts in wall time, not in CPU time.

"missed" counts threads not on CPU 1 right after the tool returns (sleeping threads do not
create threads, so any miss is the tool's). Each pair ends with its ratio of medians and the
threads each side missed, all from the same run. Whole processes are timed with one blocking
waitpid (benchmarks/timing.py), bytecode cached as after `pip install`. The churn benchmark (threads that keep creating
threads) is bench_bind_churn.py. Needs Linux, CPUs 0 and 1, `taskset` and `cc`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from timing import run_measured  # noqa: E402
from verdict import verdict  # noqa: E402

from ascendtune.core.bindplan import BindTarget  # noqa: E402
from ascendtune.host.affinity import bind_process  # noqa: E402
from tests.support.children import CHILD, assert_ready, popen_child  # noqa: E402

OLD = frozenset({0, 1})
NEW = frozenset({1})

FLOOR_C = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
#define now_ns() clock_ns(CLOCK_MONOTONIC)
#define cpu_ns() clock_ns(CLOCK_PROCESS_CPUTIME_ID)

/* floor PID CPU [PID CPU ...]: every thread of each PID onto its CPU */
int main(int argc, char **argv) {
    char path[64];
    static int tids[1 << 20];
    long long loop = 0, t0 = now_ns(), c0 = cpu_ns();
    int total = 0, failed = 0;
    for (int a = 1; a + 1 < argc; a += 2) {
        int n = 0;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[a + 1]), &set);
        snprintf(path, sizeof path, "/proc/%s/task", argv[a]);
        DIR *d = opendir(path);
        if (!d) return 3;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' && n < (1 << 20)) tids[n++] = atoi(e->d_name);
        closedir(d);
        long long s1 = now_ns();
        for (int i = 0; i < n; i++)
            if (sched_setaffinity(tids[i], sizeof set, &set) != 0) failed++;
        loop += now_ns() - s1;
        total += n;
    }
    long long cpu = cpu_ns() - c0;
    printf("%lld %lld %d %d %lld\n", now_ns() - t0, loop, total, failed, cpu);
    return 0;
}
"""


def reset(pid: int) -> None:
    """Every thread back on CPUs 0-1, checked."""
    for name in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(name), OLD)
    assert missed(pid, OLD) == 0, "could not put the child back on CPUs 0-1"


def missed(pid: int, target: frozenset[int]) -> int:
    """Threads of pid not on target right now."""
    off = 0
    for name in os.listdir(f"/proc/{pid}/task"):
        try:
            off += frozenset(os.sched_getaffinity(int(name))) != target
        except ProcessLookupError:
            continue
    return off


@dataclass
class Sample:
    ms: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # CPU time (user + system), ms
    missed: list[int] = field(default_factory=list)
    errors: int = 0


def run_one(
    threads: int, reps: int, floor: str, cli: bool, env: dict[str, str]
) -> dict[str, Sample]:
    # `threads` in all: the main thread and threads - 1 sleepers
    child = popen_child(CHILD, json.dumps({"threads": threads - 1, "stack_kib": 64}))
    pid = child.pid
    floor_loop: list[float] = []

    def c_floor() -> tuple[float, float, bool]:
        out = subprocess.run([floor, str(pid), "1"], capture_output=True, text=True, check=True)
        whole, loop, _n, failed, cpu = (int(v) for v in out.stdout.split())
        floor_loop.append(loop / 1e6)
        return whole / 1e6, cpu / 1e6, failed == 0

    def in_process() -> tuple[float, float, bool]:
        t0, c0 = time.perf_counter(), time.process_time()
        ok = bind_process(pid, BindTarget(cpus=NEW)).verified
        return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000, ok

    def timed(argv: list[str]) -> Callable[[], tuple[float, float, bool]]:
        def go() -> tuple[float, float, bool]:
            try:
                wall, cpu = run_measured(argv, env=env, cwd=str(REPO))
                return wall * 1000, cpu * 1000, True
            except subprocess.CalledProcessError:
                return float("nan"), float("nan"), False

        return go

    tools: dict[str, Callable[[], tuple[float, float, bool]]] = {
        "C floor (list + loop)": c_floor,
        "bind_process (in-process)": in_process,
    }
    if cli:
        tools["taskset -a -p -c 1 (process)"] = timed(["taskset", "-a", "-p", "-c", "1", str(pid)])
        tools["ascendtune bind (process)"] = timed(
            [sys.executable, "-m", "ascendtune", "bind", "--cpus", "1", "--pid", str(pid), "-q"]
        )
    samples = {name: Sample() for name in tools}
    try:
        assert_ready(child)
        assert len(os.listdir(f"/proc/{pid}/task")) == threads
        in_process()  # warm: the first call imports what binding needs
        for name, tool in tools.items():
            if name.endswith("(process)"):
                reset(pid)
                tool()  # warm: bytecode cache, page cache
        names = list(tools)
        for rep in range(reps):
            for name in names if rep % 2 == 0 else names[::-1]:
                reset(pid)
                ms, cpu, ok = tools[name]()
                s = samples[name]
                s.ms.append(ms)
                s.cpu.append(cpu)
                s.missed.append(missed(pid, NEW))
                s.errors += not ok
    finally:
        child.kill()
        child.wait()
    loop = Sample(ms=floor_loop, cpu=[float("nan")] * len(floor_loop), missed=[0] * len(floor_loop))
    samples["C floor (loop only)"] = loop
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", default="100,4000")
    ap.add_argument("--no-cli", action="store_true", help="skip the two whole-process rows")
    args = ap.parse_args()
    if shutil.which("taskset") is None or shutil.which("cc") is None:
        print("needs taskset (util-linux) and cc", file=sys.stderr)
        return 3
    if not os.sched_getaffinity(0) >= OLD:
        print("needs CPUs 0 and 1", file=sys.stderr)
        return 3
    med = statistics.median
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        src, floor = Path(tmp, "floor.c"), str(Path(tmp, "floor"))
        src.write_text(FLOOR_C)
        subprocess.run(["cc", "-O2", "-o", floor, str(src)], check=True)
        # the whole process as after `pip install`: bytecode cached, this tree first on the path
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        for n in (int(v) for v in args.threads.split(",")):
            samples = run_one(n, args.reps, floor, not args.no_cli, env)
            print(f"\n{n} sleeping threads, {args.reps} repetitions, medians")
            header = (
                f"{'tool':<32}{'ms':>10}{'CPU ms':>10}{'missed':>8}{'missed max':>12}{'errors':>8}"
            )
            print(header)
            print("-" * len(header))
            for name, s in samples.items():
                print(
                    f"{name:<32}{med(s.ms):>10.3f}{med(s.cpu):>10.3f}{med(s.missed):>8.0f}"
                    f"{max(s.missed):>12}{s.errors:>8}"
                )
            pairs = [("in-process", "bind_process (in-process)", "C floor (list + loop)")]
            if not args.no_cli:
                pairs.append(
                    ("whole process", "ascendtune bind (process)", "taskset -a -p -c 1 (process)")
                )
            a, b = samples["bind_process (in-process)"], samples["C floor (list + loop)"]
            ok &= verdict(
                f"`bind --pid` of {n} threads, in process",
                "a C loop of sched_setaffinity (list + loop)",
                [x / y for x, y in zip(a.ms, b.ms, strict=True)],
                2.0,
                every_run=True,
                cpu_ratios=[x / y for x, y in zip(a.cpu, b.cpu, strict=True)],
                detail=f"threads missed {sum(a.missed)} over {args.reps} runs",
            )
            for label, ours, base in pairs:
                a, b = samples[ours], samples[base]
                print(
                    f"{label}: {ours.split(' (')[0]} / {base.split(' (')[0]} = "
                    f"{med(a.ms) / med(b.ms):.2f}x wall, {med(a.cpu) / med(b.cpu):.2f}x CPU; "
                    f"threads missed over {args.reps} runs: "
                    f"{sum(a.missed)} against {sum(b.missed)} (most in one run {max(a.missed)} "
                    f"against {max(b.missed)})"
                )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
