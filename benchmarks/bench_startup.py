"""Start-up cost: `ascendtune --help`, `topo --demo` (human and JSON), `plan --demo` and
`doctor --demo` against a hello-world Typer app with one command, measured interleaved in the
same run (the machine is shared: every round runs every case once, so load hits all of them
alike). Each round gives one ratio per case; the verdict takes the median of those ratios, on
wall time (what a user waits for) and on CPU time (user + system, the steadier figure).

Targets (issue 28): `topo --demo --json` 1.25x, `--help` 1.1x, human `topo --demo` 1.6x,
`plan --demo` 1.8x, `doctor --demo` 1.9x, on wall and CPU time both.

Run: python benchmarks/bench_startup.py [--runs N] [--compare TREE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import run_measured
from verdict import verdict

HELLO = '''import typer

app = typer.Typer()


@app.command()
def hello(name: str = "world") -> None:
    """Say hello."""
    print(f"hello {name}")


if __name__ == "__main__":
    app()
'''

AT = [sys.executable, "-m", "ascendtune"]
TARGETS = {
    "ascendtune topo --demo --json": 1.25,
    "ascendtune --help": 1.1,
    "ascendtune topo --demo": 1.6,
    "ascendtune plan --demo": 1.8,
    "ascendtune doctor --demo": 1.9,
}


ASCENDTUNE = {
    "ascendtune --help": ["--help"],
    "ascendtune topo --demo": ["topo", "--demo", "atlas-800i-a2"],
    "ascendtune topo --demo --json": ["topo", "--demo", "atlas-800i-a2", "--json"],
    "ascendtune plan --demo": ["plan", "--demo", "atlas-800i-a2"],
    "ascendtune doctor --demo": ["doctor", "--demo", "atlas-800i-a2"],
}


def cases(hello: str, compare: str | None, pid: int) -> dict[str, tuple[list[str], str | None]]:
    """name -> (argv, PYTHONPATH or None for the inherited one); `pid`: a sleeping child that
    `bind --cpus --pid` binds (a bind that needs no plan)."""
    cpu = str(min(os.sched_getaffinity(0)))
    ascendtune = {
        **ASCENDTUNE,
        "ascendtune bind --cpus --pid": ["bind", "--cpus", cpu, "--pid", str(pid), "-q"],
    }
    out: dict[str, tuple[list[str], str | None]] = {
        "python3 -c pass": ([sys.executable, "-c", "pass"], None),
        "hello-world Typer (baseline)": ([sys.executable, hello], None),
    }
    for name, args in ascendtune.items():
        out[name] = ([*AT, *args], None)
        if compare:
            out[f"{name} [{Path(compare).name}]"] = ([*AT, *args], compare)
    return out


def once(argv: list[str], env: dict[str, str], path: str | None) -> tuple[float, float]:
    if path is not None:
        env = dict(env, PYTHONPATH=path)
    # cwd: `python -m` puts it first on sys.path, so a checkout there would shadow PYTHONPATH
    # check=False: doctor exits 1 when it finds problems (the demo host has some)
    return run_measured(argv, env=env, cwd=env["BENCH_CWD"], timeout=60, check=False)


def measure(runs: int, compare: str | None) -> dict[str, list[tuple[float, float]]]:
    """name -> [(wall seconds, CPU seconds)] per round, rounds interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        # as installed: bytecode cached (in a private prefix, so the tree stays clean)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["BENCH_CWD"] = tmp
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH") or str(Path(__file__).resolve().parents[1])
        hello = Path(tmp, "hello.py")
        hello.write_text(HELLO)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        try:
            todo = cases(str(hello), compare, child.pid)
            for argv, path in todo.values():  # warm the caches (and write .pyc) before timing
                once(argv, env, path)
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in todo}
            for _ in range(runs):
                for name, (argv, path) in todo.items():
                    times[name].append(once(argv, env, path))
        finally:
            child.kill()
            child.wait()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument(
        "--compare",
        metavar="TREE",
        help="another source tree (e.g. `git archive main | tar -x -C /tmp/base`) timed alongside",
    )
    args = ap.parse_args()
    rounds = measure(args.runs, args.compare)
    base_rounds = rounds["hello-world Typer (baseline)"]
    base = statistics.median(w for w, _ in base_rounds)
    base_cpu = statistics.median(c for _, c in base_rounds)
    print(f"{'case':44} {'wall ms':>8} {'x hello':>8} {'CPU ms':>7} {'x hello':>8}")
    for name, got in rounds.items():
        t = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(f"{name:44} {t * 1000:8.1f} {t / base:8.2f} {cpu * 1000:7.1f} {cpu / base_cpu:8.2f}")
    print()
    for name, target in TARGETS.items():
        got = rounds[name]
        verdict(
            f"start-up `{name}`",
            "hello-world Typer",
            [w / bw for (w, _), (bw, _) in zip(got, base_rounds, strict=True)],
            target,
            cpu_ratios=[c / bc for (_, c), (_, bc) in zip(got, base_rounds, strict=True)],
        )


if __name__ == "__main__":
    main()
