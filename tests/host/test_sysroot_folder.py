"""Root.folder: a sysroot folder held open answers every read as read_text of the whole path
would, links resolved inside the root, FIFOs and devices refused; read_cpus through it reads
what a path-by-path read gives."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ascendtune.core.errors import InvalidInput
from ascendtune.host import reader
from ascendtune.host.roots import DirRoot, Root
from tests.support.builder import SysrootBuilder
from tests.support.hosts import atlas_a2

CPU = "sys/devices/system/cpu"
SECRET = "OUTSIDE-SECRET-51c2"


class _ByPath(Root):
    """A DirRoot seen only through read_text / listdir by path (the base Root.folder)."""

    def __init__(self, inner: DirRoot) -> None:
        self.inner = inner
        self.label = inner.label

    def read_text(self, rel: str) -> str | None:
        return self.inner.read_text(rel)

    def listdir(self, rel: str) -> list[str] | None:
        return self.inner.listdir(rel)


def _tree(sysroot: SysrootBuilder, outside: Path) -> None:
    atlas_a2(sysroot)
    (outside / "secret").write_text(SECRET + "\n")
    sysroot.file("elsewhere/cpu5/topology/core_id", "77\n")
    sysroot.file("elsewhere/cpu5/topology/physical_package_id", "1\n")
    sysroot.file("elsewhere/cpu5/topology/thread_siblings_list", "5\n")
    sysroot.file("elsewhere/id", "9\n")
    # cpu5's whole folder a link (absolute: inside the root), cpu6's topology a relative one,
    # a file link inside, a file link escaping, a link loop kept away from read_cpus
    shutil.rmtree(sysroot.root / CPU / "cpu5", ignore_errors=True)
    sysroot.link(f"{CPU}/cpu5", "/elsewhere/cpu5")
    shutil.rmtree(sysroot.root / CPU / "cpu6/topology", ignore_errors=True)
    sysroot.link(f"{CPU}/cpu6/topology", "../cpu5/topology")
    for c, target in (
        (7, "/elsewhere/id"),
        (8, str(outside / "secret")),
        (9, "../../../../../../../../outside/secret"),
    ):
        (sysroot.root / CPU / f"cpu{c}/topology/core_id").unlink(missing_ok=True)
        sysroot.link(f"{CPU}/cpu{c}/topology/core_id", target)


def _outcome(read: Callable[[str], str | None], rel: str) -> object:
    """What a read gives, or the error it raises (as type and message)."""
    try:
        return read(rel)
    except InvalidInput as e:
        return (type(e), str(e))


NAMES = ["core_id", "physical_package_id", "thread_siblings_list", "absent", "..", "."]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    return out


def test_a_folder_reads_what_read_text_reads(sysroot: SysrootBuilder, outside: Path) -> None:
    _tree(sysroot, outside)
    root = DirRoot(sysroot.root)
    for c in [*range(0, 12), 100, 191, 5000]:
        with root.folder(CPU) as cpus, cpus.folder(f"cpu{c}") as here:
            with here.folder("topology") as topo:
                for name in NAMES:
                    want = _outcome(root.read_text, f"{CPU}/cpu{c}/topology/{name}")
                    assert _outcome(topo.read_text, name) == want, (c, name)
                    assert SECRET not in str(want)
                assert topo.listdir() == root.listdir(f"{CPU}/cpu{c}/topology")
            assert here.listdir() == root.listdir(f"{CPU}/cpu{c}")
            plain = tuple(NAMES[:4])
            want_all = [root.read_text(f"{CPU}/cpu{c}/topology/{n}") for n in plain]
            assert cpus.read_texts(plain, f"cpu{c}/topology") == want_all, c
            assert here.read_texts(plain, "topology") == want_all, c
            with here.folder("cache") as cache:
                for entry in cache.listdir() or []:
                    with cache.folder(entry) as index:
                        for name in ("type", "level", "shared_cpu_list"):
                            rel = f"{CPU}/cpu{c}/cache/{entry}/{name}"
                            assert index.read_text(name) == root.read_text(rel)
    assert root.read_text(f"{CPU}/cpu5/topology/core_id") == "77\n"
    assert root.read_text(f"{CPU}/cpu7/topology/core_id") == "9\n"
    with root.folder("no/such/folder") as gone:
        assert gone.read_text("x") is None and gone.listdir() is None
        assert gone.folder("y").read_text("z") is None


def test_read_cpus_through_folders_equals_the_path_by_path_read(
    sysroot: SysrootBuilder, outside: Path
) -> None:
    _tree(sysroot, outside)
    root = DirRoot(sysroot.root)
    got = reader.read_cpus(root)
    assert got == reader.read_cpus(_ByPath(DirRoot(sysroot.root)))
    assert got[2][5][1] == 77 and got[2][6][1] == 77 and got[2][7][1] == 9
    assert reader.read_llc(root, 3) == got[2][3][3]


@pytest.mark.parametrize("where", ["topology/core_id", "cache/index0/type"])
def test_a_fifo_in_a_cpu_folder_is_refused(sysroot: SysrootBuilder, where: str) -> None:
    atlas_a2(sysroot)
    path = sysroot.root / CPU / "cpu0" / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    with pytest.raises(InvalidInput, match="is a FIFO"):
        reader.read_cpus(DirRoot(sysroot.root))
