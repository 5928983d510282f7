"""Child processes that the bind and watch tests and the bind benchmarks act on: one program of
sleeping, named or churning threads, and how to start a Python child with pipes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

# A child: threads (optionally named, optionally on their own masks; `threads` of them besides
# the main one), `spawners` threads that keep creating threads (each living `leaf_s`), or `fighters` threads (named
# "fighter") that keep putting themselves back on the mask `fight`. It prints "ready" once every thread is set up, then waits.
CHILD = r"""
import ctypes, json, os, sys, threading, time
spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
threading.stack_size(spec.get("stack_kib", 256) * 1024)
if spec.get("initial") is not None:
    os.sched_setaffinity(0, spec["initial"])
hold = threading.Event()
names = spec.get("names", [])
masks = spec.get("masks") or []
n = spec.get("threads", 0)
barrier = threading.Barrier(n + 1)

def worker(i):
    if i < len(names) and names[i]:
        libc.prctl(15, names[i].encode(), 0, 0, 0)  # PR_SET_NAME: the kernel's thread name
    if masks:
        os.sched_setaffinity(0, masks[i % len(masks)])
    barrier.wait()
    hold.wait()

for i in range(n):
    threading.Thread(target=worker, args=(i,), daemon=True).start()
barrier.wait()

def leaf():
    time.sleep(spec.get("leaf_s", 0.002))

def mid():
    t = threading.Thread(target=leaf)
    t.start()
    t.join()

def spawner():
    # creators die and are replaced too, so the set of creating threads keeps changing
    for _ in range(40):
        t = threading.Thread(target=mid)
        t.start()
        t.join(0.001)
        time.sleep(0.0005)
    threading.Thread(target=spawner, daemon=True).start()

for _ in range(spec.get("spawners", 0)):
    threading.Thread(target=spawner, daemon=True).start()

fighting = threading.Barrier(spec.get("fighters", 0) + 1)

def fighter(mask):
    # a thread that puts itself back on its own mask in a loop, as a library might
    libc.prctl(15, b"fighter", 0, 0, 0)
    os.sched_setaffinity(0, mask)
    fighting.wait()  # named and on its mask before "ready"
    while True:
        os.sched_setaffinity(0, mask)
        time.sleep(0.001)

for _ in range(spec.get("fighters", 0)):
    threading.Thread(target=fighter, args=(spec["fight"],), daemon=True).start()
fighting.wait()
print("ready", flush=True)
sys.stdin.read()
os._exit(0)
"""


def popen_child(code: str, *args: str) -> subprocess.Popen[str]:
    """`python -c CODE ARGS...` with stdin and stdout as text pipes (closing stdin ends CHILD)."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def assert_ready(p: subprocess.Popen[str]) -> None:
    """Wait for CHILD's "ready" line: every thread is set up."""
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.strip() == "ready", f"child did not start: {line!r}"


BOTH = frozenset({0, 1})
# the marker of every test that binds real threads of this machine
needs_cpus_0_1 = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or not hasattr(os, "sched_setaffinity")
    or not os.sched_getaffinity(0) >= BOTH,
    reason="needs Linux with CPUs 0 and 1 usable",
)

Spawn = Callable[..., int]


def masks(pid: int) -> dict[int, frozenset[int]]:
    """Every present thread's mask, read back from the kernel."""
    out: dict[int, frozenset[int]] = {}
    for name in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # exited meanwhile
            out[int(name)] = frozenset(os.sched_getaffinity(int(name)))
    return out


def kernel_thread() -> int | None:
    """A kernel thread of this machine (its stat flags have PF_KTHREAD), to see that it is
    refused; None when this PID namespace shows none (a container)."""
    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 6 and int(fields[6]) & 0x00200000:
            return int(name)
    return None
