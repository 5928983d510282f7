"""The wall time of a whole process, as a user waits for it, and the CPU time it used.

`subprocess.run(..., timeout=...)` must not time a benchmark: with a timeout, Popen.wait polls
with sleeps that double up to 50 ms, so every figure past a few milliseconds is rounded up to
the next poll (a 70 ms process and a 100 ms one both read about 114 ms). Here the wait is one
blocking wait4, and a timer kills a process that hangs.

The CPU time (user + system, from wait4's rusage) is the steadier figure on a shared machine:
other load stretches a process's wall time but hardly its CPU time. Benchmarks report both.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path


def run_measured(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | None = None,
    timeout: float = 600.0,
    check: bool = True,
) -> tuple[float, float]:
    """(wall seconds from start to exit, CPU seconds user + system) of argv, output discarded;
    CalledProcessError on failure when check, and on a hang past timeout (the process is
    killed)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        # no timeout: a blocking wait4, not a sleep-and-poll loop; rusage is the child's own
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return elapsed, usage.ru_utime + usage.ru_stime


def run_timed(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | None = None,
    timeout: float = 600.0,
    check: bool = True,
) -> float:
    """Seconds from start to exit of argv (see run_measured)."""
    return run_measured(argv, env=env, cwd=cwd, timeout=timeout, check=check)[0]


_PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "if sys.argv[1] == 'check' and done.returncode != 0:\n"
    "    sys.exit(f'exit {done.returncode}')\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
)


def peak_mib(
    argv: list[str], env: dict[str, str], *, check: bool = True, timeout: float = 1800.0
) -> float:
    """The peak RSS in MiB of argv's own process (measured from a launcher, so the figure is
    not this process's high water); with check, a non-zero exit of argv fails."""
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _PEAK, "check" if check else "any", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return float(out.stdout.strip())


def build_c(source: str, folder: str | os.PathLike[str], name: str) -> str:
    """source written to folder/NAME.c and built with `cc -O2` into folder/NAME: the program's
    path (a benchmark's C floor). CalledProcessError when cc fails."""
    src, exe = Path(folder, f"{name}.c"), str(Path(folder, name))
    src.write_text(source)
    cc = ["cc", "-O2", "-o", exe, str(src)]
    subprocess.run(cc, check=True, timeout=120, env={**os.environ, "LC_ALL": "C"})
    return exe
