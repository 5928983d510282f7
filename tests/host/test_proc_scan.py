"""doctor's one pass over proc/ (Root.read_children, facts.scan_processes): the folder fast
path answers exactly what read_text and readlinks answer, and keeps the closed world (links
resolve inside the root, FIFOs and devices are refused, files are capped)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ascendtune.core.errors import InvalidInput
from ascendtune.host.roots import DirRoot, MemRoot, Root, walker
from ascendtune.host.workers import find_workers, scan_processes
from tests.support.builder import SysrootBuilder

SECRET = "OUTSIDE-SECRET-91c2"


def _generic(root: Root, names: list[str], file: str | None) -> list[object]:
    return [
        (root.read_text(f"proc/{n}/{file}") if file else None, root.readlinks(f"proc/{n}/fd"))
        for n in names
    ]


def _proc(sysroot: SysrootBuilder, pid: int, comm: str, *targets: str) -> None:
    sysroot.file(f"proc/{pid}/comm", comm + "\n")
    (sysroot.root / f"proc/{pid}/fd").mkdir(parents=True, exist_ok=True)
    for i, t in enumerate(targets):
        sysroot.link(f"proc/{pid}/fd/{i}", t)


@pytest.fixture
def tree(sysroot: SysrootBuilder, tmp_path: Path) -> SysrootBuilder:
    out = tmp_path / "outside"
    (out / "fd").mkdir(parents=True)
    (out / "comm").write_text(SECRET + "\n")
    os.symlink("/dev/davinci7", out / "fd" / "0")
    _proc(sysroot, 10, "python3", "/dev/null", "/dev/davinci0", "/dev/davinci_manager")
    _proc(sysroot, 11, "irqbalance", "socket:[1]")
    _proc(sysroot, 12, "svc")
    sysroot.link("proc/13", "/proc/10")  # a PID folder that is a link: resolved inside
    sysroot.link("proc/14", str(out))  # ... and one pointing out of the root
    sysroot.link("proc/15", "../../../../outside")
    _proc(sysroot, 16, "x")
    os.unlink(sysroot.root / "proc/16/comm")
    sysroot.link("proc/16/comm", str(out / "comm"))  # a file link out of the root
    os.rmdir(sysroot.root / "proc/16/fd")
    sysroot.link("proc/16/fd", "/proc/10/fd")  # the fd folder as a link: inside
    sysroot.file("proc/17/status", "Name:\tz\n")  # no comm, no fd
    return sysroot


def test_the_fast_path_reads_what_the_slow_one_reads(tree: SysrootBuilder) -> None:
    root = DirRoot(tree.root)
    names = ["10", "11", "12", "13", "14", "15", "16", "17", "99"]
    for file in ("comm", None):
        got = root.read_children("proc", names, file, "fd")
        assert got == _generic(root, names, file)
    assert not any(SECRET in str(x) for x in root.read_children("proc", names, "comm", "fd"))
    assert root.read_children("proc", ["13"], "comm", "fd")[0] == (
        "python3\n",
        ["/dev/null", "/dev/davinci0", "/dev/davinci_manager"],
    )
    assert root.read_children("nothing", ["1"], "comm", "fd") == [(None, None)]


def test_a_memory_root_reads_alike(tree: SysrootBuilder) -> None:
    mem = MemRoot({"proc/1/comm": "a\n"}, {"proc/1/fd/0": "/dev/davinci3"})
    assert mem.read_children("proc", ["1", "2"], "comm", "fd") == [
        ("a\n", ["/dev/davinci3"]),
        (None, None),
    ]


def test_scan_finds_holders_and_irqbalance(tree: SysrootBuilder) -> None:
    tree.file("meta.json", '{"proc_scanned": true}')
    root = DirRoot(tree.root)
    scan = scan_processes(root)
    assert scan.pids == [10, 11, 12, 13, 14, 15, 16, 17]
    assert scan.irqbalance == (11,)
    assert sorted(scan.held) == [10, 13, 16]
    assert [h[1:] for h in scan.held[10]] == [(0, "/dev/davinci0")]
    assert [w.pid for w in find_workers(root, None)] == [10, 13, 16]
    # without proc_scanned in meta.json, no comm is read and irqbalance is unknown
    os.unlink(tree.root / "meta.json")
    assert scan_processes(root).irqbalance is None
    assert scan_processes(root, devices=False).held == {}


def test_a_short_file_answers_empty_unread(
    tree: SysrootBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # skip_below: doctor wants only the comm "irqbalance"; shorter files are stat'ed, not read
    tree.file("proc/18/comm", "irqbalance")  # 10 bytes, no newline: read
    tree.file("proc/19/comm", "irqbalanc\n")  # 10 bytes: read
    root = DirRoot(tree.root)
    names = ["10", "11", "12", "13", "16", "17", "18", "19", "99"]
    reads: list[int] = []
    real_read = os.read

    def counted(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    # the reads counted are Python's (the compiled ones answer alike: test_walk_native.py)
    monkeypatch.setattr(walker, "_NATIVE", [None])
    monkeypatch.setattr(walker.os, "read", counted)
    got = root.read_children("proc", names, "comm", "fd", skip_below=10)
    monkeypatch.undo()
    slow = _generic(root, names, "comm")
    assert [links for _, links in got] == [links for _, links in slow]
    # 10 and 12 are stat'ed only; 11, 18, 19 read from their folders; the PID link 13 by its
    # path (read in full); 16's comm links out of the root (as absent as the slow read finds)
    texts = ["", "irqbalance\n", "", "python3\n", None, None, "irqbalance", "irqbalanc\n", None]
    assert [text for text, _ in got] == texts
    assert sorted(reads) == [9, 11, 11, 12]  # each file's size + 1
    tree.file("meta.json", '{"proc_scanned": true}')
    assert scan_processes(root).irqbalance == (11, 18)


def test_a_snapshot_keeps_the_text_of_a_file_the_scan_left_unread(tree: SysrootBuilder) -> None:
    # the capture shares its reads with the scan: a short comm it did not read is still taken
    # from the host as it is (worker 10's "python3"), never as the scan's ""
    from ascendtune.host.snapshot import capture

    tree.file("meta.json", '{"proc_scanned": true}')
    cap = capture(DirRoot(tree.root))
    assert cap.files["proc/10/comm"] == "python3\n"
    assert cap.files["proc/11/comm"] == "irqbalance\n"
    assert "proc/12/comm" not in cap.files


@pytest.mark.parametrize("skip_below", [0, 10])
@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_special_comm_is_refused(tree: SysrootBuilder, kind: str, skip_below: int) -> None:
    path = tree.root / "proc/12/comm"
    path.unlink()
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    root = DirRoot(tree.root)
    with pytest.raises(InvalidInput, match="FIFO" if kind == "fifo" else "folder"):
        root.read_children("proc", ["12"], "comm", "fd", skip_below=skip_below)
    with pytest.raises(InvalidInput):
        root.read_text("proc/12/comm")  # as the ordinary read does
    assert root.read_children("proc", ["12"], None, "fd") == [(None, [])]


def test_a_huge_comm_names_the_cap(tree: SysrootBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walker, "MAX_FILE_BYTES", 100)
    tree.file("proc/12/comm", "x" * 101)
    with pytest.raises(InvalidInput, match="100 bytes limit"):
        DirRoot(tree.root).read_children("proc", ["12"], "comm", "fd")


def test_doctor_reads_a_process_that_holds_no_device_once(
    tree: SysrootBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the scan is shared by the host section (irqbalance) and the workers section: a process
    # that holds no accelerator (12) is listed once by read_children and never read again
    from ascendtune.app.doctor import DoctorOptions, doctor

    tree.file("meta.json", '{"proc_scanned": true}')
    seen: list[str] = []
    calls: list[list[str]] = []
    for name in ("read_text", "readlinks", "listdir", "readlink"):
        orig = getattr(DirRoot, name)

        def spy(self: DirRoot, rel: str, _orig: object = orig) -> object:
            seen.append(rel)
            return _orig(self, rel)  # type: ignore[operator]

        monkeypatch.setattr(DirRoot, name, spy)
    orig_children = DirRoot.read_children

    def children(self: DirRoot, folder: str, names: list[str], *a: object, **kw: int) -> object:
        calls.append(names)
        return orig_children(self, folder, names, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(DirRoot, "read_children", children)
    doctor(DirRoot(tree.root), DoctorOptions())
    assert len(calls) == 1 and "12" in calls[0]
    assert not [p for p in seen if p.startswith("proc/12/")]
