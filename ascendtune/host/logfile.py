"""Reading a server log for `log`: a file, a FIFO or stdin, compressed or not (told by its magic
bytes, never its name), in bounded chunks and time; what is not text is refused (exit 5).

A read never blocks for ever: a FIFO with no writer, or a pipe or terminal that stays silent,
ends after IDLE_SECONDS; a stream that never ends (`/dev/zero`, `yes`) stops at MAX_BYTES or
MAX_SECONDS and the report says it was cut.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.core.vllm_log.records import DIRTY

CHUNK = 64 * 1024  # text is judged (binary or not) this much at a time
BLOCK = 1024 * 1024  # read this much at a time
IDLE_SECONDS = 5.0  # a pipe, FIFO or terminal that sends nothing for this long has ended
MAX_SECONDS = 300.0  # the whole read
MAX_BYTES = 8 * 1024**3  # of text, after decompression
MAX_NUL_BYTES = 64 * 1024**2  # NUL runs (a copytruncate hole) skipped, up to this much
MAX_ZIP_STDIN = 256 * 1024**2  # a zip read from a pipe is held in memory to be opened
HINT = "give the server's stdout/stderr log, e.g. `vllm serve ... 2>&1 | tee server.log`"

# bytes a text log never holds (tab, newline, CR, FF, VT, ESC and NUL are not among them: NUL is
# counted apart, the rest occur in colour and progress output)
_CTRL = bytes([*range(0, 9), *range(14, 27), *range(28, 32), 0x7F])
_CTRL_NO_NUL = _CTRL[1:]

# magic bytes -> the form's name
_GZIP = b"\x1f\x8b"
_XZ = b"\xfd7zXZ\x00"
_BZ2 = b"BZh"
_ZSTD = b"\x28\xb5\x2f\xfd"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")


class Stopped(Exception):
    """The read ended before the input did (a limit); the text read so far stands."""


class _Idle(Exception):
    pass


class _Timed:
    """A raw input read under the idle and total limits (select on anything not a regular file)."""

    def __init__(self, stream: Any, fd: int | None, name: str, regular: bool) -> None:
        self.stream = stream
        self.fd = fd
        self.name = name
        self.wait = fd is not None and not regular
        self.got = 0
        self.started = time.monotonic()

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = CHUNK
        if time.monotonic() - self.started > MAX_SECONDS:
            raise Stopped(f"stopped reading after {MAX_SECONDS:g} s")
        if not self.wait:
            data: bytes = self.stream.read(n)
        else:
            import select

            assert self.fd is not None
            while True:
                ready, _, _ = select.select([self.fd], [], [], IDLE_SECONDS)
                if not ready:
                    raise _Idle()
                try:
                    data = os.read(self.fd, n)
                    break
                except BlockingIOError:
                    continue
        self.got += len(data)
        return data

    def readable(self) -> bool:
        return True


def _looks_binary(data: bytes) -> bool:
    """Control bytes (beyond tab, CR, ESC ...) or bytes that are no UTF-8, past what a mangled
    log holds: a core file, random data, an archive."""
    if not data:
        return False
    ctrl = len(data) - len(data.translate(None, _CTRL_NO_NUL))
    if ctrl * 50 > len(data):  # 2 %
        return True
    if data.isascii():
        return False  # nothing that is no UTF-8
    text = data.decode("utf-8", errors="replace")
    # a chunk may cut characters at either end: up to 3 stray bytes before, 1 cut one after
    return (text.count("\ufffd") - 4) * 10 > len(text)  # 10 %


def _decoder(head: bytes, raw: _Timed, name: str, file: BinaryIO | None) -> tuple[Any, str]:
    """The decompressing reader for the form head's magic bytes announce, and its name."""
    src: Any = _Prepend(head, raw)
    if head.startswith(_GZIP):
        import gzip

        return gzip.GzipFile(fileobj=src, mode="rb"), "gzip"
    if head.startswith(_XZ):
        import lzma

        return lzma.LZMAFile(src, mode="rb"), "xz"
    if head.startswith(_BZ2) and head[3:4].isdigit():
        import bz2

        return bz2.BZ2File(src, mode="rb"), "bzip2"
    if head.startswith(_ZSTD):
        return _zstd(src, name), "zstd"
    if head.startswith(_ZIP):
        return _zip_member(head, raw, name, file), "zip"
    return src, "text"


def _zstd(src: Any, name: str) -> Any:
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]

        return zstd.ZstdFile(src, mode="rb")
    except ImportError:
        pass
    try:
        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise InvalidInput(
            f"{name} is zstd-compressed, and this Python has no zstd reader",
            f"`zstd -dc {name} | ascendtune log -`, or install the zstandard package",
        ) from None
    return zstandard.ZstdDecompressor().stream_reader(src)


def _zip_member(head: bytes, raw: _Timed, name: str, file: BinaryIO | None) -> Any:
    import io
    import zipfile

    if file is not None and file.seekable():
        file.seek(0)
        box: Any = file
    else:  # a pipe: the zip's directory is at its end
        data = head + _read_upto(raw, MAX_ZIP_STDIN - len(head))
        if len(data) >= MAX_ZIP_STDIN:
            raise InvalidInput(
                f"{name}: a zip read from a pipe may hold at most {MAX_ZIP_STDIN >> 20} MiB",
                "unzip it first: `unzip -p FILE | ascendtune log -`",
            )
        box = io.BytesIO(data)
    try:
        z = zipfile.ZipFile(box)
        members = [i for i in z.infolist() if not i.is_dir()]
        if len(members) != 1:
            raise InvalidInput(
                f"{name} is a zip of {len(members)} files; `log` reads a zip of one log",
                "unzip it and give the server's log",
            )
        return z.open(members[0])
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError, EOFError) as e:
        raise InvalidInput(f"{name}: not a readable zip file ({e})") from None


def _read_upto(raw: _Timed, n: int) -> bytes:
    parts: list[bytes] = []
    got = 0
    while got < n:
        b = raw.read(min(CHUNK, n - got))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


class _Prepend:
    """A file object that returns `head` before the rest of `stream` (to sniff the form)."""

    def __init__(self, head: bytes, stream: Any) -> None:
        self.head = head
        self.stream = stream

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n is None or n < 0:
                out, self.head = self.head + _read_upto(self.stream, MAX_ZIP_STDIN), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            if len(out) < n:  # a whole chunk, so the text check never judges a few bytes
                out += self.stream.read(n - len(out))
            return out
        data: bytes = self.stream.read(n)
        return data

    def readable(self) -> bool:
        return True


# errors a decompressor raises on a corrupt body
def _corrupt() -> tuple[type[BaseException], ...]:
    import lzma
    import zlib

    return (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError)


class LogInput:
    """Chunks of text from a log; `stopped` says why reading ended before the input did."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = "stdin" if path == "-" else path
        self.stopped: str | None = None
        self.form = "text"

    def chunks(self) -> Iterator[bytes]:
        for block, _ in self.blocks():
            yield block

    def blocks(self) -> Iterator[tuple[bytes, bool]]:
        """The text in blocks, each with whether it is plain: ASCII with none of the bytes
        core.vllm_log's records() removes (DIRTY), so the scan need not look for them again."""
        import sys

        if self.path == "-":
            stdin = sys.stdin
            if stdin is None:
                raise InvalidInput("stdin is closed: there is no log to read", HINT)
            buf = getattr(stdin, "buffer", stdin)
            try:
                fd: int | None = buf.fileno()
                mode = os.fstat(fd).st_mode  # type: ignore[arg-type]
            except (OSError, ValueError, AttributeError):
                fd, mode = None, stat.S_IFREG
            yield from self._read(buf, fd, stat.S_ISREG(mode), None)
            return
        try:
            st = os.stat(self.path)
            if stat.S_ISDIR(st.st_mode):
                raise InvalidInput(f"{self.path} is a directory, not a log file")
            regular = stat.S_ISREG(st.st_mode)
            # a FIFO opened without O_NONBLOCK waits for a writer for ever
            fd = os.open(self.path, os.O_RDONLY | (0 if regular else os.O_NONBLOCK))
        except FileNotFoundError:
            raise MissingError(
                f"no such log file: {self.path}", "give the server's log file, or '-' for stdin"
            ) from None
        except PermissionError:
            raise PermissionDenied(f"cannot read {self.path}: permission denied") from None
        except OSError as e:
            raise InvalidInput(f"cannot read {self.path}: {e.strerror or e}") from None
        with os.fdopen(fd, "rb", buffering=0) as f:
            yield from self._read(f, fd, regular, f)

    def _read(
        self, stream: Any, fd: int | None, regular: bool, file: Any
    ) -> Iterator[tuple[bytes, bool]]:
        raw = _Timed(stream, fd, self.name, regular)
        errors = _corrupt()
        try:
            head = _read_upto(raw, 8)
            dec, self.form = _decoder(head, raw, self.name, file)
            yield from self._text(dec, raw)
        except _Idle:
            if raw.got == 0:
                raise InvalidInput(
                    f"no data from {self.name} within {IDLE_SECONDS:g} s (a FIFO or pipe with "
                    "no writer, or a terminal)",
                    HINT,
                ) from None
            self.stopped = f"no more data from {self.name} for {IDLE_SECONDS:g} s"
        except Stopped as e:
            self.stopped = str(e)
        except InvalidInput:
            raise
        except errors as e:
            what = f"not a readable {self.form} stream" if self.form != "text" else "read failed"
            raise InvalidInput(f"{self.name}: {what} ({type(e).__name__}: {e})") from None

    def _text(self, dec: Any, raw: _Timed) -> Iterator[tuple[bytes, bool]]:
        from ascendtune.core.vllm_log.scan import native

        c = native()
        total = nuls = 0
        seen_text = False
        while True:
            block = dec.read(BLOCK)
            if not block:
                break
            if total + len(block) < MAX_BYTES and (
                c.plain(block)
                if c is not None
                else block.isascii() and len(block.translate(None, DIRTY)) == len(block)
            ):
                # a plain block (no NUL, no control byte, no byte past ASCII): every chunk of it
                # is text, as the loop below would find chunk by chunk
                seen_text = seen_text or bool(block.strip())
                total += len(block)
                yield block, True
                continue
            kept: list[bytes] = []
            for at in range(0, len(block), CHUNK):
                chunk = block[at : at + CHUNK]
                stripped = chunk.replace(b"\x00", b"") if b"\x00" in chunk else chunk
                nuls += len(chunk) - len(stripped)
                if nuls > MAX_NUL_BYTES:
                    raise InvalidInput(
                        f"{self.name} is not a text log (binary content: NUL bytes)", HINT
                    )
                if _looks_binary(stripped):
                    where = f" at byte {total}" if total else ""
                    raise InvalidInput(
                        f"{self.name} is not a text log (binary content{where}"
                        + (f", after {self.form} decompression)" if self.form != "text" else ")"),
                        HINT,
                    )
                seen_text = seen_text or bool(stripped.strip())
                total += len(chunk)
                kept.append(stripped)
                if total >= MAX_BYTES:
                    self.stopped = f"stopped after {MAX_BYTES >> 20} MiB of text"
                    break
            whole = len(kept) * CHUNK >= len(block) and b"\x00" not in block
            yield (block if whole else b"".join(kept)), False
            if self.stopped:
                return
        if nuls and not seen_text:
            raise InvalidInput(
                f"{self.name} is not a text log (binary content: NUL bytes only)", HINT
            )
