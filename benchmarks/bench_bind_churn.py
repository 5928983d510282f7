"""Bind a process whose threads keep creating threads: `taskset -a -p` versus ascendtune's binder.

    python benchmarks/bench_bind_churn.py [--reps 15] [--spawners 8] [--sleepers 0] [--no-cli]

For each repetition the churning child is first put back on CPUs 0-1 (verified), then bound to
CPU 1 by one tool; right after the tool returns, every thread of the child is read back and the
ones not on CPU 1 are counted ("left"), and again 200 ms later ("left later": a creator left on
the old mask keeps making threads on it). Tools alternate order per repetition. Medians.
Needs Linux, CPUs 0 and 1, and `taskset` (util-linux).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verdict import absolute  # noqa: E402

from ascendtune.core.bindplan import BindTarget  # noqa: E402
from ascendtune.host.affinity import bind_process  # noqa: E402
from tests.support.children import CHILD, assert_ready, popen_child  # noqa: E402

OLD = frozenset({0, 1})
NEW = frozenset({1})


def off_target(pid: int, target: frozenset[int]) -> tuple[int, int]:
    """(threads present, threads not on target) right now."""
    total = off = 0
    for name in os.listdir(f"/proc/{pid}/task"):
        try:
            mask = os.sched_getaffinity(int(name))
        except ProcessLookupError:
            continue
        total += 1
        off += mask != target
    return total, off


@dataclass
class Sample:
    wall_ms: list[float] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    left_later: list[int] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    failed_runs: int = 0  # the tool itself reported an error


def run_taskset(pid: int) -> bool:
    done = subprocess.run(
        ["taskset", "-a", "-p", "-c", "1", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return done.returncode == 0


def run_ascendtune(pid: int) -> bool:
    return bind_process(pid, BindTarget(cpus=NEW)).verified


def run_cli(pid: int) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "ascendtune", "bind", "--cpus", "1", "--pid", str(pid), "-q"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return done.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--spawners", type=int, default=8)
    ap.add_argument(
        "--sleepers",
        type=int,
        default=0,
        help="sleeping threads besides the spawners: a long listing while threads are born",
    )
    ap.add_argument("--no-cli", action="store_true", help="skip the `python -m ascendtune` row")
    args = ap.parse_args()
    if shutil.which("taskset") is None:
        print("taskset is not installed", file=sys.stderr)
        return 3
    if not os.sched_getaffinity(0) >= OLD:
        print("needs CPUs 0 and 1", file=sys.stderr)
        return 3

    tools: dict[str, Callable[[int], bool]] = {
        "taskset -a -p -c 1": run_taskset,
        "ascendtune (in-process)": run_ascendtune,
    }
    if not args.no_cli:
        tools["ascendtune bind (CLI)"] = run_cli
    samples = {name: Sample() for name in tools}

    spec: dict[str, int] = {"spawners": args.spawners}
    if args.sleepers:
        spec.update(threads=args.sleepers, stack_kib=64)
    child = popen_child(CHILD, json.dumps(spec))
    try:
        assert_ready(child)
        time.sleep(0.2)
        names = list(tools)
        for rep in range(args.reps):
            order = names if rep % 2 == 0 else names[::-1]
            for name in order:
                reset = bind_process(child.pid, BindTarget(cpus=OLD))
                assert reset.verified, "could not put the child back on CPUs 0-1"
                time.sleep(0.05)  # let the churn run on the old mask
                t0 = time.perf_counter()
                ok = tools[name](child.pid)
                wall = time.perf_counter() - t0
                total, left = off_target(child.pid, NEW)
                time.sleep(0.2)
                _total, later = off_target(child.pid, NEW)
                s = samples[name]
                s.wall_ms.append(wall * 1000)
                s.left.append(left)
                s.left_later.append(later)
                s.threads.append(total)
                s.failed_runs += not ok
    finally:
        child.kill()
        child.wait()

    med = statistics.median
    print(f"churning child: {args.spawners} spawner threads, {args.reps} repetitions each")
    header = (
        f"{'tool':<26}{'wall ms':>9}{'threads':>9}{'left':>6}{'left max':>10}"
        f"{'runs w/ left':>14}{'left later':>12}{'tool errors':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, s in samples.items():
        runs_left = sum(1 for v in s.left if v)
        print(
            f"{name:<26}{med(s.wall_ms):>9.2f}{med(s.threads):>9.0f}{med(s.left):>6.0f}"
            f"{max(s.left):>10}{runs_left:>8}/{args.reps:<5}{med(s.left_later):>12.0f}"
            f"{s.failed_runs:>13}"
        )
    ts, at = samples["taskset -a -p -c 1"], samples["ascendtune (in-process)"]
    print()
    print(
        f"wall time ascendtune/taskset (medians): {med(at.wall_ms) / med(ts.wall_ms):.2f}x; "
        f"threads left on the old mask, total over all runs: taskset {sum(ts.left)}, "
        f"ascendtune {sum(at.left)} (200 ms later: {sum(ts.left_later)} vs {sum(at.left_later)})"
    )
    met = absolute(
        "`bind` of a churning process: threads left on the old mask", at.left, 0, "threads"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
