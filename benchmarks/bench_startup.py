"""Start-up cost: median wall time of `ascendtune --help`, `topo --demo` and `topo --demo --json`
against a hello-world Typer app with one command, measured interleaved in the same run (the
machine is shared: every round runs every case once, so load hits all of them alike).

Targets (issue 17): `topo --demo --json` within 1.5x the hello-world app, `--help` within 1.2x,
human `topo --demo` within 2x.

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
    "ascendtune topo --demo --json": 1.5,
    "ascendtune --help": 1.2,
    "ascendtune topo --demo": 2.0,
}


ASCENDTUNE = {
    "ascendtune --help": ["--help"],
    "ascendtune topo --demo": ["topo", "--demo", "atlas-800i-a2"],
    "ascendtune topo --demo --json": ["topo", "--demo", "atlas-800i-a2", "--json"],
    "ascendtune plan --demo": ["plan", "--demo", "atlas-800i-a2"],
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
    return run_measured(argv, env=env, cwd=env["BENCH_CWD"], timeout=60)


def measure(runs: int, compare: str | None) -> dict[str, tuple[float, float]]:
    """name -> (median wall seconds, median CPU seconds)."""
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
    return {
        name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
        for name, t in times.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument(
        "--compare",
        metavar="TREE",
        help="another source tree (e.g. `git archive main | tar -x -C /tmp/base`) timed alongside",
    )
    args = ap.parse_args()
    results = measure(args.runs, args.compare)
    base, base_cpu = results["hello-world Typer (baseline)"]
    # wall: what a user waits for; CPU (user + system): the steadier figure when the machine
    # is shared. A target is met when the wall ratio meets it.
    print(f"{'case':44} {'wall ms':>8} {'x hello':>8} {'CPU ms':>7} {'x hello':>8} {'target':>7}")
    for name, (t, cpu) in results.items():
        target = TARGETS.get(name.split(" [")[0])
        mark = (
            ""
            if target is None
            else f"{target:5.1f}x " + ("ok" if t / base <= target else "MISSED")
        )
        print(
            f"{name:44} {t * 1000:8.1f} {t / base:8.2f} {cpu * 1000:7.1f} {cpu / base_cpu:8.2f} {mark:>7}"
        )


if __name__ == "__main__":
    main()
