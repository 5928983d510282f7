"""Reading a log for `log`: every compressed form by its magic bytes, what is not text refused
(exit 5), and reads that end within seconds whatever the input (a FIFO with no writer, endless
random data, a corrupt gzip body)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from ascendtune.core.errors import InvalidInput
from ascendtune.core.vllm_log import scan
from ascendtune.host import logfile
from ascendtune.host.logfile import LogInput
from tests.support import schemas
from tests.support.cli import Cli

FIX = Path(__file__).parents[1] / "fixtures" / "vllm_log"
FAILED = (FIX / "fail_cpuset_conflict.log").read_bytes()


def _zip(data: bytes, *names: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n in names:
            z.writestr(n, data)
    return buf.getvalue()


FORMS = {
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bzip2": bz2.compress,
    "zip": lambda d: _zip(d, "server.log"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_compressed_forms_by_content_not_name(form: str, tmp_path: Path, cli: Cli) -> None:
    """A log whose ranks failed, compressed and named `.log`: read as the failed log it is."""
    path = tmp_path / "server.log"  # the name says nothing of the form
    path.write_bytes(FORMS[form](FAILED))
    res = cli("log", str(path), "--json")
    assert res.exit_code == 1, res.output
    doc = schemas.loads("log", res.stdout)
    assert doc["summary"]["failed"] == 2
    res = cli("log", "-", "--json", input=FORMS[form](FAILED))  # and from a pipe
    assert res.exit_code == 1 and schemas.loads("log", res.stdout)["summary"]["failed"] == 2
    src = LogInput(str(path))
    assert b"".join(src.chunks()) == FAILED and src.form == form


def test_zstd_without_a_reader_is_refused_clearly(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression", None)
    path = tmp_path / "server.log.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
    res = cli("log", str(path))
    assert res.exit_code == 5
    assert "zstd-compressed" in res.stderr and "zstd -dc" in res.stderr


def test_zip_of_several_files_is_refused(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "logs.zip"
    path.write_bytes(_zip(FAILED, "a.log", "b.log"))
    res = cli("log", str(path))
    assert res.exit_code == 5 and "zip of 2 files" in res.stderr


@pytest.mark.parametrize(
    "data",
    [
        os.urandom(200_000),
        gzip.compress(os.urandom(200_000)),
        lzma.compress(os.urandom(50_000)),
        b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 400,
        b"\x00" * 10_000,
    ],
    ids=["random", "gzip-of-random", "xz-of-random", "elf", "nul-only"],
)
def test_what_is_not_text_is_refused(data: bytes, tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(data)
    res = cli("log", str(path), "--json")
    assert res.exit_code == 5, res.output
    assert "not a text log" in res.stderr and res.stdout == ""


def test_corrupt_gzip_body_is_invalid_input(tmp_path: Path, cli: Cli) -> None:
    body = bytearray(gzip.compress(FAILED * 20))
    body[30:60] = b"\xff" * 30  # the header stays good
    path = tmp_path / "server.log.gz"
    path.write_bytes(bytes(body))
    res = cli("log", str(path))
    assert res.exit_code == 5, res.output
    assert "not a readable gzip stream" in res.stderr and "internal error" not in res.stderr


def test_a_log_with_mangled_bytes_is_still_text(tmp_path: Path) -> None:
    """Colour, CR, bad UTF-8 here and there and a copytruncate hole of NULs: all text."""
    data = b"\x00" * 100_000 + (FIX / "mangled.log").read_bytes() + "NPU 显存 ✓\n".encode() + FAILED
    path = tmp_path / "server.log"
    path.write_bytes(data)
    got = b"".join(LogInput(str(path)).chunks())
    assert FAILED in got and b"\x00" not in got


def test_fifo_without_a_writer_ends_within_seconds(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logfile, "IDLE_SECONDS", 0.5)
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    res = cli("log", str(fifo))
    assert time.monotonic() - t0 < 5
    assert res.exit_code == 5 and "no data from" in res.stderr


def test_fifo_with_a_writer_is_read(tmp_path: Path, cli: Cli) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(FAILED)

    t = threading.Thread(target=write)
    t.start()
    res = cli("log", str(fifo), "--json")
    t.join(10)
    assert res.exit_code == 1 and schemas.loads("log", res.stdout)["summary"]["failed"] == 2


def test_endless_input_stops_at_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/zero, endless text: the read stops at the byte or time limit and says so."""
    monkeypatch.setattr(logfile, "MAX_NUL_BYTES", 1 << 20)
    t0 = time.monotonic()
    with pytest.raises(InvalidInput, match="NUL bytes"):
        b"".join(LogInput("/dev/zero").chunks())
    with pytest.raises(InvalidInput, match="not a text log"):
        b"".join(LogInput("/dev/urandom").chunks())
    assert time.monotonic() - t0 < 10

    from ascendtune.app.log import read_log

    monkeypatch.setattr(logfile, "MAX_BYTES", 1 << 20)
    r, w = os.pipe()

    def endless() -> None:
        line = b"INFO 01-01 00:00:00 [x.py:1] hello\n" * 1000
        try:
            with os.fdopen(w, "wb") as f:
                while True:
                    f.write(line)
        except (BrokenPipeError, OSError):
            pass

    t = threading.Thread(target=endless, daemon=True)
    t.start()
    monkeypatch.setattr(sys, "stdin", os.fdopen(r, "rb"))
    report = read_log("-")
    sys.stdin.close()
    assert report.truncated and "MiB of text" in report.findings[-1].message
    monkeypatch.setattr(logfile, "MAX_SECONDS", 0.0)
    report = read_log(str(FIX / "a2_tp4_bound.log"))
    assert report.truncated and "after 0 s" in report.findings[-1].message


def test_closed_stdin_is_invalid_input() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "ascendtune", "log", "-"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == 5, done.stderr
    assert "input is closed" in done.stderr and "internal error" not in done.stderr


@pytest.mark.parametrize("size", [1, 7, 8, 9, 100, logfile.CHUNK - 1, logfile.CHUNK + 1])
def test_text_of_any_length_in_any_script_is_text(size: int, tmp_path: Path) -> None:
    """Chinese text cut anywhere (a chunk ending mid-character) is still text."""
    text = ("推理服务启动 NPU 绑核 ✓\n" * (size // 10 + 1)).encode()
    path = tmp_path / "server.log"
    for data in (text[:size], text[1 : size + 1]):
        path.write_bytes(data)
        assert b"".join(LogInput(str(path)).chunks()) == data


@pytest.mark.parametrize("form", [*sorted(FORMS), "text"])
def test_a_big_log_in_any_form_reads_as_line_by_line(form: str, tmp_path: Path) -> None:
    """Megabytes (several read blocks, lines across their edges) plain or compressed: the
    prefiltered read gives the report feeding every decompressed line does."""
    from ascendtune.app.log import read_log
    from ascendtune.core.vllm_log import parse_log, split_lines

    filler = (
        b'(APIServer pid=5200) INFO:     10.0.3.7:40123 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    )
    data = b"".join(
        [filler * 9000 + (FIX / n).read_bytes() for n in ("a2_tp4_bound.log", "fail_lscpu.log")]
        + [filler * 20000, FAILED]
    )
    assert len(data) > 2 * logfile.BLOCK
    path = tmp_path / "server.log"
    path.write_bytes(data if form == "text" else FORMS[form](data))
    want = parse_log(split_lines([data]))
    assert read_log(str(path)) == want and want.failed


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize(
    ("junk", "plain"),
    [
        (b"", True),
        (b"\r", False),
        (b"\x1b[0m", False),
        (b"\x00", False),
        (b"\x7f", False),
        ("✓".encode(), False),
    ],
)
def test_blocks_are_called_plain_only_when_they_are(
    junk: bytes, plain: bool, compiled: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block is plain (the scan skips its own look for control bytes) only when it is ASCII
    with none of the bytes records() removes, told by the compiled loop (where built) or by
    Python; the text is the same either way."""
    if not compiled:
        monkeypatch.setattr(scan, "_C", [None])
    filler = b'(APIServer pid=5200) INFO:     10.0.3.7:40123 - "POST /v1/completions HTTP/1.1"\n'
    data = filler * 20000 + FAILED.replace(b"INFO", b"INFO" + junk, 1) + filler * 20000
    path = tmp_path / "server.log"
    path.write_bytes(data)
    blocks = list(LogInput(str(path)).blocks())
    assert len(blocks) > 2 and all(flag for _, flag in blocks[:1])
    assert all(flag for _, flag in blocks) is plain
    assert b"".join(b for b, _ in blocks) == data.replace(b"\x00", b"")
