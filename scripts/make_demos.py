"""Generate the demo hosts shipped in ascendtune/demos/: one captured sysroot (SPEC.md section 2) each.

Run `python -m scripts.regen` (every generated file, the goldens rendered from these demos too)
or `python scripts/make_demos.py` after changing a host below; `--check` only verifies that the
committed archives, and the index beside each (NAME.json, what `--demo` loads: see
ascendtune/host/demos.py), are what this script writes. Output is deterministic: members sorted, mtime 0,
uid/gid 0, gzip mtime 0, so two runs give identical bytes (with the same zlib).

The hosts are specs in ascendtune/synth/standard.py (DEMO_SPECS), rendered by the synthetic-host
kit (ascendtune/synth), which writes the tool outputs (npu-smi, nvidia-smi) with the column
layouts and format strings of the real tools; the numbers (power, temperature, memory use, PIDs)
are made up.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python scripts/make_demos.py` from a checkout
    sys.path.insert(0, str(REPO))

from ascendtune.host.demos import DEMOS, index_text  # noqa: E402
from ascendtune.host.roots import open_archive  # noqa: E402
from ascendtune.synth.render import render  # noqa: E402
from ascendtune.synth.standard import DEMO_SPECS  # noqa: E402
from ascendtune.synth.tree import Tree  # noqa: E402

DEMO_DIR = REPO / "ascendtune" / "demos"


# --------------------------------------------------------------------------------------------
# The index: one list of names and descriptions, in ascendtune/host/demos.py

DESCRIPTIONS: dict[str, str] = DEMOS

BUILDERS: dict[str, Callable[[], Tree]] = {
    name: (lambda name=name: render(DEMO_SPECS[name](DESCRIPTIONS[name])))
    for name in DEMO_SPECS  # type: ignore[misc]
}


def build(name: str) -> bytes:
    """The .tar.gz bytes of one demo host."""
    return BUILDERS[name]().tar_gz()


def index(archive: bytes) -> bytes:
    """The index `--demo` loads (NAME.json) of one demo's .tar.gz bytes: its members as
    open_archive reads them."""
    return index_text(open_archive(archive, "demo")).encode()


def build_all(out_dir: Path) -> list[Path]:
    """Write every demo as out_dir/<name>.tar.gz and its index out_dir/<name>.json; return the
    archives' paths in index order."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in BUILDERS:
        path = out_dir / f"{name}.tar.gz"
        data = build(name)
        path.write_bytes(data)
        (out_dir / f"{name}.json").write_bytes(index(data))
        paths.append(path)
    return paths


def _current(out: Path, name: str) -> bool:
    archive, idx = out / f"{name}.tar.gz", out / f"{name}.json"
    if not (archive.is_file() and idx.is_file()):
        return False
    data = build(name)
    return archive.read_bytes() == data and idx.read_bytes() == index(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--out", type=Path, default=DEMO_DIR, help="folder to write (default: %(default)s)"
    )
    ap.add_argument(
        "--check", action="store_true", help="only check the archives in --out are current"
    )
    args = ap.parse_args(argv)
    if args.check:
        stale = [n for n in BUILDERS if not _current(args.out, n)]
        for n in stale:
            print(
                f"{args.out / (n + '.tar.gz')} or its index is out of date; "
                "run scripts/make_demos.py",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in build_all(args.out):
        print(f"{path}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
