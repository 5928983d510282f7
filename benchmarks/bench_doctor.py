"""doctor's worker scan at scale: `doctor --sysroot X --json` on the Atlas 800I A2 demo written
as a folder with 10,000 extra fake proc/PID entries (each with a few open files; a handful hold
/dev/davinciN), against the same folder with none, interleaved in one run. The difference over
10,000 gives the cost per process scanned (each run paired with the baseline run beside it);
the whole process on a host with 10,000 processes is the baseline plus 10,000 times that.

Target (issue 17): under 30 us per process scanned, 10,000 processes audited in under half a
second. Both are printed with the baseline measured in the same run (the machine is shared:
compare the ratio, and run it a few times).

Beside them, the floor of this machine: the same reads of the same 10,000 folders from a small
C program (built with `cc` into a temp folder when there is one; it times itself in CPU time):
open each PID folder, stat its comm (read it when it could be "irqbalance"), open fd/, list it
to the end and readlinkat every link. No scan that reads every open file's target can go below
it; its ratio says what is left to the Python side.

Run: python benchmarks/bench_doctor.py [--runs N] [--procs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from timing import build_c, run_timed  # noqa: E402
from verdict import absolute, verdict  # noqa: E402

from ascendtune.host.demos import DEMOS  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.standard import DEMO_SPECS  # noqa: E402

TARGET_US = 30.0
# issue 17's 30 us was set where a file system call cost well under 1 us; on a machine where
# each costs 2-4 us (a nested VM) no scan reaches it, so the same target is also judged as a
# ratio to the C floor measured beside it: at most twice what C pays for the same reads
FLOOR_X = 2.0
TARGET_TOTAL_MS = 500.0  # 10,000 processes audited, the whole process
HOLDERS = 4  # fake processes holding an NPU

FLOOR_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
/* argv: PROC-FOLDER FIRST-PID COUNT; prints the CPU microseconds per process of the reads */
int main(int argc, char **argv) {
    if (argc != 4) return 2;
    int top = open(argv[1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int first = atoi(argv[2]), n = atoi(argv[3]);
    static char buf[32768], target[4096];
    char name[32];
    long links = 0;
    struct timespec a, b;
    if (top < 0 || n <= 0) return 1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%d", first + i);
        int d = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0) continue;
        struct stat st;
        if (fstatat(d, "comm", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)
            && st.st_size >= 10 && st.st_size < (long)sizeof buf) {
            int c = openat(d, "comm", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (c >= 0) { if (read(c, buf, st.st_size + 1) < 0) return 1; close(c); }
        }
        int f = openat(d, "fd", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        while (f >= 0) {
            long got = syscall(SYS_getdents64, f, buf, sizeof buf);
            if (got <= 0) break;
            for (long pos = 0; pos < got;) {
                unsigned short reclen = *(unsigned short *)(buf + pos + 16);
                char *entry = buf + pos + 19;
                if (entry[0] != '.' && readlinkat(f, entry, target, sizeof target) >= 0) links++;
                pos += reclen;
            }
        }
        if (f >= 0) close(f);
        close(d);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    printf("%.3f %ld\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / n, links);
    return 0;
}
"""


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


def in_process(path: str) -> tuple[float, float]:
    """Seconds of app.doctor.doctor (what `doctor --json` runs between start-up and printing):
    wall and CPU time."""
    from ascendtune.app.doctor import DoctorOptions, doctor
    from ascendtune.host.roots import open_root

    t0, c0 = time.perf_counter(), time.process_time()
    doctor(open_root(path), DoctorOptions())
    return time.perf_counter() - t0, time.process_time() - c0


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
        floor: list[str] | None = None
        if shutil.which("cc") is not None:
            floor = [build_c(FLOOR_C, tmp, "floor"), str(many / "proc"), "100000", str(n)]
        floor_us: list[float] = []
        for path in cases.values():  # warm the bytecode cache and the page cache
            once([*at, path], env)
            in_process(path)
        wall: dict[str, list[float]] = {k: [] for k in cases}
        inproc: dict[str, list[float]] = {k: [] for k in cases}
        incpu: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):  # interleaved: the baseline runs between the measured ones
            for name, path in cases.items():
                wall[name].append(once([*at, path], env))
                w, c = in_process(path)
                inproc[name].append(w)
                incpu[name].append(c)
            if floor is not None:
                out = subprocess.run(floor, capture_output=True, text=True, check=True, timeout=120)
                floor_us.append(float(out.stdout.split()[0]))
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
        c0, c1 = incpu.values()
        per_cpu = statistics.median((b1 - b0) / n * 1e6 for b0, b1 in zip(c0, c1, strict=True))
        detail = f"{per_in:.1f} us in process ({per_cpu:.1f} us of CPU)"
        if floor_us:
            c = statistics.median(floor_us)
            detail += f"; the same reads from C {c:.1f} us of CPU ({per_cpu / c:.2f}x)"
            print(f"the same reads from C (this machine's floor): {c:.1f} us of CPU per process")
        absolute(
            "`doctor` cost per process scanned, whole process", per, TARGET_US, "us", detail=detail
        )
        if floor_us:  # the same target as a ratio to this machine's floor, run by run
            floor_x = [
                (b1 - b0) / n * 1e6 / f for b0, b1, f in zip(c0, c1, floor_us, strict=True) if f > 0
            ]
            verdict(
                "`doctor` CPU per process scanned, in process",
                "the same reads from C",
                floor_x,
                FLOOR_X,
            )
        print(
            f"10,000 processes audited: {total_ms:.0f} ms whole process"
            f" ({total_ms / (b * 1e3):.2f}x the baseline's {b * 1e3:.0f} ms)"
        )


if __name__ == "__main__":
    main()
