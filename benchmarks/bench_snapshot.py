"""`ascendtune snapshot` of the biggest hosts: 1,024, 4,096 and 8,192 CPUs, a host with 2,000 PCI
devices, and a worker with 5,000 threads (each a synthetic sysroot, captured through
`--sysroot` into a .tar.gz), against `tar czf` of the same folder in the same run; then archive
replay at 4,096 CPUs (`plan --sysroot X.tar.gz`) against folder replay of the same host.

Targets (issue 28): snapshot at most 2x tar at every size, and works at every size; its peak RSS
under 200 MiB; archive replay at most 1.3x folder replay.

Beside each size, not judged: the floor, a hello-world Typer app's start-up (bench_startup's)
plus `tar czf`, over `tar czf` alone, measured in the same runs: what a Python CLI that did
nothing but tar's work would score. Where it is near 2x (1,024 CPUs: tar takes ~55 ms, a Python
CLI's start-up alone ~70 ms), the target is out of reach of any Python CLI, and the line says so.

Run: python benchmarks/bench_snapshot.py [--runs N] [--only TEXT] (--only: the hosts whose name
holds TEXT, e.g. --only 8,192)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from bench_startup import HELLO  # noqa: E402
from timing import peak_mib, run_measured  # noqa: E402
from verdict import absolute, spread, verdict  # noqa: E402

from ascendtune.core.cpulist import format_cpulist  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.spec import (  # noqa: E402
    Chip,
    Cpus,
    HostSpec,
    NpuProcess,
    NpuSmi,
    Pci,
    Process,
    Task,
    adjacent,
)
from ascendtune.synth.standard import demo_nodes, demo_self, npu_pci  # noqa: E402

RSS_LIMIT_MIB = 200.0


def host(
    cpus: int, *, npus: int = 16, extra_pci: int = 0, threads: int = 0, nodes: int = 16
) -> HostSpec:
    """`cpus` CPUs in `nodes` NUMA nodes, SMT 2, `npus` 910B3 NPUs; `extra_pci` more PCI devices
    (NICs, bridges); with `threads`, one worker process of that many threads on NPU 0."""
    per = cpus // nodes
    node_cpus = {n: frozenset(range(per * n, per * (n + 1))) for n in range(nodes)}
    buses = [(f"0000:{i + 1:02x}:00.0", i * nodes // npus) for i in range(npus)]
    procs: tuple[Process, ...] = ()
    table: tuple[NpuProcess, ...] = ()
    if threads:
        pid = 4242
        tasks = tuple(
            Task(pid + t, "python3" if t == 0 else f"worker-{t % 7}", format_cpulist(node_cpus[0]))
            for t in range(threads)
        )
        procs = (
            Process(
                pid,
                "python3",
                tasks,
                cmdline=("python3", "-m", "vllm.entrypoints.openai.api_server"),
                fds={3: "/dev/davinci0"},
            ),
        )
        table = (NpuProcess(0, 0, pid, "python3", 4096),)
    chips = tuple(
        Chip(i, 0, i, "910B3", bus, affinity=format_cpulist(node_cpus[node]))
        for i, (bus, node) in enumerate(buses)
    )
    pci = [npu_pci(bus, "0xd802", node, node_cpus[node]) for bus, node in buses]
    pci += [
        Pci(
            f"0001:{i // 32:02x}:{i % 32:02x}.{i % 8}",
            vendor="0x15b3",
            device="0x1021",
            numa_node=i % nodes,
        )
        for i in range(extra_pci)
    ]
    return HostSpec(
        cpus=Cpus(frozenset(range(cpus)), threads=adjacent(range(cpus), sockets=2)),
        nodes=demo_nodes(node_cpus, 64),
        node_lists=True,
        pci=tuple(pci),
        self_proc=demo_self(range(cpus), range(nodes), "/user.slice"),
        processes=procs,
        npu_smi=NpuSmi(chips, version="24.1.rc1", processes=table),
        meta={"arch": "aarch64", "hostname": f"big-{cpus}"},
    )


HOSTS = {
    "1,024 CPUs": lambda: host(1024),
    "4,096 CPUs": lambda: host(4096, npus=64, nodes=32),
    "8,192 CPUs": lambda: host(8192, npus=64, nodes=64),
    "2,000 PCI devices": lambda: host(192, nodes=8, extra_pci=2000),
    "a 5,000-thread worker": lambda: host(192, nodes=8, threads=5000),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="only the hosts whose name holds this text")
    args = ap.parse_args()
    hosts = {name: make for name, make in HOSTS.items() if args.only in name}
    if not hosts:
        ap.error(f"--only {args.only}: no such host (hosts: {', '.join(HOSTS)})")
    repo = Path(__file__).resolve().parents[1]
    at = [sys.executable, "-m", "ascendtune"]
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = str(repo)
        out = Path(tmp, "out.tar.gz")
        hello = Path(tmp, "hello.py")
        hello.write_text(HELLO)
        hello_argv = [sys.executable, str(hello)]
        run_measured(hello_argv, env=env)  # warm: bytecode, page cache
        for name, make in hosts.items():
            tree = render(make())
            src = tree.write(Path(tmp, "src"))
            snap = [*at, "snapshot", str(out), "--force", "--sysroot", str(src)]
            tar = ["tar", "czf", str(Path(tmp, "tar.tar.gz")), "-C", str(src), "."]
            wall: list[float] = []
            cpu: list[float] = []
            floor_wall: list[float] = []  # (hello-world + tar czf) over tar czf: not judged
            floor_cpu: list[float] = []
            failed = ""
            try:
                run_measured(snap, env=env, timeout=900)  # warm: bytecode, page cache
                for _ in range(args.runs):
                    tw, tc = run_measured(tar, env=env)
                    sw, sc = run_measured(snap, env=env, timeout=900)
                    hw, hc = run_measured(hello_argv, env=env)
                    tc = max(tc, 1e-3)
                    wall.append(sw / tw)
                    cpu.append(sc / tc)
                    floor_wall.append((hw + tw) / tw)
                    floor_cpu.append((hc + tc) / tc)
                    print(
                        f"{name}: snapshot {sw:.2f} s ({sc:.2f} s CPU), tar czf {tw:.2f} s "
                        f"({tc:.2f} s CPU), hello-world start-up {hw:.3f} s ({hc:.3f} s CPU)",
                        flush=True,
                    )
                peaks = [peak_mib(snap, env) for _ in range(2)]
            except subprocess.CalledProcessError as err:
                failed = f"snapshot failed (exit {err.returncode})"
            if failed:
                print(f"target missed: snapshot of {name}: {failed}", flush=True)
                met = False
            else:
                met &= verdict(
                    f"`snapshot` of {name}",
                    "tar czf of the same folder",
                    wall,
                    2.0,
                    cpu_ratios=cpu,
                    detail=_floor(floor_wall, floor_cpu, 2.0),
                )
                met &= absolute(f"`snapshot` peak RSS, {name}", peaks, RSS_LIMIT_MIB, "MiB")
            if name == "4,096 CPUs" and not failed:
                tgz = Path(tmp, "replay.tar.gz")
                shutil.copy(out, tgz)
                folder = Path(tmp, "replay")
                folder.mkdir()
                subprocess.run(["tar", "xzf", str(tgz), "-C", str(folder)], check=True, timeout=300)
                inner = [p for p in folder.iterdir()]
                root = inner[0] if len(inner) == 1 and inner[0].is_dir() else folder
                plan_a = [*at, "plan", "--json", "--sysroot", str(tgz)]
                plan_f = [*at, "plan", "--json", "--sysroot", str(root)]
                run_measured(plan_a, env=env)
                run_measured(plan_f, env=env)
                rw: list[float] = []
                rc: list[float] = []
                for _ in range(max(5, args.runs * 2)):
                    fw, fc = run_measured(plan_f, env=env)
                    aw, ac = run_measured(plan_a, env=env)
                    rw.append(aw / fw)
                    rc.append(ac / fc)
                met &= verdict(
                    "archive replay at 4,096 CPUs (`plan --sysroot X.tar.gz`)",
                    "folder replay of the same host",
                    rw,
                    1.3,
                    cpu_ratios=rc,
                )
            shutil.rmtree(src)
    return 0 if met else 1


def _floor(walls: list[float], cpus: list[float], limit: float) -> str:
    """The floor beside the verdict: a hello-world Typer start-up plus tar czf, over tar czf
    (not judged); where its median reaches the limit, no Python CLI can meet the target."""
    line = (
        f"floor (a hello-world Typer start-up + tar czf, not judged): wall {spread(walls)}x, "
        f"cpu {spread(cpus)}x tar czf"
    )
    out = [name for name, v in (("wall", walls), ("cpu", cpus)) if sorted(v)[len(v) // 2] >= limit]
    if out:
        line += f" ({' and '.join(out)} at or past {limit:g}x: out of reach of a Python CLI here)"
    return line


if __name__ == "__main__":
    sys.exit(main())
