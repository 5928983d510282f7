"""doctor's worker scan at scale: `doctor --sysroot X --json` on the Atlas 800I A2 demo written
as a folder with 10,000 extra fake proc/PID entries (each with a few open files; a handful hold
/dev/davinciN), against the same folder with none, interleaved in one run. The difference over
10,000 gives the cost per process scanned (each run paired with the baseline run beside it);
the whole process on a host with 10,000 processes is the baseline plus 10,000 times that.

Target (issue 17): under 30 us per process scanned, 10,000 processes audited in under half a
second. Both are printed with the baseline measured in the same run (the machine is shared:
compare the ratio, and run it a few times).

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
from verdict import absolute  # noqa: E402

from ascendtune.host.demos import DEMOS  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.standard import DEMO_SPECS  # noqa: E402

TARGET_US = 30.0
TARGET_TOTAL_MS = 500.0  # 10,000 processes audited, the whole process
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
    """Seconds of app.doctor.doctor (what `doctor --json` runs between start-up and printing)."""
    from ascendtune.app.doctor import DoctorOptions, doctor
    from ascendtune.host.roots import open_root

    t0 = time.perf_counter()
    doctor(open_root(path), DoctorOptions())
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--procs", type=int, default=10_000)
    args = ap.parse_args()
    n = args.procs
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
        )
        tree = render(DEMO_SPECS["atlas-800i-a2"](DEMOS["atlas-800i-a2"]))
        base = str(tree.write(Path(tmp, "base")))
        many = tree.write(Path(tmp, "many"))
        add_procs(many, n)
        at = [sys.executable, "-m", "ascendtune", "doctor", "--json", "--sysroot"]
        cases = {"baseline (0 extra processes)": base, f"{n} extra processes": str(many)}
        for path in cases.values():  # warm the bytecode cache and the page cache
            once([*at, path], env)
            in_process(path)
        wall: dict[str, list[float]] = {k: [] for k in cases}
        inproc: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):  # interleaved: the baseline runs between the measured ones
            for name, path in cases.items():
                wall[name].append(once([*at, path], env))
                inproc[name].append(in_process(path))
        print(f"doctor --sysroot X --json, medians of {args.runs} interleaved runs")
        print(f"{'':30} {'process ms':>11} {'x base':>7} {'in-process doctor ms':>21}")
        b = statistics.median(wall[next(iter(cases))])
        for name in cases:
            w, f = statistics.median(wall[name]), statistics.median(inproc[name])
            print(f"{name:30} {w * 1e3:11.1f} {w / b:7.2f} {f * 1e3:21.1f}")
        (w0, w1), (f0, f1) = wall.values(), inproc.values()
        # per run: the measured case minus the baseline run beside it
        per = sorted((b1 - b0) / n * 1e6 for b0, b1 in zip(w0, w1, strict=True))
        per_in = statistics.median((b1 - b0) / n * 1e6 for b0, b1 in zip(f0, f1, strict=True))
        per_us = statistics.median(per)
        # 10,000 processes audited: the whole doctor process on a host with that many
        total_ms = (b + per_us * 1e-6 * 10_000) * 1e3
        absolute(
            "`doctor` cost per process scanned, whole process",
            per,
            TARGET_US,
            "us",
            detail=f"{per_in:.1f} us in process",
        )
        print(
            f"10,000 processes audited: {total_ms:.0f} ms whole process"
            f" ({total_ms / (b * 1e3):.2f}x the baseline's {b * 1e3:.0f} ms)"
        )


if __name__ == "__main__":
    main()
