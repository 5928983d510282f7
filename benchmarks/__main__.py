"""Run every benchmark and print one summary table of their verdicts.

    python -m benchmarks [--quick] [--only NAME,...] [--markdown]

Each benchmark runs as its own process (as `python benchmarks/bench_X.py`), prints its own
figures and one `target met` / `target missed` line per target, and records the same verdicts
in a file this runner reads back. `--quick` runs fewer repetitions and smaller sizes (a smoke
run; figures from it are not the ones to quote). Exit status: 0 when every target was met, 1
otherwise, 2 when a benchmark itself failed to run.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (full arguments, quick arguments, what it needs beyond the test extra)
BENCHES: dict[str, tuple[list[str], list[str], str]] = {
    "startup": ([], ["--runs", "5"], ""),
    "plan": ([], ["--runs", "10"], ""),
    "scale": ([], ["--runs", "3"], ""),
    "snapshot": ([], ["--runs", "1"], ""),
    "fleet_compare": ([], ["--snapshots", "100", "--runs", "1"], ""),
    "log": ([], ["--runs", "1", "--sizes-mib", "20,100"], ""),
    "doctor": ([], ["--runs", "3", "--procs", "2000"], ""),
    "bind": ([], ["--reps", "5", "--threads", "100"], "cc and taskset"),
    "bind_churn": ([], ["--reps", "5"], "taskset"),
    "bind_workers": ([], ["--runs", "3", "--threads", "100"], "cc"),
    "watch": ([], ["--runs", "1"], "pidstat (sysstat)"),
}


def run(name: str, argv: list[str], results: Path) -> int:
    script = HERE / f"bench_{name}.py"
    env = dict(os.environ, ASCENDTUNE_BENCH_RESULTS=str(results), LC_ALL="C")
    print(f"\n=== bench_{name}.py {' '.join(argv)}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(script), *argv], env=env, timeout=3600, check=False)
    print(f"=== bench_{name}.py: exit {proc.returncode} in {time.perf_counter() - t0:.0f} s")
    return proc.returncode


def table(rows: list[dict[str, object]], markdown: bool) -> str:
    lines = []
    if markdown:
        lines += [
            "| work | baseline | figure (median, range) | target | verdict |",
            "|---|---|---|---|---|",
        ]
    for r in rows:
        wall = r["wall"]
        cpu = r["cpu"]
        assert isinstance(wall, list)
        unit = str(r["unit"])
        fig = f"{_spread(wall)}{'' if unit == 'x' else ' '}{unit}"
        if isinstance(cpu, list):
            fig = f"wall {fig}, CPU {_spread(cpu)}x"
        elif r.get("kind") == "CPU":
            fig = f"CPU {fig}"
        target = f"<= {r['limit']:g}{'' if unit == 'x' else ' '}{unit} ({r['how']})"
        word = "met" if r["met"] else "MISSED"
        if markdown:
            lines.append(f"| {r['work']} | {r['baseline'] or '-'} | {fig} | {target} | {word} |")
        else:
            lines.append(f"{word:7} {r['work']}: {fig}; target {target}")
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    """The median (as the verdict judges it: with an even count, the mean of the middle two) and
    the range."""
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:.2f}"
    return f"{mid:.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs, smaller sizes")
    ap.add_argument("--only", help="comma-separated names: " + ", ".join(BENCHES))
    ap.add_argument("--markdown", action="store_true", help="the summary as a Markdown table")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        ap.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(BENCHES)}")
    broken = []
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp, "verdicts.jsonl")
        results.touch()
        for name in names:
            full, quick, _needs = BENCHES[name]
            before = len(results.read_text().splitlines())
            code = run(name, quick if args.quick else full, results)
            # a benchmark that stopped before judging anything failed to run, whatever its code
            if code not in (0, 1) or len(results.read_text().splitlines()) == before:
                broken.append(f"bench_{name}.py exit {code}, no verdict")
        rows = [json.loads(line) for line in results.read_text().splitlines() if line]
    print("\n" + "=" * min(shutil.get_terminal_size().columns, 100))
    print(table(rows, args.markdown))
    for b in broken:
        print(f"FAILED  {b}")
    if broken:
        return 2
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
