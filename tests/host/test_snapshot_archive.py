"""A snapshot archive is written without a TarInfo per member: its bytes are still those tarfile
(PAX format) and gzip.GzipFile (at the snapshot's level) write, so every reader of the older
archives reads the new ones; and the capture reads each file of the host once."""

from __future__ import annotations

import errno
import gzip
import io
import tarfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core.errors import InvalidInput
from ascendtune.host import snapshot as snap
from ascendtune.host.roots import DirRoot, Root, archive, open_archive
from tests.support.builder import SysrootBuilder
from tests.support.hosts import a2_with_worker, atlas_a2


def tarfile_bytes(cap: snap.Capture, *, compress: bool) -> bytes:
    """The archive as tarfile and gzip.GzipFile write it (the writer before issue 28, which
    compressed at level 6)."""
    raw = io.BytesIO()
    level = snap.GZIP_LEVEL
    sink = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=level) if compress else raw
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(set(cap.files) | set(cap.links)):
            info = tarfile.TarInfo(rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if rel in cap.links:
                info.type = tarfile.SYMTYPE
                info.linkname = cap.links[rel]
                tar.addfile(info)
            else:
                data = cap.files[rel].encode()
                info.size = len(data)
                info.mode = 0o600
                tar.addfile(info, io.BytesIO(data))
    if compress:
        sink.close()
    return raw.getvalue()


# names as a host has them, and the ones that need a PAX header: past 100 characters, not ASCII
part = st.text("abcxyz019_-.:", min_size=1, max_size=40).filter(lambda p: p not in (".", ".."))
name = st.one_of(
    st.lists(part, min_size=1, max_size=6).map("/".join),
    st.lists(part, min_size=4, max_size=8).map(lambda ps: "/".join(ps) + "/" + "n" * 90),
    st.tuples(part, st.text("éü中\x7f", min_size=1, max_size=3)).map("/".join),
)
text = st.one_of(st.text(max_size=40), st.text("0123456789-,\n", min_size=500, max_size=1600))


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(name, text, max_size=12),
    st.dictionaries(name, st.one_of(part, st.just("/dev/davinci0"), name), max_size=3),
    st.booleans(),
)
def test_the_archive_is_byte_for_byte_what_tarfile_writes(
    files: dict[str, str], links: dict[str, str], compress: bool
) -> None:
    links = {k: v for k, v in links.items() if k not in files}
    cap = snap.Capture(files=files, links=links)
    assert snap.archive_bytes(cap, gzip=compress) == tarfile_bytes(cap, compress=compress)


def test_an_archive_of_many_members_is_what_tarfile_writes_and_reads_back() -> None:
    # more than one piece handed to the compressor, and the record padding at the end
    files = {f"proc/4242/task/{t}/status": f"Name:\tw-{t}\n" * 40 for t in range(3000)}
    cap = snap.Capture(files=files, links={"proc/4242/fd/3": "/dev/davinci0"})
    data = snap.archive_bytes(cap)
    assert data == tarfile_bytes(cap, compress=True)
    back = open_archive(data, "x.tar.gz")
    assert back.read_text("proc/4242/task/2999/status") == files["proc/4242/task/2999/status"]
    assert back.readlink("proc/4242/fd/3") == "/dev/davinci0"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert len(tar.getnames()) == 3001


class Counting(Root):
    """A sysroot that counts what is read of each path."""

    def __init__(self, inner: DirRoot) -> None:
        self.inner = inner
        self.label = inner.label
        self.reads: Counter[str] = Counter()

    def read_text(self, rel: str) -> str | None:
        self.reads[rel] += 1
        return self.inner.read_text(rel)

    def listdir(self, rel: str) -> list[str] | None:
        return self.inner.listdir(rel)

    def readlink(self, rel: str) -> str | None:
        return self.inner.readlink(rel)


def test_the_capture_reads_each_file_of_the_host_once(sysroot: SysrootBuilder) -> None:
    pid = 4242
    a2_with_worker(sysroot, pid, 40)
    root = Counting(DirRoot(sysroot.root))
    cap = snap.capture(root)
    assert f"proc/{pid}/task/{pid + 39}/status" in cap.files  # the worker's threads were taken
    assert cap.links[f"proc/{pid}/fd/3"] == "/dev/davinci0"
    twice = sorted(rel for rel, n in root.reads.items() if n > 1)
    assert twice == []
    # and what it took is what a capture straight from the folder takes
    assert snap.capture(DirRoot(sysroot.root)).files == cap.files


# -- the deflate thread (_Deflater): same bytes, and it ends on every path -----------------------


def deflate_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "snapshot-deflate"]


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch, sysroot: SysrootBuilder) -> snap.Capture:
    """The A2 host's capture, its tar handed over in 4 KiB pieces (about 160 of them), so the
    queue between the threads fills and the threads take turns many times. The tar is made in
    Python, member by member through _header, where a test makes it fail (the compiled
    members are the Python's byte for byte: tests/host/test_archive_native.py)."""
    atlas_a2(sysroot)
    monkeypatch.setattr(snap, "_FLUSH_AT", 4096)
    monkeypatch.setattr(archive, "_NATIVE", [None])
    return snap.capture(DirRoot(sysroot.root))


def test_the_archive_written_beside_a_deflate_thread_is_archive_bytes(
    small_pieces: snap.Capture, tmp_path: Path
) -> None:
    cap = small_pieces
    assert len(list(snap._tar_pieces(cap))) > 100
    out = snap.write(cap, str(tmp_path / "out" / "s.tar.gz"))
    assert out.read_bytes() == snap.archive_bytes(cap)
    assert deflate_threads() == []


def test_a_failure_making_the_tar_ends_the_deflate_thread_and_leaves_nothing(
    small_pieces: snap.Capture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = 0
    header = snap._header

    def fails_midway(name: str, kind: bytes, size: int, link: str) -> bytes:
        nonlocal made
        made += 1
        if made == 500:
            raise RuntimeError("a defect while making the tar")
        return header(name, kind, size, link)

    monkeypatch.setattr(snap, "_header", fails_midway)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="a defect"):
        snap.write(small_pieces, str(out / "s.tar.gz"))
    assert made == 500
    assert deflate_threads() == []
    assert list(out.iterdir()) == []


def test_ctrl_c_while_the_deflate_thread_lags_ends_at_once_and_leaves_nothing(
    small_pieces: snap.Capture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the deflate thread slow (a slow disk): the queue is full when Ctrl-C reaches the tar's
    # thread, which must neither wait for the queue to drain nor leave the thread behind
    made = 0
    deflated = 0
    header = snap._header
    write = snap._GzipSink.write
    interrupted_at = 0.0
    behind = 0

    def slow(self: snap._GzipSink, data: bytes) -> None:
        nonlocal deflated
        time.sleep(0.02)
        write(self, data)
        deflated += 1

    def interrupted(name: str, kind: bytes, size: int, link: str) -> bytes:
        nonlocal made, interrupted_at, behind
        made += 1
        if made == 200:
            behind = deflated
            interrupted_at = time.monotonic()
            raise KeyboardInterrupt
        return header(name, kind, size, link)

    monkeypatch.setattr(snap._GzipSink, "write", slow)
    monkeypatch.setattr(snap, "_header", interrupted)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        snap.write(small_pieces, str(out / "s.tar.gz"))
    ended = time.monotonic() - interrupted_at
    pieces = sum(1 for _ in snap._tar_pieces(small_pieces))
    assert pieces > 100
    # the tar's thread was held back by the full queue, and then did not wait for it to drain:
    # the thread ended after the piece it was deflating (0.02 s), not the 4 queued behind it
    assert 0 < behind < made
    assert deflated <= behind + 2
    assert ended < 1.0
    assert deflate_threads() == []
    assert list(out.iterdir()) == []


def test_a_failed_write_in_the_deflate_thread_stops_the_tar_and_is_raised(
    small_pieces: snap.Capture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = 0
    tar_pieces = snap._tar_pieces

    def counted(cap: snap.Capture) -> Iterator[bytes]:
        nonlocal pieces
        for piece in tar_pieces(cap):
            pieces += 1
            yield piece

    def full(self: snap._GzipSink, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(snap, "_tar_pieces", counted)
    monkeypatch.setattr(snap._GzipSink, "write", full)
    out = tmp_path / "out"
    with pytest.raises(InvalidInput, match=r"s\.tar\.gz.*No space left on device"):
        snap.write(small_pieces, str(out / "s.tar.gz"))
    assert pieces < 20  # the tar's thread stopped soon after, not at the end of ~160 pieces
    assert deflate_threads() == []
    assert list(out.iterdir()) == []
