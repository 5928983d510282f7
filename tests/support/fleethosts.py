"""Snapshots for the fleet tests: copies of the atlas-800i-a2 demo with their own hostnames,
tuned (numa_balancing 0) or not (1, as the demo has it), and a host whose capture hangs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ascendtune.app.hosts import open_root
from ascendtune.app.options import HostSource
from ascendtune.host import snapshot


def demo_copy(
    dest: Path, hostname: str, *, tuned: bool = True, demo: str = "atlas-800i-a2"
) -> Path:
    """dest: a snapshot folder of the demo, renamed hostname; tuned sets numa_balancing to 0."""
    snapshot.write(snapshot.capture(open_root(HostSource(demo=demo))), str(dest))
    meta = json.loads((dest / "meta.json").read_text())
    meta["hostname"] = hostname
    (dest / "meta.json").write_text(json.dumps(meta))
    knob = dest / "proc/sys/kernel/numa_balancing"
    if knob.exists():
        knob.write_text("0\n" if tuned else "1\n")
    return dest


def hanging_copy(src: Path, dest: Path) -> Path:
    """A copy whose first file is a FIFO nobody writes: reading it blocks, like a hung sysfs."""
    shutil.copytree(src, dest, symlinks=True)
    status = dest / "proc/self/status"
    status.unlink()
    os.mkfifo(status)
    return dest


def fleet_of_four(tmp: Path) -> list[Path]:
    """Three tuned nodes and one untuned copy of them (node-d)."""
    return [demo_copy(tmp / f"node-{n}", f"node-{n}", tuned=n != "d") for n in "abcd"]
