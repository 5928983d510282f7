"""Benchmark: plan 16 NPUs on a 1024-CPU, 16-node host (built in memory by the synthetic-host
kit) under every policy.

Run `python benchmarks/bench_plan.py [--runs N]`. Prints the median time per plan in ms and as
a ratio to baselines measured in the same process (building the Host; sorting 1024 ints), so
figures from different machines compare. Exits 1 if a policy's median exceeds 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from ascendtune.core.model import Host, Soc
from ascendtune.core.planner import PlanRequest, make_plan
from ascendtune.synth.expect import expected_host
from ascendtune.synth.spec import Chip, Cpus, HostSpec, Node, NpuSmi, adjacent

CPUS, NODES, NPUS, SMT = 1024, 16, 16, 2
LIMIT_MS = 50.0


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="timed runs per case (default 200)")
    args = ap.parse_args()
    spec = host_spec()
    host = build_host(spec)
    data = list(range(CPUS))[::-1]
    baselines = {
        "build the Host": median_ms(lambda: build_host(spec), args.runs),
        "sorted(1024 ints) x100": median_ms(lambda: [sorted(data) for _ in range(100)], args.runs),
    }
    cases = {
        "vllm-ascend (A2, topo_affinity)": PlanRequest("vllm-ascend", soc=Soc.A2),
        "vllm-ascend (A3, global_slice)": PlanRequest("vllm-ascend", soc=Soc.A3),
        # on 950 an NPU on node 0 cannot bind (node 0 goes to uvb_poll_window_thread): the
        # cpuset leaves node 0 out, so NPUs 1-15 run
        "vllm-ascend (950, clusters)": PlanRequest(
            "vllm-ascend", tuple(range(1, NPUS)), soc=Soc.A5, reserve=frozenset(range(64))
        ),
        "numa-local": PlanRequest("numa-local"),
        "numa-slice": PlanRequest("numa-slice"),
    }
    print(
        f"host: {CPUS} CPUs, {NODES} NUMA nodes, SMT {SMT}, {NPUS} NPUs; "
        f"median of {args.runs} runs; Python {sys.version.split()[0]}"
    )
    base_ms = baselines["build the Host"]
    for name, ms in baselines.items():
        print(f"  baseline  {name:34} {ms:8.3f} ms")
    slow = []
    for name, req in cases.items():
        plan = make_plan(host, req)
        assert len(plan.ranks) == len(req.visible or range(NPUS))
        ms = median_ms(lambda req=req: make_plan(host, req), args.runs)  # type: ignore[misc]
        print(f"  plan      {name:34} {ms:8.3f} ms  = {ms / base_ms:5.2f} x build the Host")
        if ms > LIMIT_MS:
            slow.append(name)
    if slow:
        print(f"slower than {LIMIT_MS:.0f} ms: {', '.join(slow)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
