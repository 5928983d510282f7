"""`ascendtune log` on a server log appended over weeks: 100 MiB and 1 GiB of real line shapes
(16 ranks, a restart every few hundred MiB with PIDs reused, request and throughput lines between
the binding lines), against `grep -c cpu_binding FILE` on the same file in the same run (its
output to a pipe: GNU grep stops at the first match when writing to /dev/null).

Targets (issue 28): at most 5x grep's wall and CPU time at 1 GiB; peak RSS under 100 MiB, and
flat from 100 MiB to 1 GiB (the 1 GiB peak at most 1.2x the 100 MiB one). `log` decodes only the
lines holding a marker (ascendtune/core/vllm_log/scan.py): here the binding lines. The one line
in ten that is a stamped throughput report (every 10 s, as vLLM's loggers print it, records of
a second interleaved out of order by a few seconds) moves the clock without being decoded.

Run: python benchmarks/bench_log.py [--runs N] [--sizes-mib 100,1024]
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from timing import peak_mib, run_measured  # noqa: E402
from verdict import absolute, spread, verdict  # noqa: E402

RANKS = 16
RSS_LIMIT_MIB = 100.0


START = datetime.datetime(2026, 1, 1, 10, 11)


def stamp(seconds: int) -> str:
    """vLLM's record time (`MM-DD HH:MM:SS`, no year) `seconds` after the log's start."""
    return (START + datetime.timedelta(seconds=seconds)).strftime("%m-%d %H:%M:%S")


def start_block(run: int, at: int) -> list[str]:
    """One server start at `at` seconds: banner, the worker ranks, each rank's binding lines
    (run 0's rank 3 fails, later runs bind it), PIDs reused across runs (a container restart)."""
    ts = stamp(at)[:-3]
    api = 5200
    lines = [
        f"(APIServer pid={api}) INFO {ts}:00 [api_server.py:1903] vLLM API server version 0.23.0",
        f"(APIServer pid={api}) INFO {ts}:00 [utils.py:341] non-default args: "
        f"{{'model': '/models/demo', 'tensor_parallel_size': {RANKS}, "
        "'additional_config': {'enable_cpu_binding': True}}",
    ]
    for r in range(RANKS):
        pid = 5301 + r
        lines.append(
            f"(Worker_TP{r} pid={pid}) INFO {ts}:03 [parallel_state.py:1400] rank {r} in world "
            f"size {RANKS} is assigned as DP rank 0, PP rank 0, TP rank {r}"
        )
    for r in range(RANKS):
        pid = 5301 + r
        tag = f"(Worker_TP{r} pid={pid}) INFO {ts}:2{r % 10}"
        if run == 0 and r == 3:
            lines.append(
                f"(Worker_TP{r} pid={pid}) WARNING {ts}:2{r % 10} [cpu_binding.py:700] "
                "[vllm-ascend] - Failed to bind CPUs: CPUs available in 'Cpus_allowed_list' "
                "conflict with NUMA affinity"
            )
            continue
        base = 12 * r
        main = " ".join(str(c) for c in range(base + 2, base + 10))
        lines += [
            f"{tag} [cpu_binding.py:545] [vllm-ascend] - [cpu_bind_mode] mode=topo_affinity "
            f"rank={r} visible_npus={list(range(RANKS))}",
            f"{tag} [cpu_binding.py:626] [vllm-ascend] - The CPU allocation plan is as follows:",
            f"{tag} [cpu_binding.py:641] [vllm-ascend] - NPU{r}: main=[{main}]  "
            f"acl=[{base + 10}]  release=[[{base + 11}]]",
            f"{tag} [cpu_binding.py:667] [vllm-ascend] - [migrate] NPU:{r} -> NUMA [{r // 2}]",
        ]
    return lines


def filler(i: int, at: int) -> str:
    """The lines that fill a weeks-long log: requests and throughput reports (line i, at
    `at` seconds; a report every 10 s)."""
    if i % 10 == 0:
        return (
            f"(APIServer pid=5200) INFO {stamp(at - i % 3)} [loggers.py:123] "
            f"Engine 000: Avg prompt throughput: {i % 997}.0 tokens/s, Avg generation throughput: "
            f"{i % 311}.4 tokens/s, Running: {i % 17} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"{i % 100}.1%, Prefix cache hit rate: 12.5%"
        )
    return (
        f"(APIServer pid=5200) INFO:     10.0.{i % 255}.{i % 253}:{40000 + i % 20000} - "
        f'"POST /v1/chat/completions HTTP/1.1" 200 OK'
    )


def write_log(path: Path, mib: int, runs_per_gib: int = 4) -> None:
    """`mib` MiB of log, a server start every 1024/runs_per_gib MiB (the first at the top)."""
    target = mib << 20
    every = (1 << 30) // runs_per_gib
    with open(path, "w", encoding="utf-8") as out:
        written, run, i, next_start = 0, 0, 0, 0
        chunk: list[str] = []
        while written < target:
            if written >= next_start:
                block = "\n".join(start_block(run, i + 120)) + "\n"
                out.write(block)
                written += len(block)
                run += 1
                next_start += every
            chunk = [filler(i + k, i + k + 120) for k in range(2000)]
            text = "\n".join(chunk) + "\n"
            out.write(text)
            written += len(text)
            i += 2000


def grep_s(path: Path) -> tuple[float, float]:
    """`grep -c cpu_binding FILE | cat`: wall and CPU of the grep, output to a pipe."""
    return run_measured(
        [
            "/bin/sh",
            "-c",
            'grep -c cpu_binding "$1" | cat >/dev/null',
            "sh",
            str(path),
        ],
        env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        check=False,
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes-mib", default="100,1024")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes_mib.split(",")]
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = str(repo)
        logs = {}
        for mib in sizes:
            path = Path(tmp, f"server-{mib}.log")
            write_log(path, mib)
            logs[mib] = path
            print(f"wrote {path.name}: {path.stat().st_size >> 20} MiB", flush=True)
        at = [sys.executable, "-m", "ascendtune", "log", "--json"]
        wall: dict[int, list[float]] = {m: [] for m in sizes}
        cpu: dict[int, list[float]] = {m: [] for m in sizes}
        peaks: dict[int, list[float]] = {m: [] for m in sizes}
        for mib, path in logs.items():
            run_measured([*at, str(path)], env=env, check=False, timeout=1800)  # warm
            for _ in range(args.runs):
                gw, gc = grep_s(path)
                # exit 1 is expected: rank 3 failed in the first run
                w, c = run_measured([*at, str(path)], env=env, check=False, timeout=1800)
                wall[mib].append(w / gw)
                cpu[mib].append(c / max(gc, 1e-3))
                print(
                    f"{mib} MiB: ascendtune log {w:.2f} s wall {c:.2f} s CPU; "
                    f"grep -c {gw:.2f} s wall {gc:.2f} s CPU",
                    flush=True,
                )
            peaks[mib] = [peak_mib([*at, str(path)], env, check=False) for _ in range(2)]
            print(f"{mib} MiB: peak RSS {max(peaks[mib]):.1f} MiB", flush=True)
        big, small = max(sizes), min(sizes)
        for mib in sizes:
            print(
                f"{mib} MiB: wall {spread(wall[mib])}x, CPU {spread(cpu[mib])}x grep's", flush=True
            )
        met = verdict(
            f"`log --json` of a {big} MiB log",
            "grep -c cpu_binding",
            wall[big],
            5.0,
            cpu_ratios=cpu[big],
        )
        met &= absolute(f"`log` peak RSS at {big} MiB", peaks[big], RSS_LIMIT_MIB, "MiB")
        if big != small:
            met &= verdict(
                f"`log` peak RSS at {big} MiB",
                f"the same at {small} MiB (flat)",
                [b / s for b, s in zip(peaks[big], peaks[small], strict=True)],
                1.2,
            )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
