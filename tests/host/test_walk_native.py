"""A sysroot folder's compiled reads (host/roots/_walkc.c) against the Python they stand for: on
trees with links in and out of the root, FIFOs, folders where files belong, files past the cap,
names that are no plain component and bytes that are no UTF-8, the same texts, the same link
targets, the same refusals; read_cpus and doctor's scan the same either way."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ascendtune.core.errors import AscendtuneError
from ascendtune.host import reader
from ascendtune.host.roots import DirRoot, walker
from ascendtune.host.workers import scan_processes
from tests.support.builder import SysrootBuilder
from tests.support.compiler import skip_without_cc
from tests.support.hosts import atlas_a2

CPU = "sys/devices/system/cpu"
SECRET = "OUTSIDE-SECRET-7e41"

needs_c = pytest.mark.skipif(walker.walk_native() is None, reason="installed without a C compiler")


def test_the_compiled_reads_are_built_where_a_compiler_is() -> None:
    skip_without_cc()
    assert walker.walk_native() is not None, "pip install -e . builds host/roots/_walkc.c"


def _both(monkeypatch: pytest.MonkeyPatch, read: Callable[[], object]) -> tuple[object, object]:
    """What read gives (or raises, as type and message) compiled, then in Python."""
    got = []
    for native in (walker.walk_native(), None):
        monkeypatch.setattr(walker, "_NATIVE", [native])
        try:
            got.append(read())
        except (AscendtuneError, ValueError) as e:
            got.append((type(e), str(e)))
    return got[0], got[1]


def _outcome(call: Callable[[], object]) -> object:
    """What call gives, or the refusal it raises (type and message)."""
    try:
        return call()
    except AscendtuneError as e:
        return (type(e), str(e))


def _same_at_the_cap(monkeypatch: pytest.MonkeyPatch, read: Callable[[], object]) -> None:
    """read gives the same compiled and in Python with the cap on one file at 4 and 3 bytes
    ("77\n", cpu5's core_id, at the cap and under it)."""
    for cap in (4, 3):
        monkeypatch.setattr(walker, "MAX_FILE_BYTES", cap)
        c, py = _both(monkeypatch, read)
        assert c == py, cap


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    (out / "fd").mkdir(parents=True)
    (out / "comm").write_text(SECRET + "\n")
    (out / "core_id").write_text(SECRET + "\n")
    os.symlink("/dev/davinci7", out / "fd" / "0")
    return out


def _procs(sysroot: SysrootBuilder, outside: Path) -> list[str]:
    """PID folders of every kind the scan may meet; their names, in scan order."""
    root = sysroot.root

    def proc(pid: str, comm: str | None, *targets: str) -> None:
        (root / "proc" / pid / "fd").mkdir(parents=True, exist_ok=True)
        if comm is not None:
            sysroot.file(f"proc/{pid}/comm", comm)
        for i, t in enumerate(targets):
            sysroot.link(f"proc/{pid}/fd/{i}", t)

    proc("10", "python3\n", "/dev/null", "/dev/davinci0", "/dev/davinci_manager")
    proc("11", "irqbalance\n", "socket:[1]", "pipe:[2]")
    proc("12", "svc\n")  # short: "" unread with skip_below
    proc("13", None, "/dev/davinci1")  # no comm
    proc("14", "x" * 5000 + "\n", *(f"/f{i}" for i in range(40)))  # past the stack buffer
    proc("15", "")
    (root / "proc/15/comm").write_bytes(b"caf\xc3\xa9 \xff\xfe long\n")  # no UTF-8
    os.symlink(b"/dev/\xffodd", os.fsencode(root / "proc/15/fd/1"))  # a target no UTF-8
    os.symlink("/x", os.fsencode(root / "proc/15/fd") + b"/\xfe")  # a name no UTF-8
    (root / "proc/15/fd/regular").write_text("not a link\n")  # left out
    proc("16", "y\n")
    os.unlink(root / "proc/16/comm")
    sysroot.link("proc/16/comm", str(outside / "comm"))  # a file link out of the root
    shutil.rmtree(root / "proc/16/fd")
    sysroot.link("proc/16/fd", "/proc/10/fd")  # the fd folder a link: inside
    sysroot.link("proc/17", "/proc/10")  # the PID folder a link: inside
    sysroot.link("proc/18", str(outside))  # ... and out of the root
    sysroot.file("proc/19/status", "Name:\tz\n")  # no comm, no fd
    proc("20", "z\n")
    shutil.rmtree(root / "proc/20/fd")
    sysroot.file("proc/20/fd", "a file\n")  # fd/ a file
    sysroot.file("proc/21", "a file where a PID folder belongs\n")
    proc("22", "irqbalance\n", "/dev/davinci2")
    (root / "proc/22/comm").unlink()
    (root / "proc/22/comm").mkdir()  # a folder as the comm
    proc("23", "grown?\n", "/dev/davinci3")
    return [str(n) for n in range(9, 25)] + ["..", ".", "", "10/fd", "a/b"]


@needs_c
@pytest.mark.parametrize("skip_below", [0, 10])
@pytest.mark.parametrize("file", ["comm", None])
def test_children_read_what_the_python_reads(
    sysroot: SysrootBuilder,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    file: str | None,
    skip_below: int,
) -> None:
    names = _procs(sysroot, outside)
    names.remove("22")  # its comm (a folder) is refused: below
    c, py = _both(
        monkeypatch,
        lambda: DirRoot(sysroot.root).read_children(
            "proc", names, file, "fd", skip_below=skip_below
        ),
    )
    assert c == py
    assert SECRET not in str(c)
    assert isinstance(c, list) and c[names.index("18")] == (None, None)  # not followed out
    if file is not None:
        assert c[names.index("15")][0] == "caf\xe9 \ufffd\ufffd long\n"  # replaced, as decode does
        assert c[names.index("12")][0] == ("" if skip_below else "svc\n")


@needs_c
@pytest.mark.parametrize("skip_below", [0, 10])
def test_children_refuse_what_the_python_refuses(
    sysroot: SysrootBuilder, outside: Path, monkeypatch: pytest.MonkeyPatch, skip_below: int
) -> None:
    names = _procs(sysroot, outside)
    os.mkfifo(sysroot.root / "proc/23/fifo")
    c, py = _both(
        monkeypatch,
        lambda: DirRoot(sysroot.root).read_children(
            "proc", names, "comm", "fd", skip_below=skip_below
        ),
    )
    assert c == py and "is a folder" in str(c)  # proc/22/comm
    for cap in (6, 7, 100):  # "grown?\n" is 7 bytes: at the cap, and under it
        monkeypatch.setattr(walker, "MAX_FILE_BYTES", cap)
        c, py = _both(
            monkeypatch, lambda: DirRoot(sysroot.root).read_children("proc", ["23"], "comm", "fd")
        )
        assert c == py, cap
    c, py = _both(
        monkeypatch, lambda: DirRoot(sysroot.root).read_children("proc", ["23"], "fifo", "fd")
    )
    assert c == py and "is a FIFO" in str(c)


def _cpus_tree(sysroot: SysrootBuilder, outside: Path) -> None:
    atlas_a2(sysroot)
    root = sysroot.root / CPU
    sysroot.file("elsewhere/cpu5/topology/core_id", "77\n")
    sysroot.file("elsewhere/cpu5/topology/physical_package_id", "1\n")
    sysroot.file("elsewhere/cpu5/topology/thread_siblings_list", "5\n")
    shutil.rmtree(root / "cpu5")
    sysroot.link(f"{CPU}/cpu5", "/elsewhere/cpu5")  # the CPU folder a link: inside
    shutil.rmtree(root / "cpu6/topology")
    sysroot.link(f"{CPU}/cpu6/topology", "../cpu5/topology")  # the topology folder a link
    (root / "cpu7/topology/core_id").unlink()
    sysroot.link(f"{CPU}/cpu7/topology/core_id", str(outside / "core_id"))  # out of the root
    (root / "cpu8/topology/core_id").unlink()  # absent
    (root / "cpu9/topology/core_id").write_bytes(b"\xff9\n")  # no UTF-8
    (root / "cpu10/topology/thread_siblings_list").write_text("10-11" + " " * 6000 + "\n")
    shutil.rmtree(root / "cpu12/topology")  # absent folder
    shutil.rmtree(root / "cpu13/topology")
    sysroot.file(f"{CPU}/cpu13/topology", "a file where a folder belongs\n")
    (root / "cpu14/topology/core_id").unlink()
    (root / "cpu14/topology/core_id").mkdir()  # a folder as the file


NAMES = ("core_id", "physical_package_id", "thread_siblings_list", "absent", "..", ".", "a/b")


@needs_c
def test_folder_texts_read_what_the_python_reads(
    sysroot: SysrootBuilder, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cpus_tree(sysroot, outside)

    def read() -> list[object]:
        got: list[object] = []
        root = DirRoot(sysroot.root)
        with root.folder(CPU) as cpus:
            for c in [*range(0, 16), 191, 5000]:
                for names in (NAMES[:3], NAMES):
                    got.append(
                        _outcome(lambda n=names, c=c: cpus.read_texts(n, f"cpu{c}/topology"))
                    )
                    with cpus.folder(f"cpu{c}") as here:
                        got.append(
                            _outcome(
                                lambda n=names: [here.read_texts(n, "topology"), here.read_texts(n)]
                            )
                        )
                        with here.folder("topology") as topo:
                            got += [_outcome(lambda n=name: topo.read_text(n)) for name in names]
        return got

    c, py = _both(monkeypatch, read)
    assert c == py
    assert SECRET not in str(c)
    assert "is a folder" in str(c)  # cpu14's core_id
    _same_at_the_cap(monkeypatch, read)


@needs_c
def test_read_cpus_and_the_scan_are_the_same_either_way(
    sysroot: SysrootBuilder, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cpus_tree(sysroot, outside)
    shutil.rmtree(sysroot.root / CPU / "cpu14/topology")  # read_cpus refuses a folder as a file
    names = _procs(sysroot, outside)
    shutil.rmtree(sysroot.root / "proc/22")
    sysroot.meta(proc_scanned=True)
    c, py = _both(monkeypatch, lambda: reader.read_cpus(DirRoot(sysroot.root)))
    assert c == py and isinstance(c, tuple) and len(c[2]) == 192
    assert c[2][5][1] == 77 and c[2][6][1] == 77 and c[2][7][1] == 7  # 7: core_id unread
    c, py = _both(monkeypatch, lambda: scan_processes(DirRoot(sysroot.root)))
    assert c == py and isinstance(c, tuple)
    assert sorted(c.held) == [10, 13, 16, 17, 23] and c.irqbalance == (11,)
    assert len(names) > 16


@needs_c
def test_read_files_read_what_the_python_reads(
    sysroot: SysrootBuilder, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DirRoot.read_files (a snapshot's whole capture) through the compiled reads, run by run of
    one folder, against the Python loop: paths in runs, runs broken and taken up again, links,
    a folder where a file belongs, absent files and folders, names no plain component."""
    _cpus_tree(sysroot, outside)
    groups = [["meta.json", "", "/etc/passwd", f"{CPU}/online", f"{CPU}//online", f"{CPU}/./x"]]
    for c in [*range(0, 16), 191, 5000]:
        base = f"{CPU}/cpu{c}"
        rels = [f"{base}/topology/{n}" for n in NAMES[:4]]  # "." and ".." name folders
        rels += [f"{base}/online", f"{base}/topology/core_id", f"{base}/topology/../online"]
        rels += [f"{base}/cache/index0/level", f"{base}/absent/file", f"{base}/topology/a/b"]
        groups.append(rels)
        groups += [[f"{base}/topology/{n}"] for n in NAMES[4:]]
    # every path that reads in one call
    groups.append([r for g in groups[1:] if len(g) > 1 for r in g if "cpu14/" not in r])

    def read() -> list[object]:
        root = DirRoot(sysroot.root)
        return [_outcome(lambda r=rels: root.read_files(r)) for rels in groups]

    c, py = _both(monkeypatch, read)
    assert c == py
    assert isinstance(c, list) and SECRET not in str(c)
    assert "is a folder" in str(c[1 + 4 * 14])  # cpu14's core_id
    whole = c[-1]
    assert isinstance(whole, list) and len(whole) == len(groups[-1])
    assert any(isinstance(t, str) and t for t in whole) and None in whole
    _same_at_the_cap(monkeypatch, read)


@needs_c
def test_listdirs_list_what_the_python_lists(
    sysroot: SysrootBuilder, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DirRoot.listdirs (a snapshot's cache folders of every CPU, in one call) compiled against
    the Python listdir of each: folders behind links in and out of the root, absent folders,
    files where folders belong, names no plain path, names no UTF-8."""
    _cpus_tree(sysroot, outside)
    (sysroot.root / CPU / "cpu3/cache/\udcff-odd").mkdir(parents=True)
    sysroot.link(f"{CPU}/cpu4/cache", str(outside))  # out of the root: as the walk resolves it
    rels = [f"{CPU}/cpu{c}/{sub}" for c in [*range(0, 16), 5000] for sub in ("cache", "topology")]
    rels += [CPU, "", ".", "..", "/", "proc", f"{CPU}/../cpu", f"{CPU}//cpu1", "meta.json"]

    def read() -> object:
        root = DirRoot(sysroot.root)
        return [root.listdirs(rels), [root.listdir(r) for r in rels]]

    c, py = _both(monkeypatch, read)
    assert c == py
    assert isinstance(c, list) and c[0] == c[1]
    got = dict(zip(rels, c[0], strict=True))
    assert got[f"{CPU}/cpu5/topology"] == ["core_id", "physical_package_id", "thread_siblings_list"]
    assert got[f"{CPU}/cpu12/topology"] is None and got[f"{CPU}/cpu13/topology"] is None
    assert "\udcff-odd" in (got[f"{CPU}/cpu3/cache"] or [])
    assert SECRET not in str(c) and "comm" not in str(got[f"{CPU}/cpu4/cache"])
