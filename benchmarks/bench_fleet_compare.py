"""`fleet compare` over hundreds of saved snapshots: 500 .tar.gz snapshots of A2 hosts (a few
differ from the majority) against a `python3 -c 'import tarfile ...'` loop that opens the same
archives and reads every member, in the same run; and the peak RSS of `fleet compare`.

Targets (issue 28): at most 3x the tarfile loop (wall and CPU); peak RSS under 500 MiB.

Run: python benchmarks/bench_fleet_compare.py [--snapshots N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from timing import peak_mib, run_measured  # noqa: E402
from verdict import absolute, verdict  # noqa: E402

from ascendtune.host.demos import DEMOS  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.standard import DEMO_SPECS  # noqa: E402

TARFILE_LOOP = (
    "import sys, tarfile\n"
    "for path in sys.argv[1:]:\n"
    "    with tarfile.open(path) as tar:\n"
    "        for m in tar:\n"
    "            if m.isfile():\n"
    "                tar.extractfile(m).read()\n"
)


def write_snapshots(folder: Path, count: int) -> list[Path]:
    """`count` A2 snapshots; every 50th has a different governor file (a node that differs)."""
    import dataclasses

    spec = DEMO_SPECS["atlas-800i-a2"](DEMOS["atlas-800i-a2"])
    paths = []
    for i in range(count):
        meta = dict(spec.meta or {}, hostname=f"node-{i:04d}")
        one = dataclasses.replace(spec, meta=meta)
        if i % 50 == 49:
            one = dataclasses.replace(
                one, cpus=dataclasses.replace(spec.cpus, governor="powersave")
            )
        data = render(one).tar_gz()
        path = folder / f"node-{i:04d}.tar.gz"
        path.write_bytes(data)
        paths.append(path)
    return paths


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshots", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(LC_ALL="C", NO_COLOR="1", PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        env["PYTHONPATH"] = str(repo)
        snaps = Path(tmp, "snaps")
        snaps.mkdir()
        paths = write_snapshots(snaps, args.snapshots)
        print(f"wrote {len(paths)} snapshots", flush=True)
        ours = [sys.executable, "-m", "ascendtune", "fleet", "compare", "--json", str(snaps)]
        loop = [sys.executable, "-c", TARFILE_LOOP, *map(str, paths)]
        run_measured(ours, env=env, check=False, timeout=1800)  # warm
        wall, cpu = [], []
        for _ in range(args.runs):
            lw, lc = run_measured(loop, env=env, timeout=1800)
            ow, oc = run_measured(ours, env=env, check=False, timeout=1800)
            wall.append(ow / lw)
            cpu.append(oc / lc)
            print(
                f"fleet compare {ow:.2f} s ({oc:.2f} s CPU); tarfile loop {lw:.2f} s "
                f"({lc:.2f} s CPU)",
                flush=True,
            )
        peaks = [peak_mib(ours, env, check=False) for _ in range(2)]
        met = verdict(
            f"`fleet compare` of {len(paths)} snapshots",
            "a tarfile loop opening the same archives",
            wall,
            3.0,
            cpu_ratios=cpu,
        )
        met &= absolute(f"`fleet compare` peak RSS, {len(paths)} snapshots", peaks, 500, "MiB")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
