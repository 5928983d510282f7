"""`python -m scripts.regen`: one command for every generated file; `--check` lists each stale
one (changed, missing, or no longer generated) and writes nothing, and a run makes them
current."""

from __future__ import annotations

import shutil
from pathlib import Path

from scripts import regen

TOP = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path) -> Path:
    """A copy of the repository's schemas, as a root for the schemas part alone."""
    root = tmp_path / "repo"
    shutil.copytree(TOP / "schemas", root / "schemas")
    return root


def test_check_lists_every_stale_file_and_writes_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "schemas" / "plan.schema.json").write_text("{}\n")
    (root / "schemas" / "topo.schema.json").unlink()
    (root / "schemas" / "gone.schema.json").write_text("{}\n")
    before = {p.name: p.read_bytes() for p in (root / "schemas").iterdir()}

    stale = regen.regenerate(root, write=False, only=("schemas",), log=lambda _: None)

    assert sorted(stale) == [
        "schemas/gone.schema.json (no longer generated)",
        "schemas/plan.schema.json (differs)",
        "schemas/topo.schema.json (missing)",
    ]
    assert {p.name: p.read_bytes() for p in (root / "schemas").iterdir()} == before


def test_a_run_makes_every_file_current(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "schemas" / "plan.schema.json").write_text("{}\n")
    (root / "schemas" / "gone.schema.json").write_text("{}\n")

    assert regen.regenerate(root, write=True, only=("schemas",), log=lambda _: None)

    assert regen.regenerate(root, write=False, only=("schemas",), log=lambda _: None) == []
    assert not (root / "schemas" / "gone.schema.json").exists()
    assert (root / "schemas" / "plan.schema.json").read_bytes() == (
        TOP / "schemas" / "plan.schema.json"
    ).read_bytes()


def test_an_archive_recompressed_by_another_zlib_is_current() -> None:
    import gzip

    fresh = gzip.compress(b"a tar stream", compresslevel=9, mtime=0)
    other = gzip.compress(b"a tar stream", compresslevel=1, mtime=0)
    assert fresh != other
    assert regen._same_archive(other, fresh)
    assert not regen._same_archive(gzip.compress(b"another stream", mtime=0), fresh)
    assert not regen._same_archive(b"not gzip", fresh)


def test_readme_samples_are_rendered_again() -> None:
    text = (
        "```sh\nascendtune plan --demo atlas-800i-a2 --policy compare\n```\n\n```text\nold\n```\n"
    )
    out = regen.readme_samples(text)
    assert "old" not in out
    assert "plan for demo atlas-800i-a2" in out
    assert out.endswith("```\n") and all(line == line.rstrip() for line in out.splitlines())
