"""The wall time of a whole process, as a user waits for it.

`subprocess.run(..., timeout=...)` must not time a benchmark: with a timeout, Popen.wait polls
with sleeps that double up to 50 ms, so every figure past a few milliseconds is rounded up to
the next poll (a 70 ms process and a 100 ms one both read about 114 ms). Here the wait is one
blocking waitpid, and a timer kills a process that hangs.
"""

from __future__ import annotations

import subprocess
import threading
import time


def run_timed(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | None = None,
    timeout: float = 600.0,
    check: bool = True,
) -> float:
    """Seconds from start to exit of argv (output discarded); CalledProcessError on failure
    when check, and on a hang past timeout (the process is killed)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        rc = proc.wait()  # no timeout: a blocking waitpid, not a sleep-and-poll loop
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - t0
    if check and rc != 0:
        raise subprocess.CalledProcessError(rc, argv)
    return elapsed
