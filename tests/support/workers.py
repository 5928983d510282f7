"""A fake NPU server on this machine for the `bind --workers` and `watch --workers` tests: a
fake `npu-smi` on PATH (in tmp_path) whose process table names real worker processes started
here, each a Python child with named and churning threads, and a plan that puts every rank on
CPUs 0 and 1. The `server` fixture (tests/e2e/conftest.py) starts one per test."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.hosts import npu_smi_info, npu_smi_m, npu_smi_topo

BOTH = frozenset({0, 1})
DEVICES = 8

# A fake worker: `threads` threads in all (main included), two of them named as torch_npu names
# its runtime threads, optionally `spawners` threads that keep creating short-lived threads.
# On stdin, "spawn N" starts N threads that put themselves on CPUs 0-1 (off any plan here),
# as a library that resets its threads' affinity would; it answers "ok" once they run.
WORKER = r"""
import ctypes, json, os, sys, threading, time
spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
threading.stack_size(256 * 1024)
hold = threading.Event()
libc.prctl(15, b"VLLM::Worker_TP", 0, 0, 0)  # the main thread's name, as vLLM's setproctitle
names = ["acl_thread", "release_thread"]
n = spec["threads"] - 1

def named(i, barrier):
    if i < len(names):
        libc.prctl(15, names[i].encode(), 0, 0, 0)  # PR_SET_NAME
    barrier.wait()
    hold.wait()

barrier = threading.Barrier(n + 1)
for i in range(n):
    threading.Thread(target=named, args=(i, barrier), daemon=True).start()
barrier.wait()

def leaf():
    time.sleep(0.002)

def spawner():
    while True:
        t = threading.Thread(target=leaf)
        t.start()
        t.join()
        time.sleep(0.002)

for _ in range(spec.get("spawners", 0)):
    threading.Thread(target=spawner, daemon=True).start()

def resetting(barrier):
    os.sched_setaffinity(0, {0, 1})
    barrier.wait()
    hold.wait()

print("ready", flush=True)
for line in sys.stdin:
    parts = line.split()
    if parts and parts[0] == "spawn":
        k = int(parts[1])
        b = threading.Barrier(k + 1)
        for _ in range(k):
            threading.Thread(target=resetting, args=(b,), daemon=True).start()
        b.wait()
        print("ok", flush=True)
os._exit(0)
"""


def plan_doc(host: dict[str, Any] | None = None) -> dict[str, Any]:
    """8 ranks on NPUs 0-7, all on this machine's CPUs 0-1: even ranks' main threads on 0 and
    their acl/release threads on 1, odd ranks the other way round."""
    ranks = []
    for r in range(DEVICES):
        main, other = ("0", "1") if r % 2 == 0 else ("1", "0")
        ranks.append(
            {
                "rank": r,
                "device": r,
                "cpus": "0-1",
                "numa_nodes": [0],
                "roles": {"irq": "", "main": main, "acl": other, "release": other},
            }
        )
    doc: dict[str, Any] = {"schema_version": 1, "policy": "numa-local", "ranks": ranks}
    if host is not None:
        doc["host"] = host
    return doc


def expected(rank: int, name: str) -> frozenset[int]:
    main, other = (frozenset({0}), frozenset({1})) if rank % 2 == 0 else ({1}, {0})
    return frozenset(other if name in ("acl_thread", "release_thread") else main)


@dataclass
class Worker:
    proc: subprocess.Popen[str]
    device: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    def spawn(self, k: int) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"spawn {k}\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"


@dataclass
class Server:
    """The fake npu-smi and the worker processes it names."""

    tmp: Path
    workers: dict[int, Worker] = field(default_factory=dict)  # device -> worker
    # (device, pid) rows npu-smi names besides the workers: processes that are not workers
    strangers: list[tuple[int, int]] = field(default_factory=list)

    def start(self, device: int, threads: int = 50, spawners: int = 0) -> Worker:
        p = subprocess.Popen(
            [sys.executable, "-c", WORKER, json.dumps({"threads": threads, "spawners": spawners})],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        w = Worker(p, device)
        self.workers[device] = w
        self.write_table()
        return w

    def pids(self) -> set[int]:
        """The processes this server started (its workers) or names (strangers)."""
        return {w.pid for w in self.workers.values()} | {p for _d, p in self.strangers}

    def stop(self, device: int) -> None:
        w = self.workers.pop(device)
        w.proc.kill()
        w.proc.wait(timeout=10)
        self.write_table()

    def write_table(self) -> None:
        procs = [(d, w.pid, "VLLM::Worker_TP") for d, w in sorted(self.workers.items())]
        procs += [(d, pid, "python3") for d, pid in self.strangers]
        bus = {i: f"{0xC1 + i:02X}" for i in range(DEVICES)}
        text = npu_smi_info(dict.fromkeys(range(DEVICES), "910B3"), bus, procs)
        (self.tmp / "npu" / "info.txt").write_text(text)

    def tool(self, mode: str | None) -> None:
        """Make the fake npu-smi's `info` hang, print garbage, or answer once and then print
        garbage ("garbage-later") (None: answer again)."""
        path = self.tmp / "npu" / "mode"
        if mode is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(mode)

    def reset_masks(self) -> None:
        for w in self.workers.values():
            for tid in tids(w.pid):
                with contextlib.suppress(OSError):  # exited meanwhile
                    os.sched_setaffinity(tid, BOTH)

    def off_target(self) -> dict[int, int]:
        """pid -> threads whose mask is not the plan's, read from the kernel now."""
        out: dict[int, int] = {}
        for d, w in self.workers.items():
            n = 0
            for tid in tids(w.pid):
                name = comm(w.pid, tid)
                try:
                    mask = frozenset(os.sched_getaffinity(tid))
                except OSError:
                    continue
                if name is not None and mask != expected(d, name):
                    n += 1
            out[w.pid] = n
        return out


def tids(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def comm(pid: int, tid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


FAKE_NPU_SMI = """#!/bin/sh
d=$(dirname "$0")/../npu
# npu/mode, when present, makes `npu-smi info` fail: "hang" (sleeps past any budget) or
# "garbage" (a table line that does not parse); "garbage-later": the first `info` answers, every
# later one is garbage (a tool that breaks mid-run, whatever the machine's load)
mode=$(cat "$d/mode" 2>/dev/null)
if [ "$*" = "info" ] && [ "$mode" = "garbage-later" ]; then
  if [ -e "$d/answered" ]; then mode=garbage; else : >"$d/answered"; fi
fi
if [ "$*" = "info" ] && [ "$mode" = "hang" ]; then exec sleep 60; fi
if [ "$*" = "info" ] && [ "$mode" = "garbage" ]; then echo "| NPU  garbage \xff | ??"; exit 0; fi
case "$*" in
  "info") cat "$d/info.txt" ;;
  "info -m") cat "$d/m.txt" ;;
  "info -t topo") cat "$d/topo.txt" ;;
  *) echo "npu-smi: unsupported: $*" >&2; exit 1 ;;
esac
"""


def fake_tool(tmp_path: Path) -> Server:
    """The fake npu-smi in tmp_path/bin (no worker named yet), on nobody's PATH: a test puts
    it on its own (start_server), or on a Ray node's (tests/e2e/test_fleet_ray.py)."""
    (tmp_path / "bin").mkdir(parents=True)
    (tmp_path / "npu").mkdir()
    exe = tmp_path / "bin" / "npu-smi"
    exe.write_text(FAKE_NPU_SMI)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "npu" / "m.txt").write_text(npu_smi_m(list(range(DEVICES))))
    (tmp_path / "npu" / "topo.txt").write_text(npu_smi_topo(dict.fromkeys(range(DEVICES), "0-1")))
    s = Server(tmp_path)
    s.write_table()
    return s


def start_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """The fake npu-smi first on PATH, no sysroot or device list from the environment; every
    worker killed at the end."""
    s = fake_tool(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("ASCENDTUNE_SYSROOT", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("ASCENDTUNE_LOCK_DIR", str(tmp_path / "locks"))  # another suite's apart
    # the test sees only the processes it started: a real server's workers (their open
    # /dev/davinciN) or another suite's are none of its business
    from ascendtune.host import workers as host_workers

    every = host_workers.pids_of

    def own(root: Any) -> list[int] | None:
        pids = every(root)
        return None if pids is None else [p for p in pids if p in s.pids()]

    monkeypatch.setattr(host_workers, "pids_of", own)
    yield s
    for w in list(s.workers.values()):
        w.proc.kill()
        w.proc.wait(timeout=10)


def write_plan(tmp: Path, host: dict[str, Any] | None = None) -> Path:
    path = tmp / "plan.json"
    path.write_text(json.dumps(plan_doc(host)))
    return path
