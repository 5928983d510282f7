"""An archive's plain members read compiled (host/roots/_tarc.c) against open_archive's Python:
snapshots of synthetic hosts and archives of every kind the reader meets (GNU, PAX and ustar
headers, global PAX records part way, names that are no plain key, names and targets no ASCII,
odd checksum and size fields, damage, members past each cap), whole and in chunks that split
headers and data, read to the same files, links and folders, or refused with the same error."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from ascendtune.core.errors import InvalidInput
from ascendtune.host import snapshot as snap
from ascendtune.host.roots import DirRoot, archive, open_archive
from tests.support.builder import SysrootBuilder
from tests.support.compiler import skip_without_cc
from tests.support.hosts import atlas_a2
from tests.support.tars import tar_of

needs_c = pytest.mark.skipif(archive.tar_native() is None, reason="installed without a C compiler")


def test_the_compiled_member_run_is_built_where_a_compiler_is() -> None:
    skip_without_cc()
    assert archive.tar_native() is not None, "pip install -e . builds host/roots/_tarc.c"


def _read(data: bytes) -> object:
    """What open_archive gives (files, links, folders), or the refusal it raises."""
    try:
        root = open_archive(data, "x.tar.gz")
    except InvalidInput as e:
        return (type(e), str(e))
    return (root.files, root.links, root.dirs, type(root).__name__)


def _both(monkeypatch: pytest.MonkeyPatch, data: bytes) -> tuple[object, object]:
    got = []
    for native in (archive.tar_native(), None):
        monkeypatch.setattr(archive, "_NATIVE", [native])
        got.append(_read(data))
    return got[0], got[1]


def _same_in_any_chunks(monkeypatch: pytest.MonkeyPatch, data: bytes) -> object:
    """The reading of data, the same compiled and in Python, whole and in chunks that split
    headers and data at every offset a block can take."""
    first = None
    for chunk in (archive._CHUNK, 4096, 1000, 513, 100):
        monkeypatch.setattr(archive, "_CHUNK", chunk)
        c, py = _both(monkeypatch, data)
        assert c == py, chunk
        first = c if first is None else first
        assert c == first, chunk
    return first


MEMBERS = [
    ("meta.json", "file", '{"hostname": "é"}'),
    ("sys/devices/system/cpu", "dir", ""),
    ("sys/devices/system/cpu/online", "file", "0-3\n"),
    ("sys/big", "file", "x" * 5000),
    ("sys/" + "d" * 120 + "/long", "file", "long name"),
    ("sys/link", "link", "../" + "t" * 120),
    ("sys/short-link", "link", "/dev/davinci0"),
    ("sys/link-é", "link", "/dév"),
    ("../../etc/escape", "file", "inside"),
    ("./sys/dotted", "file", "lstrip"),
    ("..sys/dots", "file", "lstrip too"),
    ("sys/a/../../../up", "file", "never kept"),
    ("sys/a..b", "file", "two dots, no component"),
    ("sys//twice/./x", "file", "normalized"),
    ("sys/.hidden", "file", "a dot file"),
    ("sys/trailing/", "file", "a slash"),
    ("sys/é", "file", "no ASCII"),
    ("sys/bytes", "file", "caf\udcc3\udca9 \udcff"),
    ("sys/devices/system/cpu/online", "file", "0-7\n"),  # again: the last one counts
    ("sys/empty", "file", ""),
    ("sys/block", "file", "y" * 512),
    *((f"sys/devices/system/cpu/cpu{i}/topology/core_id", "file", f"{i}\n") for i in range(40)),
]


@needs_c
@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
@pytest.mark.parametrize("wrapper", ["", "wrapper/"])
def test_members_read_as_the_python_reads_them(
    monkeypatch: pytest.MonkeyPatch, fmt: int, wrapper: str
) -> None:
    members = [(wrapper + name, kind, payload) for name, kind, payload in MEMBERS]
    if fmt == tarfile.USTAR_FORMAT:  # no long link targets in ustar (a long name: a prefix)
        members = [m for m in members if m[1] != "link" or len(m[2]) <= 100]
    got = _same_in_any_chunks(monkeypatch, tar_of(fmt, members))
    assert isinstance(got, tuple) and isinstance(got[0], dict)
    assert got[0]["sys/devices/system/cpu/online"] == "0-7\n"
    assert got[0]["sys/devices/system/cpu/cpu39/topology/core_id"] == "39\n"


@needs_c
def test_a_global_pax_header_part_way_is_the_pythons(monkeypatch: pytest.MonkeyPatch) -> None:
    glob = tarfile.TarInfo._create_pax_generic_header(  # type: ignore[attr-defined]
        {"comment": "part way", "linkpath": "/somewhere"}, tarfile.XGLTYPE, "utf-8"
    )
    for at in (1, 5, 30):
        raw = tar_of(tarfile.PAX_FORMAT, MEMBERS, insert=glob, at=at)
        got = _same_in_any_chunks(monkeypatch, raw)
        assert isinstance(got, tuple) and isinstance(got[0], dict)


def _headers(raw: bytes) -> list[int]:
    """The offsets of the ustar headers of a tar that holds only small plain members."""
    out, pos = [], 0
    while pos + 512 <= len(raw) and raw[pos : pos + 512] != bytes(512):
        out.append(pos)
        size = int(raw[pos + 124 : pos + 136].split(b"\0", 1)[0], 8)
        pos += 512 + size + (-size % 512)
    return out


def _resum(block: bytearray, field: bytes | None = None) -> None:
    """Write block's checksum (field: as given, else as tarfile writes it)."""
    block[148:156] = b" " * 8
    block[148:156] = field if field is not None else b"%06o\0 " % sum(block)


PLAIN = [(f"sys/devices/system/cpu/cpu{i}/online", "file", "1\n" * (i % 5)) for i in range(30)]


@pytest.mark.parametrize(
    "change",
    [
        "checksum with leading spaces",
        "checksum with an underscore",
        "checksum signed",
        "checksum wrong",
        "size base-256",
        "size with an underscore",
        "size not octal",
        "a prefix",
        "old type",
        "no ustar magic",
        "a folder",
        "cut after",
        "zero block",
        "fifo",
    ],
)
@needs_c
def test_odd_headers_part_way_are_the_pythons(monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    raw = bytearray(tar_of(tarfile.USTAR_FORMAT, PLAIN))
    at = _headers(bytes(raw))[12]
    block = bytearray(raw[at : at + 512])
    size = int(block[124:136].split(b"\0", 1)[0], 8)
    # the header's fields set as each change says (offset, bytes), its checksum then rewritten
    fields: dict[str, list[tuple[int, bytes]]] = {
        "size base-256": [(124, b"\x80" + size.to_bytes(11, "big"))],
        "size with an underscore": [(124, b"0_" + b"%09o\0" % size)],
        "size not octal": [(124, b"9" * 11 + b"\0")],
        "a prefix": [(345, b"sys"), (0, b"pfx/")],
        "old type": [(156, b"\0")],
        "no ustar magic": [(257, b"ustar  \0")],
        "a folder": [(156, b"5")],
        "fifo": [(156, b"6")],
        "checksum signed": [(100, b"\xff" * 8)],  # a mode of high bytes: signed sums differ
    }
    for start, value in fields.get(change, []):
        block[start : start + len(value)] = value
    unsigned = sum(block[:148]) + sum(block[156:]) + 256
    signed = unsigned - 256 * sum(1 for b in block[:148] + block[156:] if b > 127)
    sums = {
        "checksum with leading spaces": b"  %05o\0" % unsigned,
        "checksum with an underscore": b"0_%05o\0" % unsigned,
        "checksum signed": b"%06o\0 " % signed,
        "checksum wrong": b"000001\0 ",
    }
    if change in sums or change in fields:
        _resum(block, sums.get(change))
    if change == "zero block":
        block[:] = bytes(512)
    raw[at : at + 512] = block
    data = bytes(raw[: at + 512 + 3]) if change == "cut after" else bytes(raw)
    for gz in (False, True):
        _same_in_any_chunks(monkeypatch, gzip.compress(data) if gz else data)


@needs_c
@pytest.mark.parametrize("cap", ["members", "file", "text", "inflated"])
def test_each_cap_part_way_is_the_pythons_refusal(
    monkeypatch: pytest.MonkeyPatch, cap: str
) -> None:
    raw = tar_of(tarfile.USTAR_FORMAT, [*PLAIN, ("sys/wide", "file", "w" * 9000), *PLAIN[:5]])
    if cap == "members":
        monkeypatch.setattr(archive, "MAX_ARCHIVE_MEMBERS", 20)
    elif cap == "file":
        monkeypatch.setattr(archive, "MAX_FILE_BYTES", 8999)
    elif cap == "text":  # the kept text: 2 bytes of allowance a member, none beyond
        monkeypatch.setattr(archive, "MAX_ARCHIVE_BYTES", 5000)  # past it at sys/wide
        monkeypatch.setattr(archive, "TEXT_PER_MEMBER", 2)
        monkeypatch.setattr(archive, "FRAMING_PER_MEMBER", 1 << 20)
    else:  # the inflated stream: no allowance a member
        monkeypatch.setattr(archive, "MAX_ARCHIVE_BYTES", 20000)
        monkeypatch.setattr(archive, "FRAMING_PER_MEMBER", 0)
    got = _same_in_any_chunks(monkeypatch, gzip.compress(raw))
    assert isinstance(got, tuple) and got[0] is InvalidInput, got


@needs_c
def test_a_snapshot_reads_back_the_same_either_way(
    sysroot: SysrootBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    atlas_a2(sysroot)
    cap = snap.capture(DirRoot(sysroot.root))
    data = snap.archive_bytes(cap)
    got = _same_in_any_chunks(monkeypatch, data)
    assert isinstance(got, tuple) and got[0] == cap.files and got[1] == cap.links
    assert got[3] == "MemRoot"


def _capture() -> snap.Capture:
    """A capture of every kind of member the tar writer meets."""
    cap = snap.Capture()
    for i in range(300):
        cap.files[f"sys/devices/system/cpu/cpu{i}/topology/core_id"] = f"{i}\n" * (i % 7)
    cap.files["sys/" + "d" * 120 + "/long"] = "a long name"
    cap.files["sys/" + "e" * 96] = "a name of exactly 100 characters"
    cap.files["sys/é"] = "a name no ASCII"
    cap.files["sys/text"] = "café ü " * 300  # text no ASCII, past one block
    cap.files["sys/empty"] = ""
    cap.files["sys/block"] = "y" * 512
    cap.files["meta.json"] = '{"hostname": "h"}\n'
    cap.links["proc/1/fd/3"] = "/dev/davinci0"
    cap.links["proc/1/fd/4"] = "/dév/davinci1"
    cap.links["proc/1/fd/5"] = "/" + "t" * 99
    cap.links["proc/1/fd/6"] = "/" + "t" * 100
    cap.links["proc/1/fd/7"] = ""
    return cap


@needs_c
@pytest.mark.parametrize("flush_at", [snap._FLUSH_AT, 3000, 512, 1])
def test_the_compiled_tar_is_the_pythons_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch, flush_at: int
) -> None:
    monkeypatch.setattr(snap, "_FLUSH_AT", flush_at)
    cap = _capture()
    got = []
    for native in (archive.tar_native(), None):
        monkeypatch.setattr(archive, "_NATIVE", [native])
        got.append(list(snap._tar_pieces(cap)))
    assert got[0] == got[1]  # the same pieces, so the same deflate calls
    raw = b"".join(got[0])
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        assert len(tar.getmembers()) == len(cap.files) + len(cap.links)
    monkeypatch.setattr(archive, "_NATIVE", [archive.tar_native()])
    root = open_archive(snap.archive_bytes(cap), "x.tar.gz")
    assert root.files == cap.files and root.links == cap.links


@needs_c
def test_a_text_no_utf8_fails_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    cap = _capture()
    cap.files["sys/surrogate"] = "a \udcff byte"
    errors = []
    for native in (archive.tar_native(), None):
        monkeypatch.setattr(archive, "_NATIVE", [native])
        with pytest.raises(UnicodeEncodeError) as e:
            snap.archive_bytes(cap)
        errors.append(e.value.reason)
    assert errors[0] == errors[1]
