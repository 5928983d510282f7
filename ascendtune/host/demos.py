"""Demo hosts shipped inside the package: captured sysroots (SPEC.md section 2) as .tar.gz files.

`--demo NAME` reads one of them through the same Root API as a live host or `--sysroot`. The
archives are written by scripts/make_demos.py, which takes its names and descriptions from
DEMOS below (tests/test_demos.py checks each archive's meta.json agrees).

Beside each archive lies NAME.json, its members as open_archive reads them (index_text), made
by the same script: `--demo` loads that instead of replaying the archive, because unpacking and
indexing the 1,000-1,700 members of a demo archive was a fixed ~12 ms of every `--demo` command
and json.loads of the index is under 1 ms (docs/startup.md). The archive stays the demo as a
user (or `--sysroot`) sees it; tests/host/test_demos.py checks the two agree.
"""

from __future__ import annotations

import json
import os

from ascendtune.host.roots import MemRoot, Root

# the package's own folder of demos, found from this file (no importlib.resources: its import
# pulls in tempfile, random and zipfile, ~3 ms of a start-up that reads one file)
DEMO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "demos")

DEFAULT_DEMO = "atlas-800i-a2"

DEMOS: dict[str, str] = {
    "atlas-800i-a2": "Atlas 800I A2: 8x Ascend 910B3, 4x Kunpeng 920, 192 CPUs in 8 NUMA nodes, "
    "untuned kernel knobs",
    "atlas-800i-a3": "Atlas 800I A3: 8 cards x 2 dies = 16 Ascend 910_93 NPUs, 320 CPUs with SMT "
    "in 8 NUMA nodes, tuned; npu-smi gives no CPU affinity",
    "atlas-300i-duo": "x86_64 host with 4x Atlas 300I Duo (8 Ascend 310P3 chips, NPU ids 1,2,4,5), "
    "2x Xeon, 128 CPUs with SMT",
    "container-a2-half": "The Atlas 800I A2 from inside a container given NPUs 4,5 and cpuset 0-23, "
    "running two vLLM workers (one bound, one not)",
    "ascend-950": "Ascend 950 (A5): 8x Ascend 950DT, 384 CPUs with SMT in 4 NUMA nodes, tuned",
    "dgx-h100": "NVIDIA DGX H100: 8x H100 SXM (NV18 mesh), 224 CPUs with SMT in 2 NUMA nodes; "
    "no npu-smi",
}


def list_demos() -> list[tuple[str, str]]:
    """(name, description) of every demo host, the default first."""
    return list(DEMOS.items())


def _known() -> str:
    return ", ".join(DEMOS)


def index_text(root: MemRoot) -> str:
    """The index of a demo archive: its files and links as open_archive read them (already
    normal paths), one member a line so a changed demo reads as a diff."""
    return json.dumps({"files": root.files, "links": root.links}, indent=0) + "\n"


def open_demo(name: str) -> Root:
    """The demo host `name`, read from the index of the package's own archive."""
    from ascendtune.core.errors import MissingError, UsageError

    if name == "list":
        # callers print the list themselves; reaching here means one of them did not
        raise UsageError(f"`list` is not a demo host; the demos are: {_known()}")
    if name not in DEMOS:
        raise UsageError(f"no demo host named {name!r}", f"choose one of: {_known()}")
    try:
        with open(os.path.join(DEMO_DIR, f"{name}.json"), encoding="utf-8") as f:
            index = json.load(f)
    except OSError as e:
        raise MissingError(
            f"the demo index {name}.json is missing from this installation ({e.strerror})",
            "reinstall ascendtune, or run `python -m scripts.regen` in a checkout",
        ) from None
    return MemRoot.of_keys(index["files"], index["links"], f"demo:{name}")
