"""Benchmark: plan 16 NPUs on a 1024-CPU, 16-node host (built in memory) under every policy.

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

from ascendtune.core.model import Accelerator, Cpu, Host, NumaNode, Soc, Source, Vendor
from ascendtune.core.planner import PlanRequest, make_plan

CPUS, NODES, NPUS, SMT = 1024, 16, 16, 2
LIMIT_MS = 50.0


def build_host(cpus: int = CPUS, nodes: int = NODES, npus: int = NPUS, smt: int = SMT) -> Host:
    """Node n holds `per` consecutive CPUs; threads 2k, 2k+1 are one core; NPU i hangs off node
    i * nodes // npus with that node's CPUs as its npu-smi affinity (one NPU per node here)."""
    per = cpus // nodes
    table: dict[int, Cpu] = {}
    numa_nodes = []
    for n in range(nodes):
        members = range(n * per, (n + 1) * per)
        for c in members:
            first = c - c % smt
            sibs = frozenset(range(first, first + smt))
            table[c] = Cpu(c, socket=n // (nodes // 2), core=first // smt, siblings=sibs, node=n)
        numa_nodes.append(NumaNode(n, frozenset(members), 65536))
    accels = []
    for i in range(npus):
        node = i * nodes // npus
        aff = numa_nodes[node].cpus
        accels.append(
            Accelerator(
                vendor=Vendor.HUAWEI,
                logical_id=i,
                npu_id=i,
                chip_id=0,
                name="910B3",
                bus_id=f"0000:{i + 1:02x}:00.0",
                numa_node=node,
                cpu_affinity=aff,
                affinity_source=Source.NPU_SMI,
                tool_affinity=aff,
            )
        )
    online = frozenset(table)
    return Host(
        cpus_online=online,
        cpus=table,
        cpus_allowed=online,
        mems_allowed=None,
        numa_nodes=tuple(numa_nodes),
        accelerators=tuple(accels),
        cpus_present=online,
        arch="aarch64",
    )


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
    host = build_host()
    data = list(range(CPUS))[::-1]
    baselines = {
        "build the Host": median_ms(build_host, args.runs),
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
