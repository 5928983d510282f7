"""Demo hosts shipped inside the package: captured sysroots (SPEC.md section 2) as .tar.gz files.

`--demo NAME` reads one of them through the same Root API as a live host or `--sysroot`. The
archives are written by scripts/make_demos.py, which takes its names and descriptions from
DEMOS below (tests/test_demos.py checks each archive's meta.json agrees).
"""

from __future__ import annotations

from importlib import resources

from ascendtune.host.roots import Root, open_archive

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


def open_demo(name: str) -> Root:
    """The demo host `name`, read from the package's own archive."""
    from ascendtune.core.errors import MissingError, UsageError

    if name == "list":
        # callers print the list themselves; reaching here means one of them did not
        raise UsageError(f"`list` is not a demo host; the demos are: {_known()}")
    if name not in DEMOS:
        raise UsageError(f"no demo host named {name!r}", f"choose one of: {_known()}")
    try:
        data = resources.files("ascendtune.demos").joinpath(f"{name}.tar.gz").read_bytes()
    except OSError as e:
        raise MissingError(
            f"the demo archive {name}.tar.gz is missing from this installation ({e.strerror})",
            "reinstall ascendtune, or run scripts/make_demos.py in a checkout",
        ) from None
    return open_archive(data, label=f"demo:{name}")
