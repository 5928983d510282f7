"""Gather times of `fleet` on a real local Ray cluster of 1, 3 and 6 nodes (loopback).

    python benchmarks/bench_fleet.py [--nodes 1,3,6] [--reps 3]

For each size a fresh `ray.cluster_utils.Cluster` is started (num_cpus=1, 80 MB object store
per node, each node replaying a copy of the atlas-800i-a2 demo through ASCENDTUNE_FLEET_SOURCE),
then `ascendtune.app.fleet.gather` runs `reps` times (doctor view, ascendtune shipped as
py_modules): the first is cold (new workers, the package uploaded once), the rest warm. Prints
the cold time, the median warm time (the whole gather: connect, one pinned task per node,
judge every snapshot on the driver, disconnect) and the median of the slowest node's
task time. Needs the extra: pip install -e '.[ray]'.
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
sys.path.insert(0, str(REPO))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback stays loopback

from ascendtune.app.fleet import FleetOptions, gather  # noqa: E402
from tests.support.fleethosts import demo_copy  # noqa: E402

NODE = {
    "num_cpus": 1,
    "object_store_memory": 80 * 1024 * 1024,
    "node_ip_address": "127.0.0.1",
    "include_dashboard": False,
}


def bench(size: int, reps: int, hosts: Path) -> tuple[float, float, float, float]:
    from ray.cluster_utils import Cluster

    srcs = [demo_copy(hosts / f"s{size}-{i}", f"node-{i}") for i in range(size)]
    t0 = time.monotonic()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={**NODE, "env_vars": {"ASCENDTUNE_FLEET_SOURCE": str(srcs[0])}},
    )
    for src in srcs[1:]:
        cluster.add_node(**NODE, env_vars={"ASCENDTUNE_FLEET_SOURCE": str(src)})
    cluster.wait_for_nodes()
    start = time.monotonic() - t0
    try:
        times, slowest = [], []
        for _ in range(reps):
            t = time.monotonic()
            report = gather(FleetOptions(view="doctor", ray_address=cluster.address, timeout=120))
            times.append(time.monotonic() - t)
            rows = report.document["nodes"]
            assert len(rows) == size and all(r["status"] == "ok" for r in rows), rows
            slowest.append(max(r["seconds"] for r in rows))
    finally:
        cluster.shutdown()
    warm = statistics.median(times[1:]) if len(times) > 1 else float("nan")
    return start, times[0], warm, statistics.median(slowest)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="1,3,6")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{'nodes':>5} {'cluster start s':>16} {'cold gather s':>14} {'warm gather s':>14} "
        f"{'slowest task s':>15}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(n) for n in args.nodes.split(",")):
            start, cold, warm, slow = bench(size, args.reps, Path(tmp))
            print(f"{size:>5} {start:>16.2f} {cold:>14.2f} {warm:>14.2f} {slow:>15.2f}", flush=True)


if __name__ == "__main__":
    main()
