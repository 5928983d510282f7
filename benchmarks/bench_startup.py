"""Start-up cost: median wall time of `ascendtune --help` and `ascendtune topo --demo`,
as a ratio to `python3 -c pass` measured in the same run.

Run: python benchmarks/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CASES = {
    "python3 -c pass (baseline)": [sys.executable, "-c", "pass"],
    "ascendtune --help": [sys.executable, "-m", "ascendtune", "--help"],
    "ascendtune topo --demo": [
        sys.executable,
        "-m",
        "ascendtune",
        "topo",
        "--demo",
        "atlas-800i-a2",
    ],
    "ascendtune topo --demo --json": [
        sys.executable,
        "-m",
        "ascendtune",
        "topo",
        "--demo",
        "atlas-800i-a2",
        "--json",
    ],
    "ascendtune plan --demo": [
        sys.executable,
        "-m",
        "ascendtune",
        "plan",
        "--demo",
        "atlas-800i-a2",
    ],
}


def median_s(argv: list[str], runs: int) -> float:
    env = dict(os.environ, LC_ALL="C", NO_COLOR="1")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            timeout=60,
            check=True,
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    results = {name: median_s(argv, args.runs) for name, argv in CASES.items()}
    base = next(iter(results.values()))
    print(f"{'case':34} {'median ms':>10} {'x baseline':>11}")
    for name, t in results.items():
        print(f"{name:34} {t * 1000:10.1f} {t / base:11.1f}")


if __name__ == "__main__":
    main()
