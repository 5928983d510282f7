"""A sysroot archive (.tar.gz, .tgz, .tar) read into a MemRoot: inflated in chunks under a cap,
members checked one by one (names, types, sizes, counts), never extracted to disk."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ascendtune.core.errors import InvalidInput
from ascendtune.core.lazy import optional_module
from ascendtune.host.roots.base import MAX_FILE_BYTES, mib
from ascendtune.host.roots.memroot import MemRoot

MAX_ARCHIVE_BYTES = 64 << 20  # inflated, all members together (also the cap on the .tar.gz)
MAX_ARCHIVE_MEMBERS = 200_000
# The cap grows with the host: every member read allows this much more inflated tar (its header,
# a PAX header for a long name, the padding) and this much more kept text (a sysfs file of a
# few bytes). An 8,192-CPU host is ~130,000 such members, ~130 MiB of tar, past a fixed 64 MiB;
# a hostile archive stays bounded by MAX_ARCHIVE_MEMBERS times these.
FRAMING_PER_MEMBER = 2048
TEXT_PER_MEMBER = 256


class _Allowance:
    """How far past MAX_ARCHIVE_BYTES the inflated stream may go: FRAMING_PER_MEMBER a member."""

    __slots__ = ("extra",)

    def __init__(self) -> None:
        self.extra = 0


_NATIVE: list[Any] = []  # the compiled member run, once loaded (or None)


def tar_native() -> Any | None:
    """An archive's plain members read in one compiled call (_tarc.c), loaded at first use;
    None where the package was installed without a C compiler: open_archive's loop then reads
    every member (tests/host/test_archive_native.py reads archives both ways)."""
    return optional_module("ascendtune.host.roots._tarc", _NATIVE)


def _strip_top(names: list[str]) -> str:
    """The single top folder every member of an archive shares ("" when there is none)."""
    top = next((n.split("/", 1)[0] for n in names if n), None)
    # a sysroot archive holds sys/ or proc/ at its top; only strip a wrapper folder. Every name
    # is looked at only for a wrapped archive: a sysroot's second top ends the look
    if top is None or top in ("sys", "proc", "commands", "meta.json", "dev"):
        return ""
    wrapped = all(n == top or n.startswith(top + "/") for n in names)
    return top + "/" if wrapped else ""


# inflated bytes taken from the gzip stream at a time: a member's header and data are sliced
# out of one chunk (no read call per member), and memory holds about one chunk
_CHUNK = 1 << 18
_GZIP_MAGIC = b"\x1f\x8b"


def _pieces(data: bytes | IO[bytes]) -> Iterator[bytes]:
    if isinstance(data, bytes):
        yield data
        return
    while piece := data.read(1 << 16):
        yield piece


def _inflate(
    data: bytes | IO[bytes], label: str, allowance: _Allowance | None = None
) -> Iterator[bytes]:
    """The tar stream in data (gzip, concatenated gzip members, or plain tar) in chunks of at
    most _CHUNK bytes, taken only as the reader asks for them; InvalidInput once more than
    MAX_ARCHIVE_BYTES (and the allowance its members have earned) have come out (a bomb is
    never inflated whole)."""
    allowed = allowance or _Allowance()
    pieces = _pieces(data)
    pending = b""
    while len(pending) < 2:
        more = next(pieces, b"")
        if not more:
            break
        pending += more
    total = 0
    if pending[:2] != _GZIP_MAGIC:
        while pending:
            for at in range(0, len(pending), _CHUNK):
                out = pending[at : at + _CHUNK]
                total += len(out)
                if total > MAX_ARCHIVE_BYTES + allowed.extra:
                    raise _too_big(label)
                yield out
            pending = next(pieces, b"")
        return
    while True:
        d = zlib.decompressobj(31)  # 31: gzip framing; zlib checks the CRC and length trailer
        while not d.eof:
            out = d.decompress(pending, _CHUNK)
            pending = d.unconsumed_tail
            if out:
                total += len(out)
                if total > MAX_ARCHIVE_BYTES + allowed.extra:
                    raise _too_big(label)
                yield out
            elif not pending:
                pending = next(pieces, b"")
                if not pending:
                    raise EOFError(
                        "Compressed file ended before the end-of-stream marker was reached"
                    )
        # as gzip reads: another member may follow, after zero padding; nothing else may
        pending = d.unused_data.lstrip(b"\0")
        while len(pending) < 2:
            more = next(pieces, b"")
            if not more:
                break
            pending = (pending + more).lstrip(b"\0")
        if not pending:
            return
        if pending[:2] != _GZIP_MAGIC:
            raise OSError(f"Not a gzipped file ({pending[:2]!r})")


def _too_big(label: str) -> InvalidInput:
    return InvalidInput(
        f"{label} inflates past the {mib(MAX_ARCHIVE_BYTES)} limit on an archive",
        "a sysroot from `ascendtune snapshot` is a few MiB",
    )


class _Tar:
    """The inflated tar stream as a buffer and a position in it, refilled chunk by chunk."""

    __slots__ = ("buf", "chunks", "pos")

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.buf = b""
        self.pos = 0

    def take(self, n: int) -> bytes:
        """The next n bytes (fewer: the stream ended inside them)."""
        pos = self.pos
        end = pos + n
        if end <= len(self.buf):
            self.pos = end
            return self.buf[pos:end]
        parts = [self.buf[pos:]]
        have = len(parts[0])
        while have < n:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            parts.append(chunk)
            have += len(chunk)
        # keep what is left over past the n bytes for the next take
        self.buf = b"".join(parts)
        self.pos = min(n, len(self.buf))
        return self.buf[: self.pos]

    def skip(self, n: int) -> None:
        # a member we do not keep may be large: drop it chunk by chunk, never joined
        while n > 0:
            left = len(self.buf) - self.pos
            if n <= left:
                self.pos += n
                return
            n -= left
            chunk = next(self.chunks, None)
            if chunk is None:
                raise _ArchiveEnd("unexpected end of data")
            self.buf, self.pos = chunk, 0


class _ArchiveEnd(Exception):
    """The stream ended inside a member, or its first header is no tar header."""


_FILE_TYPES = (b"0", b"\0", b"7")  # regular, old regular, contiguous: what tarfile calls a file
_BLOCK = 512
_ZERO_BLOCK = bytes(_BLOCK)  # the end-of-archive marker
_SUM_OK = (0, 65521, -65521)  # see _sum_ok


def _octal(field: bytes) -> int:
    """A tar number field: octal text, or base-256 when the high bit of its first byte is set."""
    if field[:1] and field[0] & 0x80:
        n = field[0] & 0x3F if not field[0] & 0x40 else -(~field[0] & 0x3F) - 1
        for b in field[1:]:
            n = (n << 8) | b
        return n
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise _ArchiveEnd("invalid header") from None


def _text(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _field(block: bytes, start: int, end: int) -> str:
    """_text(block[start:end]) without the slice and the split."""
    cut = block.find(0, start, end)
    return block[start : end if cut < 0 else cut].decode("utf-8", "surrogateescape")


def _pax(data: bytes) -> dict[str, str]:
    """A PAX extended header's records (`LEN key=value\\n`), as text."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            break
        if length <= 0:
            break
        record = data[space + 1 : pos + length - 1]  # without the trailing newline
        key, eq, value = record.partition(b"=")
        if eq:
            out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def _members(
    tar: _Tar, pax_global: dict[str, str] | None = None
) -> Iterator[tuple[str, bytes, str, int]]:
    """(name, type, link name, size) of each member of a tar stream, in order, as tarfile sees
    them (ustar, GNU long names, PAX headers); the caller takes or skips each member's data
    from `tar` before asking for the next (or takes whole members itself: the next header is
    read at tar.pos). A bad first header is an error; a bad later one ends the archive, as it
    does for tarfile. pax_global: the global PAX records met so far, filled in here."""
    first = True
    pax_global = {} if pax_global is None else pax_global
    pax: dict[str, str] = {}
    long_name: str | None = None
    long_link: str | None = None
    adler32 = zlib.adler32
    while True:
        # the header straight from the buffer when it is all there (nearly always)
        pos = tar.pos
        buf = tar.buf
        if pos + _BLOCK <= len(buf):
            block = buf[pos : pos + _BLOCK]
            tar.pos = pos + _BLOCK
        else:
            block = tar.take(_BLOCK)
        if len(block) < _BLOCK or block == _ZERO_BLOCK:
            if first:
                raise _ArchiveEnd("truncated header" if block else "empty file")
            return
        # the usual octal checksum and size fields parse with one int() each; anything else
        # (base-256, blanks, old signed sums) takes the full rules
        try:
            want = int(block[148:156].split(b"\0", 1)[0], 8)
            ok = (adler32(block) & 0xFFFF) - 1 - sum(block[148:156]) + 256 - want in _SUM_OK
        except ValueError:
            ok = False
        if not ok and not _sum_ok(block):
            if first:
                raise _ArchiveEnd("bad checksum")
            return
        first = False
        kind = block[156:157]
        try:
            size = int(block[124:136].split(b"\0", 1)[0], 8)
        except ValueError:
            size = _octal(block[124:136])
        if kind in (b"x", b"g", b"L", b"K"):
            data = tar.take(size)
            if len(data) < size:
                raise _ArchiveEnd("unexpected end of data")
            tar.skip(-size % _BLOCK)
            if kind == b"x":
                pax.update(_pax(data))
            elif kind == b"g":
                pax_global.update(_pax(data))
            elif kind == b"L":
                long_name = _text(data)
            else:
                long_link = _text(data)
            continue
        name = _field(block, 0, 100)
        if block[257:263] == b"ustar\0" and block[345]:  # POSIX ustar: a long name is split
            name = _field(block, 345, 500) + "/" + name  # in prefix/name
        link = _field(block, 157, 257) if block[157] else ""
        if long_name is not None:
            name = long_name
            long_name = None
        if long_link is not None:
            link = long_link
            long_link = None
        if pax or pax_global:
            fields = {**pax_global, **pax}
            name = fields.get("path", name)
            link = fields.get("linkpath", link)
            if "size" in fields:
                try:
                    size = int(fields["size"])
                except ValueError:
                    raise _ArchiveEnd("invalid PAX size") from None
            pax = {}
        if kind == b"\0" and name.endswith("/"):
            kind = b"5"  # old tars: a folder is a file whose name ends in /
        if kind == b"5":
            name = name.rstrip("/")
        yield name, kind, link, size


def _sum_ok(block: bytes) -> bool:
    """The header checksum (its own field counted as spaces), unsigned or as old tars signed."""
    try:
        want = _octal(block[148:156])
    except _ArchiveEnd:
        return False
    field = sum(block[148:156])
    # adler32's low half is 1 + the byte sum mod 65521: the sum in C, without a Python loop
    # (a header's sum is at most 130,560, so two sums mod 65521 tell damage as well)
    if (zlib.adler32(block) & 0xFFFF) - 1 - field + 256 - want in _SUM_OK:
        return True
    unsigned = sum(block) - field + 256
    if want == unsigned:
        return True
    signed = unsigned - 256 * sum(1 for b in block[:148] + block[156:] if b > 127)
    return want == signed


def open_archive(data: bytes | IO[bytes], label: str) -> MemRoot:
    """Read a sysroot archive member by member, bounded in inflated bytes and member count.

    data is the archive's bytes or a binary stream of them; either way the inflated tar is
    never held whole: it is inflated a chunk at a time as the members are read, decoded and
    kept.
    """
    allowance = _Allowance()
    tar = _Tar(_inflate(data, label, allowance))
    take = tar.take
    native = tar_native()
    pax_global: dict[str, str] = {}  # _members' global PAX records: none for native runs
    kept = 0  # bytes of text kept, bounded like the stream: MAX_ARCHIVE_BYTES and per member
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    names: list[str] = []
    plain = True  # every kept name is already as MemRoot keys it (no // or /. or trailing /)
    try:
        for raw_name, kind, linkname, size in _members(tar, pax_global):
            if len(names) >= MAX_ARCHIVE_MEMBERS:
                raise InvalidInput(
                    f"{label} holds more than {MAX_ARCHIVE_MEMBERS} members (the limit)",
                    "a sysroot from `ascendtune snapshot` holds a few thousand",
                )
            name = raw_name.lstrip("./")
            names.append(name)
            allowance.extra += FRAMING_PER_MEMBER
            keep = (
                bool(name)
                and not name.startswith("/")
                and (".." not in name or ".." not in name.split("/"))
            )
            if kind == b"2":
                if keep:
                    links[name] = linkname
                    if plain and ("//" in name or "/." in name or name.endswith("/")):
                        plain = False
            elif kind in _FILE_TYPES and keep:
                if size > MAX_FILE_BYTES:
                    raise InvalidInput(
                        f"{label}: member {name} is larger than the "
                        f"{mib(MAX_FILE_BYTES)} limit on one file"
                    )
                # the data and its padding in one take; short: the archive ends inside them
                kept += size
                if kept > MAX_ARCHIVE_BYTES + TEXT_PER_MEMBER * len(names):
                    raise _too_big(label)
                whole = size + (-size % _BLOCK)
                got = take(whole)
                if len(got) < whole:
                    raise _ArchiveEnd("unexpected end of data")
                files[name] = (got if whole == size else got[:size]).decode(
                    "utf-8", errors="replace"
                )
                if plain and ("//" in name or "/." in name or name.endswith("/")):
                    plain = False
            elif kind not in (b"1", b"3", b"4", b"5", b"6"):
                # links, devices, folders and FIFOs carry no data; anything else: skip its own
                tar.skip(size + (-size % _BLOCK))
            if native is not None and not pax_global:
                # the plain members that follow in the buffer, kept as above in one call (a
                # snapshot's read-back of a 4,096-CPU host: 12,700 members, 48 -> 10 ms);
                # it stops before anything else, which the loop above reads
                before = len(names)
                tar.pos, kept = native.members(
                    tar.buf, tar.pos, files, links, names, MAX_ARCHIVE_MEMBERS,
                    MAX_FILE_BYTES, kept, MAX_ARCHIVE_BYTES, TEXT_PER_MEMBER,
                )  # fmt: skip
                allowance.extra += FRAMING_PER_MEMBER * (len(names) - before)
        # inflate what follows the end marker (a record's padding): a .tar.gz cut short or
        # damaged after its last member is still refused, its CRC still checked
        for _ in tar.chunks:
            pass
    except InvalidInput:
        raise
    except (_ArchiveEnd, EOFError, OSError, zlib.error, ValueError) as e:
        first = (str(e).splitlines() or [type(e).__name__])[0]
        if not names:
            raise InvalidInput(
                f"{label} is neither a folder nor a readable .tar/.tar.gz archive ({first})",
                "give a sysroot written by `ascendtune snapshot`",
            ) from None
        raise InvalidInput(f"{label} is a damaged archive: {first}") from None
    prefix = _strip_top(names)
    if prefix:
        files = {k[len(prefix) :]: v for k, v in files.items() if k.startswith(prefix)}
        links = {k[len(prefix) :]: v for k, v in links.items() if k.startswith(prefix)}
        files.pop("", None)
        links.pop("", None)
        plain = False
    if plain:
        return MemRoot.of_keys(files, links, label)
    return MemRoot(files, links, label=label)


def read_archive_file(p: Path) -> bytes:
    """The bytes of an archive given as --sysroot: a regular file, at most MAX_ARCHIVE_BYTES."""
    from ascendtune.host.files import read_user_file

    return read_user_file(str(p), what="sysroot archive", cap=MAX_ARCHIVE_BYTES, binary=True)
