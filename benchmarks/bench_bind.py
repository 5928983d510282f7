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
  own start-up is left out; bind_process's CPU time is time.process_time around the call.

The settle window before the final re-read (VERIFY_SETTLE_S, 10 ms: a thread that re-pins itself
must have time to show it, SPEC section 3) is a deliberate wait, not work: the C loop verifies
nothing and has none. So bind_process's wall is printed twice, with the window and without it
(the time actually spent in time.sleep during the call, measured around each sleep, not a
constant), and the target is judged on the work: the CPU time, and the wall less the window.
The verdict line gives the wall with the window beside them, so nothing is hidden.

A third C program, "C verified floor", makes only the system calls a verified bind cannot do
without, as bind_process makes them: the listing, the leader's stat (a zombie is refused), each
thread's mask read (kept for a rollback) and written, the confirming listing of the end of
/proc/P/task, the same window slept since the last write, that end listed again, every mask read
again, the leader's stat and status (dying or killed). It is printed beside the figures (not a
target): what is left between it and bind_process is the Python, what is between it and the C
loop is the verification.

The C loop is also timed a second time in each repetition ("C floor again", after the C
verified floor) and printed against itself: the target is judged in every run on a ratio of two
single timings, and that line shows how far such a ratio moves with the baseline alone (on a
shared 2-CPU machine its CPU time alone moves by about a fifth either way). It is not judged.

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

from timing import build_c, run_measured  # noqa: E402
from verdict import spread, verdict  # noqa: E402

from ascendtune.core.bindplan import BindTarget  # noqa: E402
from ascendtune.host.affinity import bind_process  # noqa: E402
from ascendtune.host.affinity.bind import VERIFY_SETTLE_S  # noqa: E402
from tests.support.children import CHILD, assert_ready, popen_child  # noqa: E402

OLD = frozenset({0, 1})
NEW = frozenset({1})
FLOOR, OURS, VERIFIED = "C floor (list + loop)", "bind_process (in-process)", "C verified floor"
AGAIN = "C floor again (yardstick)"

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

# what a verified bind cannot do without (see the docstring); `margin` as bind.tail_margin
VERIFIED_C = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
#define now_ns() clock_ns(CLOCK_MONOTONIC)
#define cpu_ns() clock_ns(CLOCK_PROCESS_CPUTIME_ID)

static int tids[1 << 20];

/* the thread ids of /proc/PID/task from position `from` on */
static int list(const char *path, int from, int *out) {
    int fd = open(path, O_RDONLY | O_DIRECTORY), n = 0;
    if (fd < 0) return -1;
    if (from) lseek(fd, from + 2, SEEK_SET);
    DIR *d = fdopendir(fd);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && n < (1 << 20)) out[n++] = atoi(e->d_name);
    closedir(d);
    return n;
}

static void read_file(const char *path) {
    static char buf[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd >= 0) { read(fd, buf, sizeof buf); close(fd); }
}

/* verified PID CPU SETTLE_NS */
int main(int argc, char **argv) {
    static int tail[1 << 20];
    char path[64], stat[64], status[64];
    long long t0 = now_ns(), c0 = cpu_ns(), last = 0, slept = 0;
    int failed = 0;
    long long settle = atoll(argv[3]);
    cpu_set_t want, cur;
    CPU_ZERO(&want);
    CPU_SET(atoi(argv[2]), &want);
    snprintf(path, sizeof path, "/proc/%s/task", argv[1]);
    snprintf(stat, sizeof stat, "/proc/%s/task/%s/stat", argv[1], argv[1]);
    snprintf(status, sizeof status, "/proc/%s/status", argv[1]);
    int n = list(path, 0, tids);
    if (n <= 0) return 3;
    read_file(stat);
    for (int i = 0; i < n; i++) {
        if (sched_getaffinity(tids[i], sizeof cur, &cur) != 0) continue;
        if (CPU_EQUAL(&cur, &want)) continue;
        if (sched_setaffinity(tids[i], sizeof want, &want) != 0) failed++;
        last = now_ns();
    }
    int margin = n / 8 < 16 ? 16 : (n / 8 > 64 ? 64 : n / 8);
    int from = n > margin ? n - margin : 0;
    list(path, from, tail);
    if (last) {
        long long left = settle - (now_ns() - last);
        if (left > 0) {
            long long s0 = now_ns();
            struct timespec ts = {left / 1000000000LL, left % 1000000000LL};
            nanosleep(&ts, NULL);
            slept = now_ns() - s0;
        }
    }
    list(path, from, tail);
    for (int i = 0; i < n; i++)
        if (sched_getaffinity(tids[i], sizeof cur, &cur) == 0 && !CPU_EQUAL(&cur, &want))
            failed++;
    read_file(stat);
    read_file(status);
    long long cpu = cpu_ns() - c0;
    printf("%lld %lld %d %d %lld\n", now_ns() - t0, slept, n, failed, cpu);
    return 0;
}
"""


class Slept:
    """Wall seconds spent in time.sleep while installed: the bind's settle window, measured
    around each sleep as it happens (time.sleep is only wrapped inside `with`)."""

    def __init__(self) -> None:
        self.s = 0.0
        self._real = time.sleep

    def _sleep(self, seconds: float) -> None:
        t0 = time.perf_counter()
        try:
            self._real(seconds)
        finally:
            self.s += time.perf_counter() - t0

    def __enter__(self) -> Slept:
        self.s = 0.0
        time.sleep = self._sleep
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep = self._real


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
    slept: list[float] = field(default_factory=list)  # ms of the wall spent in the settle window

    def work_ms(self) -> list[float]:
        """The wall less the settle window, per run."""
        return [ms - w for ms, w in zip(self.ms, self.slept or [0.0] * len(self.ms), strict=True)]


def run_one(
    threads: int, reps: int, floor: str, verified: str, cli: bool, env: dict[str, str]
) -> dict[str, Sample]:
    # `threads` in all: the main thread and threads - 1 sleepers
    child = popen_child(CHILD, json.dumps({"threads": threads - 1, "stack_kib": 64}))
    pid = child.pid
    floor_loop: list[float] = []
    slept: dict[str, float] = {}  # the last run's window, ms, by tool

    def c_floor(loops: list[float] | None = floor_loop) -> tuple[float, float, bool]:
        out = subprocess.run(
            [floor, str(pid), "1"], capture_output=True, text=True, check=True, env=env, timeout=60
        )
        whole, loop, _n, failed, cpu = (int(v) for v in out.stdout.split())
        if loops is not None:
            loops.append(loop / 1e6)
        return whole / 1e6, cpu / 1e6, failed == 0

    def c_verified() -> tuple[float, float, bool]:
        settle_ns = str(int(VERIFY_SETTLE_S * 1e9))
        argv = [verified, str(pid), "1", settle_ns]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, timeout=60)
        whole, window, _n, failed, cpu = (int(v) for v in out.stdout.split())
        slept[VERIFIED] = window / 1e6
        return whole / 1e6, cpu / 1e6, failed == 0

    def in_process() -> tuple[float, float, bool]:
        with Slept() as window:
            t0, c0 = time.perf_counter(), time.process_time()
            ok = bind_process(pid, BindTarget(cpus=NEW)).verified
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        slept[OURS] = window.s * 1000
        return wall * 1000, cpu * 1000, ok

    def timed(argv: list[str]) -> Callable[[], tuple[float, float, bool]]:
        def go() -> tuple[float, float, bool]:
            try:
                wall, cpu = run_measured(argv, env=env, cwd=str(REPO))
                return wall * 1000, cpu * 1000, True
            except subprocess.CalledProcessError:
                return float("nan"), float("nan"), False

        return go

    tools: dict[str, Callable[[], tuple[float, float, bool]]] = {
        FLOOR: c_floor,
        OURS: in_process,
        VERIFIED: c_verified,
        # the same C loop timed a second time in the same repetition: how far a ratio of two
        # single timings moves with the baseline alone (printed, not judged)
        AGAIN: lambda: c_floor(None),
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
                if name in slept:
                    s.slept.append(slept.pop(name))
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
        floor, verified = build_c(FLOOR_C, tmp, "floor"), build_c(VERIFIED_C, tmp, "verified")
        # the whole process as after `pip install`: bytecode cached, this tree first on the path
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        for n in (int(v) for v in args.threads.split(",")):
            samples = run_one(n, args.reps, floor, verified, not args.no_cli, env)
            print(f"\n{n} sleeping threads, {args.reps} repetitions, medians")
            header = (
                f"{'tool':<32}{'ms':>10}{'less wait':>11}{'CPU ms':>10}{'missed':>8}"
                f"{'missed max':>12}{'errors':>8}"
            )
            print(header)
            print("-" * len(header))
            for name, s in samples.items():
                work = f"{med(s.work_ms()):>11.3f}" if s.slept else f"{'':>11}"
                print(
                    f"{name:<32}{med(s.ms):>10.3f}{work}{med(s.cpu):>10.3f}{med(s.missed):>8.0f}"
                    f"{max(s.missed):>12}{s.errors:>8}"
                )
            pairs = [("in-process", "bind_process (in-process)", "C floor (list + loop)")]
            if not args.no_cli:
                pairs.append(
                    ("whole process", "ascendtune bind (process)", "taskset -a -p -c 1 (process)")
                )
            a, b, v = samples[OURS], samples[FLOOR], samples[VERIFIED]
            # judged on the work: the wall less the settle window (a wait the C loop does not
            # make), and the CPU time; the wall with the window is in the detail
            with_wait = [x / y for x, y in zip(a.ms, b.ms, strict=True)]
            ok &= verdict(
                f"`bind --pid` of {n} threads, in process (wall less the "
                f"{VERIFY_SETTLE_S * 1000:g} ms settle wait)",
                "a C loop of sched_setaffinity (list + loop)",
                [x / y for x, y in zip(a.work_ms(), b.ms, strict=True)],
                2.0,
                every_run=True,
                cpu_ratios=[x / y for x, y in zip(a.cpu, b.cpu, strict=True)],
                detail=(
                    f"wall judged less the {VERIFY_SETTLE_S * 1000:g} ms settle window before the "
                    f"final re-read (slept {spread(a.slept)} ms); with it {spread(with_wait)}x; "
                    f"threads missed {sum(a.missed)} over {args.reps} runs"
                ),
            )
            again = samples[AGAIN]
            print(
                f"the C loop against itself (timed twice in each repetition): CPU "
                f"{spread([x / y for x, y in zip(again.cpu, b.cpu, strict=True)])}x, wall "
                f"{spread([x / y for x, y in zip(again.ms, b.ms, strict=True)])}x: what a ratio of "
                f"two single timings carries from the baseline's own spread"
            )
            print(
                f"against the C verified floor (the same window slept): "
                f"wall less the wait "
                f"{spread([x / y for x, y in zip(a.work_ms(), v.work_ms(), strict=True)])}x, "
                f"CPU {spread([x / y for x, y in zip(a.cpu, v.cpu, strict=True)])}x; "
                f"the verified floor against the C loop: CPU "
                f"{spread([x / y for x, y in zip(v.cpu, b.cpu, strict=True)])}x"
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
