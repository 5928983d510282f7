"""What watching a busy server costs: `ascendtune watch` sampling 16 workers x 500 threads at
1 Hz, against `pidstat -t -p PIDS 1` (sysstat, C, reading the same /proc files) on the same
threads in the same run; and the share of one core it takes at 16 workers x 100 threads.

The cost of one sample is the difference between a run of 12 samples and a run of 2 (so the
interpreter's start-up is not counted against sampling), in CPU time (user + system).

Targets (issue 28): CPU per sample at most 1.5x pidstat's, at both sizes; at 16 workers x 100
threads under 2% of one core (printed with pidstat's own share beside it: reading each thread's
stat and sched files alone costs several times 2% there).

Beside that share, the floor of this machine: a small C program (built with `cc` into a temp
folder when there is one) that opens the stat and sched files of the same threads once and
re-reads each with one pread every second, as watch does with the files it holds, timing the
CPU of its reads alone; printed as a share of one core, with watch's ratio to it. The same
program times, apart, the other reads watch makes each sample (each process's task list, stat,
status and numa_maps, each thread's mask): printed beside it as the floor of all of them.

Run: python benchmarks/bench_watch.py [--runs N] (needs pidstat: apt-get install sysstat)
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
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from timing import build_c, run_measured  # noqa: E402
from verdict import absolute, verdict  # noqa: E402

SHORT, LONG = 2, 12
PAIR_TRIES = 5  # per_sample_cpu's attempts at a pair that is not noise
WORKER = (
    "import sys, threading, time\n"
    "n = int(sys.argv[1])\n"
    "def idle():\n"
    "    while True:\n"
    "        time.sleep(0.5)\n"
    "for _ in range(n - 1):\n"
    "    threading.Thread(target=idle, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "idle()\n"
)


FLOOR_C = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
/* argv: SWEEPS PID [PID ...]: opens task/TID/stat and task/TID/sched of every thread once, then
   preads every file SWEEPS times, one sweep a second. Prints the CPU microseconds per sweep of
   the preads alone (opening is not counted: watch holds its files from sample to sample), then
   of the other reads watch makes each sample (each process's task list, stat, status and
   numa_maps, each thread's mask), then the number of files held. */
static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static char path[512], buf[1 << 16];
static int slurp(const char *p) {
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (read(fd, buf, sizeof buf) > 0) {}
    close(fd);
    return 0;
}
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) { rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl); }
    int sweeps = atoi(argv[1]), n = 0, cap = 1 << 16;
    int *fds = malloc(sizeof(int) * cap), *tids = malloc(sizeof(int) * cap);
    for (int a = 2; a < argc; a++) {
        snprintf(path, sizeof path, "/proc/%s/task", argv[a]);
        DIR *d = opendir(path);
        if (!d) return 3;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && n + 2 <= cap) {
            if (e->d_name[0] == '.') continue;
            static const char *files[] = {"stat", "sched"};
            for (int f = 0; f < 2; f++) {
                snprintf(path, sizeof path, "/proc/%s/task/%s/%s", argv[a], e->d_name, files[f]);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0) return 4;
                tids[n] = atoi(e->d_name);
                fds[n++] = fd;
            }
        }
        closedir(d);
    }
    long long spent = 0, rest = 0;
    cpu_set_t mask;
    for (int s = 0; s < sweeps; s++) {
        sleep(1);
        long long c0 = cpu_ns();
        for (int i = 0; i < n; i++)
            if (pread(fds[i], buf, sizeof buf, 0) <= 0) return 5;
        long long c1 = cpu_ns();
        for (int a = 2; a < argc; a++) {
            snprintf(path, sizeof path, "/proc/%s/task", argv[a]);
            DIR *d = opendir(path);
            if (!d) return 3;
            while (readdir(d) != NULL) {}
            closedir(d);
            static const char *files[] = {"stat", "status", "numa_maps"};
            for (int f = 0; f < 3; f++) {
                snprintf(path, sizeof path, "/proc/%s/%s", argv[a], files[f]);
                if (slurp(path) != 0) return 6;
            }
        }
        for (int i = 0; i < n; i += 2)
            if (sched_getaffinity(tids[i], sizeof mask, &mask) != 0) return 7;
        spent += c1 - c0;
        rest += cpu_ns() - c1;
    }
    printf("%.1f %.1f %d\n", spent / 1e3 / sweeps, rest / 1e3 / sweeps, n);
    return 0;
}
"""


def start_workers(count: int, threads: int) -> list[subprocess.Popen[str]]:
    procs = []
    for _ in range(count):
        p = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(threads)], stdout=subprocess.PIPE, text=True
        )
        procs.append(p)
    for p in procs:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
    return procs


def per_sample_cpu(argv_of: Callable[[int], list[str]], env: dict[str, str]) -> float:
    """CPU seconds one more sample costs: (CPU of LONG samples - CPU of SHORT) / (LONG - SHORT).

    A pair where the long run cost no more than the short one is noise, not a figure (taken as
    one, it would read as a free sample and pass any target): it is measured again, and a
    benchmark that gets no valid pair in PAIR_TRIES stops without a verdict."""
    for _ in range(PAIR_TRIES):
        _, short = run_measured(argv_of(SHORT), env=env, timeout=120, check=False)
        _, long = run_measured(argv_of(LONG), env=env, timeout=120, check=False)
        if long > short:
            return (long - short) / (LONG - SHORT)
        print(
            f"{LONG} samples cost no more CPU than {SHORT} ({long:.3f} s against {short:.3f} s): "
            "measured again",
            flush=True,
        )
    print(f"no valid measurement in {PAIR_TRIES} tries: the machine is too noisy", file=sys.stderr)
    raise SystemExit(2)  # failed to run (python -m benchmarks reports it), not a verdict


def floor_per_sweep(exe: str, pids: list[str]) -> tuple[float, float] | None:
    """CPU seconds the C floor spends per sweep re-reading the threads' stat and sched, and on
    the other reads watch makes each sample (at 1 Hz, as many sweeps as the samples
    per_sample_cpu counts); None when it failed (a thread gone: the floor is left out)."""
    try:
        out = subprocess.run(
            [exe, str(LONG - SHORT), *pids],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"the C floor failed ({e}): left out", flush=True)
        return None
    preads, rest = out.stdout.split()[:2]
    return float(preads) / 1e6, float(rest) / 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    pidstat = shutil.which("pidstat")
    if pidstat is None:
        print("target missed: bench_watch needs pidstat (apt-get install sysstat)")
        return 1
    repo = Path(__file__).resolve().parents[1]
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        floor: str | None = None
        if shutil.which("cc") is not None:
            try:
                floor = build_c(FLOOR_C, tmp, "floor")
            except subprocess.CalledProcessError as e:
                print(f"the C floor did not build ({e}): left out", flush=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = str(repo)
        for workers, threads in ((16, 500), (16, 100)):
            procs = start_workers(workers, threads)
            try:
                pids = [str(p.pid) for p in procs]
                time.sleep(1)

                def ours(n: int, pids: list[str] = pids) -> list[str]:
                    argv = [sys.executable, "-m", "ascendtune", "watch", "--json"]
                    for pid in pids:
                        argv += ["--pid", pid]
                    return [*argv, "--cpus", cpus, "--interval", "1", "-n", str(n)]

                def theirs(n: int, pids: list[str] = pids) -> list[str]:
                    return [pidstat, "-t", "-p", ",".join(pids), "1", str(n)]

                run_measured(ours(1), env=env, timeout=120, check=False)  # warm
                ratios, shares, floors, alls = [], [], [], []
                for _ in range(args.runs):
                    base = per_sample_cpu(theirs, env)
                    mine = per_sample_cpu(ours, env)
                    ratios.append(mine / base)
                    shares.append(mine * 100.0)  # % of one core at 1 Hz
                    line = (
                        f"{workers} workers x {threads} threads: ascendtune watch "
                        f"{mine * 1e3:.1f} ms CPU per sample, pidstat -t {base * 1e3:.1f} ms"
                    )
                    got = None
                    if floor is not None and threads == 100:
                        got = floor_per_sweep(floor, pids)
                        if got is None:  # left out of every run, not of some
                            floor = None
                            floors.clear()
                            alls.clear()
                    if got is not None:
                        preads, rest = got
                        floors.append(preads)
                        alls.append(preads + rest)
                        line += (
                            f", C floor (pread stat + sched) {preads * 1e3:.1f} ms, with the "
                            f"other reads watch makes {(preads + rest) * 1e3:.1f} ms"
                        )
                    print(line, flush=True)
                label = f"{workers} workers x {threads} threads at 1 Hz"
                met &= verdict(
                    f"`watch` CPU per sample, {label}",
                    "pidstat -t -p PIDS 1",
                    ratios,
                    1.5,
                    kind="CPU",
                )
                if threads == 100:  # issue 28's fixed share; pidstat's own share is beside it
                    mean_base = statistics.median(
                        m / r for m, r in zip(shares, ratios, strict=True)
                    )
                    detail = f"pidstat -t on the same threads {mean_base:.1f}%"
                    if floors:  # why 2% is out of reach while every file is read every sample
                        floor_share = statistics.median(floors) * 100.0
                        ours_x = statistics.median(
                            m / (f * 100.0) for m, f in zip(shares, floors, strict=True)
                        )
                        detail += (
                            f"; the C floor (one pread of each thread's stat and sched, held "
                            f"open) {floor_share:.1f}%, watch {ours_x:.2f}x the floor; with the "
                            f"other reads watch makes each sample (task lists, masks, each "
                            f"process's stat, status, numa_maps) "
                            f"{statistics.median(alls) * 100.0:.1f}%"
                        )
                    met &= absolute(f"`watch` share of one core, {label}", shares, 2.0, "%", detail)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
