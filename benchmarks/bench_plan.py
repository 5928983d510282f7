"""Benchmark: the planner on growing hosts (256, 1,024 and 4,096 CPUs, 16 NUMA nodes, 16 NPUs,
built in memory by the synthetic-host kit) under every policy.

Run `python benchmarks/bench_plan.py [--runs N]`. Prints the median time per plan in ms and as
a ratio to a baseline measured in the same process (building the Host of the same size), so
figures from different machines compare. Target: planning grows no faster than the host: the
time per CPU at 4,096 CPUs is at most 1.5x the time per CPU at 256 (a verdict line per policy).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from verdict import verdict  # noqa: E402

from ascendtune.core.model import Host, Soc  # noqa: E402
from ascendtune.core.planner import PlanRequest, make_plan  # noqa: E402
from ascendtune.synth.expect import expected_host  # noqa: E402
from ascendtune.synth.spec import Chip, Cpus, HostSpec, Node, NpuSmi, adjacent  # noqa: E402

CPUS, NODES, NPUS, SMT = 1024, 16, 16, 2
SIZES = (256, 1024, 4096)
GROWTH_LIMIT = 1.5


def host_spec(cpus: int = CPUS, nodes: int = NODES, npus: int = NPUS, smt: int = SMT) -> HostSpec:
    """Node n holds `per` consecutive CPUs on 2 sockets; threads 2k, 2k+1 are one core; NPU i
    hangs off node i * nodes // npus with that node's CPUs as its npu-smi affinity."""
    per = cpus // nodes
    node_cpus = [frozenset(range(n * per, (n + 1) * per)) for n in range(nodes)]
    chips = tuple(
        Chip(i, 0, i, "910B3", f"0000:{i + 1:02x}:00.0", affinity=node_cpus[i * nodes // npus])
        for i in range(npus)
    )
    return HostSpec(
        cpus=Cpus(
            frozenset(range(cpus)),
            threads=adjacent(range(cpus), smt=smt, sockets=2, core_ids="global"),
        ),
        nodes=tuple(Node(n, c) for n, c in enumerate(node_cpus)),
        npu_smi=NpuSmi(chips),
        meta={"arch": "aarch64"},
    )


def build_host(spec: HostSpec | None = None) -> Host:
    """The Host of the spec, in memory (the Host the reader would read from its sysroot)."""
    return expected_host(spec or host_spec())


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def cases(cpus: int) -> dict[str, PlanRequest]:
    # on 950 an NPU on node 0 cannot bind (node 0 goes to uvb_poll_window_thread): the cpuset
    # leaves node 0 out, so NPUs 1-15 run
    return {
        "vllm-ascend (A2, topo_affinity)": PlanRequest("vllm-ascend", soc=Soc.A2),
        "vllm-ascend (A3, global_slice)": PlanRequest("vllm-ascend", soc=Soc.A3),
        "vllm-ascend (950, clusters)": PlanRequest(
            "vllm-ascend",
            tuple(range(1, NPUS)),
            soc=Soc.A5,
            reserve=frozenset(range(cpus // NODES)),
        ),
        "numa-local": PlanRequest("numa-local"),
        "numa-slice": PlanRequest("numa-slice"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100, help="timed runs per case (default 100)")
    args = ap.parse_args()
    print(f"{NODES} NUMA nodes, SMT {SMT}, {NPUS} NPUs; median of {args.runs} runs")
    per_cpu: dict[str, dict[int, float]] = {}
    for cpus in SIZES:
        spec = host_spec(cpus=cpus)
        host = build_host(spec)
        base_ms = median_ms(lambda spec=spec: build_host(spec), max(5, args.runs // 10))
        print(f"host {cpus} CPUs: baseline build the Host {base_ms:8.3f} ms")
        for name, req in cases(cpus).items():
            plan = make_plan(host, req)
            assert len(plan.ranks) == len(req.visible or range(NPUS))
            ms = median_ms(lambda req=req, host=host: make_plan(host, req), args.runs)  # type: ignore[misc]
            print(f"  plan {name:34} {ms:8.3f} ms = {ms / base_ms:5.2f} x build the Host")
            per_cpu.setdefault(name, {})[cpus] = ms / cpus
    met = True
    small, big = SIZES[0], SIZES[-1]
    for name, by_size in per_cpu.items():
        met &= verdict(
            f"plan {name}, time per CPU at {big} CPUs",
            f"the same at {small} CPUs",
            [by_size[big] / by_size[small]],
            GROWTH_LIMIT,
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
