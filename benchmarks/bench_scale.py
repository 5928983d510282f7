"""A 4,096-CPU / 64-NPU host read as fast as a 192-CPU one: `plan --sysroot` on a synthetic
big host (as a folder and as a .tar.gz) against the 192-CPU Atlas 800I A2 demo written as a
folder, and the peak RSS of `snapshot` and archive replay of the big host against the same on
the A2 host, all measured interleaved in one run.

Targets (issue 17): the big folder within 2x the A2 folder; snapshot and archive replay of the
big host under 100 MiB peak RSS.

Figures are given both ways: the whole process as a user runs it (`python -m ascendtune ...`),
and in process (read_host on an opened root, no interpreter start-up).

Run: python benchmarks/bench_scale.py [--runs N]
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

from timing import peak_mib, run_timed  # noqa: E402
from verdict import absolute, verdict  # noqa: E402

from ascendtune.core.cpulist import format_cpulist  # noqa: E402
from ascendtune.host.demos import DEMOS  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.spec import Chip, Cpus, HostSpec, NpuSmi, adjacent  # noqa: E402
from ascendtune.synth.standard import DEMO_SPECS, demo_nodes, demo_self, npu_pci  # noqa: E402
from ascendtune.synth.tree import Tree  # noqa: E402

CPUS, NODES, NPUS, LLC = 4096, 32, 64, 32  # 128 CPUs (64 cores, SMT 2) a node, 2 NPUs a node
RSS_TARGET_MIB = 100.0


def big_spec() -> HostSpec:
    """4,096 CPUs in 32 NUMA nodes, SMT 2, an L3 per 32 CPUs, 64 Ascend 910B3 NPUs."""
    per_node = CPUS // NODES
    nodes = {n: frozenset(range(per_node * n, per_node * (n + 1))) for n in range(NODES)}
    buses = [(f"0000:{i // 2 * 4 + 1 + i % 2:02X}:00.0", i * NODES // NPUS) for i in range(NPUS)]
    chips = tuple(
        Chip(i, 0, i, "910B3", bus, affinity=format_cpulist(nodes[node]))
        for i, (bus, node) in enumerate(buses)
    )
    return HostSpec(
        cpus=Cpus(
            frozenset(range(CPUS)),
            threads=adjacent(range(CPUS), sockets=8),
            governor="performance",
            llc=tuple(frozenset(range(s, s + LLC)) for s in range(0, CPUS, LLC)),
            l1=True,
        ),
        nodes=demo_nodes(nodes, 64),
        node_lists=True,
        pci=tuple(npu_pci(bus, "0xd802", node, nodes[node]) for bus, node in buses),
        self_proc=demo_self(range(CPUS), range(NODES), "/user.slice"),
        npu_smi=NpuSmi(chips, version="24.1.rc1"),
        meta={"arch": "aarch64", "hostname": "big-4096"},
    )


def a2_tree() -> Tree:
    return render(DEMO_SPECS["atlas-800i-a2"](DEMOS["atlas-800i-a2"]))


def env_for(tmp: str) -> dict[str, str]:
    # as installed: bytecode cached (in a private prefix, so the tree stays clean)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    return env


def run_s(argv: list[str], env: dict[str, str]) -> float:
    return run_timed(argv, env=env)


def in_process_s(path: str) -> float:
    from ascendtune.host.reader import read_host
    from ascendtune.host.roots import open_root

    t0 = time.perf_counter()
    read_host(open_root(path))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    at = [sys.executable, "-m", "ascendtune"]
    with tempfile.TemporaryDirectory() as tmp:
        env = env_for(tmp)
        t0 = time.perf_counter()
        big = render(big_spec())
        big_dir = str(big.write(Path(tmp, "big")))
        big_tgz = Path(tmp, "big.tar.gz")
        big_tgz.write_bytes(big.tar_gz())
        small = a2_tree()
        a2_dir = str(small.write(Path(tmp, "a2")))
        a2_tgz = Path(tmp, "a2.tar.gz")
        a2_tgz.write_bytes(small.tar_gz())
        print(
            f"built in {time.perf_counter() - t0:.1f} s: big host {len(big.mapping())} files, "
            f"{big_tgz.stat().st_size >> 10} KiB as .tar.gz; A2 {len(small.mapping())} files"
        )
        wall = {
            "A2 192 CPUs, folder (baseline)": [*at, "plan", "--sysroot", a2_dir],
            "4096 CPUs / 64 NPUs, folder": [*at, "plan", "--sysroot", big_dir],
            "A2 192 CPUs, .tar.gz": [*at, "plan", "--sysroot", str(a2_tgz)],
            "4096 CPUs / 64 NPUs, .tar.gz": [*at, "plan", "--sysroot", str(big_tgz)],
        }
        inproc = {
            "A2 192 CPUs, folder (baseline)": a2_dir,
            "4096 CPUs / 64 NPUs, folder": big_dir,
            "A2 192 CPUs, .tar.gz": str(a2_tgz),
            "4096 CPUs / 64 NPUs, .tar.gz": str(big_tgz),
        }
        for argv in wall.values():
            run_s(argv, env)  # warm: bytecode, page cache
        times: dict[str, list[float]] = {k: [] for k in wall}
        reads: dict[str, list[float]] = {k: [] for k in inproc}
        for _ in range(args.runs):
            for name, argv in wall.items():
                times[name].append(run_s(argv, env))
            for name, path in inproc.items():
                reads[name].append(in_process_s(path))
        print(f"\n`plan --sysroot`, median of {args.runs} interleaved runs")
        print(f"{'host':34} {'process ms':>11} {'x A2':>6} {'read_host ms':>13} {'x A2':>6}")
        base_w = statistics.median(times["A2 192 CPUs, folder (baseline)"])
        base_r = statistics.median(reads["A2 192 CPUs, folder (baseline)"])
        for name in wall:
            w, r = statistics.median(times[name]), statistics.median(reads[name])
            print(f"{name:34} {w * 1e3:11.1f} {w / base_w:6.2f} {r * 1e3:13.1f} {r / base_r:6.2f}")
        verdict(
            "`plan --sysroot` of a 4,096-CPU folder, whole process",
            "the 192-CPU A2 folder",
            [
                w / a
                for w, a in zip(
                    times["4096 CPUs / 64 NPUs, folder"],
                    times["A2 192 CPUs, folder (baseline)"],
                    strict=True,
                )
            ],
            2.0,
        )

        rss = {
            "python3 -c pass": [sys.executable, "-c", "pass"],
            "snapshot A2 folder -> .tar.gz": [
                *at,
                "snapshot",
                str(Path(tmp, "s-a2.tar.gz")),
                "--sysroot",
                a2_dir,
            ],
            "snapshot 4096-CPU folder -> .tar.gz": [
                *at,
                "snapshot",
                str(Path(tmp, "s-big.tar.gz")),
                "--sysroot",
                big_dir,
            ],
            "plan --sysroot A2 .tar.gz": [*at, "plan", "--sysroot", str(a2_tgz)],
            "plan --sysroot 4096-CPU .tar.gz": [*at, "plan", "--sysroot", str(big_tgz)],
        }
        peaks: dict[str, list[float]] = {k: [] for k in rss}
        for _ in range(3):
            for name, argv in rss.items():
                for p in Path(tmp).glob("s-*.tar.gz"):
                    p.unlink()
                peaks[name].append(peak_mib(argv, env))
        print(f"\n{'peak RSS (whole process)':38} {'MiB':>7}")
        for name, got in peaks.items():
            print(f"{name:38} {statistics.median(got):7.1f}")
        for name, got in peaks.items():
            if "4096" in name:
                absolute(f"peak RSS of {name}", got, RSS_TARGET_MIB, "MiB")


if __name__ == "__main__":
    main()
