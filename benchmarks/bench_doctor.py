"""doctor's worker scan at scale: `doctor --sysroot X --json` on the Atlas 800I A2 demo written
as a folder with 10,000 extra fake proc/PID entries (each with a few open files; a handful hold
/dev/davinciN), against the same folder with none, interleaved in one run. The difference over
10,000 gives the cost per process scanned.

Target (issue 17): under 30 us per process scanned (10,000 processes in under half a second).

Run: python benchmarks/bench_doctor.py [--runs N] [--procs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from timing import run_timed  # noqa: E402

from ascendtune.host.demos import DEMOS  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.standard import DEMO_SPECS  # noqa: E402

TARGET_US = 30.0
HOLDERS = 4  # fake processes holding an NPU


def add_procs(root: Path, n: int) -> None:
    """n fake processes: stat, status, comm, cmdline, fd/0-3; HOLDERS of them hold /dev/davinciN."""
    for i in range(n):
        pid = 100_000 + i
        d = root / "proc" / str(pid)
        (d / "fd").mkdir(parents=True)
        comm = "python3" if i < HOLDERS else f"svc{i % 50}"
        (d / "comm").write_text(comm + "\n")
        (d / "cmdline").write_text(f"{comm}\0--serve\0")
        (d / "stat").write_text(f"{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194560 0 0 0 0\n")
        (d / "status").write_text(
            f"Name:\t{comm}\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t1\nUid:\t0\t0\t0\t0\n"
            "Cpus_allowed_list:\t0-191\nMems_allowed_list:\t0-7\n"
        )
        os.symlink("/dev/null", d / "fd" / "0")
        os.symlink(f"socket:[{pid}]", d / "fd" / "1")
        os.symlink(f"pipe:[{pid}]", d / "fd" / "2")
        os.symlink(f"/var/log/svc{i}.log", d / "fd" / "3")
        if i < HOLDERS:
            os.symlink(f"/dev/davinci{i}", d / "fd" / "4")
            os.symlink("/dev/davinci_manager", d / "fd" / "5")
            t = d / "task" / str(pid)
            t.mkdir(parents=True)
            (t / "comm").write_text(comm + "\n")
            (t / "status").write_text((d / "status").read_text())


def once(argv: list[str], env: dict[str, str]) -> float:
    return run_timed(argv, env=env, check=False)


def in_process(path: str) -> float:
    from ascendtune.host.facts import find_workers
    from ascendtune.host.reader import read_host
    from ascendtune.host.sysroot import open_root

    root = open_root(path)
    host = read_host(root)
    t0 = time.perf_counter()
    find_workers(root, host)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--procs", type=int, default=10_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
        )
        tree = render(DEMO_SPECS["atlas-800i-a2"](DEMOS["atlas-800i-a2"]))
        base = str(tree.write(Path(tmp, "base")))
        many = tree.write(Path(tmp, "many"))
        add_procs(many, args.procs)
        at = [sys.executable, "-m", "ascendtune", "doctor", "--json", "--sysroot"]
        cases = {"0 extra processes (baseline)": base, f"{args.procs} extra processes": str(many)}
        for path in cases.values():
            once([*at, path], env)
        wall: dict[str, list[float]] = {k: [] for k in cases}
        scan: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, path in cases.items():
                wall[name].append(once([*at, path], env))
                scan[name].append(in_process(path))
        print(f"{'doctor --sysroot --json':30} {'process ms':>11} {'x base':>7} {'find_workers ms':>16}")
        med = {k: (statistics.median(wall[k]), statistics.median(scan[k])) for k in cases}
        b = med["0 extra processes (baseline)"][0]
        for name, (w, f) in med.items():
            print(f"{name:30} {w * 1e3:11.1f} {w / b:7.2f} {f * 1e3:16.1f}")
        (w0, f0), (w1, f1) = med.values()
        per_wall = (w1 - w0) / args.procs * 1e6
        per_scan = (f1 - f0) / args.procs * 1e6
        verdict = "ok" if per_wall < TARGET_US else "MISSED"
        print(f"per process scanned: {per_wall:.1f} us whole process ({verdict}, target {TARGET_US:.0f}),"
              f" {per_scan:.1f} us in find_workers")


if __name__ == "__main__":
    main()
